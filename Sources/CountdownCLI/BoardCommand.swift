// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import CountdownClient
import CountdownClientNIO
import CountdownLoop

struct BoardCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "board",
    abstract: "Show the activities of countdown serve in the terminal, live.",
    discussion: """
      One row per activity, soonest ending first: title and subtitle, the timer text, a \
      progress bar, badges for paused, stale and ended, and the last milestone. The screen is \
      redrawn in place at each second boundary (computed from the activity objects and the \
      server's clock, as the web board does) and follows the terminal's size; colors are used \
      when the terminal has them (not with NO_COLOR or --no-color). q quits and restores the \
      terminal. When the server goes away the board says so and reconnects by itself.
      """
  )

  @OptionGroup var connectOptions: ConnectOptions

  @OptionGroup var styleOptions: StyleOptions

  @OptionGroup var keyOptions: KeyOptions

  @Flag(name: .customLong("no-color"), help: "No colors, even when the terminal has them.")
  var noColor = false

  func run() throws {
    guard System.isTerminal(1) else {
      printError("countdown board: standard output is not a terminal; run it in one")
      throw ExitCode.failure
    }
    let env = System.environment
    let term = env("TERM") ?? "dumb"
    let colors: TerminalBoard.Colors =
      noColor || env("NO_COLOR") != nil || term == "dumb"
      ? .none
      : (["truecolor", "24bit"].contains(env("COLORTERM") ?? "") ? .truecolor : .palette256)
    var board = TerminalBoard(
      endpoint: try connectOptions.endpoint(),
      formatter: TimerFormatter(style: styleOptions.timerStyle),
      colors: colors, key: try keyOptions.key())
    try board.run()
  }
}

/// The terminal board's state and loop: one thread, `poll` on the keyboard, the socket and a
/// signal pipe, with a timeout at the next second boundary.
struct TerminalBoard {
  enum Colors { case none, palette256, truecolor }

  /// What the board keeps of an activity object (docs/protocol.md): its time model
  /// (CountdownClient's ``ActivityClock``) and what it shows beside the time.
  struct Tile {
    var id: String
    var clock: ActivityClock
    var stale: Bool
    var title: String
    var subtitle: String
    var color: (r: Int, g: Int, b: Int)?
    var milestone: String?
  }

  let endpoint: CountdownEndpoint
  let formatter: TimerFormatter
  let colors: Colors
  var tiles: [String: Tile] = [:]
  var fd: Int32 = -1
  var reader: LineReader?
  /// Server clock − local clock, ms (from a `ping` reply).
  var offset: Int64 = 0
  var pingSentAt: Int64 = 0
  var connected = false
  var lastAttempt: Int64 = 0
  var lastFrame: [UInt8] = []
  var size = (rows: 24, cols: 80)

  /// The key each connection authenticates with (`--key-file`), nil for none.
  let key: String?

  init(
    endpoint: CountdownEndpoint, formatter: TimerFormatter, colors: Colors, key: String? = nil
  ) {
    self.endpoint = endpoint
    self.formatter = formatter
    self.colors = colors
    self.key = key
  }

  static func localNow() -> Int64 { SystemWallClock.now().milliseconds }

  var serverNow: Int64 { Self.localNow() + offset }

  mutating func run() throws {
    let terminal = try RawTerminal()
    defer { terminal.restore() }
    SignalPipe.install()
    size = RawTerminal.size()
    loop: while true {
      if fd < 0 && Self.localNow() - lastAttempt >= 1000 { connect() }
      draw()
      let ready = System.waitForInput(
        [0, SignalPipe.readEnd, fd], timeoutMs: timeout())
      if ready.failed { break }
      if ready.readable[0] {
        let key = System.readKey()
        if key == nil || key == UInt8(ascii: "q") || key == UInt8(ascii: "Q") || key == 3 {
          break loop
        }
      }
      if ready.readable[1] {
        switch SignalPipe.drain() {
        case .quit: break loop
        case .resize:
          size = RawTerminal.size()
          lastFrame = []
        case .none: break
        }
      }
      if ready.readable[2] { receive() }
    }
  }

  // MARK: - The connection

  mutating func connect() {
    lastAttempt = Self.localNow()
    // A TCP address is relayed (over TLS when asked) by the client's bridge: the board reads
    // a descriptor whatever the server's address. An address that does not answer holds the
    // board for at most 2 s a try.
    guard let s = try? endpoint.connectedDescriptor(timeout: .seconds(2)) else {
      connected = false
      return
    }
    fd = s
    reader = LineReader(fd: s)
    pingSentAt = Self.localNow()
    let auth = key.map { KeyOptions.authLine($0) + "\n" } ?? ""
    send(
      auth + "{\"rid\":\"ping\",\"op\":\"ping\"}\n{\"rid\":\"subscribe\",\"op\":\"subscribe\"}\n")
  }

  mutating func disconnect() {
    if fd >= 0 { CountdownClient.System.close(fd) }
    fd = -1
    reader = nil
    connected = false
  }

  mutating func send(_ text: String) {
    if fd >= 0 && !UnixSocket.sendAll(fd, Array(text.utf8)) { disconnect() }
  }

  /// Reads what the server sent and handles each complete line; disconnects at its end.
  mutating func receive() {
    guard var r = reader else { return }
    var messages: [ServiceMessage] = []
    // A line that does not decode is skipped: the board shows what it understands.
    let open =
      (try? r.readOnce { line in
        if let m = try? ServiceMessage(line: line) { messages.append(m) }
      }) ?? false
    reader = r
    for m in messages { handle(m) }
    if !open { disconnect() }
  }

  mutating func handle(_ message: ServiceMessage) {
    switch message {
    case .reply(let r):
      guard r.ok else { return }
      switch r.rid {
      case .string("ping"):
        let now = Self.localNow()
        offset = r.at - (pingSentAt + now) / 2
      case .string("subscribe"):
        connected = true
        tiles = [:]
        for a in r.activities ?? [] { remember(a) }
      default:
        if let a = r.activity { remember(a) }
      }
    case .event(let e):
      guard let id = e.id, let kind = e.kind else { return }
      if kind == .dismissed {
        tiles[id] = nil
      } else if kind != .tick {
        send("{\"rid\":\"get\",\"op\":\"get\",\"id\":\(JSONValue.string(id).canonicalText)}\n")
      }
    }
  }

  mutating func remember(_ a: ActivityObject) {
    // Text that came from clients is shown, never obeyed: no control sequence reaches the
    // terminal (docs/security.md).
    tiles[a.id] = Tile(
      id: a.id, clock: a.clock, stale: a.stale,
      title: Self.visible(a.title ?? a.id),
      subtitle: Self.visible(a.subtitle ?? ""),
      color: a.color.flatMap(Self.rgb),
      milestone: a.milestone.map(Self.visible))
  }

  static func rgb(_ text: String) -> (r: Int, g: Int, b: Int)? {
    let hex = Array(text.utf8.dropFirst())
    guard text.hasPrefix("#"), hex.count == 6 || hex.count == 8,
      let v = Int(String(decoding: hex[0..<6], as: UTF8.self), radix: 16)
    else { return nil }
    return (v >> 16 & 0xFF, v >> 8 & 0xFF, v & 0xFF)
  }

  /// Milliseconds until the next second boundary of any tile (at most 1 s).
  func timeout() -> Int64 {
    let now = serverNow
    var next = now + 1000
    for t in tiles.values {
      if let n = t.clock.nextChange(after: now), n < next { next = n }
    }
    return max(0, min(1000, next - now))
  }

  /// Soonest ending first (as the web board; ``ActivityClock/sortKey(at:)``), then by id.
  func ordered(_ now: Int64) -> [Tile] {
    tiles.values.sorted { a, b in
      let ka = a.clock.sortKey(at: now)
      let kb = b.clock.sortKey(at: now)
      return ka != kb ? ka < kb : a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
    }
  }

  // MARK: - Drawing

  mutating func draw() {
    let now = serverNow
    let cols = max(20, size.cols)
    let rows = max(3, size.rows)
    var out: [UInt8] = Array("\u{1B}[H".utf8)
    let list = ordered(now)
    let status = connected ? "live" : "reconnecting to \(endpoint)…"
    var header = Line(colors: colors)
    header.bold("Countdown")
    header.plain("  \(list.count) \(list.count == 1 ? "activity" : "activities")  ")
    header.dim(status)
    out += header.finish(width: cols)
    let room = rows - 2
    let shown = list.prefix(room)
    for t in shown { out += Array("\r\n".utf8) + row(t, now, width: cols) }
    for _ in shown.count..<room { out += Array("\r\n\u{1B}[K".utf8) }
    var footer = Line(colors: colors)
    footer.dim(
      list.count > shown.count
        ? "q quits · \(list.count - shown.count) more below" : "q quits")
    out += Array("\r\n".utf8) + footer.finish(width: cols)
    guard out != lastFrame else { return }
    lastFrame = out
    RawTerminal.write(out)
  }

  func row(_ t: Tile, _ now: Int64, width: Int) -> [UInt8] {
    var line = Line(colors: colors)
    line.mark(t.color)
    let timerText = withUnsafeTemporaryAllocation(
      of: UInt8.self, capacity: TimerFormatter.maximumLength
    ) { buf in
      String(
        decoding: UnsafeBufferPointer(
          rebasing: buf[0..<formatter.write(signedSeconds: t.clock.value(at: now), into: buf)]),
        as: UTF8.self)
    }
    var badges: [String] = []
    let over = t.clock.isInOvertime(at: now)
    if over { badges.append("OVERTIME") }
    if t.clock.phase == .paused { badges.append("PAUSED") }
    if t.stale { badges.append("STALE") }
    if t.clock.phase == .ended { badges.append("ENDED") }
    let barWidth = width >= 100 ? 20 : (width >= 60 ? 10 : 0)
    let timerWidth = max(9, timerText.count)
    let badgeText = badges.map { "[\($0)]" }.joined(separator: " ")
    let milestone = t.milestone.map { "● \($0)" } ?? ""
    let fixed = 2 + timerWidth + 2 + (barWidth > 0 ? barWidth + 2 : 0)
    let nameWidth = max(8, (width - fixed) * 3 / 5)
    line.nameColumn(t.title, t.subtitle, width: nameWidth, dimmed: t.clock.phase == .ended)
    line.plain("  ")
    line.timer(
      String(repeating: " ", count: timerWidth - timerText.count) + timerText, overtime: over)
    line.plain("  ")
    if barWidth > 0 {
      if let p = t.clock.progress(at: now) {
        let filled = Int((p * Double(barWidth)).rounded(.down))
        line.bar(filled: filled, of: barWidth, color: t.color)
      } else {
        line.plain(String(repeating: " ", count: barWidth))
      }
      line.plain("  ")
    }
    if !badgeText.isEmpty {
      line.badge(badgeText)
      line.plain(" ")
    }
    line.dim(milestone)
    return line.finish(width: width)
  }
}

extension TerminalBoard {
  /// `text` with every control character shown as a visible stand-in instead of obeyed: C0
  /// controls (ESC, CR, BEL, …) as their Unicode control pictures (`␛`, `␍`, `␇`), DEL as
  /// `␡`, C1 controls (U+0080–U+009F, which some terminals read as escapes) as `�`.
  static func visible(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: isControl) else { return text }
    var out = String.UnicodeScalarView()
    for u in text.unicodeScalars {
      switch u.value {
      case 0x00...0x1F: out.append(Unicode.Scalar(0x2400 + u.value)!)
      case 0x7F: out.append("\u{2421}")
      case 0x80...0x9F: out.append("\u{FFFD}")
      default: out.append(u)
      }
    }
    return String(out)
  }

  private static func isControl(_ u: Unicode.Scalar) -> Bool {
    u.value < 0x20 || (0x7F...0x9F).contains(u.value)
  }
}

/// One screen line being built: text with SGR escapes, cut to the terminal's width.
struct Line {
  let colors: TerminalBoard.Colors
  var bytes: [UInt8] = []

  init(colors: TerminalBoard.Colors) { self.colors = colors }

  private mutating func sgr(_ code: String) {
    if colors != .none { bytes += Array("\u{1B}[\(code)m".utf8) }
  }

  private mutating func text(_ s: String) { bytes += Array(s.utf8) }

  mutating func plain(_ s: String) { text(s) }
  mutating func bold(_ s: String) {
    sgr("1")
    text(s)
    sgr("0")
  }
  mutating func dim(_ s: String) {
    sgr("2")
    text(s)
    sgr("0")
  }
  /// The timer's text: bold, and red past the end of an overtime countdown.
  mutating func timer(_ s: String, overtime: Bool = false) {
    guard overtime else { return bold(s) }
    sgr("1;31")
    text(s)
    sgr("0")
  }
  mutating func badge(_ s: String) {
    sgr("1;33")
    text(s)
    sgr("0")
  }

  func color(_ c: (r: Int, g: Int, b: Int)) -> String {
    switch colors {
    case .truecolor: return "38;2;\(c.r);\(c.g);\(c.b)"
    default:
      let q = { (v: Int) in (v * 5 + 127) / 255 }
      return "38;5;\(16 + 36 * q(c.r) + 6 * q(c.g) + q(c.b))"
    }
  }

  mutating func mark(_ c: (r: Int, g: Int, b: Int)?) {
    if let c { sgr(color(c)) } else { sgr("34") }
    text("▌ ")
    sgr("0")
  }

  mutating func nameColumn(_ title: String, _ subtitle: String, width: Int, dimmed: Bool) {
    let titleCut = Self.cut(title, width)
    if dimmed { dim(titleCut) } else { bold(titleCut) }
    var used = titleCut.count
    if !subtitle.isEmpty && used + 3 < width {
      let sub = Self.cut(" · " + subtitle, width - used)
      dim(sub)
      used += sub.count
    }
    text(String(repeating: " ", count: max(0, width - used)))
  }

  mutating func bar(filled: Int, of width: Int, color c: (r: Int, g: Int, b: Int)?) {
    if colors == .none {
      text(String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled))
      return
    }
    if let c { sgr(color(c)) } else { sgr("34") }
    text(String(repeating: "█", count: filled))
    sgr("0;2")
    text(String(repeating: "░", count: width - filled))
    sgr("0")
  }

  static func cut(_ s: String, _ n: Int) -> String {
    s.count <= n ? s : String(s.prefix(max(0, n - 1))) + "…"
  }

  /// The line cut to `width` columns (escapes kept), then cleared to its end.
  func finish(width: Int) -> [UInt8] {
    var out: [UInt8] = []
    var shown = 0
    var i = 0
    let b = bytes
    while i < b.count {
      if b[i] == 0x1B {
        // An escape: copy it whole (ESC [ … letter).
        var j = i + 1
        while j < b.count && !(b[j] >= 0x40 && b[j] <= 0x7E && j > i + 1) { j += 1 }
        out += b[i...min(j, b.count - 1)]
        i = j + 1
        continue
      }
      // One character: a lead byte and its continuation bytes.
      var j = i + 1
      while j < b.count && b[j] & 0xC0 == 0x80 { j += 1 }
      if shown < width {
        out += b[i..<j]
        shown += 1
      }
      i = j
    }
    if colors != .none { out += Array("\u{1B}[0m".utf8) }
    out += Array("\u{1B}[K".utf8)
    return out
  }
}
