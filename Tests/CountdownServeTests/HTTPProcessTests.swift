// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// HTTP served by `countdown serve` as a process: a slow event-stream client with the server's
/// own threads, and a 2xx that holds after kill -9 and a restart.
@Suite("HTTP, served by the process", .serialized, .timeLimit(.minutes(3)))
struct HTTPProcessTests {
  @Test("A slow event-stream client is coalesced, then cut off; a fast one stays on time")
  func slowStream() async throws {
    try await onThread {
      // A child process, as for the socket's stalled subscriber: the other suites running
      // meanwhile in this process would otherwise take the server's threads' time.
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let server = try ServerProcess(
        [
          "--socket", "c.sock", "--state", ":memory:", "--http", "127.0.0.1:0",
          "--subscriber-buffer-bytes", "16384", "--slow-consumer-ms", "3500",
        ], in: dir)
      // Over its bound, a subscriber keeps the wake that took it over as one run, appends the
      // next wake's ticks one by one and coalesces from the wake after (SubscriberOutput): so
      // an activity's ticks coalesce only from its second tick after that. 3.5 s leaves three
      // ticks of every activity (at 1.5 s, when the 4,000 started within one wake and so tick
      // in one wake a second, the client was cut off before any tick could coalesce).
      let port = try #require(server.httpPort)
      let h = { (method: String, path: String) in try http(method, path, port: port) }
      // Both streams start empty; the 4000 activities come after (a stream without ids
      // includes activities started later).
      let slow = try EventStream(port: port, query: "?ticks=1", receiveBuffer: 2048)
      let fast = try EventStream(port: port, query: "?ticks=1")
      #expect(fast.next()?.name == "snapshot")
      let c = try TestClient(unix: dir.appendingPathComponent("c.sock").path)
      try c.startCountdowns(4_000, endingAfter: 600_300)
      // The fast client reads every line; the instant is read off the text (no JSON parse),
      // so that this debug-built reader keeps up. Meanwhile the slow one's socket fills (about
      // 2 MB of kernel buffers at ~300 KB/s), its ticks coalesce and it is cut off: /metrics
      // shows both, read between the fast client's lines.
      var lateness: [Int64] = []
      let warmUp = Date().addingTimeInterval(1.5)
      while Date() < warmUp, fast.client.line(timeout: 1) != nil {}
      var coalesced = 0.0
      var subscribers = 2.0
      let until = Date().addingTimeInterval(30)
      var nextCheck = Date().addingTimeInterval(1)
      while Date() < until, let line = fast.client.line(timeout: 2) {
        if line.hasPrefix(#"data: {"at":"#), line.contains(#""event":"tick""#) {
          let digits = line.dropFirst(12).prefix { $0.isNumber }
          lateness.append(nowMs() - (Int64(digits) ?? 0))
        }
        guard Date() >= nextCheck else { continue }
        nextCheck = Date().addingTimeInterval(1)
        for m in try h("GET", "/metrics").body.split(separator: "\n") {
          let parts = m.split(separator: " ")
          guard parts.count == 2 else { continue }
          if parts[0] == "countdown_ticks_coalesced_total" { coalesced = Double(parts[1]) ?? 0 }
          if parts[0] == "countdown_subscribers" { subscribers = Double(parts[1]) ?? 0 }
        }
        if coalesced > 0 && subscribers == 1 { break }
      }
      #expect(coalesced > 0, "no tick was coalesced")
      #expect(subscribers == 1, "the slow client was not cut off")
      #expect(lateness.count > 4_000 * 5, "received \(lateness.count)")
      lateness.sort()
      let p99 = lateness.isEmpty ? 0 : lateness[lateness.count * 99 / 100]
      #expect(p99 <= 150, "fast client's p99 lateness \(p99) ms")
      // The slow client's stream ends (read raw: what it holds is kernel buffers' worth).
      var ended = false
      var tail: [UInt8] = []
      let deadline = Date().addingTimeInterval(20)
      while Date() < deadline {
        var p = pollfd(fd: slow.client.fd, events: Int16(POLLIN), revents: 0)
        if poll(&p, 1, 500) <= 0 { continue }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(slow.client.fd, $0.baseAddress, 65536, 0) }
        if n <= 0 {
          ended = true
          break
        }
        tail = Array((tail + chunk[0..<n]).suffix(4096))
      }
      #expect(ended)
      let sawError = String(decoding: tail, as: UTF8.self).contains(#""code":"slowConsumer""#)
      // Best effort, as for a socket: the error is written only if the socket takes it.
      _ = sawError
    }
  }

  @Test("With a state file, a 2xx answer means committed: after kill -9 and a restart it holds")
  func durable() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let arguments = ["--socket", "c.sock", "--state", "s.db", "--http", "127.0.0.1:0"]
      var server = try ServerProcess(arguments, in: dir)
      var p = try #require(server.httpPort)
      let end = nowMs() + 600_000
      for k in 0..<40 {
        let r = try http(
          "POST", "/v1/activities", port: p,
          body: #"{"id":"h\#(k)","kind":"countdown","endDate":\#(end + Int64(k)),"title":"H\#(k)"}"#
        )
        #expect(r.status == 201)
      }
      #expect(try http("POST", "/v1/activities/h3/pause", port: p).status == 200)
      #expect(
        try http("PATCH", "/v1/activities/h5", port: p, body: #"{"title":"changed"}"#).status == 200
      )
      #expect(try http("POST", "/v1/activities/h7/end", port: p).status == 200)
      kill(server.pid, SIGKILL)
      #expect(server.exitStatus(within: 10) != nil)
      server = try ServerProcess(arguments, in: dir)
      #expect(server.startLine.contains("40 activities restored"), "\(server.startLine)")
      p = try #require(server.httpPort)
      let list = try http("GET", "/v1/activities", port: p).json["activities"] as? [[String: Any]]
      let byID = Dictionary(
        uniqueKeysWithValues: (list ?? []).map { ($0["id"] as? String ?? "", $0) })
      #expect(byID.count == 40)
      #expect(byID["h3"]?["phase"] as? String == "paused")
      #expect((byID["h5"]?["content"] as? [String: Any])?["title"] as? String == "changed")
      #expect(byID["h7"]?["phase"] as? String == "ended")
      #expect(byID["h9"]?["endDate"] as? Int64 == end + 9)
    }
  }
}
