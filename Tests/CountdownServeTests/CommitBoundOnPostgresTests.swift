// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownCluster
import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

/// A commit cut off from PostgreSQL (issue 55; docs/cluster.md, "A commit cut off from
/// PostgreSQL"): PostgreSQL behind a proxy that partitions (holds every byte, closes nothing),
/// as a network cut does. A command in flight is answered within `--commit-timeout-ms`, and
/// so are the ones after it, until the database answers again.
@Suite(
  "A commit cut off from PostgreSQL", .serialized,
  .enabled(if: PostgresTestServer.url != nil, "needs a PostgreSQL server: run make postgres"))
struct CommitBoundOnPostgresTests {
  /// The scratch server's port, from its URL.
  static func port(of url: String) throws -> Int {
    let afterHost = try #require(url.split(separator: "@").last)
    let port = afterHost.split(separator: ":").last?.split(separator: "/").first
    return try #require(port.flatMap { Int($0) }, "no port in \(url)")
  }

  /// `request`'s reply and how long it took, in ms.
  static func timed(_ c: TestClient, _ request: String) throws -> ([String: Any], Int64) {
    let t = nowMs()
    let r = try c.request(request, timeout: 30)
    return (r, nowMs() - t)
  }

  @Test(
    "One server: a command sent while PostgreSQL is cut off is answered within the bound (storageFailed: may or may not), so are the next, and once healed it goes on; what was acknowledged is kept"
  )
  func singleServer() async throws {
    let url = try PostgresTestServer.freshDatabaseURL()
    let proxy = try FaultProxy(to: try Self.port(of: url))
    defer { proxy.stop() }
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let server = try DurabilityTests.serve(
        dir, ["--commit-timeout-ms", "1000"], state: ["--postgres", proxy.through(url)])
      let c = try TestClient(unix: dir.appendingPathComponent("c.sock").path)
      var r = try c.request(#"{"op":"start","id":"before","kind":"elapsed","title":"B"}"#)
      #expect(r["ok"] as? Bool == true, "\(r)")

      proxy.hold()
      // The commit in flight: no answer from PostgreSQL, the connection dropped after 1 s.
      var took: Int64
      (r, took) = try Self.timed(c, #"{"op":"start","id":"cut","kind":"elapsed","title":"C"}"#)
      #expect(r["code"] as? String == "storageFailed", "\(r)")
      let message = r["message"] as? String ?? ""
      #expect(message.contains("may or may not have been carried out"), "\(r)")
      #expect(message.contains("no answer within 1000 ms"), "\(r)")
      #expect(took >= 900 && took <= 3_500, "answered after \(took) ms")
      // The ones after it, while the cut lasts: each answered, none waits for the cut's end.
      for k in 0..<3 {
        (r, took) = try Self.timed(
          c, #"{"op":"start","id":"later\#(k)","kind":"elapsed","title":"L"}"#)
        #expect(r["code"] as? String == "storageFailed", "\(r)")
        #expect(took <= 4_500, "answered after \(took) ms")
      }

      proxy.heal()
      // It goes on without a restart.
      let until = Date().addingTimeInterval(20)
      var healed = false
      var k = 0
      while Date() < until {
        r = try c.request(
          #"{"op":"start","id":"after\#(k)","kind":"elapsed","title":"A"}"#, timeout: 30)
        k += 1
        if r["ok"] as? Bool == true {
          healed = true
          break
        }
        usleep(200_000)
      }
      #expect(healed, "no command acknowledged within 20 s of the cut's end: \(r)")
      r = try c.request(#"{"op":"get","id":"before"}"#)
      #expect(r["ok"] as? Bool == true, "\(r)")
      // None of the later ones was carried out: each failed before its commit was sent.
      for k in 0..<3 {
        r = try c.request(#"{"op":"get","id":"later\#(k)"}"#)
        #expect(r["code"] as? String == "notFound", "later\(k): \(r)")
      }
      kill(server.pid, SIGTERM)
      #expect(server.exitStatus(within: 10) == 0)
    }
  }

  @Test(
    "A node cut off from PostgreSQL, its clients still reaching it: the command in flight is answered within the lease, the node stops serving, another takes its shards; healed, it serves again"
  )
  func node() async throws {
    let url = try PostgresTestServer.freshDatabaseURL()
    let proxy = try FaultProxy(to: try Self.port(of: url))
    defer { proxy.stop() }
    try await onThread {
      let (dirA, dirB) = (temporaryDirectory(), temporaryDirectory())
      defer {
        try? FileManager.default.removeItem(at: dirA)
        try? FileManager.default.removeItem(at: dirB)
      }
      let a = try ClusterOnPostgresTests.node("a", proxy.through(url), in: dirA)
      let b = try ClusterOnPostgresTests.node("b", url, in: dirB)
      let owners = try ClusterOnPostgresTests.split(url, among: ["a", "b"])
      let ca = try TestClient(unix: dirA.appendingPathComponent("c.sock").path)
      let cb = try TestClient(unix: dirB.appendingPathComponent("c.sock").path)
      let shards = ClusterOnPostgresTests.shards
      for c in [ca, cb] { try ClusterOnPostgresTests.waitServing(c, shards / 2) }
      let before = ClusterOnPostgresTests.id("before", ownedBy: "a", owners)
      var r = try ClusterOnPostgresTests.retrying(
        ca, #"{"op":"start","id":"\#(before)","kind":"elapsed","title":"B"}"#)
      #expect(r["ok"] as? Bool == true, "\(r)")

      proxy.hold()
      let cut = ClusterOnPostgresTests.id("cut", ownedBy: "a", owners)
      var took: Int64
      (r, took) = try Self.timed(
        ca, #"{"op":"start","id":"\#(cut)","kind":"elapsed","title":"C"}"#)
      let code = r["code"] as? String
      #expect(code == "storageFailed" || code == "unavailable", "\(r)")
      // The lease is 1 s: the commit's bound (the lease), or the shard's stop before it.
      #expect(took <= Int64(ClusterOnPostgresTests.leaseMs) + 2_500, "answered after \(took) ms")
      // b takes a's shards: a's activity acknowledged before the cut is served by b.
      r = try ClusterOnPostgresTests.retrying(cb, #"{"op":"get","id":"\#(before)"}"#)
      #expect(r["ok"] as? Bool == true, "\(r)")
      // a, still cut off, answers every command at once: its shards are b's now.
      (r, took) = try Self.timed(ca, #"{"op":"get","id":"\#(before)"}"#)
      #expect(r["code"] as? String == "unavailable", "\(r)")
      #expect(took <= 2_500, "answered after \(took) ms")

      proxy.heal()
      // a comes back to its share of the shards.
      let back = try ClusterOnPostgresTests.split(url, among: ["a", "b"])
      #expect(back.values.filter { $0 == "a" }.count == shards / 2, "\(back)")
      try ClusterOnPostgresTests.waitServing(ca, shards / 2)
      for (c, name) in [(ca, "a"), (cb, "b")] {
        let id = ClusterOnPostgresTests.id("after", ownedBy: name, back)
        r = try ClusterOnPostgresTests.retrying(
          c, #"{"op":"start","id":"\#(id)","kind":"elapsed","title":"A"}"#)
        #expect(r["ok"] as? Bool == true, "\(name): \(r)")
      }
      for p in [a, b] { kill(p.pid, SIGTERM) }
      #expect(a.exitStatus(within: 10) == 0)
      #expect(b.exitStatus(within: 10) == 0)
    }
  }
}
