// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownLoop
import CountdownServerTestSupport
import CountdownStore
import CountdownTestSupport
import Crypto
import Foundation
import Testing

@testable import CountdownServer

/// A server run in process, as a Swift service embedding it runs one: what it made is freed
/// once it has stopped, senders with requests in flight included. (A cluster node's parts:
/// ClusterNodeLifetimeOnPostgresTests.)
@Suite("A server in process is freed when it stops")
struct ServerLifetimeTests {
  /// What a running server holds, weakly: nil once nothing keeps it.
  final class Watched: @unchecked Sendable {
    weak var pushes: PushDelivery?
    weak var webhooks: WebhookDelivery?
    weak var writer: StoreWriter?
    weak var journal: Journal?
    weak var hub: Hub?
    weak var loop: CountdownLoop?
  }

  @Test(
    "A start that fails at a late stage (the webhook sender: an unreadable --webhook-ca) undoes the stages before it: the state file is let go and no socket is left, so the next start on them serves"
  )
  func failedStartUndoesEarlierStages() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let socket = dir.appendingPathComponent("c.sock").path
    var options = ServerOptions(socketPath: socket)
    options.statePath = dir.appendingPathComponent("state.db").path
    var hooks = WebhookOptions(urls: ["https://127.0.0.1:9/hook"])
    hooks.caPath = dir.appendingPathComponent("missing-ca.pem").path
    options.webhooks = hooks
    try await onThread { [options] in
      let failing = CountdownServer(options: options)
      let error = #expect(throws: ServerStartError.self) { try failing.start() }
      #expect(error?.message.contains("--webhook-ca") == true, "\(String(describing: error))")
      #expect(failing.core == nil)
      #expect(!FileManager.default.fileExists(atPath: socket))
      var plain = options
      plain.webhooks = nil
      let server = CountdownServer(options: plain)
      try server.start()
      #expect(try TestClient(unix: socket).request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      server.stop()
    }
  }

  @Test(
    "A server with pushes and webhooks, stopped with a push and a delivery in flight to peers that never answer, is freed: its push and webhook senders, store writer, journal, hub and timer loop"
  )
  func stoppedServerIsFreed() async throws {
    // One listener for both peers: it never accepts, so the TLS handshake to the gateway and
    // the webhook's request wait (for 10 s, the default timeouts) when the server stops.
    let silent = try loopbackSocket(listening: true)
    defer { close(silent.fd) }
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let keyPath = dir.appendingPathComponent("key.p8").path
    try P256.Signing.PrivateKey().pemRepresentation.write(
      toFile: keyPath, atomically: true, encoding: .utf8)
    let watched = Watched()
    try await onThread {
      try {
        let running = try RunningServer { o in
          o.statePath = dir.appendingPathComponent("state.db").path
          o.apns = APNsOptions(
            keyPath: keyPath, keyID: "ABC123DEFG", teamID: "TEAM456XYZ",
            bundleID: "com.example.gate", production: false,
            url: "https://127.0.0.1:\(silent.port)")
          o.webhooks = WebhookOptions(urls: ["http://127.0.0.1:\(silent.port)/hook"])
        }
        let c = try running.client()
        let start =
          #"{"op":"start","id":"a","kind":"countdown","title":"A","endDate":\#(nowMs() + 60_000),"liveActivity":{"startTokens":{"\#(String(repeating: "c3", count: 32))":true},"attributesType":"GateAttributes","attributes":{"gate":"B12"}}}"#
        let r = try c.request(start)
        #expect(r["ok"] as? Bool == true, "\(r)")
        let core = try #require(running.server.core)
        let durable = try #require(core.durable)
        watched.pushes = durable.delivery
        watched.webhooks = durable.webhooks
        watched.writer = durable.writer
        watched.journal = durable.journal
        watched.hub = core.hub
        watched.loop = core.loop
        #expect(watched.pushes != nil && watched.webhooks != nil)
        // Both senders have connected to the silent peer (the kernel queued the connections).
        let until = Date().addingTimeInterval(5)
        while Self.queuedConnections(port: silent.port) < 2 && Date() < until { usleep(10_000) }
        #expect(Self.queuedConnections(port: silent.port) >= 2)
      }()
      // The server stopped and let go (RunningServer's deinit): nothing it made is left.
      let until = Date().addingTimeInterval(5)
      func anyLeft() -> Bool {
        watched.pushes != nil || watched.webhooks != nil || watched.writer != nil
          || watched.journal != nil || watched.hub != nil || watched.loop != nil
      }
      while anyLeft() && Date() < until { usleep(10_000) }
      #expect(watched.pushes == nil, "the push sender")
      #expect(watched.webhooks == nil, "the webhook sender")
      #expect(watched.writer == nil, "the store writer")
      #expect(watched.journal == nil, "the journal")
      #expect(watched.hub == nil, "the hub")
      #expect(watched.loop == nil, "the timer loop")
    }
  }

  /// Connections established to 127.0.0.1:`port` from this machine, by /proc/net/tcp (state
  /// 01, the client's side of each).
  static func queuedConnections(port: Int) -> Int {
    let remote = String(format: "0100007F:%04X", port)
    return readTextFile("/proc/net/tcp").split(separator: "\n").filter { line in
      let fields = line.split(separator: " ")
      return fields.count > 3 && fields[2] == remote && fields[3] == "01"
    }.count
  }
}
