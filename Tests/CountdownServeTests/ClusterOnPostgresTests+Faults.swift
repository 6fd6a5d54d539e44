// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownCluster
import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Faults short of death (docs/cluster.md, "Faults short of death"; `make chaos`): two
/// forwarding nodes whose links go through ``FaultProxy``s, each node's to PostgreSQL and the
/// one the other node reaches it by (its `--advertise`), cut, held, slowed or flapped while
/// commands and boards go on.
extension ClusterOnPostgresTests {
  /// Whether `make chaos` asked for these tests (`COUNTDOWN_FAULTS=1`): they take about two
  /// minutes.
  static let faults = ProcessInfo.processInfo.environment["COUNTDOWN_FAULTS"] == "1"

  /// Every event one socket subscription gets, ticks included, in the order they came.
  final class EventLog: @unchecked Sendable {
    // @unchecked Sendable: the reading thread appends under the lock; tests read under it.
    struct Event: Hashable {
      let kind: String
      let id: String
      let at: Int64
      let value: Int64?
    }
    private let lock = NSLock()
    private var events: [Event] = []
    private let running = NIOLockedValueBox(true)

    /// Subscribes on `c` with `request` (a `subscribe` line) and reads its events until
    /// stopped.
    init(_ c: TestClient, _ request: String = #"{"op":"subscribe"}"#) throws {
      let r = try c.request(request, timeout: 10)
      guard r["ok"] as? Bool == true else { throw TestFailure("subscribe: \(r)") }
      struct Box: @unchecked Sendable { let c: TestClient }
      let box = Box(c: c)
      let t = Thread { [self, running] in
        while running.withLockedValue({ $0 }) {
          guard let line = box.c.line(timeout: 0.2),
            let o = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
            o["ok"] == nil, let kind = o["event"] as? String, let id = o["id"] as? String
          else { continue }
          let e = Event(
            kind: kind, id: id, at: (o["at"] as? NSNumber)?.int64Value ?? 0,
            value: (o["value"] as? NSNumber)?.int64Value)
          lock.withLock { events.append(e) }
        }
      }
      t.start()
    }

    var all: [Event] { lock.withLock { events } }
    /// The lifecycle events (ticks left out).
    var lifecycle: [Event] { all.filter { $0.kind != "tick" } }
    func of(_ id: String, _ kind: String) -> [Event] {
      all.filter { $0.id == id && $0.kind == kind }
    }

    /// Waits up to `seconds` for `check` to hold; whether it did.
    func wait(_ seconds: Double, until check: () -> Bool) -> Bool { waitUntil(seconds, check) }

    func stop() { running.withLockedValue { $0 = false } }
  }

  /// Two forwarding nodes and the links a test can break.
  struct FaultyPair {
    let url: String
    let a, b: ServerProcess
    let dirA, dirB: URL
    /// Each node's link to PostgreSQL.
    let pgA, pgB: FaultProxy
    /// The link by which the other node reaches a (a's `--advertise`), and b.
    let toA, toB: FaultProxy
    let owners: [Int: String]
    let ca, cb: TestClient

    /// A new connection to node a's (or b's) socket.
    func client(_ name: String) throws -> TestClient {
      try TestClient(unix: (name == "a" ? dirA : dirB).appendingPathComponent("c.sock").path)
    }
  }

  /// Runs `body` with two forwarding nodes whose every link goes through a ``FaultProxy``,
  /// each with a lease of `lease` ms.
  static func withFaultyPair(
    lease: Int64 = leaseMs, _ body: @escaping @Sendable (FaultyPair) throws -> Void
  ) async throws {
    let url = try PostgresTestServer.freshDatabaseURL()
    let pgPort = try CommitBoundOnPostgresTests.port(of: url)
    try await onThread {
      let (dirA, dirB) = (temporaryDirectory(), temporaryDirectory())
      let (pgA, pgB) = (try FaultProxy(to: pgPort), try FaultProxy(to: pgPort))
      let (listenA, listenB) = (try freePort(), try freePort())
      let (toA, toB) = (try FaultProxy(to: listenA), try FaultProxy(to: listenB))
      defer {
        for proxy in [pgA, pgB, toA, toB] { proxy.stop() }
        try? FileManager.default.removeItem(at: dirA)
        try? FileManager.default.removeItem(at: dirB)
      }
      let start = { (name: String, dir: URL, pg: FaultProxy, listen: Int, to: FaultProxy) in
        try Self.node(
          name, pg.through(url), in: dir,
          [
            "--listen", "127.0.0.1:\(listen)", "--advertise", "127.0.0.1:\(to.port)",
            "--cluster-token", "ct-1", "--http", "127.0.0.1:0",
          ], lease: lease)
      }
      let a = try start("a", dirA, pgA, listenA, toA)
      let b = try start("b", dirB, pgB, listenB, toB)
      defer {
        for p in [a, b] {
          kill(p.pid, SIGKILL)
          _ = p.exitStatus(within: 5)
        }
      }
      let owners = try Self.split(url, among: ["a", "b"])
      try #require(owners.count == Self.shards, "\(owners)")
      let (ca, cb) = (
        try TestClient(unix: dirA.appendingPathComponent("c.sock").path),
        try TestClient(unix: dirB.appendingPathComponent("c.sock").path)
      )
      for c in [ca, cb] { try Self.waitServing(c, Self.shards) }
      try body(
        FaultyPair(
          url: url, a: a, b: b, dirA: dirA, dirB: dirB, pgA: pgA, pgB: pgB, toA: toA, toB: toB,
          owners: owners, ca: ca, cb: cb))
    }
  }

  /// `request`'s reply on `c` and how long it took, in ms.
  static func timed(_ c: TestClient, _ request: String, timeout: Double = 30) throws -> (
    [String: Any], Int64
  ) {
    let t = nowMs()
    let r = try c.request(request, timeout: timeout)
    return (r, nowMs() - t)
  }

  /// Checks that each of `logs` holds every lifecycle event that any of them holds exactly
  /// once (the boards agree, and none has a repeat); `names` label them in the failures.
  static func expectSameEventsOnce(
    _ logs: [EventLog], _ names: [String], sourceLocation: SourceLocation = #_sourceLocation
  ) {
    var union: Set<EventLog.Event> = []
    for log in logs { union.formUnion(log.lifecycle) }
    for (log, name) in zip(logs, names) {
      var counts: [EventLog.Event: Int] = [:]
      for e in log.lifecycle { counts[e, default: 0] += 1 }
      let missing = union.subtracting(counts.keys)
      let repeated = counts.filter { $0.value > 1 }.map(\.key)
      #expect(missing.isEmpty, "board \(name) lacks \(missing)", sourceLocation: sourceLocation)
      #expect(
        repeated.isEmpty, "board \(name) has twice \(repeated)", sourceLocation: sourceLocation)
    }
  }

  /// Checks that a tick subscription never got the same tick twice (one activity's value at
  /// one instant: two nodes delivering the same shard). A value may come once more at
  /// another instant: the step of a takeover hands on the value the activity shows then
  /// (docs/cluster.md, "Faults short of death").
  static func expectNoTickTwice(
    _ log: EventLog, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    var seen: Set<EventLog.Event> = []
    var twice: [EventLog.Event] = []
    for e in log.all where e.kind == "tick" {
      if !seen.insert(e).inserted { twice.append(e) }
    }
    #expect(twice.isEmpty, "ticks delivered twice: \(twice)", sourceLocation: sourceLocation)
  }

  @Test(
    "A node cut off from PostgreSQL while its clients reach it: its shards go to the other node at its lease; what falls due meanwhile reaches both boards once, at its instant; a tick subscriber on it never gets a value twice; healed, it serves its share again; nothing acknowledged by either node is lost",
    .enabled(if: faults, "a fault test: make chaos"))
  func cutFromPostgres() async throws {
    try await Self.withFaultyPair { p in
      let (ca, cb, owners) = (p.ca, p.cb, p.owners)
      let boardA = try EventLog(try p.client("a"))
      let boardB = try EventLog(try p.client("b"))
      let cutAt = nowMs() + 1_000
      // In a's shards: one that ends while b serves them, one that goes on ticking.
      let due = Self.id("due", ownedBy: "a", owners)
      let ticking = Self.id("tk", ownedBy: "a", owners)
      let ofB = Self.id("ofb", ownedBy: "b", owners)
      var acknowledged: Set<String> = []
      for (id, end) in [(due, cutAt + 3_000), (ticking, cutAt + 600_000), (ofB, cutAt + 2_500)] {
        let r = try Self.retrying(
          ca, #"{"op":"start","id":"\#(id)","kind":"countdown","endDate":\#(end),"title":"T"}"#)
        #expect(r["ok"] as? Bool == true, "\(r)")
        acknowledged.insert(id)
      }
      let ticks = try EventLog(
        try p.client("a"), #"{"op":"subscribe","ticks":true,"ids":["\#(ticking)"]}"#)
      while nowMs() < cutAt { usleep(5_000) }
      p.pgA.hold()
      // Commands through both nodes while the cut lasts, ids over every shard: each is
      // acknowledged or refused, and what is acknowledged stays.
      var refused = 0
      for k in 0..<30 {
        let c = k % 2 == 0 ? ca : cb
        let (r, took) = try Self.timed(
          c, #"{"op":"start","id":"cut\#(k)","kind":"elapsed","title":"C"}"#)
        if r["ok"] as? Bool == true {
          acknowledged.insert("cut\(k)")
        } else {
          refused += 1
          #expect(["unavailable", "storageFailed"].contains(r["code"] as? String ?? ""), "\(r)")
        }
        #expect(took <= Self.leaseMs + 2_500, "answered after \(took) ms: \(r)")
        usleep(100_000)
      }
      // b serves a's shards within the lease and a second.
      let taken = waitUntil(Double(Self.leaseMs) / 1000 + 2) {
        (try? cb.request(#"{"op":"get","id":"\#(ticking)"}"#))?["ok"] as? Bool == true
      }
      #expect(taken, "b never served a's shards")
      // What fell due in a's shards during the cut reached both boards once, at its instant.
      for board in [boardA, boardB] {
        _ = board.wait(5) { !board.of(due, "expired").isEmpty }
        #expect(
          board.of(due, "expired").map(\.at) == [cutAt + 3_000], "\(board.of(due, "expired"))")
        #expect(
          board.of(ofB, "expired").map(\.at) == [cutAt + 2_500], "\(board.of(ofB, "expired"))")
      }
      // The tick subscriber on a goes on getting the countdown's ticks, from b, none twice.
      let late = nowMs()
      #expect(ticks.wait(4) { ticks.all.contains { $0.kind == "tick" && $0.at > late } })

      p.pgA.heal()
      let back = try Self.split(p.url, among: ["a", "b"])
      #expect(back.values.filter { $0 == "a" }.count == Self.shards / 2, "\(back)")
      try Self.waitServing(ca, Self.shards)
      // Nothing acknowledged is lost, through either node.
      for id in acknowledged.sorted() {
        for c in [ca, cb] {
          let r = try Self.retrying(c, #"{"op":"get","id":"\#(id)"}"#)
          #expect(r["ok"] as? Bool == true, "\(id): \(r)")
        }
      }
      usleep(1_500_000)
      for log in [boardA, boardB, ticks] { log.stop() }
      Self.expectNoTickTwice(ticks)
      Self.expectSameEventsOnce([boardA, boardB], ["a", "b"])
      print("cut from PostgreSQL: \(acknowledged.count) acknowledged, \(refused) refused")
    }
  }

  @Test(
    "Two nodes that cannot reach each other while both reach PostgreSQL: a forwarded command is answered unavailable within its bound, a list names the node that did not answer, each board shows its own node's changes live; healed, the relays catch up from the ring and both boards hold every lifecycle event exactly once",
    .enabled(if: faults, "a fault test: make chaos"))
  func nodesCutFromEachOther() async throws {
    try await Self.withFaultyPair { p in
      let (ca, cb, owners) = (p.ca, p.cb, p.owners)
      let boardA = try EventLog(try p.client("a"))
      let boardB = try EventLog(try p.client("b"))
      let (xa, xb) = (Self.id("xa", ownedBy: "a", owners), Self.id("xb", ownedBy: "b", owners))
      let far = nowMs() + 600_000
      for (c, id) in [(ca, xa), (cb, xb)] {
        let r = try Self.retrying(
          c, #"{"op":"start","id":"\#(id)","kind":"countdown","endDate":\#(far),"title":"X"}"#)
        #expect(r["ok"] as? Bool == true, "\(r)")
      }
      // Both boards have both starts before the partition.
      for board in [boardA, boardB] {
        #expect(
          board.wait(5) { !board.of(xa, "started").isEmpty && !board.of(xb, "started").isEmpty })
      }
      // Held: the bytes wait, nobody answers.
      p.toA.hold()
      p.toB.hold()
      var (r, took) = try Self.timed(ca, #"{"op":"get","id":"\#(xb)"}"#)
      #expect(r["code"] as? String == "unavailable", "\(r)")
      #expect(took <= 2 * Self.leaseMs + 1_500, "forwarded get answered after \(took) ms")
      (r, took) = try Self.timed(cb, #"{"op":"list"}"#)
      #expect(r["code"] as? String == "unavailable", "\(r)")
      #expect((r["message"] as? String ?? "").contains("node a"), "\(r)")
      #expect(took <= 2 * Self.leaseMs + 1_500, "list answered after \(took) ms")
      // Cut: the relay connections break, and heal from the rings after.
      p.toA.cut()
      p.toB.cut()
      (r, took) = try Self.timed(ca, #"{"op":"get","id":"\#(xb)"}"#)
      #expect(r["code"] as? String == "unavailable", "\(r)")
      #expect(took <= 2 * Self.leaseMs + 1_500, "forwarded get answered after \(took) ms")
      // Each node's own changes reach its own board live.
      let soon = nowMs() + 1_500
      let (ya, yb) = (Self.id("ya", ownedBy: "a", owners), Self.id("yb", ownedBy: "b", owners))
      for (c, x, y) in [(ca, xa, ya), (cb, xb, yb)] {
        r = try c.request(#"{"op":"pause","id":"\#(x)"}"#)
        #expect(r["ok"] as? Bool == true, "\(r)")
        r = try c.request(
          #"{"op":"start","id":"\#(y)","kind":"countdown","endDate":\#(soon),"title":"Y"}"#)
        #expect(r["ok"] as? Bool == true, "\(r)")
      }
      for (board, x, y) in [(boardA, xa, ya), (boardB, xb, yb)] {
        #expect(board.wait(1) { !board.of(x, "paused").isEmpty }, "\(board.lifecycle)")
        #expect(board.wait(3) { board.of(y, "expired").map(\.at) == [soon] }, "\(board.lifecycle)")
      }
      // The other node's changes did not come through the partition.
      #expect(boardA.of(xb, "paused").isEmpty && boardB.of(xa, "paused").isEmpty)
      // The relays' connections were among those reset.
      #expect(p.toA.reset > 0 && p.toB.reset > 0, "nothing reset: \(p.toA.reset), \(p.toB.reset)")
      p.toA.heal()
      p.toB.heal()
      // The relays connect again and ask for what they missed.
      for (board, x, y) in [(boardA, xb, yb), (boardB, xa, ya)] {
        #expect(
          board.wait(10) { !board.of(x, "paused").isEmpty && !board.of(y, "expired").isEmpty },
          "\(board.lifecycle)")
      }
      // A forwarded command and a list work again.
      r = try Self.retrying(ca, #"{"op":"get","id":"\#(xb)"}"#)
      #expect(DurabilityTests.activity(r)["phase"] as? String == "paused", "\(r)")
      r = try Self.retrying(cb, #"{"op":"list"}"#)
      #expect((r["activities"] as? [Any])?.count == 4, "\(r)")
      usleep(1_000_000)
      boardA.stop()
      boardB.stop()
      Self.expectSameEventsOnce([boardA, boardB], ["a", "b"])
      #expect(boardA.lifecycle.count == 8, "\(boardA.lifecycle)")
    }
  }

  @Test(
    "PostgreSQL slowed to 300 ms a round trip for 10 s (a 2 s lease): the leases hold (the shards keep their owners and epochs), commands slow down and each is answered once, every acknowledged one is kept, and what falls due meanwhile reaches both boards once",
    .enabled(if: faults, "a fault test: make chaos"))
  func slowPostgres() async throws {
    // A lease of 2 s: a round trip of 300 ms is well within the two fifths of it a lease
    // holds through, whatever else the machine runs (the driver before the fix lost its
    // leases with this one too).
    try await Self.withFaultyPair(lease: 2_000) { p in
      let (ca, cb, owners) = (p.ca, p.cb, p.owners)
      let before = try Self.settledEpochs(ca)
      let boardA = try EventLog(try p.client("a"))
      let boardB = try EventLog(try p.client("b"))
      let slowFrom = nowMs() + 500
      var dueAt: [String: Int64] = [:]
      for (k, owner) in ["a", "b", "a", "b"].enumerated() {
        let id = Self.id("due\(k)-", ownedBy: owner, owners)
        dueAt[id] = slowFrom + 2_000 + Int64(k) * 2_000
        let r = try Self.retrying(
          ca,
          #"{"op":"start","id":"\#(id)","kind":"countdown","endDate":\#(dueAt[id]!),"title":"D"}"#)
        #expect(r["ok"] as? Bool == true, "\(r)")
      }
      while nowMs() < slowFrom { usleep(5_000) }
      p.pgA.slow(150)
      p.pgB.slow(150)
      // Starts through both nodes, one at a time each, for the 10 s.
      let results = NIOLockedValueBox<
        [(id: String, ok: Bool, code: String?, ms: Int64, end: Int64)]
      >([])
      let threads = [("a", ca), ("b", cb)].map { name, c in
        struct Box: @unchecked Sendable { let c: TestClient }
        let box = Box(c: c)
        let t = Thread {
          var k = 0
          while nowMs() < slowFrom + 10_000 {
            let id = "slow-\(name)\(k)"
            k += 1
            guard
              let (r, ms) = try? Self.timed(
                box.c, #"{"rid":"\#(id)","op":"start","id":"\#(id)","kind":"elapsed","title":"S"}"#)
            else {
              results.withLockedValue { $0.append((id, false, "no answer", 30_000, nowMs())) }
              return
            }
            // Each reply is its own request's.
            let rid = r["rid"] as? String
            results.withLockedValue {
              $0.append(
                (id, r["ok"] as? Bool == true && rid == id, r["code"] as? String, ms, nowMs()))
            }
          }
        }
        t.start()
        return t
      }
      while nowMs() < slowFrom + 10_000 { usleep(50_000) }
      // On a connection of its own: `ca` is the start thread's until it ends.
      let during = try Self.epochs(try p.client("a"))
      let healedAt = nowMs()
      p.pgA.heal()
      p.pgB.heal()
      while threads.contains(where: { !$0.isFinished }) { usleep(50_000) }
      let all = results.withLockedValue { $0 }
      let slowest = all.map(\.ms).max() ?? 0
      print(
        "slow PostgreSQL: \(all.filter(\.ok).count) of \(all.count) acknowledged, slowest \(slowest) ms"
      )
      // The delay applied: each commit answered before the heal waited at least one slowed
      // round trip (but the first of each client, whose bytes may have been read before).
      // One in flight at the heal has its answer come back undelayed: 150 ms.
      #expect(all.filter { $0.end < healedAt && $0.ms < 300 }.count <= 2, "\(all)")
      // …and nothing else went wrong: the leases held, so every command was carried out.
      #expect(all.allSatisfy { $0.ok }, "\(all.filter { !$0.ok })")
      #expect(before == during, "the shards' owners or epochs moved: \(before) → \(during)")
      // No reply came twice or late: nothing is left to read on either connection.
      for c in [ca, cb] { #expect(c.line(timeout: 0.3) == nil) }
      for result in all where result.ok {
        let r = try ca.request(#"{"op":"get","id":"\#(result.id)"}"#)
        #expect(r["ok"] as? Bool == true, "\(result.id): \(r)")
      }
      for (id, at) in dueAt {
        for board in [boardA, boardB] {
          #expect(board.wait(5) { !board.of(id, "expired").isEmpty })
          #expect(board.of(id, "expired").map(\.at) == [at], "\(board.of(id, "expired"))")
        }
      }
      boardA.stop()
      boardB.stop()
      Self.expectSameEventsOnce([boardA, boardB], ["a", "b"])
    }
  }

  /// ``epochs(_:)`` once `c`'s node observes every shard owned, half by each node (up to 5 s).
  static func settledEpochs(_ c: TestClient) throws -> [Int: String] {
    let until = Date().addingTimeInterval(5)
    while true {
      let e = try epochs(c)
      let owners = e.values.map { $0.split(separator: "@").first ?? "" }
      if e.count == shards, owners.filter({ $0 == "a" }).count == shards / 2,
        owners.filter({ $0 == "b" }).count == shards / 2
      {
        return e
      }
      if Date() > until { throw TestFailure("the shards did not settle: \(e)") }
      usleep(50_000)
    }
  }

  /// Each shard's owner and epoch as `c`'s node observes them (`cluster`).
  static func epochs(_ c: TestClient) throws -> [Int: String] {
    let r = try c.request(#"{"op":"cluster"}"#, timeout: 10)
    var out: [Int: String] = [:]
    for s in r["shards"] as? [[String: Any]] ?? [] {
      guard let shard = (s["shard"] as? NSNumber)?.intValue else { continue }
      out[shard] = "\(s["owner"] as? String ?? "-")@\((s["epoch"] as? NSNumber)?.int64Value ?? 0)"
    }
    return out
  }

  @Test(
    "A node's link to PostgreSQL cut and healed every 700 ms for 20 s: no epoch of a shard has two owners, what falls due reaches both boards once at its instant, no tick is delivered twice, nothing acknowledged is lost, and the shards are split again after",
    .enabled(if: faults, "a fault test: make chaos"))
  func flappingLink() async throws {
    try await Self.withFaultyPair { p in
      let (ca, cb, owners) = (p.ca, p.cb, p.owners)
      let boardA = try EventLog(try p.client("a"))
      let boardB = try EventLog(try p.client("b"))
      let flapFrom = nowMs() + 1_000
      var dueAt: [String: Int64] = [:]
      for k in 0..<10 {
        let id = Self.id("due\(k)-", ownedBy: k % 3 == 2 ? "b" : "a", owners)
        dueAt[id] = flapFrom + 1_500 + Int64(k) * 2_000 + Int64(k * 37 % 500)
        let r = try Self.retrying(
          cb,
          #"{"op":"start","id":"\#(id)","kind":"countdown","endDate":\#(dueAt[id]!),"title":"D"}"#)
        #expect(r["ok"] as? Bool == true, "\(r)")
      }
      // Sixteen countdowns ticking in a's shards, their ticks spread over the second: two
      // nodes delivering one shard at once, for as little as a tenth of a second, show as a
      // tick delivered twice.
      var r: [String: Any] = [:]
      var ticking: [String] = []
      for k in 0..<16 {
        let id = Self.id("tk\(k)-", ownedBy: "a", owners)
        ticking.append(id)
        r = try Self.retrying(
          ca,
          #"{"op":"start","id":"\#(id)","kind":"countdown","endDate":\#(flapFrom + 600_000 + Int64(k) * 62),"title":"T"}"#
        )
        #expect(r["ok"] as? Bool == true, "\(r)")
      }
      let idList = ticking.map { "\"\($0)\"" }.joined(separator: ",")
      let ticks = try EventLog(
        try p.client("a"), #"{"op":"subscribe","ticks":true,"ids":[\#(idList)]}"#)
      // Every 200 ms, each node's view of each shard: owner at epoch.
      let seen = NIOLockedValueBox<[Int: [Int64: Set<String>]]>([:])
      let watching = NIOLockedValueBox(true)
      struct Clients: @unchecked Sendable { let all: [TestClient] }
      let views = Clients(all: [try p.client("a"), try p.client("b")])
      let watcher = Thread {
        while watching.withLockedValue({ $0 }) {
          for c in views.all {
            guard let r = try? c.request(#"{"op":"cluster"}"#, timeout: 10) else { continue }
            for s in r["shards"] as? [[String: Any]] ?? [] {
              guard let shard = (s["shard"] as? NSNumber)?.intValue,
                let epoch = (s["epoch"] as? NSNumber)?.int64Value, let owner = s["owner"] as? String
              else { continue }
              seen.withLockedValue { _ = $0[shard, default: [:]][epoch, default: []].insert(owner) }
            }
          }
          usleep(200_000)
        }
      }
      watcher.start()
      while nowMs() < flapFrom { usleep(5_000) }
      let flapped = p.pgA.flap(every: 0.7, for: 20)
      // Starts through a while it flaps: acknowledged ones must stay.
      var acknowledged: [String] = []
      var k = 0
      while nowMs() < flapFrom + 20_000 {
        let id = "flap\(k)"
        k += 1
        r = try ca.request(
          #"{"op":"start","id":"\#(id)","kind":"elapsed","title":"F"}"#, timeout: 30)
        if r["ok"] as? Bool == true { acknowledged.append(id) }
        usleep(200_000)
      }
      flapped()
      print(
        "flapping: \(acknowledged.count) of \(k) acknowledged; \(p.pgA.reset) connections reset")
      #expect(p.pgA.reset > 0, "the flapping reset no connection")
      let back = try Self.split(p.url, among: ["a", "b"])
      #expect(back.values.filter { $0 == "a" }.count == Self.shards / 2, "\(back)")
      try Self.waitServing(ca, Self.shards)
      watching.withLockedValue { $0 = false }
      while !watcher.isFinished { usleep(20_000) }
      let twoOwners = seen.withLockedValue { $0 }.flatMap { shard, epochs in
        epochs.filter { $0.value.count > 1 }.map { "shard \(shard) epoch \($0.key): \($0.value)" }
      }
      #expect(twoOwners.isEmpty, "\(twoOwners)")
      for id in acknowledged {
        r = try Self.retrying(cb, #"{"op":"get","id":"\#(id)"}"#)
        #expect(r["ok"] as? Bool == true, "\(id): \(r)")
      }
      for (id, at) in dueAt {
        for board in [boardA, boardB] {
          #expect(board.wait(5) { !board.of(id, "expired").isEmpty })
          #expect(board.of(id, "expired").map(\.at) == [at], "\(id): \(board.of(id, "expired"))")
        }
      }
      usleep(1_000_000)
      for log in [boardA, boardB, ticks] { log.stop() }
      Self.expectNoTickTwice(ticks)
      Self.expectSameEventsOnce([boardA, boardB], ["a", "b"])
    }
  }
}
