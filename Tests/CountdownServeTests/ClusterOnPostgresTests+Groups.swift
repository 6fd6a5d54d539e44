// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

/// A key with groups on a cluster (docs/security.md, "Groups"; docs/cluster.md): a command
/// forwarded to the node that owns the activity carries the key's groups, and that node holds
/// it to them; a list gathered from every node is held to them on each node.
extension ClusterOnPostgresTests {
  static let groupKeys = """
    control ops-a-0001 gate-a
    admin backend-0001
    """

  @Test(
    "A group key's commands forwarded to the owner are held to its groups there: another group's activity is notFound and unchanged, its own is run; lists, snapshots and relayed events from both nodes hold its groups only"
  )
  func groupKeyForwarded() async throws {
    try await Self.withTwoNodes(
      forwarding: true, files: ["access": Self.groupKeys], extra: ["--access", "access"]
    ) { p in
      let (owners, ca, cb) = (p.owners, p.ca, p.cb)
      // On b: one activity of gate-a, one of gate-b; on a: one of gate-b.
      let (ab, bb, ba) = (
        Self.id("ga", ownedBy: "b", owners), Self.id("gb", ownedBy: "b", owners),
        Self.id("gc", ownedBy: "a", owners)
      )
      let end = nowMs() + 600_000
      for (c, id, group) in [(cb, ab, "gate-a"), (cb, bb, "gate-b"), (ca, ba, "gate-b")] {
        let r = try Self.retrying(
          c,
          #"{"op":"start","id":"\#(id)","kind":"countdown","endDate":\#(end),"title":"T","group":"\#(group)"}"#
        )
        #expect(r["ok"] as? Bool == true, "\(r)")
      }
      // Until a has seen b take each of their shards.
      for id in [ab, bb, ba] {
        let r = try Self.retrying(ca, #"{"op":"get","id":"\#(id)"}"#)
        #expect(r["ok"] as? Bool == true, "\(r)")
      }
      // Through a's TCP listener with the group key: b's gate-b activity is as if absent.
      let port = try #require(p.a.tcpPort, "\(p.a.startLine)")
      let key = try TestClient(tcpPort: port)
      #expect(try key.request(#"{"op":"auth","token":"ops-a-0001"}"#)["ok"] as? Bool == true)
      let absent = try key.request(#"{"op":"get","id":"nope-\#(bb)"}"#)
      for op in ["get", "pause", "end"] {
        let r = try key.request(#"{"op":"\#(op)","id":"\#(bb)"}"#)
        #expect(r["code"] as? String == "notFound", "\(op) \(bb): \(r)")
        #expect(
          r["message"] as? String
            == (absent["message"] as? String)?.replacingOccurrences(of: "nope-", with: ""),
          "\(r) \(absent)")
      }
      let kept = try cb.request(#"{"op":"get","id":"\#(bb)"}"#)
      #expect((kept["activity"] as? [String: Any])?["phase"] as? String == "active", "\(kept)")
      // Its own group's, on b, through a: run there.
      let pause = try key.request(#"{"op":"pause","id":"\#(ab)"}"#)
      #expect(pause["ok"] as? Bool == true, "\(pause)")
      let paused = try cb.request(#"{"op":"get","id":"\#(ab)"}"#)
      #expect((paused["activity"] as? [String: Any])?["phase"] as? String == "paused")
      // A start for b's shard must name its group; with it, b keeps the group.
      let made = Self.id("gd", ownedBy: "b", owners)
      let refused = try key.request(
        #"{"op":"start","id":"\#(made)","kind":"elapsed","title":"M","group":"gate-b"}"#)
      #expect(refused["code"] as? String == "forbidden", "\(refused)")
      let started = try key.request(
        #"{"op":"start","id":"\#(made)","kind":"elapsed","title":"M","group":"gate-a"}"#)
      #expect(started["ok"] as? Bool == true, "\(started)")
      let onB = try cb.request(#"{"op":"get","id":"\#(made)"}"#)
      #expect((onB["activity"] as? [String: Any])?["group"] as? String == "gate-a", "\(onB)")
      // A list spans both nodes and holds the key's group only, on the socket and on HTTP.
      func listed(_ reply: [String: Any]) -> Set<String> {
        Set((reply["activities"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
      }
      #expect(listed(try key.request(#"{"op":"list"}"#)) == [ab, made])
      #expect(listed(try ca.request(#"{"op":"list","group":"gate-b"}"#)) == [bb, ba])
      let httpPort = try #require(p.a.httpPort)
      let headers = ["Authorization": "Bearer ops-a-0001"]
      let h = try http("GET", "/v1/activities", port: httpPort, headers: headers)
      #expect(listed(h.json) == [ab, made], "\(h.body)")
      // Over HTTP too: the owner holds a forwarded command to the key's groups.
      let end404 = try http("POST", "/v1/activities/\(bb)/end", port: httpPort, headers: headers)
      #expect(end404.status == 404, "\(end404.body)")
      let resumed = try http(
        "POST", "/v1/activities/\(ab)/resume", port: httpPort, headers: headers)
      #expect(resumed.status == 200 && resumed.json["phase"] as? String == "active")
      #expect(
        (try cb.request(#"{"op":"get","id":"\#(bb)"}"#)["activity"] as? [String: Any])?["phase"]
          as? String == "active")
      // A subscription through a spans both nodes and holds the key's group only: its
      // snapshot from both, then a's own events and b's relayed ones (the relay line names
      // each event's group).
      let aa = Self.id("ge", ownedBy: "a", owners)
      let own = try ca.request(
        #"{"op":"start","id":"\#(aa)","kind":"elapsed","title":"A","group":"gate-a"}"#)
      #expect(own["ok"] as? Bool == true, "\(own)")
      let subscriber = try TestClient(tcpPort: port)
      _ = try subscriber.request(#"{"op":"auth","token":"ops-a-0001"}"#)
      let sub = try subscriber.request(#"{"op":"subscribe"}"#)
      #expect(sub["ok"] as? Bool == true, "\(sub)")
      #expect(listed(["activities": sub["snapshot"] ?? []]) == [ab, made, aa], "\(sub)")
      let late = Self.id("gf", ownedBy: "b", owners)
      for (c, line) in [
        (cb, #"{"op":"pause","id":"\#(bb)"}"#), (ca, #"{"op":"pause","id":"\#(ba)"}"#),
        (cb, #"{"op":"pause","id":"\#(made)"}"#), (ca, #"{"op":"pause","id":"\#(aa)"}"#),
        (cb, #"{"op":"start","id":"\#(late)","kind":"elapsed","title":"L","group":"gate-a"}"#),
        (cb, #"{"op":"start","id":"gx","kind":"elapsed","title":"X","group":"gate-b"}"#),
      ] {
        let r = try c.request(line)
        #expect(r["ok"] as? Bool == true, "\(line): \(r)")
      }
      var seen: Set<String> = []
      while let e = try? subscriber.json(timeout: 3) {
        seen.insert("\(e["event"] as? String ?? "?") \(e["id"] as? String ?? "?")")
        if seen.count >= 3 { break }
      }
      #expect(seen == ["paused \(made)", "paused \(aa)", "started \(late)"], "\(seen)")
      #expect((try? subscriber.json(timeout: 1.5)) == nil, "nothing of gate-b")
      // The same on a's event stream with the key.
      let stream = try EventStream(port: httpPort, headers: headers)
      let first = try #require(stream.next())
      #expect(
        Set((first.data["activities"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
          == [ab, made, aa, late], "\(first.data)")
    }
  }
}
