import ArgumentParser
import Countdown
import CountdownClient

#if canImport(Glibc)
  import Glibc
#endif

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

  @Option(help: "The server's Unix domain socket.")
  var socket = "countdown.sock"

  @OptionGroup var styleOptions: StyleOptions

  @Flag(name: .customLong("no-color"), help: "No colors, even when the terminal has them.")
  var noColor = false

  func run() throws {
    guard isatty(1) != 0 else {
      printError("countdown board: standard output is not a terminal; run it in one")
      throw ExitCode.failure
    }
    let env = { (name: String) in getenv(name).map { String(cString: $0) } }
    let term = env("TERM") ?? "dumb"
    let colors: TerminalBoard.Colors =
      noColor || env("NO_COLOR") != nil || term == "dumb"
      ? .none
      : (["truecolor", "24bit"].contains(env("COLORTERM") ?? "") ? .truecolor : .palette256)
    var board = TerminalBoard(
      socketPath: socket, formatter: TimerFormatter(style: styleOptions.timerStyle),
      colors: colors)
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

  let socketPath: String
  let formatter: TimerFormatter
  let colors: Colors
  var tiles: [String: Tile] = [:]
  var fd: Int32 = -1
  var inbox: [UInt8] = []
  /// Server clock − local clock, ms (from a `ping` reply).
  var offset: Int64 = 0
  var pingSentAt: Int64 = 0
  var connected = false
  var lastAttempt: Int64 = 0
  var lastFrame: [UInt8] = []
  var size = (rows: 24, cols: 80)

  init(socketPath: String, formatter: TimerFormatter, colors: Colors) {
    self.socketPath = socketPath
    self.formatter = formatter
    self.colors = colors
  }

  static func localNow() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
  }

  var serverNow: Int64 { Self.localNow() + offset }

  mutating func run() throws {
    let terminal = try RawTerminal()
    defer { terminal.restore() }
    SignalPipe.install()
    size = RawTerminal.size()
    loop: while true {
      if fd < 0 && Self.localNow() - lastAttempt >= 1000 { connect() }
      draw()
      var fds = [
        pollfd(fd: 0, events: Int16(POLLIN), revents: 0),
        pollfd(fd: SignalPipe.readEnd, events: Int16(POLLIN), revents: 0),
        pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
      ]
      let n = poll(&fds, fd >= 0 ? 3 : 2, Int32(timeout()))
      if n < 0 && errno != EINTR { break }
      if fds[0].revents != 0 {
        var byte: UInt8 = 0
        let got = read(0, &byte, 1)
        if got <= 0 || byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") || byte == 3 {
          break loop
        }
      }
      if fds[1].revents != 0 {
        switch SignalPipe.drain() {
        case .quit: break loop
        case .resize:
          size = RawTerminal.size()
          lastFrame = []
        case .none: break
        }
      }
      if fd >= 0 && fds[2].revents != 0 { receive() }
    }
  }

  // MARK: - The connection

  mutating func connect() {
    lastAttempt = Self.localNow()
    guard let s = try? UnixSocket.connect(socketPath) else {
      connected = false
      return
    }
    fd = s
    inbox = []
    pingSentAt = Self.localNow()
    send("{\"rid\":\"ping\",\"op\":\"ping\"}\n{\"rid\":\"subscribe\",\"op\":\"subscribe\"}\n")
  }

  mutating func disconnect() {
    if fd >= 0 { close(fd) }
    fd = -1
    connected = false
  }

  mutating func send(_ text: String) {
    if fd >= 0 && !UnixSocket.sendAll(fd, Array(text.utf8)) { disconnect() }
  }

  mutating func receive() {
    var chunk = [UInt8](repeating: 0, count: 65536)
    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard n > 0 else {
      if n == 0 || (errno != EINTR && errno != EAGAIN) { disconnect() }
      return
    }
    inbox.append(contentsOf: chunk[0..<n])
    while let newline = inbox.firstIndex(of: 0x0A) {
      let line = Array(inbox[..<newline])
      inbox.removeSubrange(...newline)
      handle(line)
    }
  }

  mutating func handle(_ line: [UInt8]) {
    guard let value = try? line.withUnsafeBufferPointer({ try JSONParser.parse(bytes: $0) }),
      let o = value.objectValue
    else { return }
    if case .string(let rid)? = o["rid"] {
      guard case .bool(true)? = o["ok"] else { return }
      let at = o["at"].flatMap(Self.int)
      switch rid {
      case "ping":
        let now = Self.localNow()
        if let at { offset = at - (pingSentAt + now) / 2 }
      case "subscribe":
        connected = true
        tiles = [:]
        if case .array(let list)? = o["snapshot"] {
          for a in list { remember(a, at: at) }
        }
      default:
        if let a = o["activity"] { remember(a, at: at) }
      }
      return
    }
    guard case .string(let event)? = o["event"], case .string(let id)? = o["id"] else { return }
    if event == "dismissed" {
      tiles[id] = nil
    } else if event != "tick" {
      send("{\"rid\":\"get\",\"op\":\"get\",\"id\":\(JSONValue.string(id).canonicalText)}\n")
    }
  }

  static func int(_ v: JSONValue) -> Int64? {
    switch v {
    case .int(let n): return n
    case .double(let d): return Int64(exactly: d.rounded(.towardZero))
    default: return nil
    }
  }

  mutating func remember(_ value: JSONValue, at: Int64?) {
    guard let o = value.objectValue, case .string(let id)? = o["id"] else { return }
    let content = o["content"]?.objectValue ?? [:]
    func string(_ v: JSONValue?) -> String? {
      if case .string(let s)? = v { return s }
      return nil
    }
    var progress: Double?
    switch o["progress"] {
    case .double(let d)?: progress = d
    case .int(let n)?: progress = Double(n)
    default: progress = nil
    }
    let clock = ActivityClock(
      kind: string(o["kind"]).flatMap(ActivityKind.init(rawValue:)) ?? .countdown,
      phase: string(o["phase"]).flatMap(ActivityPhase.init(rawValue:)) ?? .active,
      value: o["value"].flatMap(Self.int) ?? 0, progress: progress,
      endDate: o["endDate"].flatMap(Self.int), startDate: o["startDate"].flatMap(Self.int),
      goalMs: o["goalMs"].flatMap(Self.int))
    // Text that came from clients is shown, never obeyed: no control sequence reaches the
    // terminal (docs/security.md).
    tiles[id] = Tile(
      id: id, clock: clock, stale: o["stale"] == .bool(true),
      title: Self.visible(string(content["title"]) ?? id),
      subtitle: Self.visible(string(content["subtitle"]) ?? ""),
      color: string(content["color"]).flatMap(Self.rgb),
      milestone: string(o["milestone"]).map(Self.visible))
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
    let status = connected ? "live" : "reconnecting to \(socketPath)…"
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
          rebasing: buf[0..<formatter.write(seconds: t.clock.value(at: now), into: buf)]),
        as: UTF8.self)
    }
    var badges: [String] = []
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
    line.timer(String(repeating: " ", count: timerWidth - timerText.count) + timerText)
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
  mutating func timer(_ s: String) { bold(s) }
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

/// The terminal in raw mode on the alternate screen, cursor hidden; `restore()` puts it back.
final class RawTerminal {
  private var saved = termios()
  private var active = false

  init() throws {
    guard tcgetattr(0, &saved) == 0 else {
      printError("countdown board: standard input is not a terminal; run it in one")
      throw ExitCode.failure
    }
    var raw = saved
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN)
    raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
    withUnsafeMutableBytes(of: &raw.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    tcsetattr(0, TCSAFLUSH, &raw)
    active = true
    Self.write(Array("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J".utf8))
  }

  func restore() {
    guard active else { return }
    active = false
    Self.write(Array("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l".utf8))
    tcsetattr(0, TCSAFLUSH, &saved)
  }

  deinit { restore() }

  static func write(_ bytes: [UInt8]) {
    var sent = 0
    while sent < bytes.count {
      let n = bytes.withUnsafeBufferPointer {
        Glibc.write(1, $0.baseAddress! + sent, $0.count - sent)
      }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { return }
      sent += n
    }
  }

  static func size() -> (rows: Int, cols: Int) {
    var ws = winsize()
    guard ioctl(1, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_row > 0, ws.ws_col > 0 else {
      return (24, 80)
    }
    return (Int(ws.ws_row), Int(ws.ws_col))
  }
}

/// SIGWINCH, SIGINT and SIGTERM, turned into bytes on a pipe that `poll` watches.
enum SignalPipe {
  nonisolated(unsafe) static var readEnd: Int32 = -1
  nonisolated(unsafe) static var writeEnd: Int32 = -1
  enum Received { case none, resize, quit }

  static func install() {
    var p: [Int32] = [0, 0]
    guard pipe(&p) == 0 else { return }
    _ = fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK)
    _ = fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK)
    readEnd = p[0]
    writeEnd = p[1]
    for sig in [SIGWINCH, SIGINT, SIGTERM, SIGHUP] {
      signal(sig) { s in
        var b = UInt8(truncatingIfNeeded: s)
        _ = Glibc.write(SignalPipe.writeEnd, &b, 1)
      }
    }
  }

  static func drain() -> Received {
    var got = Received.none
    var b: UInt8 = 0
    while read(readEnd, &b, 1) == 1 {
      if Int32(b) == SIGWINCH {
        if got == .none { got = .resize }
      } else {
        got = .quit
      }
    }
    return got
  }
}
