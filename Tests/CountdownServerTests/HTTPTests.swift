// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

@Suite("HTTP on real sockets", .serialized, .timeLimit(.minutes(3)))
struct HTTPTests {
  static let objectKeys: Set<String> = [
    "id", "kind", "phase", "value", "text", "progress", "stale", "overtime", "content", "endDate",
    "startDate", "pausedAt", "goalMs", "milestone", "nextMilestone", "liveActivity", "group",
  ]

  @Test("liveActivity over HTTP: kept, merge-patched, refused by member name, kept by a restart")
  func liveActivity() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let path = dir.appendingPathComponent("s.db").path
      let end = nowMs() + 600_000
      do {
        let h = try HTTPServer { $0.statePath = path }
        var r = try h(
          "POST", "/v1/activities",
          #"{"id":"gate","kind":"countdown","endDate":\#(end),"title":"Gate B12","liveActivity":{"pushTokens":{"A0B1C2":true},"priority":10}}"#
        )
        #expect(r.status == 201, "\(r)")
        var live = try #require(r.json["liveActivity"] as? [String: Any])
        #expect(live["pushTokens"] as? [String: Bool] == ["a0b1c2": true])
        #expect(live["priority"] as? Int == 10 && live["dateEncoding"] as? String == "reference")
        r = try h(
          "PATCH", "/v1/activities/gate",
          #"{"liveActivity":{"pushTokens":{"a0b1c2":null,"ffee":true},"keys":{"endDate":"departs"}}}"#
        )
        #expect(r.status == 200, "\(r)")
        live = try #require(r.json["liveActivity"] as? [String: Any])
        #expect(live["pushTokens"] as? [String: Bool] == ["ffee": true])
        #expect(live["keys"] as? [String: String] == ["endDate": "departs"])
        // A bad one: 400 naming the member; nothing else in the request applied.
        r = try h(
          "PATCH", "/v1/activities/gate",
          #"{"title":"Changed","liveActivity":{"dateEncoding":"julian"}}"#)
        #expect(r.status == 400 && r.code == "invalidPayload", "\(r)")
        #expect((r.json["message"] as? String)?.contains("liveActivity.dateEncoding") == true)
        r = try h("GET", "/v1/activities/gate")
        #expect((r.json["content"] as? [String: Any])?["title"] as? String == "Gate B12")
        // A push that could not fit in APNs's 4096 bytes: 413 attributesTooLarge.
        let big = String(repeating: "x", count: 4_000)
        r = try h(
          "POST", "/v1/activities",
          #"{"id":"big","kind":"countdown","endDate":\#(end),"title":"B","liveActivity":{"startTokens":{"ab":true},"attributesType":"A","attributes":{"x":"\#(big)"}}}"#
        )
        #expect(r.status == 413 && r.code == "attributesTooLarge", "\(r)")
        r = try h("GET", "/v1/activities/big")
        #expect(r.status == 404)
      }
      // The state file keeps it.
      let h = try HTTPServer { $0.statePath = path }
      let r = try h("GET", "/v1/activities/gate")
      let live = try #require(r.json["liveActivity"] as? [String: Any])
      #expect(live["pushTokens"] as? [String: Bool] == ["ffee": true], "\(r)")
    }
  }

  @Test("Every route: start, list, get, merge patch, pause, resume, end, time")
  func routes() async throws {
    try await onThread {
      let h = try HTTPServer()
      let end = nowMs() + 90_000
      let start = nowMs() - 30_000
      var r = try h(
        "POST", "/v1/activities",
        ##"{"id":"gate","kind":"countdown","endDate":\##(end),"startDate":\##(start),"title":"Gate B12","subtitle":"Boarding","color":"#22AA55","fields":{"gate":"B12"},"milestones":[{"name":"last-call","atMs":30000}]}"##
      )
      #expect(r.status == 201, "\(r)")
      #expect(r.headers["content-type"] == "application/json")
      // Every answer carries the HTTP date of now (RFC 9110 §5.6.7).
      let dateFormat = DateFormatter()
      dateFormat.locale = Locale(identifier: "en_US_POSIX")
      dateFormat.timeZone = TimeZone(identifier: "GMT")
      dateFormat.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
      let date = try #require(r.headers["date"].flatMap { dateFormat.date(from: $0) }, "\(r)")
      #expect(abs(date.timeIntervalSinceNow) < 3, "\(r.headers["date"] ?? "")")
      #expect(r.headers["date"] == dateFormat.string(from: date))
      #expect(Set(r.json.keys) == Self.objectKeys)
      #expect(r.json["id"] as? String == "gate" && r.json["phase"] as? String == "active")
      #expect(r.json["endDate"] as? Int64 == end && r.json["startDate"] as? Int64 == start)
      #expect((r.json["value"] as? Int ?? 0) >= 85)
      #expect((r.json["nextMilestone"] as? [String: Any])?["at"] as? Int64 == end - 30_000)
      // A generated id.
      r = try h("POST", "/v1/activities", #"{"kind":"elapsed","title":"Dose","goalMs":60000}"#)
      #expect(r.status == 201)
      let dose = try #require(r.json["id"] as? String)
      #expect(dose.count == 36)

      r = try h("GET", "/v1/activities")
      #expect(r.status == 200)
      #expect((r.json["at"] as? Int64 ?? 0) > nowMs() - 5_000)
      let all = r.json["activities"] as? [[String: Any]] ?? []
      #expect(all.map { $0["id"] as? String } == ["gate", dose])
      r = try h("GET", "/v1/activities?soonest=1")
      #expect((r.json["activities"] as? [[String: Any]])?.map { $0["id"] as? String } == ["gate"])

      r = try h("GET", "/v1/activities/gate")
      #expect(r.status == 200 && r.json["id"] as? String == "gate")
      #expect((r.json["content"] as? [String: Any])?["title"] as? String == "Gate B12")

      // Merge patch: title changed, subtitle removed, fields merged, the rest kept.
      r = try h(
        "PATCH", "/v1/activities/gate",
        #"{"title":"Gate B14","subtitle":null,"fields":{"terminal":"2"},"timestamp":\#(nowMs())}"#)
      #expect(r.status == 200, "\(r)")
      let content = r.json["content"] as? [String: Any] ?? [:]
      #expect(content["title"] as? String == "Gate B14" && content["subtitle"] == nil)
      #expect(content["color"] as? String == "#22AA55")
      #expect(
        (content["fields"] as? [String: Any])?["gate"] as? String == "B12"
          && (content["fields"] as? [String: Any])?["terminal"] as? String == "2")

      r = try h("POST", "/v1/activities/gate/pause")
      #expect(r.status == 200 && r.json["phase"] as? String == "paused")
      #expect(r.json["pausedAt"] as? Int64 != nil)
      r = try h("POST", "/v1/activities/gate/resume", "{}")
      #expect(r.status == 200 && r.json["phase"] as? String == "active")
      #expect((r.json["endDate"] as? Int64 ?? 0) >= end)
      r = try h("POST", "/v1/activities/\(dose)/end", #"{"title":"Dose done"}"#)
      #expect(r.status == 200 && r.json["phase"] as? String == "ended")
      #expect((r.json["content"] as? [String: Any])?["title"] as? String == "Dose done")
      r = try h("GET", "/v1/activities?endedWithinMs=60000")
      #expect((r.json["activities"] as? [[String: Any]])?.map { $0["id"] as? String } == [dose])
      // An immediate dismissal still answers with the ended activity; then it is gone.
      r = try h("POST", "/v1/activities/gate/end", #"{"dismissal":"immediate"}"#)
      #expect(r.status == 200 && r.json["phase"] as? String == "ended", "\(r)")
      r = try h("GET", "/v1/activities/gate")
      #expect(r.status == 404 && r.code == "notFound")
      // Ids in the path are percent-decoded.
      r = try h("POST", "/v1/activities", #"{"id":"gate/7 b","kind":"elapsed","title":"X"}"#)
      #expect(r.status == 201)
      r = try h("GET", "/v1/activities/gate%2F7%20b")
      #expect(r.status == 200 && r.json["id"] as? String == "gate/7 b")

      let before = nowMs()
      r = try h("GET", "/v1/time")
      #expect(r.status == 200 && Set(r.json.keys) == ["now"])
      let now = r.json["now"] as? Int64 ?? 0
      #expect(now >= before && now <= nowMs())
    }
  }

  @Test("Error mapping: 400, 404, 405, 409, 413, 429, 503, each with code and message")
  func errors() async throws {
    try await onThread {
      let h = try HTTPServer { $0.engine.maxActivities = 3 }
      let end = nowMs() + 60_000
      func check(
        _ r: HTTPAnswer, _ status: Int, _ code: String,
        sourceLocation: SourceLocation = #_sourceLocation
      ) {
        #expect(r.status == status, "\(r)", sourceLocation: sourceLocation)
        #expect(r.code == code, "\(r)", sourceLocation: sourceLocation)
        #expect(Set(r.json.keys) == ["code", "message"], sourceLocation: sourceLocation)
        #expect(!(r.json["message"] as? String ?? "").isEmpty, sourceLocation: sourceLocation)
        #expect(r.headers["content-type"] == "application/json", sourceLocation: sourceLocation)
      }
      check(try h("POST", "/v1/activities", "{not json"), 400, "invalidPayload")
      check(try h("POST", "/v1/activities", "[1,2]"), 400, "invalidPayload")
      check(
        try h("POST", "/v1/activities", #"{"kind":"countdown","title":"X"}"#), 400, "invalidPayload"
      )
      check(
        try h("POST", "/v1/activities", #"{"op":"start","kind":"elapsed","title":"X"}"#), 400,
        "invalidPayload")
      check(
        try h("POST", "/v1/activities", #"{"at":\#(end),"kind":"elapsed","title":"X"}"#), 400,
        "invalidPayload")
      check(
        try h("POST", "/v1/activities", #"{"kind":"countdown","endDate":1700000000,"title":"X"}"#),
        400, "invalidDate")
      var r = try h(
        "POST", "/v1/activities",
        #"{"id":"a","kind":"countdown","endDate":\#(end),"title":"A"}"#)
      #expect(r.status == 201)
      check(
        try h("POST", "/v1/activities", #"{"id":"a","kind":"elapsed","title":"again"}"#), 409,
        "duplicateID")
      check(try h("PATCH", "/v1/activities/a", #"{"id":"b","title":"X"}"#), 400, "invalidPayload")
      r = try h("PATCH", "/v1/activities/a", #"{"title":"A2","timestamp":\#(end)}"#)
      #expect(r.status == 200)
      check(
        try h("PATCH", "/v1/activities/a", #"{"title":"A3","timestamp":\#(end - 1)}"#), 400,
        "outOfOrder")
      check(try h("GET", "/v1/activities/ghost"), 404, "notFound")
      check(try h("POST", "/v1/activities/ghost/pause"), 404, "notFound")
      check(try h("GET", "/v2/anything"), 404, "notFound")
      check(try h("GET", "/v1/activities/a/explode"), 404, "notFound")
      check(try h("GET", "/v1/activities/%ZZ"), 400, "invalidPayload")
      check(try h("GET", "/v1/activities?soonest=many"), 400, "invalidPayload")
      check(try h("GET", "/v1/activities?soonest=1&endedWithinMs=5"), 400, "invalidPayload")
      check(try h("GET", "/v1/events?ticks=maybe"), 400, "invalidPayload")
      r = try h("DELETE", "/v1/activities/a")
      check(r, 405, "invalidPayload")
      #expect(r.headers["allow"] == "GET, PATCH")
      // Content over 4096 bytes, and a body over 64 KiB.
      let long = String(repeating: "x", count: 5000)
      check(
        try h("POST", "/v1/activities", #"{"kind":"elapsed","title":"\#(long)"}"#), 413,
        "attributesTooLarge")
      let huge = #"{"kind":"elapsed","title":"\#(String(repeating: "y", count: 70_000))"}"#
      r = try h("POST", "/v1/activities", huge)
      check(r, 413, "attributesTooLarge")
      #expect((r.json["message"] as? String ?? "").contains("65536"))
      // Nothing the refused requests asked for happened.
      r = try h("GET", "/v1/activities")
      #expect((r.json["activities"] as? [[String: Any]])?.count == 1)
      r = try h("POST", "/v1/activities/a/end")
      #expect(r.status == 200)
      check(try h("POST", "/v1/activities/a/pause"), 409, "activityEnded")
      check(try h("PATCH", "/v1/activities/a", #"{"title":"late"}"#), 409, "activityEnded")
      for k in 0..<2 {
        r = try h("POST", "/v1/activities", #"{"kind":"elapsed","title":"\#(k)"}"#)
        #expect(r.status == 201)
      }
      check(
        try h("POST", "/v1/activities", #"{"kind":"elapsed","title":"4th"}"#), 429, "limitReached")
      // Disabled through the socket protocol: HTTP starts get 503.
      let c = try h.running.client()
      #expect(try c.request(#"{"op":"configure","enabled":false}"#)["ok"] as? Bool == true)
      check(try h("POST", "/v1/activities", #"{"kind":"elapsed","title":"off"}"#), 503, "disabled")
      // The mapping of the codes HTTP cannot provoke here.
      #expect(HTTPRoutes.status(of: .storageFailed) == .serviceUnavailable)
      #expect(HTTPRoutes.status(of: .unauthorized) == .unauthorized)
    }
  }

  @Test("A token is required when given; a non-loopback --http without one does not start")
  func token() async throws {
    try await onThread {
      let h = try HTTPServer { $0.token = "s3cret-token" }
      var r = try h("GET", "/v1/time")
      #expect(r.status == 401 && r.code == "unauthorized")
      #expect(r.headers["www-authenticate"] == "Bearer")
      r = try h("GET", "/v1/activities", headers: ["Authorization": "Bearer wrong-token!"])
      #expect(r.status == 401 && r.code == "unauthorized")
      r = try h("POST", "/v1/activities", #"{"kind":"elapsed","title":"X"}"#)
      #expect(r.status == 401)
      r = try h("GET", "/v1/activities", headers: ["Authorization": "Bearer s3cret-token"])
      #expect(r.status == 200)
      r = try h("GET", "/?token=s3cret-token")
      #expect(r.status == 200 && r.headers["content-type"]?.hasPrefix("text/html") == true)
      let e = try EventStream(port: h.port)
      #expect(e.status == 401)
      // Nothing was started by the refused request.
      r = try h("GET", "/v1/activities", headers: ["Authorization": "Bearer s3cret-token"])
      #expect((r.json["activities"] as? [[String: Any]])?.isEmpty == true)

      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let open = CountdownServer(
        options: ServerOptions(
          socketPath: dir.appendingPathComponent("o.sock").path, http: "0.0.0.0:0"))
      #expect {
        try open.start()
      } throws: { error in
        "\(error)".contains("--http 0.0.0.0:0 is not a loopback address: give a --token")
      }
      #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("o.sock").path))
    }
  }

  @Test("Events: a snapshot first, then each event; ticks=1 and ids= filter")
  func events() async throws {
    try await onThread {
      let h = try HTTPServer()
      let end = nowMs() + 4_500
      _ = try h(
        "POST", "/v1/activities",
        #"{"id":"one","kind":"countdown","endDate":\#(end),"title":"One"}"#)
      let all = try EventStream(port: h.port)
      #expect(all.status == 200 && all.contentType == "text/event-stream")
      let ticks = try EventStream(port: h.port, query: "?ticks=1&ids=two,three")
      let snapshot = try #require(all.next())
      #expect(snapshot.name == "snapshot")
      let list = snapshot.data["activities"] as? [[String: Any]] ?? []
      #expect(list.map { $0["id"] as? String } == ["one"])
      #expect(Set(list.first?.keys.map { $0 } ?? []) == Self.objectKeys)
      #expect((snapshot.data["at"] as? Int64 ?? 0) > nowMs() - 5_000)
      let filtered = try #require(ticks.next())
      #expect(filtered.name == "snapshot")
      #expect((filtered.data["activities"] as? [[String: Any]])?.isEmpty == true)

      _ = try h(
        "POST", "/v1/activities",
        #"{"id":"two","kind":"countdown","endDate":\#(end + 1_000),"title":"Two"}"#)
      _ = try h("POST", "/v1/activities/two/pause")
      _ = try h("POST", "/v1/activities/two/resume")
      // Without ticks=1: lifecycle events only, of every activity, in order.
      var names: [String] = []
      var ids: Set<String> = []
      while let e = all.next(timeout: 8) {
        names.append(e.name)
        ids.insert(e.data["id"] as? String ?? "")
        #expect(e.data["event"] as? String == e.name)
        if e.name == "expired" && e.data["id"] as? String == "two" { break }
      }
      #expect(!names.contains("tick"))
      #expect(Array(names.prefix(3)) == ["started", "paused", "resumed"])
      #expect(names.filter { $0 == "expired" }.count == 2, "\(names)")
      #expect(ids == ["one", "two"])
      // With ticks=1&ids=two,three: two's ticks and events only, no event written before its at.
      var tickCount = 0
      var early = 0
      var sawOne = false
      while let e = ticks.next(timeout: 3) {
        if e.data["id"] as? String != "two" { sawOne = true }
        if e.name == "tick" {
          tickCount += 1
          #expect(e.data["value"] as? Int != nil && e.data["text"] as? String != nil)
        }
        if (e.data["at"] as? Int64 ?? 0) > nowMs() { early += 1 }
        if e.name == "expired" { break }
      }
      #expect(tickCount >= 3 && early == 0 && !sawOne, "ticks \(tickCount), early \(early)")
    }
  }

  @Test("A stream opened while activities start misses none after its snapshot, repeats none")
  func streamJoinsMidFlow() async throws {
    try await onThread {
      let h = try HTTPServer()
      let end = nowMs() + 600_000
      let stop = StopSignal()
      let port = h.port
      let starter = Thread {
        var k = 0
        while !stop.isSet {
          k += 1
          _ = try? http(
            "POST", "/v1/activities", port: port,
            body:
              #"{"id":"s\#(k)","kind":"countdown","endDate":\#(end),"title":"S"}"#)
        }
      }
      starter.start()
      defer { stop.set() }
      func number(_ id: Any?) -> Int { Int((id as? String ?? "").dropFirst()) ?? -1 }
      for stream in 0..<12 {
        let events = try EventStream(port: h.port)
        let snapshot = try #require(events.next(), "stream \(stream): no snapshot")
        #expect(snapshot.name == "snapshot")
        let listed = (snapshot.data["activities"] as? [[String: Any]] ?? []).map {
          number($0["id"])
        }
        // The snapshot holds s1...sN with no gap; the stream's first events start s(N+1)...
        #expect(listed.sorted() == Array(1..<(listed.count + 1)), "stream \(stream): \(listed)")
        var expected = listed.count + 1
        while expected <= listed.count + 8, let e = events.next(timeout: 10) {
          guard e.name == "started" else { continue }
          #expect(
            number(e.data["id"]) == expected,
            "stream \(stream): after a snapshot of \(listed.count), started \(e.data["id"] ?? "?") where s\(expected) was due"
          )
          if number(e.data["id"]) != expected { break }
          expected += 1
        }
        #expect(expected == listed.count + 9, "stream \(stream): too few started events")
      }
    }
  }

  @Test("An event stream asked for once the server has begun to stop is refused (503 shutdown)")
  func streamDuringStop() async throws {
    try await onThread {
      let h = try HTTPServer()
      _ = try h("POST", "/v1/activities", #"{"id":"a","kind":"elapsed","title":"A"}"#)
      // The first step of stop(): the hub ends the streams. A stream whose request comes after
      // it (it was on its way when the stop began) must not register: nothing would end it,
      // and the HTTP server would wait for it (5 s), then give up on it.
      let hub = try #require(h.running.server.core?.hub)
      try hub.eventLoop.submit { hub.closeStreams() }.wait()
      let late = try EventStream(port: h.port)
      #expect(late.status == 503 && late.contentType == "application/json", "\(late.status)")
      #expect(try h.subscribers() == 0)
      let clock = ContinuousClock()
      let stopping = clock.measure { h.running.server.stop() }
      #expect(stopping < .seconds(3), "stop() took \(stopping)")
    }
  }

  @Test("A server stopping as event streams are asked for stops at once and serves none")
  func stopAsStreamsCome() async throws {
    try await onThread {
      // Three network threads, the hub on the first: the six connections are spread over all
      // three, and the heads of those on the other two are read while the hub is held.
      let h = try HTTPServer { $0.networkThreads = 3 }
      let server = h.running.server
      let hub = try #require(server.core?.hub)
      let clients = try (0..<6).map { _ in try TestClient(tcpPort: h.port) }
      for c in clients { c.send("GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n") }
      usleep(200_000)
      // stop()'s first step (ending the streams) is queued on the held hub before the requests'
      // heads are complete, so every stream reaches the hub after it.
      let gate = DispatchSemaphore(value: 0)
      hub.eventLoop.execute { gate.wait() }
      let stopped = DispatchSemaphore(value: 0)
      let clock = ContinuousClock()
      let began = clock.now
      Thread {
        server.stop()
        stopped.signal()
      }.start()
      usleep(300_000)
      for c in clients { c.send("\r\n") }
      usleep(300_000)
      gate.signal()
      // Refused (503), or closed unanswered: never a stream (200) that nothing would end, which
      // the stop waited 10 s for before.
      for (k, c) in clients.enumerated() {
        let first = c.line(timeout: 15)
        #expect(first == nil || first!.hasPrefix("HTTP/1.1 503"), "stream \(k): \(first ?? "")")
      }
      stopped.wait()
      let took = clock.now - began
      #expect(took < .seconds(3), "stop() took \(took)")
    }
  }

  @Test("Event streams whose clients leave at once, even before the head, leave no subscriber")
  func streamsLeftAtOnce() async throws {
    try await onThread {
      let h = try HTTPServer()
      // Some close before the server has answered, some as the head comes, some after it.
      for k in 0..<40 {
        let c = try TestClient(tcpPort: h.port)
        // Closed with a reset, as a client that is gone (the client's deinit closes it).
        var reset = linger(l_onoff: 1, l_linger: 0)
        setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
        c.send("GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        if k % 2 == 1 { usleep(UInt32(k * 200)) }
      }
      var left: Double?
      let deadline = Date().addingTimeInterval(5)
      repeat {
        left = try h.subscribers()
        if left == 0 { break }
        usleep(50_000)
      } while deadline.timeIntervalSinceNow > 0
      #expect(left == 0, "\(left ?? -1) subscribers left behind by clients that have gone")
    }
  }

  @Test("A busy event stream is written at most every 3 ms, each event no later than that")
  func streamPacing() async throws {
    try await onThread {
      let h = try HTTPServer()
      // 3,000 countdowns at spread phases: ticks fall due in nearly every millisecond.
      let base = nowMs() + 600_000
      for k in 0..<3_000 {
        _ = try h(
          "POST", "/v1/activities",
          #"{"id":"p\#(k)","kind":"countdown","endDate":\#(base + Int64(k % 1_000)),"title":"P"}"#)
      }
      let stream = try EventStream(port: h.port, query: "?ticks=1")
      #expect(stream.next()?.name == "snapshot")
      _ = stream.next(timeout: 2)  // the first ticks after the snapshot
      // Each write is one HTTP chunk: count the chunk-size lines for 2 s, the span of the
      // ticks' instants within each chunk (the server's own time, whatever this reader's), and
      // each tick's lateness at arrival.
      var chunks = 0
      var ticks = 0
      var late: [Int64] = []
      var spans: [Int64] = []
      var chunk: (first: Int64, last: Int64)?
      var firstAt: Int64?
      var lastAt: Int64 = 0
      let until = Date().addingTimeInterval(2)
      while until.timeIntervalSinceNow > 0, let line = stream.client.line(timeout: 1) {
        let text = line.hasSuffix("\r") ? line.dropLast() : Substring(line)
        if !text.isEmpty, text.allSatisfy(\.isHexDigit) {
          chunks += 1
          if let c = chunk { spans.append(c.last - c.first) }
          chunk = nil
        } else if text.hasPrefix("data: {\"at\":") {
          ticks += 1
          let at = Int64(text.dropFirst(12).prefix { $0.isNumber }) ?? 0
          late.append(nowMs() - at)
          if firstAt == nil { firstAt = at }
          lastAt = max(lastAt, at)
          chunk = (min(chunk?.first ?? at, at), max(chunk?.last ?? at, at))
        }
      }
      late.sort()
      spans.sort()
      // At most one write per 3 ms of the server's time: the span of the ticks read (a reader
      // that fell behind reads more than 2 s of the server's output in its 2 s), with 10% for
      // timer slack; unpaced it would be one write per millisecond with ticks.
      let span = lastAt - (firstAt ?? lastAt)
      #expect(ticks > 5_000 && chunks > 100, "\(chunks) writes, \(ticks) ticks")
      #expect(
        Double(chunks) <= Double(span) / 3 * 1.1 + 10,
        "\(chunks) writes over \(span) ms of ticks, \(ticks) ticks")
      // Pacing holds an event at most 3 ms: a write carries the ticks of at most 3 ms (4 with
      // the milliseconds' rounding) in the median write, whether or not this reader keeps up.
      // Its arrival is this machine's business too (the other suites share its two cores, and
      // a reader behind by 150 ms has been seen): the earliest arrivals show that the server
      // adds no standing delay.
      #expect(
        spans.count > 100 && spans[spans.count / 2] <= 4,
        "median write holds \(spans.isEmpty ? -1 : spans[spans.count / 2]) ms of ticks")
      #expect(
        !late.isEmpty && late[late.count / 100] <= 20,
        "1st percentile of lateness \(late.isEmpty ? -1 : late[late.count / 100]) ms")
    }
  }

  @Test("/metrics: activities by phase, ticks, lateness, wake-ups, commands, errors, subscribers")
  func metrics() async throws {
    try await onThread {
      let h = try HTTPServer()
      let end = nowMs() + 60_000
      for (id, extra) in [("a", ""), ("b", ""), ("c", "")] {
        _ = try h(
          "POST", "/v1/activities",
          #"{"id":"\#(id)","kind":"countdown","endDate":\#(end),"title":"X"\#(extra)}"#)
      }
      _ = try h("POST", "/v1/activities/b/pause")
      _ = try h("POST", "/v1/activities/c/end")
      _ = try h("GET", "/v1/activities/ghost")
      let stream = try EventStream(port: h.port)
      _ = stream.next()
      Thread.sleep(forTimeInterval: 2.2)
      let r = try h("GET", "/metrics")
      #expect(r.status == 200 && r.headers["content-type"]?.hasPrefix("text/plain") == true)
      var values: [String: Double] = [:]
      for line in r.body.split(separator: "\n") where !line.hasPrefix("#") {
        let parts = line.split(separator: " ")
        if parts.count == 2 { values[String(parts[0])] = Double(parts[1]) }
      }
      #expect(values[#"countdown_activities{phase="active"}"#] == 1)
      #expect(values[#"countdown_activities{phase="paused"}"#] == 1)
      #expect(values[#"countdown_activities{phase="ended"}"#] == 1)
      #expect((values["countdown_ticks_total"] ?? 0) >= 2)
      #expect((values["countdown_tick_lateness_seconds_count"] ?? 0) >= 2)
      #expect(values[#"countdown_tick_lateness_seconds_bucket{le="+Inf"}"#] != nil)
      #expect((values["countdown_wakeups_total"] ?? 0) >= 2)
      #expect((values["countdown_commands_total"] ?? 0) >= 7)
      #expect(values[#"countdown_errors_total{code="notFound"}"#] == 1)
      #expect(values["countdown_subscribers"] == 1)
      #expect(values["countdown_ticks_coalesced_total"] == 0)
    }
  }

  @Test("The board page: self-contained, no external assets, the server's style in it")
  func page() async throws {
    try await onThread {
      let h = try HTTPServer { $0.style = .units(maxUnits: 3) }
      let r = try h("GET", "/")
      #expect(r.status == 200 && r.headers["content-type"] == "text/html; charset=utf-8")
      #expect(r.body.contains(#"<main id="board">"#))
      #expect(r.body.contains(#"const STYLE = {"name":"units","maxUnits":3};"#))
      // No external assets: no src or href, no http(s) address, no import.
      for needle in ["src=", "href=", "http://", "https://", "@import", "url("] {
        #expect(!r.body.contains(needle), "the page contains \(needle)")
      }
    }
  }

  @Test(
    "The board's buttons: ?controls=0 or 1 over the server's --board-controls; another value is refused"
  )
  func pageControls() async throws {
    try await onThread {
      let open = try HTTPServer()
      #expect(try open("GET", "/").body.contains("const CONTROLS = true;"))
      let bare = try open("GET", "/?controls=0")
      #expect(bare.status == 200 && bare.body.contains("const CONTROLS = false;"))
      #expect(!bare.body.contains("POST /v1/activities"))
      let bad = try open("GET", "/?controls=maybe")
      #expect(bad.status == 400 && bad.body.contains(#""code":"invalidPayload""#))
      #expect(bad.body.contains("controls must be 0"))

      let kiosk = try HTTPServer { $0.boardControls = .none }
      #expect(try kiosk("GET", "/").body.contains("const CONTROLS = false;"))
      #expect(try kiosk("GET", "/?controls=1").body.contains("const CONTROLS = true;"))
    }
  }
}
