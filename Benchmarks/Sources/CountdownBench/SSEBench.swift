import ArgumentParser
import CountdownServer
import Foundation
import Histogram

#if canImport(Glibc)
  import Glibc
#endif

/// `countdown-bench sse`: server-sent events fan-out (`GET /v1/events`, SPEC §7) from a real
/// server child over real TCP connections: the lateness of each event at the clients (receipt
/// time − `at`) and the server's CPU.
struct SSEBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "sse",
    abstract: "Server-sent events fan-out: lateness at the clients and the server's CPU.")

  @Option(help: "Seconds measured per run (after 1.5 s of warm-up).")
  var seconds: Double = 5

  @Option(help: "Updates a second in the lifecycle run (each goes to every client).")
  var updatesPerSecond = 100

  @Option(
    help: ArgumentHelp(
      "Seconds after the clients connect before measuring.",
      discussion:
        "Each client's snapshot comes first: with ticks, 100 snapshots of 10k activities are 150 MB, which the clients take a few seconds to read while ticks queue behind them. The measurement is of the steady state after that."
    ))
  var warmup: Double = 5

  func run() throws {
    raiseDescriptorLimit()
    print("| run | p50 | p99 | max | server CPU | events/s at the clients |")
    print("|---|---|---|---|---|---|")
    let lifecycle = try measure(activities: 1_000, clients: 1_000, ticks: false)
    print(
      "| lifecycle events: 1000 activities, \(updatesPerSecond) updates/s, 1000 clients | \(lifecycle.row) |"
    )
    let ticking = try measure(activities: 10_000, clients: 100, ticks: true)
    print("| ticks: 10k activities, 100 clients (ticks=1) | \(ticking.row) |")
  }

  func measure(activities: Int, clients: Int, ticks: Bool) throws -> ServeBench.LatenessResult {
    let child = try Child(http: true)
    defer { child.stop() }
    guard let port = child.httpPort else { throw ValidationError("the child did not serve HTTP") }
    try ServeBench.startCountdowns(child, activities)
    let streams = try (0..<clients).map { _ in
      try EventStreamClient(port: port, query: ticks ? "?ticks=1" : "")
    }
    let recorder = LatencyBox()
    let stop = StopFlag()
    let warmUpUntil = monotonicNanoseconds() + Int64(warmup * 1e9)
    var threads: [Thread] = []
    // Readers: one thread per 50 clients (two cores: the readers share them with the server).
    for start in stride(from: 0, to: streams.count, by: 50) {
      let group = Array(streams[start..<min(start + 50, streams.count)])
      let t = Thread {
        EventStreamClient.read(group, recorder: recorder, stop: stop, after: warmUpUntil)
      }
      t.start()
      threads.append(t)
    }
    if !ticks {
      threads += try ServeBench.streamUpdates(
        child, activities: activities, perSecond: updatesPerSecond, until: stop)
    }
    return ServeBench.measure(
      child, seconds: seconds, threads: threads, stop: stop, recorder: recorder,
      warmup: warmup)
  }
}

/// One `GET /v1/events` connection over TCP.
final class EventStreamClient: @unchecked Sendable {
  // @unchecked Sendable: read by one thread at a time.
  let fd: Int32

  init(port: Int, query: String) throws {
    fd = try UnixSocket.connect(loopbackPort: port)
    let request = "GET /v1/events\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    _ = Array(request.utf8).withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count, 0) }
  }

  deinit { close(fd) }

  /// Records the lateness of every `data:` line of an event received after `after` (monotonic
  /// ns), until `stop` (the snapshot's comes before).
  static func read(
    _ clients: [EventStreamClient], recorder: LatencyBox, stop: StopFlag, after: Int64
  ) {
    Client.recordLateness(
      clients.map(\.fd), linePrefix: Array(#"data: {"at":"#.utf8), recorder: recorder,
      stop: stop, after: after)
  }
}
