// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Testing

@testable import CountdownCluster

typealias View = ShardLeases.LeaseView

/// Every shard of `count` free (never owned).
func freeTable(_ count: Int) -> [View] {
  (0..<count).map { View(shard: $0, owner: nil, expired: true) }
}

/// The lease decisions on a virtual monotonic clock (milliseconds); the lease is 5 s unless a
/// test says otherwise, so renewals are every 1 s and a shard stops 1 s before it could lapse.
@Suite("Shard leases on a virtual clock")
struct ShardLeasesTests {
  @Test("Free shards are acquired, served on their grant, renewed every fifth of the lease")
  func acquireServeRenew() {
    var m = ShardLeases(node: "a", shardCount: 4)
    #expect(m.observe(freeTable(4), aliveNodes: 1, now: 0) == (0..<4).map { .acquire(shard: $0) })
    #expect(m.nextDeadline == nil)
    for k in 0..<4 {
      #expect(
        m.acquired(k, epoch: Int64(k + 1), sentAt: 0, now: 10) == [
          .serve(shard: k, epoch: Int64(k + 1))
        ])
    }
    #expect(m.served.map(\.shard) == [0, 1, 2, 3])
    #expect(m.nextDeadline == 1000)
    #expect(m.tick(now: 999).isEmpty)
    #expect(m.tick(now: 1000) == (0..<4).map { .renew(shard: $0, epoch: Int64($0 + 1)) })
    // One renewal in flight at a time: none again until it is answered.
    #expect(m.tick(now: 2500).isEmpty)
    for k in 0..<4 { m.renewed(k, epoch: Int64(k + 1), sentAt: 1000) }
    // Served until 1000 + 5000 - 1000 unless renewed again; the next renewal at 2000.
    #expect(m.nextDeadline == 2000)
    #expect(m.tick(now: 3999) == (0..<4).map { .renew(shard: $0, epoch: Int64($0 + 1)) })
    #expect(m.served.count == 4)
  }

  @Test("Renewals that fail stop the shard at its last grant + lease - guard, not later")
  func failedRenewalsStop() {
    var m = ShardLeases(node: "a", shardCount: 1)
    _ = m.observe(freeTable(1), aliveNodes: 1, now: 0)
    _ = m.acquired(0, epoch: 7, sentAt: 0, now: 5)
    for t in stride(from: Int64(1000), through: 3000, by: 1000) {
      #expect(m.tick(now: t) == [.renew(shard: 0, epoch: 7)])
      m.renewFailed(0, epoch: 7)
    }
    #expect(m.tick(now: 3999).isEmpty)
    #expect(m.tick(now: 4000) == [.stopServing(shard: 0, reason: .leaseLapsing)])
    #expect(m.served.isEmpty)
    // A renewal's answer that comes after the stop does not bring the shard back.
    m.renewed(0, epoch: 7, sentAt: 3000)
    #expect(m.served.isEmpty)
    // Nor is the shard asked for again before a lease has passed (its lease may still hold).
    #expect(m.observe(freeTable(1), aliveNodes: 1, now: 4500).isEmpty)
    #expect(m.observe(freeTable(1), aliveNodes: 1, now: 9000) == [.acquire(shard: 0)])
  }

  @Test("A lost epoch stops the shard at once, by the renewal's answer or the table")
  func lostShards() {
    var m = ShardLeases(node: "a", shardCount: 2)
    _ = m.observe(freeTable(2), aliveNodes: 1, now: 0)
    _ = m.acquired(0, epoch: 3, sentAt: 0, now: 1)
    _ = m.acquired(1, epoch: 4, sentAt: 0, now: 1)
    _ = m.tick(now: 1000)
    // An answer for an epoch this node does not hold changes nothing.
    #expect(m.renewLost(0, epoch: 2).isEmpty)
    #expect(m.renewLost(0, epoch: 3) == [.stopServing(shard: 0, reason: .lost)])
    #expect(m.served.map(\.shard) == [1])
    // The table names node b for shard 1 with a live lease: stop, and do not ask for it.
    let table = [
      View(shard: 0, owner: "b", expired: false), View(shard: 1, owner: "b", expired: false),
    ]
    #expect(m.observe(table, aliveNodes: 2, now: 1500) == [.stopServing(shard: 1, reason: .lost)])
    #expect(m.served.isEmpty)
  }

  @Test("Only shards nobody holds, expired ones or this node's own are asked for, up to its share")
  func whatIsAskedFor() {
    var m = ShardLeases(node: "a", shardCount: 6)
    let table = [
      View(shard: 0, owner: "b", expired: false),
      View(shard: 1, owner: "b", expired: true),
      View(shard: 2, owner: nil, expired: true),
      View(shard: 3, owner: "a", expired: false),  // this node before a restart
      View(shard: 4, owner: "c", expired: false),
      View(shard: 5, owner: nil, expired: true),
    ]
    // Three nodes alive: two shards each.
    #expect(m.observe(table, aliveNodes: 3, now: 0) == [.acquire(shard: 1), .acquire(shard: 2)])
    m.acquireRefused(1)  // another node was faster
    #expect(m.observe(table, aliveNodes: 3, now: 100) == [.acquire(shard: 1)])
    m.acquireRefused(1)
    // One node alive: every shard it may take.
    #expect(
      m.observe(table, aliveNodes: 1, now: 200) == [
        .acquire(shard: 1), .acquire(shard: 3), .acquire(shard: 5),
      ])
  }

  @Test("More nodes alive: the highest shards are handed over (stopped first, then released)")
  func handOver() {
    var m = ShardLeases(node: "a", shardCount: 8)
    _ = m.observe(freeTable(8), aliveNodes: 1, now: 0)
    for k in 0..<8 { _ = m.acquired(k, epoch: 1, sentAt: 0, now: 1) }
    let actions = m.observe(freeTable(8), aliveNodes: 2, now: 500)
    #expect(
      actions
        == [7, 6, 5, 4].flatMap { k in
          [
            ShardLeases.Action.stopServing(shard: k, reason: .handingOver),
            .release(shard: k, epoch: 1),
          ]
        })
    #expect(m.served.map(\.shard) == [0, 1, 2, 3])
    // Back to one node: the handed-over shards are taken again only after a lease.
    #expect(m.observe(freeTable(8), aliveNodes: 1, now: 1000).isEmpty)
    #expect(m.observe(freeTable(8), aliveNodes: 1, now: 5500).count == 4)
  }

  @Test("A grant answered too late to serve on is not served")
  func lateGrant() {
    var m = ShardLeases(node: "a", shardCount: 1)
    _ = m.observe(freeTable(1), aliveNodes: 1, now: 0)
    #expect(m.acquired(0, epoch: 1, sentAt: 0, now: 4000).isEmpty)
    #expect(m.served.isEmpty)
    #expect(m.observe(freeTable(1), aliveNodes: 1, now: 4100) == [.acquire(shard: 0)])
  }

  @Test(
    "Whatever the database's delays and failures, a shard is served only while its lease holds",
    arguments: 0..<40)
  func servedOnlyWhileLeased(seed: UInt64) async throws {
    try await onThread(computing: true) {
      var rng = SplitMix64(state: seed)
      let timing = ShardLeases.Timing(leaseMs: 5000)
      var m = ShardLeases(node: "a", shardCount: 2, timing: timing)
      // The database's side: when each lease expires by the node's clock (a request is
      // received some time after it is sent; the lease runs from its receipt).
      var expiry: [Int: Int64] = [:]
      var epoch: [Int: Int64] = [:]
      // Answers on their way back: (arrives, what).
      var inbox: [(at: Int64, run: (inout ShardLeases, Int64) -> [ShardLeases.Action])] = []
      var servedTicks = 0
      func handle(_ actions: [ShardLeases.Action], now: Int64) {
        for a in actions {
          let received = now + Int64.random(in: 0...1500, using: &rng)
          let answered = received + Int64.random(in: 0...1500, using: &rng)
          let fails = Int.random(in: 0..<4, using: &rng) == 0
          switch a {
          case .acquire(let k):
            if fails || (expiry[k] ?? .min) > received {
              inbox.append(
                (
                  answered,
                  { m, _ in
                    m.acquireRefused(k)
                    return []
                  }
                ))
            } else {
              let e = (epoch[k] ?? 0) + 1
              epoch[k] = e
              expiry[k] = received + timing.leaseMs
              inbox.append((answered, { m, t in m.acquired(k, epoch: e, sentAt: now, now: t) }))
            }
          case .renew(let k, let e):
            if fails {
              inbox.append(
                (
                  answered,
                  { m, _ in
                    m.renewFailed(k, epoch: e)
                    return []
                  }
                ))
            } else if epoch[k] == e && (expiry[k] ?? .min) > received {
              expiry[k] = received + timing.leaseMs
              inbox.append(
                (
                  answered,
                  { m, _ in
                    m.renewed(k, epoch: e, sentAt: now)
                    return []
                  }
                ))
            } else {
              inbox.append((answered, { m, _ in m.renewLost(k, epoch: e) }))
            }
          case .release(let k, _): expiry[k] = now
          case .serve, .stopServing: break
          }
        }
      }
      var now: Int64 = 0
      while now < 120_000 {
        if now % 700 == 0 {
          let table = (0..<2).map { k in
            View(shard: k, owner: expiry[k] == nil ? nil : "a", expired: (expiry[k] ?? .min) <= now)
          }
          handle(m.observe(table, aliveNodes: 1, now: now), now: now)
        }
        let due = inbox.filter { $0.at <= now }
        inbox.removeAll { $0.at <= now }
        for d in due { handle(d.run(&m, now), now: now) }
        handle(m.tick(now: now), now: now)
        for (k, e) in m.served {
          #expect(
            epoch[k] == e && now < expiry[k]!,
            "seed \(seed): shard \(k) served at \(now) with epoch \(e), lease to \(expiry[k]!)")
          servedTicks += 1
        }
        now += 10
      }
      // The run served something: the property was not checked on an empty node.
      #expect(servedTicks > 1000, "seed \(seed)")
    }
  }
}
