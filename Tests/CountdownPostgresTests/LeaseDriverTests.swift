// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownCluster
import CountdownStore
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownPostgres

/// What the nodes of a test said they serve and stop, on the one monotonic clock of the
/// process, in the order each node said it.
final class ServingRecord: @unchecked Sendable {
  struct Entry {
    var at: Int64
    var node: String
    var change: LeaseDriver.Change
  }
  private let lock = NSLock()
  private var entries: [Entry] = []

  func callback(_ node: String) -> @Sendable (LeaseDriver.Change) -> Void {
    { [self] change in
      lock.withLock { entries.append(Entry(at: LeaseDriver.now(), node: node, change: change)) }
    }
  }

  var all: [Entry] { lock.withLock { entries } }

  /// `node` was killed at `at`: from then on it serves nothing (it does nothing at all).
  func killed(_ node: String, _ shards: [Int], at: Int64) {
    lock.withLock {
      for shard in shards {
        entries.append(Entry(at: at, node: node, change: .stop(shard: shard, reason: .lost)))
      }
    }
  }

  /// Per node, the shards it serves now by this record.
  func serving(_ node: String) -> Set<Int> {
    var s = Set<Int>()
    for e in all where e.node == node {
      switch e.change {
      case .serve(let shard, _): s.insert(shard)
      case .stop(let shard, _): s.remove(shard)
      }
    }
    return s
  }

  /// The first instant `node` served `shard` after `after`.
  func served(_ node: String, _ shard: Int, after: Int64) -> Int64? {
    all.first {
      guard $0.node == node, $0.at >= after, case .serve(shard, _) = $0.change else { return false }
      return true
    }?.at
  }

  /// Pairs of nodes that served one shard at the same time: each node's serving intervals
  /// (serve to stop, or to now) checked against every other's.
  func overlaps() -> [String] {
    var intervals: [Int: [(node: String, from: Int64, to: Int64)]] = [:]
    var open: [String: [Int: Int64]] = [:]
    for e in all {
      switch e.change {
      case .serve(let shard, _): open[e.node, default: [:]][shard] = e.at
      case .stop(let shard, _):
        if let from = open[e.node]?[shard] {
          intervals[shard, default: []].append((e.node, from, e.at))
          open[e.node]?[shard] = nil
        }
      }
    }
    let now = LeaseDriver.now()
    for (node, shards) in open {
      for (shard, from) in shards { intervals[shard, default: []].append((node, from, now)) }
    }
    var found: [String] = []
    for (shard, list) in intervals {
      for a in list {
        for b in list where a.node < b.node && a.from < b.to && b.from < a.to {
          found.append("shard \(shard): \(a.node) \(a.from)-\(a.to), \(b.node) \(b.from)-\(b.to)")
        }
      }
    }
    return found
  }
}

/// ``LeaseDriver`` against a real PostgreSQL (`make postgres`): nodes in one process, each
/// with its own connection, on one monotonic clock, so that who served what when can be
/// compared to the millisecond.
@Suite(
  "Shard leases on PostgreSQL", .serialized,
  .enabled(if: PostgresTestServer.url != nil, "needs a PostgreSQL server: run make postgres"))
struct LeaseDriverOnPostgresTests {
  static let timing = ShardLeases.Timing(leaseMs: 1000)

  static func node(
    _ name: String, _ location: PostgresStore.Location, _ record: ServingRecord, shards: Int = 8
  ) throws -> LeaseDriver {
    try LeaseDriver(
      node: name, shardCount: shards, timing: timing, location: location,
      onChange: record.callback(name))
  }

  /// Waits up to `seconds` for `condition`; whether it held.
  static func eventually(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let until = Date().addingTimeInterval(seconds)
    while Date() < until {
      if try condition() { return true }
      usleep(20_000)
    }
    return try condition()
  }

  /// The lease table: owner and epoch by shard.
  static func table(_ location: PostgresStore.Location) throws -> [Int: (String, Int64)] {
    var out: [Int: (String, Int64)] = [:]
    let text = try PostgresTestServer.psql(
      "SELECT shard, coalesce(owner, ''), epoch FROM countdown_leases ORDER BY shard",
      in: location.database)
    for line in text.split(separator: "\n") {
      let f = line.split(separator: "|", omittingEmptySubsequences: false)
      out[Int(f[0])!] = (String(f[1]), Int64(f[2])!)
    }
    return out
  }

  @Test("Two nodes split eight shards four and four, each served with PostgreSQL's epoch")
  func split() throws {
    let location = try PostgresTestServer.freshDatabase()
    let record = ServingRecord()
    let a = try Self.node("a", location, record)
    defer { a.leave() }
    #expect(Self.eventually(5) { a.served.count == 8 }, "a alone takes every shard")
    let b = try Self.node("b", location, record)
    defer { b.leave() }
    let balanced = Self.eventually(8) { a.served.count == 4 && b.served.count == 4 }
    #expect(balanced, "a \(a.served.map(\.shard)), b \(b.served.map(\.shard))")
    let table = try Self.table(location)
    for (node, driver) in [("a", a), ("b", b)] {
      for s in driver.served {
        #expect(table[s.shard]?.0 == node && table[s.shard]?.1 == s.epoch, "shard \(s.shard)")
      }
    }
    // a handed over its highest shards, so that nodes agree without talking.
    #expect(Set(a.served.map(\.shard)) == [0, 1, 2, 3])
    #expect(record.serving("a") == [0, 1, 2, 3] && record.serving("b") == [4, 5, 6, 7])
    #expect(record.overlaps() == [])
    // Renewals go every fifth of the lease.
    usleep(1_000_000)
    #expect(a.counters.renewed >= 4 * 3 && a.counters.renewalsLost == 0)
  }

  @Test("A node killed: the other serves its shards within the lease + 1 s, never two at once")
  func killed() throws {
    let location = try PostgresTestServer.freshDatabase()
    let record = ServingRecord()
    let a = try Self.node("a", location, record)
    let b = try Self.node("b", location, record)
    defer { b.leave() }
    #expect(Self.eventually(8) { a.served.count == 4 && b.served.count == 4 })
    let lost = a.served
    let killedAt = LeaseDriver.now()
    a.halt()
    record.killed("a", lost.map(\.shard), at: killedAt)
    #expect(Self.eventually(4) { b.served.count == 8 })
    for s in lost {
      let at = try #require(record.served("b", s.shard, after: killedAt))
      #expect(
        at - killedAt <= Self.timing.leaseMs + 1000, "shard \(s.shard) after \(at - killedAt) ms")
      // The fence of the old epoch finds no row: a write of the killed node would roll back.
      let fence = try PostgresTestServer.psql(
        "SELECT 1 FROM countdown_leases WHERE shard = \(s.shard) AND epoch = \(s.epoch) FOR SHARE",
        in: location.database)
      #expect(fence == "")
    }
    #expect(record.overlaps() == [])
  }

  @Test(
    "A node cut off from PostgreSQL stops each shard before another serves it, then comes back to its share"
  )
  func cutOff() throws {
    let location = try PostgresTestServer.freshDatabase()
    let record = ServingRecord()
    let a = try Self.node("a", location, record)
    defer { a.leave() }
    let b = try Self.node("b", location, record)
    defer { b.leave() }
    #expect(Self.eventually(8) { a.served.count == 4 && b.served.count == 4 })
    let held = a.served.map(\.shard)
    // SIGSTOP of the server process that serves a's connection, while it waits idle: a's
    // queries go unanswered (as behind a cut cable); nothing of its is left half-done.
    let backend =
      "SELECT pid FROM pg_stat_activity WHERE application_name = '\(LeaseDriver.application("a"))' AND state = 'idle'"
    var pid = ""
    #expect(
      try Self.eventually(2) {
        pid = try PostgresTestServer.psql(backend).trimmingCharacters(in: .whitespacesAndNewlines)
        return !pid.isEmpty && !pid.contains("\n")
      })
    let cutAt = LeaseDriver.now()
    try PostgresTestServer.run(["kill", "-STOP", pid])
    defer { _ = try? PostgresTestServer.run(["kill", "-CONT", pid]) }
    #expect(Self.eventually(4) { b.served.count == 8 }, "b takes a's shards")
    for shard in held {
      let stop = record.all.first {
        guard $0.node == "a", $0.at >= cutAt, case .stop(shard, .leaseLapsing) = $0.change else {
          return false
        }
        return true
      }
      let served = try #require(record.served("b", shard, after: cutAt))
      let stopped = try #require(stop, "a stops serving shard \(shard)").at
      #expect(
        stopped < served,
        "shard \(shard): a stopped at +\(stopped - cutAt), b served at +\(served - cutAt)")
      #expect(served - cutAt <= Self.timing.leaseMs + 1000)
    }
    // a's queries are answered again (or, after a lease without answers, it connects anew):
    // it takes its share back, as a new epoch.
    try PostgresTestServer.run(["kill", "-CONT", pid])
    #expect(Self.eventually(10) { a.served.count == 4 && b.served.count == 4 })
    #expect(record.overlaps() == [])
  }

  @Test(
    "Another shard count, or the name of a node alive, is refused by name; a node that left can come back"
  )
  func refusals() throws {
    let location = try PostgresTestServer.freshDatabase()
    let record = ServingRecord()
    let a = try Self.node("a", location, record)
    let other = #expect(throws: StoreError.self) {
      try Self.node("b", location, record, shards: 16)
    }
    #expect(
      other?.message.contains(
        "has 8 shards, fixed at its first use; this node was started with --shards 16")
        == true, "\(other?.message ?? "")")
    let twin = #expect(throws: StoreError.self) { try Self.node("a", location, record) }
    #expect(twin?.message.contains("a node named a is alive") == true, "\(twin?.message ?? "")")
    #expect(Self.eventually(3) { a.served.count == 8 })
    let leftAt = LeaseDriver.now()
    a.leave()
    #expect(record.serving("a") == [])
    // Left, not lapsed: its leases and its name are free at once.
    let again = try Self.node("a", location, record)
    defer { again.leave() }
    #expect(Self.eventually(3) { again.served.count == 8 })
    #expect(LeaseDriver.now() - leftAt < Self.timing.leaseMs, "taken back before a lease passed")
    #expect(record.overlaps() == [])
  }

  @Test("The node's own callback may ask the driver what it serves (on the driver's thread)")
  func askedFromTheCallback() throws {
    final class Asked: @unchecked Sendable {
      let lock = NSLock()
      var driver: LeaseDriver?
      var answers: [Int] = []
    }
    let asked = Asked()
    let location = try PostgresTestServer.freshDatabase()
    let c = try LeaseDriver(node: "c", shardCount: 2, timing: Self.timing, location: location) {
      change in
      guard case .stop = change, let d = asked.lock.withLock({ asked.driver }) else { return }
      let n = d.served.count + d.counters.acquired
      asked.lock.withLock { asked.answers.append(n) }
    }
    asked.lock.withLock { asked.driver = c }
    #expect(Self.eventually(3) { c.served.count == 2 })
    c.leave()
    // The callback holds `asked`, which held the driver: let both go.
    asked.lock.withLock { asked.driver = nil }
    #expect(asked.lock.withLock { asked.answers } == [4, 4])
  }

  /// An id in `shard` of `count`: the first of `prefix`0, `prefix`1, … that falls there.
  static func id(_ prefix: String, inShard shard: Int, of count: Int) -> String {
    var k = 0
    while ShardOfID.shard(of: "\(prefix)\(k)", shards: count) != shard { k += 1 }
    return "\(prefix)\(k)"
  }

  /// `snapshot` with only the activities of `shard` (of `count`).
  static func only(_ shard: Int, of count: Int, _ snapshot: EngineSnapshot) -> EngineSnapshot {
    var s = snapshot
    s.activities = s.activities.filter { ShardOfID.shard(of: $0.id, shards: count) == shard }
    return s
  }

  /// A lifecycle event of `id` for a store's unsettled lines (its handle is not read).
  static func event(_ kind: ActivityEvent.Kind, _ id: String, at ms: Int64) -> ActivityEvent {
    ActivityEvent(
      at: at(ms), kind: kind, id: id, handle: ActivityHandle(slot: 0, generation: 0),
      activityKind: .countdown, value: 0)
  }

  /// `changes` carrying wake `token`'s lifecycle events, numbered.
  static func carrying(
    _ changes: StoreChanges, token: UInt64, _ events: [(UInt64, ActivityEvent)]
  ) -> StoreChanges {
    var c = changes
    c.unsettled = (token, events.map { (sequence: $0.0, event: $0.1) })
    return c
  }

  /// A shard's unsettled row as `store` reads it: the incarnation, and `SEQUENCE EVENT ID` per
  /// line.
  static func unsettledRow(_ store: PostgresStore, _ shard: Int) throws -> (UInt64, [String])? {
    try store.loadUnsettled(shard: shard).map { row in
      (
        row.incarnation,
        row.lines.map { line in
          let o = try? JSONSerialization.jsonObject(with: Data(line.json)) as? [String: Any]
          return "\(line.sequence) \(o?["event"] ?? "") \(o?["id"] ?? "")"
        }
      )
    }
  }

  @Test(
    "A node's store writes each activity in its shard, fenced by its leases' epochs: the old owner's write after a takeover is refused and changes nothing, the new owner loads what was committed, and the events the old owner committed unsettled"
  )
  func fencedStores() throws {
    let location = try PostgresTestServer.freshDatabase()
    let record = ServingRecord()
    let a = try Self.node("a", location, record, shards: 2)
    #expect(Self.eventually(3) { a.served.count == 2 })
    let held = Dictionary(uniqueKeysWithValues: a.served.map { ($0.shard, $0.epoch) })
    let storeA = try PostgresStore(location, nodeOf: 2)
    defer { storeA.close() }
    for (shard, epoch) in held { storeA.serve(shard, epoch: epoch) }
    // a's events are kept beside its rows until its hub has relayed them.
    let unsettledA = UnsettledEvents(incarnation: 0xA1, formatter: TimerFormatter(style: .timer))
    storeA.unsettled = unsettledA
    // One commit with an activity of each shard, and a push of the one in shard 1.
    let (x, y) = (Self.id("x", inShard: 1, of: 2), Self.id("y", inShard: 0, of: 2))
    var engine = ActivityEngine(now: t0)
    try engine.start(.countdown(id: x, to: at(60_000), title: "X"), at: t0)
    try engine.start(.countdown(id: y, to: at(30_000), title: "Y"), at: t0)
    try storeA.write(
      [
        Self.carrying(
          StoreChanges(engine: engine, ids: [x, y]), token: 0,
          [(1, Self.event(.started, x, at: 0)), (2, Self.event(.started, y, at: 0))])
      ], pushes: [.add(pushItem(x, "ab", ts: 1, "{}"))])
    #expect(try Self.unsettledRow(storeA, 1)?.1 == ["1 started \(x)"])
    #expect(try Self.unsettledRow(storeA, 0)?.1 == ["2 started \(y)"])
    // A second commit before the hub relayed the first: shard 1's row holds both.
    try storeA.write([
      Self.carrying(
        StoreChanges(engine: engine, ids: [x]), token: 1, [(5, Self.event(.updated, x, at: 9))])
    ])
    #expect(try Self.unsettledRow(storeA, 1)?.1 == ["1 started \(x)", "5 updated \(x)"])
    #expect(try Self.unsettledRow(storeA, 1)?.0 == 0xA1)
    let committed = engine.snapshot()
    #expect(
      try PostgresTestServer.psql(
        "SELECT id || ':' || shard FROM countdown_activity ORDER BY id", in: location.database
      )
      .split(separator: "\n") == ["\(x):1", "\(y):0"])
    #expect(
      try PostgresTestServer.psql(
        "SELECT string_agg(shard::text, ',' ORDER BY shard) FROM countdown_engine",
        in: location.database
      ).split(separator: "\n") == ["0,1"])
    // A node's store alone loads nothing at start: it loads the shards it takes.
    #expect(try storeA.load() == nil)
    // a dies; b takes both shards with new epochs.
    a.halt()
    record.killed("a", [0, 1], at: LeaseDriver.now())
    let b = try Self.node("b", location, record, shards: 2)
    defer { b.leave() }
    #expect(Self.eventually(4) { b.served.count == 2 })
    let taken = Dictionary(uniqueKeysWithValues: b.served.map { ($0.shard, $0.epoch) })
    #expect(taken[1]! > held[1]! && taken[0]! > held[0]!)
    let storeB = try PostgresStore(location, nodeOf: 2)
    defer { storeB.close() }
    for (shard, epoch) in taken { storeB.serve(shard, epoch: epoch) }
    // Each shard's load has its own rows only: x and its push in 1, y in 0.
    let loaded = try #require(try storeB.load(shard: 1))
    #expect(sameStoredState(loaded, Self.only(1, of: 2, committed)))
    #expect(
      sameStoredState(try #require(try storeB.load(shard: 0)), Self.only(0, of: 2, committed)))
    #expect(try storeB.loadPushes(shard: 1).pending.map(\.item.activity) == [x])
    #expect(try storeB.loadPushes(shard: 0).pending.isEmpty)
    // a's store, still open (a stopped process that continued): its write is refused by the
    // fence, naming the shard, and changes nothing.
    let z = Self.id("z", inShard: 1, of: 2)
    try engine.start(.countdown(id: z, to: at(60_000), title: "Z"), at: t0)
    let refused = #expect(throws: StoreError.self) {
      try storeA.write([
        Self.carrying(
          StoreChanges(engine: engine, ids: [z]), token: 2, [(7, Self.event(.started, z, at: 9))])
      ])
    }
    // What b reads when it takes shard 1: a's two commits' events, not the refused one's.
    #expect(try Self.unsettledRow(storeB, 1)?.1 == ["1 started \(x)", "5 updated \(x)"])
    #expect(unsettledA.backlog.lines[1]?.count == 2, "the refused write kept its events")
    #expect(
      refused?.message.contains("shard 1 is no longer this node's") == true,
      "\(refused?.message ?? "")")
    #expect(refused?.lostShard == 1)
    // A commit of both shards is refused whole at the first fence that fails.
    try engine.pause(y, at: at(500))
    let both = #expect(throws: StoreError.self) {
      try storeA.write([StoreChanges(engine: engine, ids: [y, z])])
    }
    #expect(both?.lostShard == 0, "\(both?.message ?? "")")
    #expect(
      sameStoredState(try #require(try storeB.load(shard: 1)), Self.only(1, of: 2, committed)))
    #expect(
      sameStoredState(try #require(try storeB.load(shard: 0)), Self.only(0, of: 2, committed)))
    // b's writes go on; one touching a shard b no longer serves is refused before it is sent.
    let unsettledB = UnsettledEvents(incarnation: 0xB2, formatter: TimerFormatter(style: .timer))
    storeB.unsettled = unsettledB
    var fromB = try ActivityEngine(restoring: loaded)
    try fromB.pause(x, at: at(1_000))
    try storeB.write([
      Self.carrying(
        StoreChanges(engine: fromB, ids: [x]), token: 0, [(3, Self.event(.paused, x, at: 1_000))])
    ])
    #expect(sameStoredState(try #require(try storeB.load(shard: 1)), fromB.snapshot()))
    #expect(try Self.unsettledRow(storeB, 1)?.0 == 0xB2)
    #expect(try Self.unsettledRow(storeB, 1)?.1 == ["3 paused \(x)"])
    // Once b's hub has relayed wake 0, the next commit of the shard holds only its own.
    unsettledB.settled(through: 0)
    try storeB.write([
      Self.carrying(
        StoreChanges(engine: fromB, ids: [x]), token: 1, [(4, Self.event(.updated, x, at: 1_100))])
    ])
    #expect(try Self.unsettledRow(storeB, 1)?.1 == ["4 updated \(x)"])
    // Shard 0 was written by no commit of b's: a's row stays, for whoever takes it.
    #expect(try Self.unsettledRow(storeB, 0)?.0 == 0xA1)
    storeB.stop(1)
    try fromB.resume(x, at: at(2_000))
    let notServed = #expect(throws: StoreError.self) {
      try storeB.write([StoreChanges(engine: fromB, ids: [x])])
    }
    #expect(notServed?.message.contains("shard 1 is not this node's (it serves 0)") == true)
    #expect(notServed?.lostShard == 1)
    #expect(try storeB.load(shard: 1)?.activities.first?.phase == .paused)
  }
}
