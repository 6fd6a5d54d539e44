// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownLoop
import CountdownPostgres
import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// A cluster node run in process, as a Swift service embedding the server runs one
/// (`make postgres`): what it made is freed once it has stopped.
@Suite(
  "A cluster node in process on PostgreSQL", .serialized,
  .enabled(if: PostgresTestServer.url != nil, "needs a PostgreSQL server: run make postgres"))
struct ClusterNodeLifetimeOnPostgresTests {
  /// What a running node holds, weakly: nil once nothing keeps it.
  final class Watched: @unchecked Sendable {
    weak var node: ClusterNode?
    weak var driver: LeaseDriver?
    weak var relayLinks: RelayLinks?
    weak var hub: Hub?
    weak var loop: CountdownLoop?
  }

  @Test(
    "A node that served its shards and stopped is freed with its server: its cluster node, lease driver, relay links, hub and timer loop (none keeps another alive: a service that starts and stops nodes leaks none)",
    arguments: [nil, "ct-1"] as [String?])
  func stoppedNodeIsFreed(token: String?) async throws {
    let url = try PostgresTestServer.freshDatabaseURL()
    let port = try ClusterOnPostgresTests.freePort()
    let watched = Watched()
    try await onThread {
      try {
        let running = try RunningServer { o in
          o.postgres = url
          o.cluster = ClusterOptions(node: "n1", shards: 8, leaseMs: 1000, token: token)
          if token != nil { o.listen = "127.0.0.1:\(port)" }
        }
        let c = try running.client()
        let r = try ClusterOnPostgresTests.retrying(
          c,
          #"{"op":"start","id":"a","kind":"countdown","title":"A","endDate":\#(nowMs() + 60_000)}"#)
        #expect(r["ok"] as? Bool == true, "\(r)")
        // A tick subscriber makes the node ask its (absent) peers for ticks too.
        #expect(try c.request(#"{"op":"subscribe","ticks":true}"#)["ok"] as? Bool == true)
        let core = try #require(running.server.core)
        let node = try #require(core.cluster)
        watched.node = node
        watched.driver = node.driver.withLock { $0 }
        watched.relayLinks = node.relayLinks
        watched.hub = core.hub
        watched.loop = core.loop
        #expect(watched.driver != nil)
        #expect((watched.relayLinks != nil) == (token != nil))
      }()
      // The server stopped and let go (RunningServer's deinit): nothing it made is left.
      let until = Date().addingTimeInterval(5)
      func anyLeft() -> Bool {
        watched.node != nil || watched.driver != nil || watched.relayLinks != nil
          || watched.hub != nil || watched.loop != nil
      }
      while anyLeft() && Date() < until { usleep(10_000) }
      #expect(watched.node == nil, "the cluster node")
      #expect(watched.driver == nil, "the lease driver")
      #expect(watched.relayLinks == nil, "the relay links")
      #expect(watched.hub == nil, "the hub")
      #expect(watched.loop == nil, "the timer loop")
    }
  }
}
