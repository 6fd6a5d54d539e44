// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import CountdownClientNIO
import CountdownServer
import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

/// The async client against servers in this process, over real sockets.
@Suite("CountdownConnection against a real server")
struct CountdownConnectionTests {
  /// An instant `s` seconds from now, whole seconds.
  func later(_ s: Int64) -> Instant { Instant(milliseconds: (nowMs() / 1000 + s) * 1000) }

  @Test("Every request typed both ways: start to end, list, configure, cluster, ping")
  func everyRequest() async throws {
    let server = try RunningServer()
    let c = try await CountdownConnection.connect(to: .unix(server.socket))
    let end = later(600)
    var request = ActivityRequest.countdown(id: "gate-b12", to: end, title: "Gate B12")
    request.content.subtitle = "Boarding"
    request.content.color = "#FF8800"
    request.content.fields = ["gate": .string("B12")]
    request.startDate = Instant(milliseconds: end.milliseconds - 3_600_000)
    request.staleDate = later(900)
    request.milestones = [Milestone(name: "last-call", atMs: 300_000)]
    request.group = "gates"
    #expect(try await c.start(request) == "gate-b12")
    var gate = try await c.get("gate-b12")
    #expect(gate.id == "gate-b12" && gate.kind == .countdown && gate.phase == .active)
    #expect(gate.title == "Gate B12" && gate.subtitle == "Boarding" && gate.color == "#FF8800")
    #expect(gate.content["fields"] == .object(["gate": .string("B12")]))
    #expect(gate.endDate == end.milliseconds && gate.group == "gates")
    #expect(gate.nextMilestone?.name == "last-call")
    #expect(gate.nextMilestone?.at == end.milliseconds - 300_000)
    #expect(gate.progress != nil && gate.startDate == end.milliseconds - 3_600_000)
    // A generated id.
    let elapsed = try await c.start(.elapsed(title: "Shift"))
    #expect(elapsed.count == 36)
    // update: a content patch, a new end, the milestones removed.
    let moved = later(1200)
    try await c.update(
      "gate-b12",
      ActivityUpdate(
        content: ["title": .string("Gate B14"), "subtitle": .null], endDate: moved,
        milestones: .remove))
    gate = try await c.get("gate-b12")
    #expect(gate.title == "Gate B14" && gate.subtitle == nil && gate.endDate == moved.milliseconds)
    #expect(gate.nextMilestone == nil)
    try await c.pause("gate-b12")
    gate = try await c.get("gate-b12")
    #expect(gate.phase == .paused && gate.pausedAt != nil)
    try await c.resume("gate-b12")
    #expect(try await c.get("gate-b12").phase == .active)
    // list: all in start order, the soonest, one group.
    #expect(try await c.list().map(\.id) == ["gate-b12", elapsed])
    #expect(try await c.list(.soonest(1)).map(\.id) == ["gate-b12"])
    #expect(try await c.list(group: "gates").map(\.id) == ["gate-b12"])
    // end with final content, kept (default dismissal), then listed as ended.
    try await c.end("gate-b12", ActivityEnding(content: ["subtitle": .string("Closed")]))
    gate = try await c.get("gate-b12")
    #expect(gate.phase == .ended && gate.subtitle == "Closed")
    #expect(try await c.list(.endedWithin(milliseconds: 60_000)).map(\.id) == ["gate-b12"])
    try await c.end(elapsed, ActivityEnding(dismissal: .immediate))
    await #expect(throws: CountdownError.self) { try await c.get(elapsed) }
    // configure: a limit of one activity (one exists: the ended gate).
    try await c.configure(maxActivities: .set(1))
    let refused = await #expect(throws: CountdownError.self) {
      try await c.start(.countdown(to: later(60), title: "Over"))
    }
    #expect(refused?.code == .limitReached)
    try await c.configure(maxActivities: .remove)
    try await c.start(.countdown(id: "again", to: later(60), title: "Again"))
    // A single server's cluster view, and its clock.
    let cluster = try await c.cluster()
    #expect(cluster.node == nil && cluster.nodes.isEmpty && cluster.shards.isEmpty)
    let t = try await c.ping().milliseconds
    #expect(abs(t - nowMs()) < 5_000)
    await c.close()
  }

  @Test("The server's errors by code and message; the connection stays usable")
  func errorsByCode() async throws {
    let server = try RunningServer()
    let c = try await CountdownConnection.connect(to: .unix(server.socket))
    func code(_ body: () async throws -> Void) async -> CountdownError? {
      do {
        try await body()
        return nil
      } catch let e as CountdownError {
        return e
      } catch {
        return nil
      }
    }
    let missing = await code { _ = try await c.get("nobody") }
    #expect(missing?.code == .notFound && missing?.message.contains("nobody") == true)
    try await c.start(.countdown(id: "a", to: later(60), title: "A"))
    #expect(
      await code { try await c.start(.countdown(id: "a", to: later(60), title: "A")) }?.code
        == .duplicateID)
    let bad = await code {
      try await c.update("a", ActivityUpdate(content: ["color": .string("red")]))
    }
    #expect(bad?.code == .invalidPayload && bad?.message.contains("color") == true)
    let raw = try await c.send(["op": .string("fly")])
    #expect(!raw.ok && raw.failure?.code == "invalidPayload")
    #expect(try await c.get("a").title == "A")
    await c.close()
    let closed = await code { _ = try await c.get("a") }
    #expect(closed?.code == .connectionClosed)
    let away = await code {
      _ = try await CountdownConnection.connect(to: .unix(server.dir.path + "/none.sock"))
    }
    #expect(away?.code == .connectionClosed && away?.message.contains("none.sock") == true)
  }

  @Test("TCP with a token, TLS with a test CA, and a key's role")
  func tcpTLSAndKeys() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    try makeCertificates(in: dir)
    let access = dir.appendingPathComponent("access").path
    try "view viewer-key-123456\nadmin admin-key-123456\n".write(
      toFile: access, atomically: true, encoding: .utf8)
    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: access)
    let server = try RunningServer {
      $0.listen = "127.0.0.1:0"
      $0.accessPath = access
      $0.tlsCertificatePath = dir.appendingPathComponent("server.pem").path
      $0.tlsKeyPath = dir.appendingPathComponent("server.key").path
    }
    let port = try #require(server.server.tcpAddress?.port)
    let tls = CountdownTLS(caFile: dir.appendingPathComponent("ca.pem").path)
    let endpoint = CountdownEndpoint.tcp(host: "127.0.0.1", port: port, tls: tls)
    let admin = try await CountdownConnection.connect(to: endpoint, key: "admin-key-123456")
    try await admin.start(.countdown(id: "gate", to: later(60), title: "Gate"))
    let viewer = try await CountdownConnection.connect(to: endpoint, key: "viewer-key-123456")
    #expect(try await viewer.get("gate").title == "Gate")
    let forbidden = await #expect(throws: CountdownError.self) {
      try await viewer.pause("gate")
    }
    #expect(forbidden?.code == .forbidden)
    // A wrong key: refused at connect.
    let wrong = await #expect(throws: CountdownError.self) {
      _ = try await CountdownConnection.connect(to: endpoint, key: "nobody-key-123456")
    }
    #expect(wrong?.code == .unauthorized)
    // Without the CA the server's certificate is not trusted: the first call says so.
    let untrusted = await #expect(throws: CountdownError.self) {
      _ = try await CountdownConnection.connect(
        to: .tcp(host: "127.0.0.1", port: port, tls: CountdownTLS()), key: "admin-key-123456")
    }
    #expect(untrusted?.code == .connectionClosed, "\(String(describing: untrusted))")
    // A CA file that is not PEM.
    let notPEM = await #expect(throws: CountdownError.self) {
      _ = try await CountdownConnection.connect(
        to: .tcp(host: "127.0.0.1", port: port, tls: CountdownTLS(caFile: access)))
    }
    #expect(notPEM?.message.contains(access) == true)
    await admin.close()
    await viewer.close()
  }

  @Test("10,000 calls from 50 tasks on one connection: every reply is its own call's")
  func concurrentCalls() async throws {
    let server = try RunningServer()
    let c = try await CountdownConnection.connect(to: .unix(server.socket))
    let end = later(3600)
    try await withThrowingTaskGroup(of: Int.self) { group in
      for task in 0..<50 {
        group.addTask {
          var matched = 0
          for k in 0..<100 {
            let id = "t\(task)-\(k)"
            #expect(try await c.start(.countdown(id: id, to: end, title: id)) == id)
            let got = try await c.get(id)
            if got.id == id && got.title == id { matched += 1 }
          }
          return matched
        }
      }
      var matched = 0
      for try await m in group { matched += m }
      #expect(matched == 5_000)
    }
    #expect(try await c.list().count == 5_000)
    await c.close()
  }

  @Test("Batches: 1,000 starts in one await, one refused among them; raw objects in order")
  func batches() async throws {
    let server = try RunningServer()
    let c = try await CountdownConnection.connect(to: .unix(server.socket))
    try await c.start(.countdown(id: "b500", to: later(60), title: "First"))
    var batch: [ActivityRequest] = []
    for k in 0..<1000 { batch.append(.countdown(id: "b\(k)", to: later(60), title: "B\(k)")) }
    let results = try await c.start(batch)
    #expect(results.count == 1000)
    for (k, r) in results.enumerated() {
      switch r {
      case .success(let id): #expect(k != 500 && id == "b\(k)")
      case .failure(let e): #expect(k == 500 && e.code == .duplicateID)
      }
    }
    let replies = try await c.send([
      ["op": .string("get"), "id": .string("b7")], ["op": .string("get"), "id": .string("nobody")],
      ["op": .string("ping")],
    ])
    #expect(replies.map(\.ok) == [true, false, true])
    #expect(replies[0].activity?.title == "B7" && replies[1].failure?.code == "notFound")
    #expect(try await c.start([]).isEmpty)
    // Single calls and batches from many tasks at once keep their replies apart.
    try await withThrowingTaskGroup(of: Void.self) { group in
      for t in 0..<20 {
        group.addTask {
          let got = try await c.send(
            (0..<50).map { k in
              ["op": .string("get"), "id": .string("b\((t * 50 + k) % 1000)")]
            })
          #expect(got.map { $0.activity?.id } == (0..<50).map { "b\((t * 50 + $0) % 1000)" })
          #expect(try await c.get("b\(t)").id == "b\(t)")
        }
      }
      try await group.waitForAll()
    }
    await c.close()
  }

  @Test("Endpoints read from unix:PATH and tcp:HOST:PORT; bad ones named")
  func endpoints() throws {
    #expect(try CountdownEndpoint(parsing: "unix:/run/c.sock") == .unix("/run/c.sock"))
    #expect(
      try CountdownEndpoint(parsing: "tcp:kiosk.lan:7400") == .tcp(host: "kiosk.lan", port: 7400))
    #expect(try CountdownEndpoint(parsing: "tcp:[::1]:7400") == .tcp(host: "::1", port: 7400))
    for bad in [
      "unix:", "tcp:host", "tcp:host:0", "tcp:host:x", "tcp::80", "http://x", "tcp:[::1]",
    ] {
      #expect(throws: CountdownError.self, "\(bad)") { try CountdownEndpoint(parsing: bad) }
    }
    #expect(throws: CountdownError.self) {
      try CountdownEndpoint(parsing: "unix:/c.sock", tls: CountdownTLS())
    }
  }
}
