// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import CountdownClient
import CountdownServer
import Foundation
import Histogram

#if canImport(Glibc)
  import Glibc
#endif

/// `countdown-bench abuse`: a well-behaved client's request latency while other clients
/// misbehave, beside the same client alone, in alternating rounds against a real server child
/// (docs/security.md: a misbehaving client must not cost the others their p99).
///
/// The well-behaved client sends a `get` every 5 ms on the Unix socket and times each reply.
/// The misbehaving ones, all at once: HTTP heads sent a byte a second (slowloris), HTTP bodies
/// that never end, socket clients pipelining `list` without reading a reply, event streams
/// that never read, and idle TCP connections.
struct AbuseBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "abuse",
    abstract: "A well-behaved client's latency while others misbehave, beside it alone.")

  @Option(help: "Seconds measured per run.")
  var seconds: Double = 5

  @Option(help: "Alternating rounds (alone, abused).")
  var rounds = 3

  @Option(help: "Activities in the server (each listing is that many objects).")
  var activities = 1_000

  func run() throws {
    raiseDescriptorLimit()
    print("| run | requests | p50 | p99 | max | server CPU | server RSS |")
    print("|---|---|---|---|---|---|---|")
    var p99: [String: [Double]] = ["alone": [], "abused": []]
    for _ in 0..<rounds {
      for abused in [false, true] {
        let (latency, count, cpu, rss) = try measure(abused: abused)
        let name = abused ? "abused" : "alone"
        p99[name]!.append(latency.p99)
        print(
          "| \(name) | \(count) | \(fmt(latency.p50)) | \(fmt(latency.p99)) | \(fmt(latency.max)) | \(String(format: "%.1f%%", cpu * 100)) | \(rss >> 20) MiB |"
        )
      }
    }
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    let alone = median(p99["alone"]!)
    let abused = median(p99["abused"]!)
    print(
      "| median p99 | | alone \(fmt(alone)), abused \(fmt(abused)): **\(String(format: "%.2f", abused / alone))x** | | | | |"
    )
  }

  func measure(abused: Bool) throws -> (Latency, Int, Double, Int64) {
    let child = try Child(http: true)
    defer { child.stop() }
    guard let port = child.httpPort else { throw ValidationError("the child did not serve HTTP") }
    try ServeBench.startCountdowns(child, activities)
    var held: [Int32] = []
    defer { for fd in held { close(fd) } }
    let stop = StopFlag()
    var threads: [Thread] = []
    if abused {
      // 200 slowloris heads, a byte a second; 50 bodies that never end.
      let head = Array("GET /v1/activities HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".utf8)
      var slow: [Int32] = []
      for _ in 0..<200 { slow.append(try UnixSocket.connect(loopbackPort: port)) }
      for _ in 0..<50 {
        let fd = try UnixSocket.connect(loopbackPort: port)
        UnixSocket.sendAll(
          fd,
          Array(
            "POST /v1/activities HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":"
              .utf8))
        held.append(fd)
      }
      held += slow
      let slowFDs = slow
      let trickle = Thread {
        var k = 0
        while !stop.isSet {
          for fd in slowFDs { UnixSocket.sendAll(fd, [head[k % head.count]]) }
          k += 1
          usleep(1_000_000)
        }
      }
      trickle.start()
      threads.append(trickle)
      // 5 socket clients pipelining 3000 listings each, never reading.
      let listings = Array(String(repeating: #"{"op":"list"}"# + "\n", count: 3000).utf8)
      for _ in 0..<5 {
        let c = try UnixSocket.connect(child.socket)
        var small: Int32 = 4096
        setsockopt(c, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let writer = Thread { UnixSocket.sendAll(c, listings) }
        writer.start()
        held.append(c)
      }
      // 20 event streams with ticks that never read; 100 idle TCP connections.
      for _ in 0..<20 {
        let fd = try UnixSocket.connect(loopbackPort: port, receiveBuffer: 4096)
        UnixSocket.sendAll(
          fd, Array("GET /v1/events?ticks=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        held.append(fd)
      }
      for _ in 0..<100 { held.append(try UnixSocket.connect(loopbackPort: port)) }
    }
    // The well-behaved client.
    let good = try Client(child.socket)
    let request = Array(#"{"op":"get","id":"a0"}"#.utf8) + [0x0A]
    var h = Histogram<UInt64>(
      highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    usleep(1_000_000)
    let cpu0 = child.cpuNanoseconds()
    let t0 = monotonicNanoseconds()
    let end = t0 + Int64(seconds * 1e9)
    var count = 0
    while monotonicNanoseconds() < end {
      let sent = monotonicNanoseconds()
      good.send(request)
      good.awaitReplies(1)
      h.record(UInt64(monotonicNanoseconds() - sent))
      count += 1
      usleep(5_000)
    }
    let cpu = Double(child.cpuNanoseconds() - cpu0) / Double(monotonicNanoseconds() - t0)
    let rss = residentBytes(of: child.process.processIdentifier)
    stop.set()
    for t in threads { while !t.isFinished { usleep(10_000) } }
    return (Latency(h), count, cpu, rss)
  }
}
