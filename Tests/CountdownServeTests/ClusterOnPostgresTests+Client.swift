// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import CountdownClientNIO
import CountdownServerTestSupport
import Dispatch
import Foundation
import Testing

/// Runs `body` on Swift's concurrency and waits for it on this thread (the cluster tests'
/// bodies run on a thread of their own).
func waitingFor(_ body: @escaping @Sendable () async throws -> Void) throws {
  final class Box: @unchecked Sendable {  // written before the signal, read after the wait
    var error: (any Error)?
  }
  let box = Box()
  let done = DispatchSemaphore(value: 0)
  Task {
    do { try await body() } catch { box.error = error }
    done.signal()
  }
  done.wait()
  if let error = box.error { throw error }
}

extension ClusterOnPostgresTests {
  @Test(
    "The async client through one node: another node's activity typed both ways, a list of both, the cluster's view, its events"
  )
  func clientThroughNode() async throws {
    try await Self.withTwoNodes(forwarding: true) { p in
      let (onB, onA) = (
        Self.id("cl", ownedBy: "b", p.owners), Self.id("cm", ownedBy: "a", p.owners)
      )
      let socket = p.dirA.appendingPathComponent("c.sock").path
      let socketB = p.dirB.appendingPathComponent("c.sock").path
      try waitingFor {
        let c = try await CountdownConnection.connect(to: .unix(socket))
        let cb = try TestClient(unix: socketB)
        let end = Instant(milliseconds: nowMs() + 600_000)
        // A shard may still be changing hands: `unavailable` is tried again.
        func retrying<T>(_ call: () async throws -> T) async throws -> T {
          let deadline = Date().addingTimeInterval(10)
          while true {
            do {
              return try await call()
            } catch let e as CountdownError where e.code == .unavailable && Date() < deadline {
              try await Task.sleep(for: .milliseconds(100))
            }
          }
        }
        #expect(
          try await retrying { try await c.start(.countdown(id: onB, to: end, title: "B")) } == onB)
        #expect(
          try await retrying { try await c.start(.countdown(id: onA, to: end, title: "A")) } == onA)
        // b's, through a: forwarded, and run on b.
        let got = try await retrying { try await c.get(onB) }
        #expect(got.id == onB && got.title == "B" && got.shard != nil)
        try await retrying { try await c.pause(onB) }
        let onNodeB = try cb.request(#"{"op":"get","id":"\#(onB)"}"#)
        #expect((onNodeB["activity"] as? [String: Any])?["phase"] as? String == "paused")
        let missing = await #expect(throws: CountdownError.self) { _ = try await c.get(onB + "x") }
        #expect(missing?.code == .notFound)
        // A list spans both nodes.
        #expect(Set(try await c.list().map(\.id)) == [onA, onB])
        // The cluster as a read it.
        let cluster = try await c.cluster()
        #expect(cluster.node == "a")
        #expect(Set(cluster.nodes.map(\.name)) == ["a", "b"])
        #expect(cluster.shards.count == Self.shards)
        #expect(Set(cluster.shards.compactMap(\.owner)) == ["a", "b"])
        // A subscription through a: both in the snapshot, then b's change from b itself.
        var updates = c.subscribe().makeAsyncIterator()
        guard case .snapshot(let first)? = try await updates.next() else {
          Issue.record("no snapshot first")
          return
        }
        #expect(Set(first.map(\.id)) == [onA, onB])
        let resumed = try cb.request(#"{"op":"resume","id":"\#(onB)"}"#)
        #expect(resumed["ok"] as? Bool == true, "\(resumed)")
        var seen: [String] = []
        while let u = try await updates.next() {
          if case .event(let e) = u { seen.append("\(e.event) \(e.id ?? "")") }
          if seen.contains("resumed \(onB)") { break }
        }
        #expect(seen.contains("resumed \(onB)"), "\(seen)")
        await c.close()
      }
    }
  }
}
