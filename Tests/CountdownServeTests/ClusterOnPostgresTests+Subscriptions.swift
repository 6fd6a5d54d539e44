// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownCluster
import CountdownServerTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// Subscriptions and the board across nodes (docs/cluster.md, "Subscriptions across
/// nodes"), with real processes and a real PostgreSQL.
extension ClusterOnPostgresTests {
  /// A subscriber's lifecycle events (ticks left out), by activity, each as (event, at).
  final class Recorder: @unchecked Sendable {
    // @unchecked Sendable: the reading thread writes, the test reads after `stop()`.
    private let lock = NSLock()
    private var events: [String: [(String, Int64)]] = [:]
    private var running = true

    /// Reads `next` (an event's kind, id and at, or nil when nothing came) until stopped.
    init(_ next: @escaping () -> (String, String, Int64)?) {
      // The reading thread is the only one to call `next` (and to use its connection).
      struct Reader: @unchecked Sendable { let next: () -> (String, String, Int64)? }
      let reader = Reader(next: next)
      let t = Thread { [self] in
        while lock.withLock({ running }) {
          guard let (kind, id, at) = reader.next(), kind != "tick" else { continue }
          lock.withLock { events[id, default: []].append((kind, at)) }
        }
      }
      // Not kept: the thread holds this recorder until it ends (after `stop()`); kept, the
      // two would hold each other past the test.
      t.start()
    }

    func of(_ id: String) -> [String] { lock.withLock { (events[id] ?? []).map(\.0) } }
    func at(_ id: String, _ kind: String) -> [Int64] {
      lock.withLock { (events[id] ?? []).filter { $0.0 == kind }.map(\.1) }
    }

    /// Waits up to `seconds` for `check` to hold.
    func wait(_ seconds: Double, until check: () -> Bool) -> Bool { waitUntil(seconds, check) }

    func stop() { lock.withLock { running = false } }
  }

  static func socketRecorder(_ c: TestClient) -> Recorder {
    Recorder {
      guard let line = c.line(timeout: 0.2),
        let o = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
        o["ok"] == nil, let kind = o["event"] as? String, let id = o["id"] as? String
      else { return nil }
      return (kind, id, (o["at"] as? NSNumber)?.int64Value ?? 0)
    }
  }

  static func streamRecorder(_ s: EventStream) -> Recorder {
    Recorder {
      guard let (name, data) = s.next(timeout: 0.2), let id = data["id"] as? String else {
        return nil
      }
      return (name, id, (data["at"] as? NSNumber)?.int64Value ?? 0)
    }
  }

  @Test(
    "A subscription without ids and the board's stream span both nodes: one snapshot of all, then each node's events once, none from before the snapshot; after kill -9 of b, a's subscribers get what fell due in b's shards from a; b back as a new process: its events reach a's subscribers"
  )
  func subscriptionsSpanNodes() async throws {
    try await Self.withTwoNodes(forwarding: true) { p in
      let (a, owners, ca, cb) = (p.a, p.owners, p.ca, p.cb)
      var b = p.b
      let (xb, ya, eb, late) = (
        Self.id("x", ownedBy: "b", owners), Self.id("y", ownedBy: "a", owners),
        Self.id("e", ownedBy: "b", owners), Self.id("late", ownedBy: "b", owners)
      )
      var r = try Self.retrying(ca, #"{"op":"get","id":"\#(xb)"}"#)
      #expect(r["code"] as? String == "notFound", "\(r)")
      let far = nowMs() + 600_000
      let expiresAt = nowMs() + 2_500
      let killAt = nowMs() + 12_000
      for (client, id, end) in [
        (cb, xb, far), (ca, ya, far), (cb, eb, expiresAt), (cb, late, killAt + 300),
      ] {
        r = try client.request(
          #"{"op":"start","id":"\#(id)","kind":"countdown","endDate":\#(end),"title":"T"}"#)
        #expect(r["ok"] as? Bool == true, "\(r)")
      }

      // On a: a socket subscriber and the board's event stream.
      let sa = try TestClient(unix: p.dirA.appendingPathComponent("c.sock").path)
      r = try sa.request(#"{"rid":"s","op":"subscribe"}"#, timeout: 10)
      let snapshot = Set(
        (r["snapshot"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
      #expect(r["ok"] as? Bool == true && snapshot == [xb, ya, eb, late], "\(r)")
      let stream = try EventStream(port: try #require(a.httpPort))
      let first = stream.next(timeout: 10)
      #expect(first?.name == "snapshot", "\(String(describing: first))")
      let boardSnapshot = Set(
        (first?.data["activities"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
      #expect(boardSnapshot == [xb, ya, eb, late], "\(String(describing: first))")
      let socket = Self.socketRecorder(sa)
      let board = Self.streamRecorder(stream)
      defer {
        socket.stop()
        board.stop()
      }

      // Changes on both nodes, through either.
      let zb = Self.id("z", ownedBy: "b", owners)
      for (client, line) in [
        (cb, #"{"op":"pause","id":"\#(xb)"}"#), (ca, #"{"op":"pause","id":"\#(ya)"}"#),
        (
          ca,
          #"{"op":"start","id":"\#(zb)","kind":"countdown","endDate":\#(far),"title":"Z"}"#
        ),
        (cb, #"{"op":"end","id":"\#(zb)"}"#),
      ] {
        r = try client.request(line)
        #expect(r["ok"] as? Bool == true, "\(line): \(r)")
      }
      let expected: [String: [String]] = [
        xb: ["paused"], ya: ["paused"], zb: ["started", "ended"], eb: ["expired"],
      ]
      for (name, rec) in [("socket", socket), ("board", board)] {
        let all = rec.wait(8) { expected.allSatisfy { rec.of($0.key) == $0.value } }
        #expect(
          all, "\(name): \(expected.keys.map { "\($0): \(rec.of($0))" })")
        // Not before its instant.
        #expect(rec.at(eb, "expired").allSatisfy { $0 >= expiresAt }, "\(name)")
      }

      // Ticks of b's activity to a subscriber on a that wants them (and only that one: ids):
      // each once a second, none before its instant, none of another activity.
      let ticking = try TestClient(unix: p.dirA.appendingPathComponent("c.sock").path)
      r = try ticking.request(#"{"op":"subscribe","ticks":true,"ids":["\#(late)"]}"#, timeout: 10)
      #expect(
        (r["snapshot"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [late], "\(r)")
      var ticks: [(at: Int64, came: Int64)] = []
      let until = Date().addingTimeInterval(3.2)
      while Date() < until, let line = ticking.line(timeout: until.timeIntervalSinceNow) {
        guard let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { continue }
        #expect(o["id"] as? String == late, "\(line)")
        if o["event"] as? String == "tick", let at = (o["at"] as? NSNumber)?.int64Value {
          ticks.append((at, nowMs()))
        }
      }
      #expect(ticks.count >= 2, "\(ticks)")
      #expect(ticks.allSatisfy { $0.came >= $0.at }, "none early: \(ticks)")
      #expect(zip(ticks, ticks.dropFirst()).allSatisfy { $1.at - $0.at == 1000 }, "\(ticks)")
      _ = try ticking.request(#"{"op":"unsubscribe"}"#)

      // Memory: 5,000 starts in one read on b (one wake, 5,000 lifecycle events relayed and
      // kept in its ring) cost b megabytes, not gigabytes (each kept line once, not a copy of
      // the wake's lines per line).
      let before = b.rssKiB
      let burst = (0..<5000).map {
        #"{"op":"start","id":"burst\#($0)","kind":"elapsed","title":"B"}"#
      }
      let cbBurst = try TestClient(unix: p.dirB.appendingPathComponent("c.sock").path)
      cbBurst.send(burst.joined(separator: "\n") + "\n")
      var answered = 0
      while answered < burst.count, cbBurst.line(timeout: 20) != nil { answered += 1 }
      #expect(answered == burst.count)
      #expect(b.rssKiB - before < 150_000, "b grew by \(b.rssKiB - before) KiB")

      // The relay protocol itself, on b's --listen: its kept lifecycle events numbered 1, 2, …
      // in delivery order; asked again after one of them, only those after it.
      let portB = try #require(
        b.startLine.firstMatch(of: /tcp 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
      func relay(after: String) throws -> (head: [String: Any], lines: [(Int, String, String)]) {
        let raw = try TestClient(tcpPort: portB)
        raw.send(
          #"{"op":"auth","token":"ct-1"}"# + "\n" + #"{"op":"relay",\#(after)}"# + "\n")
        var head: [String: Any] = [:]
        var lines: [(Int, String, String)] = []
        while let line = raw.line(timeout: 0.5) {
          if line.hasPrefix("{") {
            let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            if o?["incarnation"] != nil { head = o ?? [:] }
            continue
          }
          let parts = line.split(separator: " ", maxSplits: 2)
          let o = try #require(
            try JSONSerialization.jsonObject(with: Data(parts[2].utf8)) as? [String: Any])
          lines.append(
            (Int(parts[1]) ?? -1, o["event"] as? String ?? "", o["id"] as? String ?? ""))
        }
        return (head, lines)
      }
      let full = try relay(after: #""incarnation":null,"after":0"#)
      let incarnation = try #require(full.head["incarnation"] as? String)
      #expect(full.head["gap"] as? Bool == false, "\(full.head)")
      #expect(full.lines.map(\.0) == Array(1...full.lines.count), "\(full.lines)")
      let seen = full.lines.map { "\($0.1) \($0.2)" }
      for wanted in [
        "started \(xb)", "started \(eb)", "started \(late)", "paused \(xb)", "started \(zb)",
        "ended \(zb)", "expired \(eb)",
      ] {
        #expect(seen.contains(wanted), "\(wanted) in \(seen)")
      }
      #expect(!seen.contains { $0.hasSuffix(" \(ya)") }, "a's activity relayed by b: \(seen)")
      let rest = try relay(after: #""incarnation":"\#(incarnation)","after":3"#)
      #expect(rest.lines.map(\.0) == Array(4...full.lines.count), "\(rest.lines)")
      let other = try relay(after: #""incarnation":"1","after":3"#)
      #expect(other.lines.count == full.lines.count, "another incarnation: all kept")

      // kill -9 of b: a takes its shards; `late` falls due while nobody serves its shard and
      // reaches a's subscribers once, from a, at its own instant.
      #expect(nowMs() < killAt, "the steps before the kill took too long")
      while nowMs() < killAt { usleep(10_000) }
      kill(b.pid, SIGKILL)
      _ = b.exitStatus(within: 5)
      for (name, rec) in [("socket", socket), ("board", board)] {
        let took = rec.wait(8) { rec.of(late) == ["expired"] }
        #expect(took, "\(name): \(rec.of(late))")
        #expect(rec.at(late, "expired") == [killAt + 300], "\(name)")
      }

      // a serves every shard (b's lease is gone, and so, soon, its name).
      let alone = try Self.split(p.url, among: ["a"])
      #expect(alone.values.allSatisfy { $0 == "a" } && alone.count == Self.shards, "\(alone)")
      // b again, as a new process: once the shards are split again, an activity of b's
      // reaches a's subscribers over the new relay connection.
      b = try Self.forwardingNode("b", p.url, in: p.dirB)
      let again = try Self.split(p.url, among: ["a", "b"])
      let nb = Self.id("n", ownedBy: "b", again)
      let ends = nowMs() + 1_500
      r = try Self.retrying(
        ca, #"{"op":"start","id":"\#(nb)","kind":"countdown","endDate":\#(ends),"title":"N"}"#)
      #expect(r["ok"] as? Bool == true, "\(r)")
      let cb2 = try TestClient(unix: p.dirB.appendingPathComponent("c.sock").path)
      r = try cb2.request(#"{"op":"get","id":"\#(nb)"}"#)
      #expect(r["ok"] as? Bool == true, "b holds it: \(r)")
      for (name, rec) in [("socket", socket), ("board", board)] {
        let came = rec.wait(8) { rec.of(nb) == ["started", "expired"] }
        #expect(came, "\(name): \(rec.of(nb))")
      }
      let metrics = try http("GET", "/metrics", port: try #require(a.httpPort))
      let relayedIn = metrics.body.split(separator: "\n").first {
        $0.hasPrefix("countdown_cluster_events_relayed_in_total ")
      }
      #expect(
        Double(relayedIn?.split(separator: " ").last ?? "0") ?? 0 >= 6,
        "\(String(describing: relayedIn))")
      // Nothing came twice.
      for (name, rec) in [("socket", socket), ("board", board)] {
        for id in [xb, ya, eb, late, zb] {
          let kinds = rec.of(id)
          #expect(Set(kinds).count == kinds.count, "\(name): \(id) \(kinds)")
        }
      }
    }
  }
}
