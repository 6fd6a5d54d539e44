// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import CountdownClientNIO
import Dispatch
import Foundation

/// `countdown-bench serve --client`: the typed async client (CountdownClientNIO) beside the
/// raw socket, side by side in one run, on one connection to the same kind of server child:
/// pipelined starts per second, and events per second through a subscription.
/// A result written before a semaphore's signal and read after its wait.
final class ResultBox<T>: @unchecked Sendable {
  var result: Result<T, any Error>?
}

enum ClientBench {
  /// Runs `body` on Swift's concurrency and waits for it on this thread.
  static func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
      do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
      done.signal()
    }
    done.wait()
    return try box.result!.get()
  }

  static func run(rounds: Int, commands: Int, seconds: Double) throws {
    // For a profile of one part alone (perf record): COUNTDOWN_BENCH_CLIENT_PART=batches.
    if ProcessInfo.processInfo.environment["COUNTDOWN_BENCH_CLIENT_PART"] == "batches" {
      print("client starts/s in batches: \(Int(try starts(commands: commands, batch: 1000)))")
      return
    }
    print(
      "| round | raw starts/s | client, batches of 1,000 | ratio | client, 512 tasks of single calls | ratio | raw events/s | client events/s | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    var batchRatios: [Double] = []
    var singleRatios: [Double] = []
    var eventRatios: [Double] = []
    func f(_ x: Double) -> String { String(format: "%.2f", x) }
    for round in 1...rounds {
      let rawStarts = try ServeBench.throughput(op: "start", connections: 1, commands: commands)
      let batched = try starts(commands: commands, batch: 1000)
      let single = try starts(commands: commands, batch: nil)
      let rawEvents = try events(seconds: seconds, typed: false)
      let clientEvents = try events(seconds: seconds, typed: true)
      batchRatios.append(batched / rawStarts)
      singleRatios.append(single / rawStarts)
      eventRatios.append(clientEvents / rawEvents)
      print(
        "| \(round) | \(Int(rawStarts)) | \(Int(batched)) | \(f(batched / rawStarts)) | \(Int(single)) | \(f(single / rawStarts)) | \(Int(rawEvents)) | \(Int(clientEvents)) | \(f(clientEvents / rawEvents)) |"
      )
    }
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    print(
      "\nmedian ratios, client over raw: starts in batches \(f(median(batchRatios))), single calls \(f(median(singleRatios))), events \(f(median(eventRatios)))"
    )
  }

  /// Starts per second on one connection through the typed client: in batches of `batch`
  /// (``CountdownConnection/start(_:)`` of an array, 8 batches in flight), or with nil, single
  /// calls from 512 tasks each making its share one after another.
  static func starts(commands: Int, batch: Int?) throws -> Double {
    let child = try Child()
    defer { child.stop() }
    let socket = child.socket
    return try blocking {
      let c = try await CountdownConnection.connect(to: .unix(socket))
      let tasks = batch == nil ? 512 : 8
      let per = commands / tasks
      // The requests are made before the clock starts, as the raw bench's lines are: what
      // is timed is the client's work (encoding, sending, matching, decoding), not the
      // caller's.
      let requests = (0..<tasks).map { t in
        (0..<per).map { ActivityRequest.elapsed(id: "s\(t).\($0)", title: "S") }
      }
      let t0 = monotonicNanoseconds()
      try await withThrowingTaskGroup(of: Void.self) { group in
        for t in 0..<tasks {
          let mine = requests[t]
          group.addTask {
            if let batch {
              var k = 0
              while k < per {
                let n = Swift.min(batch, per - k)
                for r in try await c.start(Array(mine[k..<(k + n)])) { _ = try r.get() }
                k += n
              }
            } else {
              for r in mine { try await c.start(r) }
            }
          }
        }
        try await group.waitForAll()
      }
      let rate = Double(per * tasks) / (Double(monotonicNanoseconds() - t0) / 1e9)
      await c.close()
      return rate
    }
  }

  /// Events per second taken by one subscriber with ticks, over `seconds` after a second of
  /// warm-up, of 200,000 countdowns ticking (200,000 ticks a second): the raw reader counts
  /// lines, the client's subscription decodes each into a ``ServiceEvent``.
  static func events(seconds: Double, typed: Bool) throws -> Double {
    let child = try Child()
    defer { child.stop() }
    try ServeBench.startCountdowns(child, 200_000)
    let socket = child.socket
    if !typed {
      let client = try Client(socket)
      client.send(Array(#"{"op":"subscribe","ticks":true}"#.utf8) + [0x0A])
      var lines = 0
      var chunk = [UInt8](repeating: 0, count: 1 << 16)
      let warm = monotonicNanoseconds() + 1_000_000_000
      let end = warm + Int64(seconds * 1e9)
      var counting = false
      while true {
        let now = monotonicNanoseconds()
        if now >= end { break }
        if !counting && now >= warm {
          counting = true
          lines = 0
        }
        let n = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, 1 << 16, 0) }
        if n <= 0 { break }
        for i in 0..<n where chunk[i] == 0x0A { lines += 1 }
      }
      return Double(lines) / seconds
    }
    return try blocking {
      let c = try await CountdownConnection.connect(to: .unix(socket))
      // Counted over `seconds` from the first event after the warm-up that is less than
      // 50 ms old: the 200,000 activities' snapshot is decoded first, and the ticks that
      // came meanwhile wait in the socket; counting them as they are caught up with would
      // measure the backlog, not the rate.
      var count = 0
      var start: Int64?
      let warm = monotonicNanoseconds() + 1_000_000_000
      for try await update in c.subscribe(ticks: true) {
        guard case .event(let e) = update else { continue }
        let now = monotonicNanoseconds()
        if let start {
          if now >= start + Int64(seconds * 1e9) { break }
          count += 1
        } else if now >= warm && wallNanoseconds() / 1_000_000 - e.at < 50 {
          start = now
        }
      }
      await c.close()
      return Double(count) / seconds
    }
  }
}
