// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// Groups (docs/security.md, "Groups"): a key with groups sees and commands only its groups'
/// activities, on the socket and on HTTP, in lists, snapshots and event streams; `group=`
/// narrows; a group is fixed at start and kept by a restart.
@Suite("Access: groups", .serialized)
struct GroupAccessTests {
  /// A view key of gate-a, a control key of gate-a and gate-b, a control key of gate-a, and an
  /// admin key without groups.
  static let file = """
    view screen-a-0001 gate-a
    control ops-ab-0001 gate-a,gate-b
    control ops-a-0001 gate-a
    admin backend-0001
    """

  /// A server with the file, TCP and HTTP, on a state file in `stateDir`, and (`seed`) the
  /// activities a1 (gate-a), b1 (gate-b) and n1 (no group), started on the Unix socket.
  static func server(stateDir: URL, seed: Bool = true) throws -> (
    RunningServer, http: Int, tcp: Int
  ) {
    let access = stateDir.appendingPathComponent("access").path
    if !FileManager.default.fileExists(atPath: access) {
      try file.write(toFile: access, atomically: false, encoding: .utf8)
      chmod(access, 0o600)
    }
    let s = try RunningServer.reopening {
      $0.accessPath = access
      $0.statePath = stateDir.appendingPathComponent("state.db").path
      $0.listen = "127.0.0.1:0"
      $0.http = "127.0.0.1:0"
    }
    if seed {
      let c = try s.client()
      let end = nowMs() + 600_000
      for (id, group) in [("a1", "gate-a"), ("b1", "gate-b"), ("n1", nil)] {
        let g = group.map { #","group":"\#($0)""# } ?? ""
        let r = try c.request(
          #"{"op":"start","id":"\#(id)","kind":"countdown","endDate":\#(end),"title":"T"\#(g)}"#)
        guard r["ok"] as? Bool == true else { throw TestFailure("\(r)") }
      }
    }
    return (s, s.server.httpAddress!.port!, s.server.tcpAddress!.port!)
  }

  static func ids(_ reply: [String: Any], _ key: String = "activities") -> Set<String> {
    Set((reply[key] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
  }

  static func client(tcp: Int, key: String) throws -> TestClient {
    let c = try TestClient(tcpPort: tcp)
    let r = try c.request(#"{"op":"auth","token":"\#(key)"}"#)
    guard r["ok"] as? Bool == true else { throw TestFailure("auth: \(r)") }
    return c
  }

  @Test(
    "A group key on the socket: others' activities are notFound word for word and unchanged; lists and snapshots hold its groups only; a start must name one of them"
  )
  func socket() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let (s, _, tcp) = try Self.server(stateDir: dir)
      let admin = try s.client()
      let a = try Self.client(tcp: tcp, key: "ops-a-0001")
      let absent = try a.request(#"{"op":"get","id":"nope"}"#)
      #expect(absent["code"] as? String == "notFound")
      // b1 (gate-b) and n1 (no group) are as if absent, whatever the command.
      for id in ["b1", "n1"] {
        for op in ["get", "pause", "resume", "end"] {
          let r = try a.request(#"{"op":"\#(op)","id":"\#(id)"}"#)
          #expect(r["code"] as? String == "notFound", "\(op) \(id): \(r)")
          #expect(
            r["message"] as? String
              == (absent["message"] as? String)?.replacingOccurrences(of: "nope", with: id))
        }
        let u = try a.request(#"{"op":"update","id":"\#(id)","subtitle":"x"}"#)
        #expect(u["code"] as? String == "notFound", "\(u)")
        let kept = try admin.request(#"{"op":"get","id":"\#(id)"}"#)
        let activity = kept["activity"] as? [String: Any] ?? [:]
        #expect(activity["phase"] as? String == "active", "\(kept)")
        #expect((activity["content"] as? [String: Any])?["subtitle"] == nil, "\(kept)")
      }
      // Its own group: every command.
      #expect(try a.request(#"{"op":"pause","id":"a1"}"#)["ok"] as? Bool == true)
      let got = try a.request(#"{"op":"get","id":"a1"}"#)
      #expect((got["activity"] as? [String: Any])?["group"] as? String == "gate-a", "\(got)")
      #expect(try a.request(#"{"op":"resume","id":"a1"}"#)["ok"] as? Bool == true)
      // Lists: its groups only; group= narrows, to nothing outside them.
      #expect(Self.ids(try a.request(#"{"op":"list"}"#)) == ["a1"])
      #expect(Self.ids(try a.request(#"{"op":"list","group":"gate-b"}"#)) == [])
      #expect(Self.ids(try a.request(#"{"op":"list","soonest":5}"#)) == ["a1"])
      let ab = try Self.client(tcp: tcp, key: "ops-ab-0001")
      #expect(Self.ids(try ab.request(#"{"op":"list"}"#)) == ["a1", "b1"])
      #expect(Self.ids(try ab.request(#"{"op":"list","group":"gate-b"}"#)) == ["b1"])
      #expect(Self.ids(try admin.request(#"{"op":"list"}"#)) == ["a1", "b1", "n1"])
      #expect(Self.ids(try admin.request(#"{"op":"list","group":"gate-a"}"#)) == ["a1"])
      // A start names one of the key's groups.
      let end = nowMs() + 600_000
      let none = try a.request(
        #"{"op":"start","id":"s1","kind":"countdown","endDate":\#(end),"title":"S"}"#)
      #expect(none["code"] as? String == "forbidden", "\(none)")
      #expect((none["message"] as? String ?? "").contains("give group"), "\(none)")
      let other = try a.request(
        #"{"op":"start","id":"s1","kind":"countdown","endDate":\#(end),"title":"S","group":"gate-b"}"#
      )
      #expect(other["code"] as? String == "forbidden", "\(other)")
      #expect(try admin.request(#"{"op":"get","id":"s1"}"#)["code"] as? String == "notFound")
      let mine = try a.request(
        #"{"op":"start","id":"s1","kind":"countdown","endDate":\#(end),"title":"S","group":"gate-a"}"#
      )
      #expect(mine["ok"] as? Bool == true, "\(mine)")
      // A subscription: its snapshot and its events are its groups' only.
      let sub = try Self.client(tcp: tcp, key: "screen-a-0001")
      let snapshot = try sub.request(#"{"op":"subscribe"}"#)
      #expect(Self.ids(snapshot, "snapshot") == ["a1", "s1"], "\(snapshot)")
      for (id, group) in [("b2", "gate-b"), ("a2", "gate-a")] {
        let r = try admin.request(
          #"{"op":"start","id":"\#(id)","kind":"countdown","endDate":\#(end),"title":"T","group":"\#(group)"}"#
        )
        #expect(r["ok"] as? Bool == true, "\(r)")
      }
      _ = try admin.request(#"{"op":"pause","id":"b1"}"#)
      _ = try admin.request(#"{"op":"pause","id":"n1"}"#)
      _ = try admin.request(#"{"op":"pause","id":"a2"}"#)
      var seen: [(String, String)] = []
      var started: [String: Any] = [:]
      while seen.count < 2, let e = try? sub.json(timeout: 3) {
        seen.append((e["event"] as? String ?? "", e["id"] as? String ?? ""))
        if e["event"] as? String == "started" { started = e }
      }
      #expect(seen.map(\.1) == ["a2", "a2"], "\(seen)")
      #expect(seen.map(\.0) == ["started", "paused"], "\(seen)")
      #expect(started["group"] as? String == "gate-a", "\(started)")
      // Nothing of b1, b2 or n1 follows.
      #expect((try? sub.json(timeout: 1)) == nil)
      // A view key of gate-a cannot start even in its group (its role).
      let view = try sub.request(
        #"{"op":"start","id":"v1","kind":"elapsed","title":"V","group":"gate-a"}"#)
      #expect(view["code"] as? String == "forbidden", "\(view)")
    }
  }

  @Test(
    "A group key over HTTP: 404 for others' activities, lists and the event stream of its groups only, ?group= narrows; the groups survive a restart and the stream after it is filtered"
  )
  func http() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      var (s, port, _) = try Self.server(stateDir: dir)
      let key = ["Authorization": "Bearer ops-a-0001"]
      for (method, path) in [
        ("GET", "/v1/activities/b1"), ("POST", "/v1/activities/b1/pause"),
        ("POST", "/v1/activities/b1/end"), ("PATCH", "/v1/activities/n1"),
      ] {
        let r = try CountdownServerTestSupport.http(
          method, path, port: port, body: method == "PATCH" ? #"{"subtitle":"x"}"# : nil,
          headers: key)
        #expect(r.status == 404 && r.code == "notFound", "\(method) \(path): \(r.body)")
      }
      func listed(_ query: String, _ headers: [String: String]) throws -> Set<String> {
        let r = try CountdownServerTestSupport.http(
          "GET", "/v1/activities\(query)", port: port, headers: headers)
        return Set(
          (r.json["activities"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
      }
      #expect(try listed("", key) == ["a1"])
      let admin = ["Authorization": "Bearer backend-0001"]
      #expect(try listed("?group=gate-b", admin) == ["b1"])
      #expect(try listed("?group=gate-a", key) == ["a1"])
      let bad = try CountdownServerTestSupport.http(
        "GET", "/v1/activities?group=no%20spaces", port: port, headers: admin)
      #expect(bad.status == 400 && bad.body.contains("group must be"), "\(bad.body)")
      let start = try CountdownServerTestSupport.http(
        "POST", "/v1/activities", port: port, body: #"{"kind":"elapsed","title":"H"}"#,
        headers: key)
      #expect(start.status == 403 && start.body.contains("give group"), "\(start.body)")
      let made = try CountdownServerTestSupport.http(
        "POST", "/v1/activities", port: port,
        body: #"{"id":"h1","kind":"elapsed","title":"H","group":"gate-a"}"#, headers: key)
      #expect(made.status == 201 && made.json["group"] as? String == "gate-a", "\(made.body)")
      // The groups are kept by a restart; the event stream after it is filtered by them.
      s.server.stop()
      (s, port, _) = try Self.server(stateDir: dir, seed: false)
      let stream = try EventStream(port: port, headers: key)
      let first = try #require(stream.next())
      #expect(first.name == "snapshot")
      let snapshot = Set(
        (first.data["activities"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
      #expect(snapshot == ["a1", "h1"], "\(first.data)")
      let c = try s.client()
      for id in ["b1", "n1", "a1"] {
        #expect(try c.request(#"{"op":"pause","id":"\#(id)"}"#)["ok"] as? Bool == true)
      }
      let next = try #require(stream.next())
      #expect(next.name == "paused" && next.data["id"] as? String == "a1", "\(next)")
      #expect(stream.next(timeout: 1) == nil, "nothing of b1 or n1")
      // ?group= on the stream narrows an admin's to one group.
      let narrowed = try EventStream(port: port, query: "?group=gate-b", headers: admin)
      let part = try #require(narrowed.next())
      #expect(
        Set((part.data["activities"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
          == ["b1"])
    }
  }

  @Test("A group is checked at start, fixed after it, and refused in a bad access file")
  func badInput() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let (s, _, _) = try Self.server(stateDir: dir)
      let c = try s.client()
      let end = nowMs() + 600_000
      for bad in [#""""#, #""a b""#, #""\#(String(repeating: "x", count: 65))""#, "7", #""é""#] {
        let r = try c.request(
          #"{"op":"start","id":"x","kind":"countdown","endDate":\#(end),"title":"X","group":\#(bad)}"#
        )
        #expect(r["code"] as? String == "invalidPayload", "\(bad): \(r)")
      }
      #expect(try c.request(#"{"op":"get","id":"x"}"#)["code"] as? String == "notFound")
      let fixed = try c.request(#"{"op":"update","id":"a1","group":"gate-b"}"#)
      #expect(fixed["code"] as? String == "invalidPayload", "\(fixed)")
      #expect((fixed["message"] as? String ?? "").contains("fixed at start"))
      let removed = try c.request(#"{"op":"update","id":"a1","group":null}"#)
      #expect(removed["code"] as? String == "invalidPayload", "\(removed)")
      let got = try c.request(#"{"op":"get","id":"a1"}"#)
      #expect((got["activity"] as? [String: Any])?["group"] as? String == "gate-a")
      // The access file's groups follow the same rule.
      for (line, message) in [
        ("view k1 gate a\n", "not 4 words"), ("view k1 gate-a,\n", "\"\" is not a group"),
        ("view k1 gate/a\n", "\"gate/a\" is not a group"),
      ] {
        #expect {
          try AccessList.parse(line, source: "f")
        } throws: { error in
          "\(error)".contains(message)
        }
      }
      let parsed = try AccessList.parse("view k1 a,b.c_d-e\n", source: "f")
      #expect(
        parsed.grant(of: Array("k1".utf8)) == AccessGrant(role: .view, groups: ["a", "b.c_d-e"]))
    }
  }
}
