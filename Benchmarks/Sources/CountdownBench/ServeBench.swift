// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import CountdownClient
import CountdownServer
import Foundation
import Histogram
import Logging
import ServiceLifecycle

#if canImport(Glibc)
  import Glibc
#endif

/// `countdown-bench serve-child`: the server alone in this process, for `serve` to measure
/// from outside. Runs until SIGTERM.
struct ServeChild: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "serve-child", abstract: "Run a Countdown server for `serve` (internal).",
    shouldDisplay: false)

  @Option var socket: String
  @Option var subscriberBufferBytes = 8 << 20
  @Option var state = ":memory:"
  @Option var sync = "normal"
  @Option var http: String?
  @Option var tlsCert: String?
  @Option var tlsKey: String?
  @Option var replyBufferBytes: Int?
  @Option var apnsUrl: String?
  @Option var apnsCa: String?
  @Option var apnsKey: String?
  @Flag var apnsChannels = false
  @Option var apnsManageUrl: String?
  @Option var webhook: [String] = []
  @Option var postgres: String?
  @Option var listen: String?
  @Option var node: String?
  @Option var clusterToken: String?
  @Option var shards = 64
  @Option var leaseMs: Int64 = 5_000
  @Option var access: String?

  func run() async throws {
    raiseDescriptorLimit()
    var options = ServerOptions(
      socketPath: socket, http: http, subscriberBufferBytes: subscriberBufferBytes,
      statePath: state, sync: StoreSync(rawValue: sync) ?? .normal)
    options.postgres = postgres
    options.listen = listen
    options.cluster = node.map {
      ClusterOptions(
        node: $0, advertise: listen, shards: shards, leaseMs: leaseMs, token: clusterToken)
    }
    options.accessPath = access
    options.tlsCertificatePath = tlsCert
    options.tlsKeyPath = tlsKey
    if let replyBufferBytes { options.replyBufferBytes = replyBufferBytes }
    if let apnsKey {
      options.apns = APNsOptions(
        keyPath: apnsKey, keyID: "BENCHKEY01", teamID: "BENCHTEAM1", bundleID: "bench.app",
        production: false, url: apnsUrl, caPath: apnsCa)
      options.apns?.channels = apnsChannels
      options.apns?.manageURL = apnsManageUrl
    }
    if !webhook.isEmpty { options.webhooks = WebhookOptions(urls: webhook) }
    // Notices (a push retried) would drown the tables; warnings and errors still show.
    var logger = Logger(label: "bench")
    logger.logLevel = .warning
    let server = CountdownServer(options: options, logger: logger)
    try server.start()
    print("ready")
    if let port = server.httpAddress?.port { print("port \(port)") }
    fflush(nil)
    try await ServiceGroup(
      services: [server], gracefulShutdownSignals: [.sigterm], logger: Logger(label: "bench")
    ).run()
  }
}

/// `countdown-bench serve`: a real `CountdownServer` in a child process, measured over its
/// Unix socket: end-to-end tick lateness at subscribers (receipt time − `at`), the server's
/// CPU, pipelined commands per second, fan-out, and a stalled subscriber beside a reading one.
struct ServeBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "serve",
    abstract:
      "countdown serve end to end: tick lateness, commands/s, fan-out, a stalled subscriber.")

  @Option(help: "Seconds measured per lateness run.")
  var seconds: Double = 5

  @Option(help: "Commands per throughput run.")
  var commands = 200_000

  @Flag(help: "Only the commands-per-second runs.")
  var commandsOnly = false

  @Option(help: "Alternating rounds of the stalled-subscriber comparison.")
  var stalledRounds = 3

  @Option(
    help:
      "With N > 0, only pipelined commands with the default reply budget (1 MiB a connection) beside an unbounded one, N alternating rounds."
  )
  var replyBudgetRounds = 0

  @Option(
    help:
      "With N > 0, only the typed async client (CountdownClientNIO) beside the raw socket: pipelined starts and subscription events, N alternating rounds."
  )
  var client = 0

  func run() throws {
    if client > 0 {
      return try ClientBench.run(rounds: client, commands: commands, seconds: seconds)
    }
    if replyBudgetRounds > 0 { return try replyBudgetComparison() }
    if !commandsOnly { try latenessRuns() }
    print("\n| commands | connections | per second |")
    print("|---|---|---|")
    for connections in [1, 8] {
      for op in ["start", "get"] {
        let rate = try Self.throughput(op: op, connections: connections, commands: commands)
        print("| \(op) | \(connections) | \(Int(rate)) |")
      }
    }
  }

  func latenessRuns() throws {
    print("| run | p50 | p99 | max | server CPU | events/s |")
    print("|---|---|---|---|---|---|")
    for n in [10_000, 100_000] {
      let r = try lateness(activities: n, subscribers: 1, stalled: false)
      print("| \(n / 1000)k activities, ticks, 1 subscriber | \(r.row) |")
    }
    let fan = try lateness(activities: 10_000, subscribers: 100, stalled: false)
    print("| fan-out: 10k activities × 100 subscribers | \(fan.row) |")
    try stalledComparison()
  }

  /// Pipelined commands per second with the reply budget of a connection at its default
  /// (1 MiB, estimated before the replies are built) and unbounded (as before the budget),
  /// alternating, with the medians' ratio.
  func replyBudgetComparison() throws {
    print("| commands | connections | budget | round | per second |")
    print("|---|---|---|---|---|")
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    var summary: [String] = []
    for connections in [1, 8] {
      for op in ["start", "get"] {
        var rates: [String: [Double]] = ["1 MiB": [], "unbounded": []]
        for round in 1...replyBudgetRounds {
          for (name, bytes) in [("1 MiB", nil), ("unbounded", Int.max / 4)] as [(String, Int?)] {
            let rate = try Self.throughput(
              op: op, connections: connections, commands: commands, replyBufferBytes: bytes)
            rates[name]!.append(rate)
            print("| \(op) | \(connections) | \(name) | \(round) | \(Int(rate)) |")
          }
        }
        let a = median(rates["1 MiB"]!)
        let b = median(rates["unbounded"]!)
        summary.append(
          "| \(op) | \(connections) | \(Int(a)) | \(Int(b)) | \(String(format: "%.2f", a / b))x |")
      }
    }
    print("\n| commands | connections | median, 1 MiB budget | median, unbounded | ratio |")
    print("|---|---|---|---|---|")
    for row in summary { print(row) }
  }

  /// The other subscriber's lateness beside a subscriber that never reads, and without it, in
  /// alternating rounds (the machine's noise moves one run's p99 more than the stalled
  /// subscriber does). Both sides run with a 1 MiB subscriber bound, so that the stalled one
  /// is over it, its ticks coalescing, for most of each measured run; the server's RSS at the
  /// end of each run shows its buffer stays bounded.
  func stalledComparison() throws {
    let bound = 1 << 20
    print(
      "\n| 10k activities, 1 MiB bound | round | p50 | p99 | max | server CPU | events/s | server RSS |"
    )
    print("|---|---|---|---|---|---|---|---|")
    var quiet: [Double] = []
    var stalled: [Double] = []
    for round in 1...max(1, stalledRounds) {
      for withStalled in [false, true] {
        let r = try lateness(
          activities: 10_000, subscribers: 1, stalled: withStalled, subscriberBuffer: bound)
        let name = withStalled ? "beside a subscriber that never reads" : "without it"
        print(
          "| \(name) | \(round) | \(r.row) | \(String(format: "%.0f MB", Double(r.rss) / 1_048_576)) |"
        )
        if withStalled { stalled.append(r.latency.p99) } else { quiet.append(r.latency.p99) }
      }
    }
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    print(
      "\nstalled subscriber moves the other's median p99 by \(String(format: "%+.1f", (median(stalled) / median(quiet) - 1) * 100))% (\(fmt(median(quiet))) → \(fmt(median(stalled))), \(quiet.count) rounds each)"
    )
  }

  struct LatenessResult {
    var latency: Latency
    var cpu: Double
    var eventsPerSecond: Double
    /// The server's resident set at the end of the run.
    var rss: Int64
    /// The lateness of the events other than ticks, when timed apart (see `recordLateness`).
    var others: Latency?
    /// The loop thread's CPU time in the measured window (its schedstat,
    /// ``Child/threadCPUNanoseconds(named:)``) per tick received at the window's rate (ns).
    var loopNanosecondsPerTick: Double?
    /// The child's CPU time in the measured window (ns), all threads.
    var cpuNanoseconds: Int64 = 0
    /// What `measure`'s counter moved by in the window (pushes or deliveries answered).
    var counted = 0
    var row: String {
      "\(fmt(latency.p50)) | \(fmt(latency.p99)) | \(fmt(latency.max)) | \(String(format: "%.1f%%", cpu * 100)) | \(Int(eventsPerSecond))"
    }
  }

  /// Starts a server child with `activities` countdowns ticking at random phases, subscribes
  /// `subscribers` reading clients (and one that never reads, when `stalled`), and records the
  /// lateness of every tick received for `seconds` after a warm-up.
  ///
  /// With `state`, the child keeps its state there; with `streamPerSecond` > 0 another client
  /// sends that many `update` commands a second (in batches every 10 ms) while it records.
  func lateness(
    activities: Int, subscribers: Int, stalled: Bool, subscriberBuffer: Int = 8 << 20,
    state: String = ":memory:", streamPerSecond: Int = 0
  ) throws -> LatenessResult {
    let child = try Child(subscriberBufferBytes: subscriberBuffer, state: state)
    defer { child.stop() }
    try Self.startCountdowns(child, activities)
    var idle: Client?
    if stalled {
      let c = try Client(child.socket)
      var small: Int32 = 4096
      setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
      c.send(Array(#"{"op":"subscribe","ticks":true}"#.utf8) + [0x0A])
      idle = c
    }
    let readers = try (0..<subscribers).map { _ in try Client(child.socket) }
    for r in readers {
      r.send(Array(#"{"op":"subscribe","ticks":true}"#.utf8) + [0x0A])
      r.awaitReplies(1)
    }
    let recorder = LatencyBox()
    // With commands streaming in, their events are timed apart from the ticks.
    let others = streamPerSecond > 0 ? LatencyBox() : nil
    let stop = StopFlag()
    // One reader thread per 25 subscribers, each polling its sockets.
    let groups = stride(from: 0, to: readers.count, by: 25).map {
      Array(readers[$0..<min($0 + 25, readers.count)])
    }
    var threads: [Thread] = []
    let warmUpUntil = monotonicNanoseconds() + 1_500_000_000
    for group in groups {
      let t = Thread {
        Client.readTicks(
          group, recorder: recorder, others: others, stop: stop, after: warmUpUntil)
      }
      t.start()
      threads.append(t)
    }
    if streamPerSecond > 0 {
      threads += try Self.streamUpdates(
        child, activities: activities, perSecond: streamPerSecond, until: stop)
    }
    var result = Self.measure(
      child, seconds: seconds, threads: threads, stop: stop, recorder: recorder)
    if let others { result.others = Latency(others.histogram()) }
    _ = idle
    return result
  }

  /// Starts countdowns `a0`…`a{n-1}` on `child`, ending in an hour at random phases within
  /// the second (so their ticks spread over it), and waits for the replies.
  static func startCountdowns(_ child: Child, _ n: Int) throws {
    let control = try Client(child.socket)
    var batch = [UInt8]()
    let base = wallNanoseconds() / 1_000_000 + 3_600_000
    for k in 0..<n {
      batch += Array(
        #"{"op":"start","id":"a\#(k)","kind":"countdown","endDate":\#(base + Int64.random(in: 0..<1000)),"title":"A"}"#
          .utf8)
      batch.append(0x0A)
    }
    control.sendWhileReading(batch, replies: n)
  }

  /// Sends `perSecond` updates a second, one activity (`a0`…) each, in 10 ms batches, from a
  /// thread of its own (and drains the replies on another) until `stop`.
  static func streamUpdates(
    _ child: Child, activities: Int, perSecond: Int, until stop: StopFlag,
    drain: @escaping @Sendable (Client, StopFlag) -> Void = { c, stop in c.drain(until: stop) },
    line: @escaping @Sendable (_ activity: Int, _ k: Int, _ sentMicros: Int64) -> String = {
      a, k, _ in #"{"op":"update","id":"a\#(a)","subtitle":"u\#(k)"}"#
    }
  ) throws -> [Thread] {
    let streamer = try Client(child.socket)
    let perBatch = max(1, perSecond / 100)
    let t = Thread {
      var k = 0
      var next = monotonicNanoseconds()
      while !stop.isSet {
        var batch = [UInt8]()
        let sent = wallNanoseconds() / 1000
        for _ in 0..<perBatch {
          batch += Array(line(k % activities, k, sent).utf8)
          batch.append(0x0A)
          k += 1
        }
        streamer.send(batch)
        next += 10_000_000
        let wait = next - monotonicNanoseconds()
        if wait > 0 { usleep(UInt32(wait / 1000)) }
      }
    }
    let drainer = Thread { drain(streamer, stop) }
    t.start()
    drainer.start()
    return [t, drainer]
  }

  /// After 1.5 s of warm-up, `seconds` measured: the child's CPU share, its RSS, and what the
  /// reader `threads` recorded; then stops them.
  static func measure(
    _ child: Child, seconds: Double, threads: [Thread], stop: StopFlag, recorder: LatencyBox,
    warmup: Double = 1.5, counter: (() -> Int)? = nil
  ) -> LatenessResult {
    usleep(UInt32(warmup * 1_000_000))
    let cpu0 = child.cpuNanoseconds()
    let loop0 = child.threadCPUNanoseconds(named: "countdown-loop")
    let counted0 = counter?() ?? 0
    let t0 = monotonicNanoseconds()
    usleep(UInt32(seconds * 1_000_000))
    let cpu1 = child.cpuNanoseconds()
    let loop1 = child.threadCPUNanoseconds(named: "countdown-loop")
    let counted1 = counter?() ?? 0
    let rss = residentBytes(of: child.process.processIdentifier)
    let wall = Double(monotonicNanoseconds() - t0)
    stop.set()
    while threads.contains(where: { !$0.isFinished }) { usleep(10_000) }
    let h = recorder.histogram()
    var result = LatenessResult(
      latency: Latency(h), cpu: Double(cpu1 - cpu0) / wall,
      eventsPerSecond: Double(h.totalCount) / seconds, rss: rss)
    result.cpuNanoseconds = cpu1 - cpu0
    result.counted = counted1 - counted0
    // The readers merge their counts when they stop: the ticks of the window are the rate
    // they received (from the same warm-up on) over the window's length.
    if let loop0, let loop1, result.eventsPerSecond > 0 {
      result.loopNanosecondsPerTick =
        Double(loop1 - loop0) / (result.eventsPerSecond * wall / 1_000_000_000)
    }
    return result
  }

  /// Pipelines `commands` requests over `connections` connections and times the replies.
  /// With `key`, each connection gives it first (`auth`) and has its role from then on.
  static func throughput(
    op: String, connections: Int, commands: Int, state: String = ":memory:",
    sync: String = "normal", replyBufferBytes: Int? = nil, extra: [String] = [],
    key: String? = nil
  ) throws -> Double {
    let child = try Child(
      state: state, sync: sync, replyBufferBytes: replyBufferBytes, extra: extra)
    defer { child.stop() }
    let clients = try (0..<connections).map { _ in try Client(child.socket) }
    if let key {
      for client in clients {
        client.sendWhileReading(
          Array(#"{"op":"auth","token":"\#(key)"}"#.utf8) + [0x0A], replies: 1)
      }
    }
    // gets need activities to get.
    if op == "get" {
      var batch = [UInt8]()
      for k in 0..<1000 {
        batch += Array(#"{"op":"start","id":"g\#(k)","kind":"elapsed","title":"G"}"#.utf8) + [0x0A]
      }
      clients[0].sendWhileReading(batch, replies: 1000)
    }
    let per = commands / connections
    let payloads: [[UInt8]] = (0..<connections).map { c in
      var batch = [UInt8]()
      batch.reserveCapacity(per * 80)
      for k in 0..<per {
        let line =
          op == "start"
          ? #"{"rid":\#(k),"op":"start","id":"s\#(c).\#(k)","kind":"elapsed","title":"S"}"#
          : #"{"rid":\#(k),"op":"get","id":"g\#(k % 1000)"}"#
        batch += Array(line.utf8)
        batch.append(0x0A)
      }
      return batch
    }
    let t0 = monotonicNanoseconds()
    var threads: [Thread] = []
    for (c, client) in clients.enumerated() {
      let payload = payloads[c]
      let writer = Thread { client.send(payload) }
      let reader = Thread { client.awaitReplies(per) }
      writer.start()
      reader.start()
      threads += [writer, reader]
    }
    while threads.contains(where: { !$0.isFinished }) { usleep(1_000) }
    return Double(per * connections) / (Double(monotonicNanoseconds() - t0) / 1e9)
  }
}

/// The server child process.
final class Child {
  let process = Process()
  let socket: String

  /// The HTTP port, when the child serves HTTP.
  private(set) var httpPort: Int?

  /// `state` is the child's `--state` (a file, or `:memory:`), `sync` its `--sync`; `http`
  /// makes it serve HTTP on a free loopback port.
  init(
    subscriberBufferBytes: Int = 8 << 20, state: String = ":memory:", sync: String = "normal",
    http: Bool = false, tls: (certificate: String, key: String)? = nil,
    replyBufferBytes: Int? = nil, extra: [String] = []
  ) throws {
    socket = "/tmp/cdb-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments =
      [
        "serve-child", "--socket", socket, "--subscriber-buffer-bytes", "\(subscriberBufferBytes)",
        "--state", state, "--sync", sync,
      ] + (http ? ["--http", "127.0.0.1:0"] : [])
      + (tls.map { ["--tls-cert", $0.certificate, "--tls-key", $0.key] } ?? [])
      + (replyBufferBytes.map { ["--reply-buffer-bytes", "\($0)"] } ?? []) + extra
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    _ = out.fileHandleForReading.readData(ofLength: 6)  // "ready\n"
    if http {
      var line = [UInt8]()
      while true {
        let b = out.fileHandleForReading.readData(ofLength: 1)
        if b.isEmpty || b.first == 0x0A { break }
        line.append(b.first!)
      }
      httpPort = Int(String(decoding: line, as: UTF8.self).dropFirst(5))
    }
  }

  /// The child's CPU time (user + system) from /proc, in nanoseconds.
  func cpuNanoseconds() -> Int64 {
    guard
      let text = try? String(
        contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
      let close = text.lastIndex(of: ")")
    else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the command: state is field 3, utime 14 and stime 15 (1-based over the whole line).
    let ticks = (Int64(fields[11]) ?? 0) + (Int64(fields[12]) ?? 0)
    return ticks * 1_000_000_000 / Int64(sysconf(Int32(_SC_CLK_TCK)))
  }

  /// The time on a CPU of the child's thread named `name` (its `comm`), in nanoseconds, from
  /// `/proc/PID/task/TID/schedstat` (the scheduler's own count, not rounded to clock ticks):
  /// one thread's cost, which the other threads sharing two CPUs do not blur. Nil when no
  /// thread has that name.
  func threadCPUNanoseconds(named name: String) -> Int64? {
    let task = "/proc/\(process.processIdentifier)/task"
    guard let tids = try? FileManager.default.contentsOfDirectory(atPath: task) else {
      return nil
    }
    for tid in tids {
      guard
        let comm = try? String(contentsOfFile: "\(task)/\(tid)/comm", encoding: .utf8),
        comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
        let stat = try? String(contentsOfFile: "\(task)/\(tid)/schedstat", encoding: .utf8),
        let ns = stat.split(separator: " ").first.flatMap({ Int64($0) })
      else { continue }
      return ns
    }
    return nil
  }

  func stop() {
    process.terminate()
    process.waitUntilExit()
    unlink(socket)
  }
}

/// A blocking client socket.
final class Client: @unchecked Sendable {
  // @unchecked Sendable: one writer thread and one reader thread, each on its own direction.
  let fd: Int32

  init(_ path: String) throws { fd = try UnixSocket.connect(path) }

  deinit { close(fd) }

  func send(_ bytes: [UInt8]) { UnixSocket.sendAll(fd, bytes) }

  /// Sends `bytes` from a thread of its own while reading `replies` lines here: the server
  /// stops reading a client that does not read its replies, so a large batch must not be sent
  /// first and read after.
  func sendWhileReading(_ bytes: [UInt8], replies: Int) {
    let writer = Thread { self.send(bytes) }
    writer.start()
    awaitReplies(replies)
    while !writer.isFinished { usleep(1_000) }
  }

  /// Reads and drops whatever comes until `stop`.
  func drain(until stop: StopFlag) {
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    while !stop.isSet {
      guard poll(&p, 1, 100) > 0 else { continue }
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 1 << 16, 0) }
      if n <= 0 { return }
    }
  }

  /// Reads until `count` lines have come.
  func awaitReplies(_ count: Int) {
    var lines = 0
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while lines < count {
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 1 << 16, 0) }
      if n <= 0 { return }
      for i in 0..<n where chunk[i] == 0x0A { lines += 1 }
    }
  }

  /// Records the lateness of every event line received on `clients` after `after` (monotonic
  /// ns), until `stop`.
  static func readTicks(
    _ clients: [Client], recorder: LatencyBox, others: LatencyBox? = nil, stop: StopFlag,
    after: Int64
  ) {
    recordLateness(
      clients.map(\.fd), linePrefix: Array(#"{"at":"#.utf8), recorder: recorder, others: others,
      stop: stop, after: after)
  }

  /// Reads `fds` until `stop`; each line that starts with `linePrefix` (which ends just before
  /// an event's `at` digits) received after `after` (monotonic ns) records its lateness. With
  /// `others`, only ticks go to `recorder` and every other event to `others` (the events of
  /// commands, which with a state file wait for their commit as docs/state-file.md says).
  static func recordLateness(
    _ fds: [Int32], linePrefix prefix: [UInt8], recorder: LatencyBox, others: LatencyBox? = nil,
    stop: StopFlag, after: Int64
  ) {
    var local = Histogram<UInt64>(
      highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    var localOthers = local
    let tick = Array(#","event":"tick""#.utf8)
    var polls = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    var partial = fds.map { _ in [UInt8]() }
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while !stop.isSet {
      guard poll(&polls, nfds_t(polls.count), 100) > 0 else { continue }
      let now = wallNanoseconds()
      let counting = monotonicNanoseconds() >= after
      for k in polls.indices where polls[k].revents & Int16(POLLIN) != 0 {
        let n = chunk.withUnsafeMutableBytes { recv(polls[k].fd, $0.baseAddress, 1 << 16, 0) }
        if n <= 0 { continue }
        var data = partial[k]
        data += chunk[0..<n]
        var start = 0
        for i in 0..<data.count where data[i] == 0x0A {
          defer { start = i + 1 }
          guard counting, i - start > prefix.count,
            data[start..<(start + prefix.count)].elementsEqual(prefix)
          else { continue }
          var j = start + prefix.count
          var at: Int64 = 0
          while j < i, data[j] >= 48, data[j] <= 57 {
            at = at * 10 + Int64(data[j] - 48)
            j += 1
          }
          let lateness = UInt64(max(0, now - at * 1_000_000))
          if others != nil, !data[j..<min(i, j + tick.count)].elementsEqual(tick) {
            localOthers.record(lateness)
          } else {
            local.record(lateness)
          }
        }
        partial[k] = Array(data[start...])
      }
    }
    recorder.merge(local)
    others?.merge(localOthers)
  }
}

/// Histograms merged from reader threads.
final class LatencyBox: @unchecked Sendable {
  // @unchecked Sendable: `h` is touched only under `lock`.
  private let lock = NSLock()
  private var h = Histogram<UInt64>(
    highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
  func merge(_ other: Histogram<UInt64>) { lock.withLock { h.add(other) } }
  func histogram() -> Histogram<UInt64> { lock.withLock { h } }
}

/// A flag set by one thread and read by others.
final class StopFlag: @unchecked Sendable {
  // @unchecked Sendable: `value` is touched only under `lock`.
  private let lock = NSLock()
  private var value = false
  func set() { lock.withLock { value = true } }
  var isSet: Bool { lock.withLock { value } }
}

/// Lifts the soft limit on open descriptors to the hard one (a thousand clients each side).
func raiseDescriptorLimit() {
  var limit = rlimit()
  getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
  limit.rlim_cur = limit.rlim_max
  setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}
