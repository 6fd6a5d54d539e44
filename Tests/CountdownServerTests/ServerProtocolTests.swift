// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// docs/protocol.md over real Unix and TCP sockets, a server in this process unless the test is about
/// the process itself.
@Suite("countdown serve: the protocol on real sockets", .serialized, .timeLimit(.minutes(3)))
struct ServerProtocolTests {
  @Test("A server with a state file stops in process, lets all go; the next has its state")
  func stateFileInProcess() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let path = dir.appendingPathComponent("s.db").path
      let end = nowMs() + 600_000
      for round in 0..<3 {
        // Each server is stopped and released before the next opens the file. Under `make
        // asan` LeakSanitizer then checks that none of it stays behind (the store writer and
        // the loop once held each other).
        let s = try RunningServer.reopening { $0.statePath = path }
        let c = try s.client()
        let listed = try c.request(#"{"op":"list"}"#)["activities"] as? [[String: Any]] ?? []
        #expect(listed.compactMap { $0["id"] as? String }.sorted() == (0..<round).map { "r\($0)" })
        let started = try c.request(
          #"{"op":"start","id":"r\#(round)","kind":"countdown","endDate":\#(end),"title":"R"}"#)
        #expect(started["ok"] as? Bool == true, "\(started)")
      }
    }
  }

  @Test("Replies come in request order with rid verbatim; errors leave the connection usable")
  func repliesAndErrors() async throws {
    try await onThread {
      let s = try RunningServer()
      let c = try s.client()
      let end = nowMs() + 60_000
      // Pipelined in one write: every reply, in order.
      c.send(
        """
        {"rid":"a","op":"start","id":"gate","kind":"countdown","endDate":\(end),"title":"Gate B12","color":"#FF8800","milestones":[{"name":"last-call","atMs":30000}]}
        {"rid":7,"op":"get","id":"gate"}
        {"rid":8,"op":"ping","at":1795248000000}
        this is not json
        {"rid":9,"op":"explode"}
        {"rid":10,"op":"advance"}
        {"rid":11,"op":"pause","id":"ghost"}
        {"rid":12,"op":"start","kind":"elapsed","title":"Dose","goalMs":600000}
        {"rid":13,"op":"list"}
        {"rid":14,"op":"unsubscribe"}
        {"rid":[1],"op":"ping"}
        {"rid":15,"op":"ping"}

        """)
      let r = try (0..<12).map { _ in try c.json() }
      #expect(
        r[0]["rid"] as? String == "a" && r[0]["ok"] as? Bool == true
          && r[0]["id"] as? String == "gate")
      #expect((r[0]["at"] as? Int64 ?? 0) >= nowMs() - 5_000)
      #expect(r[1]["rid"] as? Int == 7 && r[1]["ok"] as? Bool == true)
      let a = r[1]["activity"] as! [String: Any]
      let keys: Set<String> = [
        "id", "kind", "phase", "value", "text", "progress", "stale", "overtime", "content",
        "endDate",
        "startDate", "pausedAt", "goalMs", "milestone", "nextMilestone", "liveActivity", "group",
      ]
      #expect(Set(a.keys) == keys)
      #expect(a["goalMs"] is NSNull, "a countdown has no goal")
      #expect(a["kind"] as? String == "countdown" && a["phase"] as? String == "active")
      #expect((a["value"] as? Int ?? 0) >= 55 && a["endDate"] as? Int64 == end)
      #expect((a["content"] as? [String: Any])?["color"] as? String == "#FF8800")
      #expect((a["nextMilestone"] as? [String: Any])?["at"] as? Int64 == end - 30_000)
      func failed(_ k: Int, _ rid: Int?, _ code: String) {
        #expect(r[k]["ok"] as? Bool == false, "\(r[k])")
        #expect(r[k]["code"] as? String == code, "\(r[k])")
        #expect((r[k]["message"] as? String)?.isEmpty == false)
        if let rid { #expect(r[k]["rid"] as? Int == rid) } else { #expect(r[k]["rid"] is NSNull) }
      }
      failed(2, 8, "invalidPayload")  // a request with "at"
      failed(3, nil, "invalidPayload")  // not JSON
      failed(4, 9, "invalidPayload")  // unknown op
      failed(5, 10, "invalidPayload")  // advance: no virtual clock here
      failed(6, 11, "notFound")
      #expect(r[7]["ok"] as? Bool == true && (r[7]["id"] as? String)?.count == 36)
      #expect((r[8]["activities"] as? [Any])?.count == 2)
      let dose = (r[8]["activities"] as? [[String: Any]])?.first {
        $0["kind"] as? String == "elapsed"
      }
      #expect(dose?["goalMs"] as? Int64 == 600_000, "the elapsed timer's goal is in its object")
      #expect(r[9]["ok"] as? Bool == true)
      failed(10, nil, "invalidPayload")  // rid of the wrong type
      #expect(r[11]["rid"] as? Int == 15 && r[11]["ok"] as? Bool == true)
    }
  }

  @Test("Every line a server writes decodes as CountdownClient's typed message, value for value")
  func typedMessages() async throws {
    try await onThread {
      let s = try RunningServer()
      let c = try s.client()
      let end = nowMs() + 3_000
      c.send(
        """
        {"rid":"sub","op":"subscribe","ticks":true}
        {"rid":1,"op":"start","id":"gate","kind":"countdown","endDate":\(end),"title":"Gate","color":"#FF8800","milestones":[{"name":"soon","atMs":2000}]}
        {"rid":2,"op":"start","id":"walk","kind":"elapsed","goalMs":60000,"title":"Walk"}
        {"rid":3,"op":"pause","id":"walk"}
        {"rid":4,"op":"get","id":"walk"}
        {"rid":5,"op":"list"}
        {"rid":6,"op":"get","id":"ghost"}

        """)
      var replies: [JSONValue: ServiceReply] = [:]
      var events: [ServiceEvent] = []
      let deadline = Date().addingTimeInterval(10)
      while Date() < deadline, !events.contains(where: { $0.kind == .expired }) {
        guard let text = c.line(timeout: 5) else { break }
        let message = try ServiceMessage(line: Array(text.utf8))
        // The same line read by Foundation: the typed values are the line's.
        let o = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        switch message {
        case .reply(let r):
          #expect(r.ok == (o["ok"] as? Bool) && r.at == (o["at"] as? Int64), "\(text)")
          replies[r.rid] = r
        case .event(let e):
          #expect(e.event == o["event"] as? String && e.id == o["id"] as? String, "\(text)")
          #expect(e.at == o["at"] as? Int64 && e.value == o["value"] as? Int64, "\(text)")
          events.append(e)
        }
      }
      #expect(replies[.string("sub")]?.activities?.isEmpty == true)
      #expect(replies[.int(1)]?.id == "gate")
      let walk = try #require(replies[.int(4)]?.activity)
      #expect(walk.kind == .elapsed && walk.phase == .paused && walk.goalMs == 60_000)
      #expect(walk.pausedAt != nil && walk.title == "Walk")
      let listed = try #require(replies[.int(5)]?.activities)
      let gate = try #require(listed.first { $0.id == "gate" })
      #expect(gate.endDate == end && gate.color == "#FF8800")
      #expect(gate.nextMilestone?.name == "soon" && gate.nextMilestone?.at == end - 2_000)
      #expect(replies[.int(6)]?.failure?.code == "notFound")
      // A single server has no shards: its objects name none, and `cluster` shows no cluster.
      #expect(walk.shard == nil)
      let cluster = try c.request(#"{"op":"cluster"}"#)
      #expect(cluster["ok"] as? Bool == true && cluster["node"] is NSNull, "\(cluster)")
      #expect((cluster["nodes"] as? [Any])?.isEmpty == true)
      #expect((cluster["shards"] as? [Any])?.isEmpty == true)
      // The events a board draws from, typed: ticks with their values, the milestone, expiry.
      let gateEvents = events.filter { $0.id == "gate" }.compactMap(\.kind)
      #expect(gateEvents.first == .started && gateEvents.contains(.tick))
      #expect(gateEvents.contains(.milestone) && gateEvents.last == .expired, "\(gateEvents)")
      #expect(events.first { $0.kind == .milestone }?.name == "soon")
      #expect(events.filter { $0.kind == .tick }.allSatisfy { $0.value != nil && $0.text != nil })
    }
  }

  @Test("A listing or snapshot is the state at its request: later requests of the batch differ")
  func listingsAtTheirRequest() async throws {
    try await onThread {
      let s = try RunningServer()
      let c = try s.client()
      let end = nowMs() + 600_000
      _ = try c.request(
        #"{"op":"start","id":"gate","kind":"countdown","endDate":\#(end),"title":"Gate"}"#)
      _ = try c.request(
        #"{"op":"start","id":"park","kind":"countdown","endDate":\#(end - 1),"title":"Park"}"#)
      // Pipelined in one write, run in one command on the loop: the listings are built after
      // the command, on a network thread, each from the state at its own request.
      c.send(
        """
        {"rid":1,"op":"list"}
        {"rid":2,"op":"list","soonest":1}
        {"rid":3,"op":"end","id":"gate","dismissal":"immediate"}
        {"rid":4,"op":"start","id":"bay","kind":"countdown","endDate":\(end - 2),"title":"Bay"}
        {"rid":5,"op":"end","id":"park"}
        {"rid":6,"op":"list","endedWithinMs":60000}
        {"rid":7,"op":"subscribe"}
        {"rid":8,"op":"start","id":"dock","kind":"elapsed","title":"Dock"}
        {"rid":9,"op":"list"}

        """)
      let r = try (0..<9).map { _ in try c.json() }
      func ids(_ k: Int, _ key: String = "activities") -> [String] {
        (r[k][key] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? ["missing: \(r[k])"]
      }
      #expect(r.map { $0["ok"] as? Bool } == Array(repeating: true, count: 9), "\(r)")
      #expect(ids(0) == ["gate", "park"])
      #expect(ids(1) == ["park"])
      #expect(ids(5) == ["park"])
      #expect(ids(6, "snapshot") == ["park", "bay"])
      let phases = (r[6]["snapshot"] as? [[String: Any]])?.map { $0["phase"] as? String }
      #expect(phases == ["ended", "active"])
      #expect(ids(8) == ["park", "bay", "dock"])
    }
  }

  @Test("A line over 64 KiB gets lineTooLong and is skipped; bad UTF-8 is invalidPayload")
  func framing() async throws {
    try await onThread {
      let s = try RunningServer()
      let c = try s.client()
      var long = Array(#"{"rid":1,"op":"ping","pad":""#.utf8)
      long += [UInt8](repeating: 0x61, count: 70_000)
      long += Array("\"}\n".utf8)
      c.sendBytes(long)
      c.sendBytes(
        Array(#"{"rid":2,"op":"start","kind":"elapsed","title":"A"#.utf8) + [0xFF]
          + Array("\"}\n".utf8))
      c.send("{\"rid\":3,\"op\":\"ping\"}\n")
      let tooLong = try c.json()
      #expect(tooLong["code"] as? String == "lineTooLong" && tooLong["ok"] as? Bool == false)
      let bad = try c.json()
      #expect(bad["code"] as? String == "invalidPayload")
      #expect((bad["message"] as? String)?.hasPrefix("invalid UTF-8 at byte") == true)
      let ping = try c.json()
      #expect(ping["rid"] as? Int == 3 && ping["ok"] as? Bool == true)
      // Exactly 65536 bytes is still a line.
      var exact = Array(#"{"rid":4,"op":"ping"}"#.utf8)
      exact += [UInt8](repeating: 0x20, count: 65536 - exact.count)
      c.sendBytes(exact + [0x0A])
      #expect(try c.json()["rid"] as? Int == 4)
    }
  }

  @Test("Subscribe: a snapshot, then events in order, none before its at; ticks and ids filter")
  func subscribe() async throws {
    try await onThread {
      let s = try RunningServer()
      let control = try s.client()
      let base = nowMs()
      _ = try control.request(
        #"{"op":"start","id":"early","kind":"countdown","endDate":\#(base + 2_300),"title":"E"}"#)
      let all = try s.client()
      let onlyLate = try s.client()
      let lifecycle = try s.client()
      let snap = try all.request(#"{"rid":"s","op":"subscribe","ticks":true}"#)
      #expect((snap["snapshot"] as? [[String: Any]])?.map { $0["id"] as? String } == ["early"])
      _ = try onlyLate.request(#"{"op":"subscribe","ids":["late"],"ticks":true}"#)
      _ = try lifecycle.request(#"{"op":"subscribe"}"#)
      _ = try control.request(
        #"{"op":"start","id":"late","kind":"countdown","endDate":\#(base + 2_600),"title":"L"}"#)
      var events: [[String: Any]] = []
      while let e = try? all.json(timeout: 4), events.count < 20 {
        events.append(e)
        if e["event"] as? String == "expired" && e["id"] as? String == "late" { break }
      }
      let received = nowMs()
      _ = received
      // Activities started after the subscription are included; each one's events in order.
      let early = events.filter { $0["id"] as? String == "early" }.map { $0["event"] as! String }
      let late = events.filter { $0["id"] as? String == "late" }.map { $0["event"] as! String }
      #expect(early.suffix(2) == ["tick", "expired"], "\(early)")
      #expect(late.first == "started" && late.suffix(2) == ["tick", "expired"], "\(late)")
      #expect(late.filter { $0 == "tick" }.count == 3)
      // Only late's events for onlyLate; no ticks for lifecycle.
      var filtered: [[String: Any]] = []
      while let e = try? onlyLate.json(timeout: 1) { filtered.append(e) }
      #expect(!filtered.isEmpty && filtered.allSatisfy { $0["id"] as? String == "late" })
      var quiet: [[String: Any]] = []
      while let e = try? lifecycle.json(timeout: 1) { quiet.append(e) }
      #expect(quiet.map { $0["event"] as! String }.sorted() == ["expired", "expired", "started"])
    }
  }

  @Test("After unsubscribe no more events come, and replies still do")
  func unsubscribe() async throws {
    try await onThread {
      let s = try RunningServer()
      let c = try s.client()
      _ = try c.request(#"{"op":"subscribe"}"#)
      let control = try s.client()
      _ = try control.request(#"{"op":"start","id":"x","kind":"elapsed","title":"X"}"#)
      #expect(try c.json()["event"] as? String == "started")
      #expect(try c.request(#"{"rid":"u","op":"unsubscribe"}"#)["rid"] as? String == "u")
      _ = try control.request(#"{"op":"start","id":"y","kind":"elapsed","title":"Y"}"#)
      _ = try control.request(#"{"op":"end","id":"x"}"#)
      // Nothing but the reply to the next request.
      let next = try c.request(#"{"rid":"p","op":"ping"}"#)
      #expect(next["rid"] as? String == "p", "\(next)")
      #expect(c.line(timeout: 0.5) == nil)
    }
  }

  @Test("No event reaches a subscriber before its at by the wall clock")
  func neverEarly() async throws {
    try await onThread {
      let s = try RunningServer()
      let c = try s.client()
      let base = nowMs()
      c.send(#"{"op":"subscribe","ticks":true}"# + "\n")
      _ = try c.json()
      let control = try s.client()
      for k in 0..<20 {
        _ = try control.request(
          #"{"op":"start","id":"a\#(k)","kind":"countdown","endDate":\#(base + 1_000 + Int64(k) * 53),"title":"A"}"#
        )
      }
      var seen = 0
      while let text = c.line(timeout: 2.5) {
        let received = nowMs()
        let e = try JSONSerialization.jsonObject(with: Data(text.utf8)) as! [String: Any]
        #expect(received >= e["at"] as! Int64, "\(text) received at \(received)")
        seen += 1
      }
      #expect(seen >= 20 * 2)
    }
  }

  @Test("100 subscribers on one activity set each get every event, in order")
  func hundredSubscribers() async throws {
    try await onThread {
      let s = try RunningServer()
      let subs = try (0..<100).map { _ in try s.client() }
      for c in subs { _ = try c.request(#"{"op":"subscribe","ticks":true}"#) }
      let control = try s.client()
      let base = nowMs()
      for k in 0..<10 {
        _ = try control.request(
          #"{"op":"start","id":"g\#(k)","kind":"countdown","endDate":\#(base + 1_500 + Int64(k) * 10),"title":"G"}"#
        )
      }
      var first: [String]?
      for c in subs {
        var lines: [String] = []
        var expired = 0
        while expired < 10, let l = c.line(timeout: 10) {
          lines.append(l)
          if l.contains(#""event":"expired""#) { expired += 1 }
        }
        #expect(expired == 10)
        if let first { #expect(lines == first) } else { first = lines }
      }
      // Each activity: started, its ticks down to 0 (tick 1 too when its start was handled
      // over a second before its end, as it is unless the machine is very slow: under
      // ThreadSanitizer beside other suites it may not be), expired.
      let events = try (first ?? []).map {
        try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
      }
      #expect(events.count >= 10 * 3)
      for k in 0..<10 {
        let mine = events.filter { $0["id"] as? String == "g\(k)" }
        let kinds = mine.map { $0["event"] as! String }
        #expect(kinds.first == "started" && kinds.last == "expired", "g\(k): \(kinds)")
        #expect(kinds.dropFirst().dropLast().allSatisfy { $0 == "tick" }, "g\(k): \(kinds)")
        #expect(mine.dropLast().last?["value"] as? Int == 0, "g\(k)")
      }
    }
  }

  @Test("The socket is mode 0600; a stale socket file is replaced; a live one is refused")
  func socketFile() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let path = dir.appendingPathComponent("c.sock").path
      // A stale socket: bound once, never listened on again.
      let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
      var addr = sockaddr_un()
      addr.sun_family = sa_family_t(AF_UNIX)
      withUnsafeMutableBytes(of: &addr.sun_path) { raw in
        for (k, b) in path.utf8.enumerated() { raw[k] = b }
      }
      _ = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
      }
      close(fd)
      #expect(FileManager.default.fileExists(atPath: path))
      let server = CountdownServer(options: ServerOptions(socketPath: path))
      try server.start()
      var st = stat()
      #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
      #expect(try TestClient(unix: path).request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      // A second server on the live socket is refused, and the first keeps serving.
      let second = CountdownServer(options: ServerOptions(socketPath: path))
      #expect(throws: ServerStartError.self) { try second.start() }
      #expect(try TestClient(unix: path).request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      server.stop()
      #expect(!FileManager.default.fileExists(atPath: path))
      // A plain file in the way is not removed.
      _ = FileManager.default.createFile(atPath: path, contents: Data("keep".utf8))
      #expect(throws: ServerStartError.self) {
        try CountdownServer(options: ServerOptions(socketPath: path)).start()
      }
      #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep")
    }
  }

  @Test("TCP: loopback without a token; with a token, auth first or unauthorized and closed")
  func tcp() async throws {
    try await onThread {
      let open = try RunningServer { $0.listen = "127.0.0.1:0" }
      let port = open.server.tcpAddress!.port!
      #expect(try TestClient(tcpPort: port).request(#"{"op":"ping"}"#)["ok"] as? Bool == true)

      let guarded = try RunningServer {
        $0.listen = "127.0.0.1:0"
        $0.token = "s3cret"
      }
      let gport = guarded.server.tcpAddress!.port!
      let noAuth = try TestClient(tcpPort: gport)
      let refused = try noAuth.request(#"{"rid":1,"op":"ping"}"#)
      #expect(refused["code"] as? String == "unauthorized" && refused["rid"] as? Int == 1)
      #expect(noAuth.closed(within: 3))
      let wrong = try TestClient(tcpPort: gport)
      #expect(
        try wrong.request(#"{"op":"auth","token":"nope"}"#)["code"] as? String == "unauthorized")
      #expect(wrong.closed(within: 3))
      let good = try TestClient(tcpPort: gport)
      #expect(try good.request(#"{"op":"auth","token":"s3cret"}"#)["ok"] as? Bool == true)
      #expect(try good.request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      // The Unix socket needs no token (its mode is 0600).
      #expect(try guarded.client().request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      // Anything but loopback needs a token.
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let exposed = CountdownServer(
        options: ServerOptions(
          socketPath: dir.appendingPathComponent("x.sock").path, listen: "0.0.0.0:0"))
      #expect(throws: ServerStartError.self) { try exposed.start() }
    }
  }

  @Test("Past --max-connections a connection gets limitReached and is closed")
  func connectionLimit() async throws {
    try await onThread {
      let s = try RunningServer { $0.maxConnections = 2 }
      var a: TestClient? = try s.client()
      let b = try s.client()
      #expect(try a!.request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      #expect(try b.request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      // The Unix socket's few beyond the limit (the operator's), then refusals.
      var operators: [TestClient] = []
      for _ in 0..<CountdownServer.operatorRoom {
        let o = try s.client()
        #expect(try o.request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
        operators.append(o)
      }
      let c = try s.client()
      let refused = try c.json()
      #expect(refused["code"] as? String == "limitReached")
      #expect(c.closed(within: 3))
      // Closing one makes room again.
      a = nil
      usleep(200_000)
      #expect(try s.client().request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
    }
  }
}
