// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Testing

@testable import CountdownCluster

@Suite("A node's engine made from its shards")
struct ShardAssemblyTests {
  /// A countdown to `ms` after t0 with a milestone 2 s before its end, dismissed 1 s after.
  static func countdown(_ id: String, to ms: Int64) -> ActivityRequest {
    var r = ActivityRequest.countdown(id: id, to: at(ms), title: id)
    r.milestones = [Milestone(name: "half", atMs: 2_000)]
    r.endOnExpiry = .after(at(ms + 1_000))
    return r
  }

  @Test("A taken shard steps from its last commit: what passed fires once, at its own instant")
  func takenShardSteps() throws {
    // The shard's last owner: two countdowns, its last commit at +1 s.
    var (shard, _) = makeEngine()
    _ = try shard.start(Self.countdown("s1", to: 5_000), at: t0)
    _ = try shard.start(Self.countdown("s2", to: 60_000), at: at(500))
    try shard.advance(to: at(1_000))
    let lastCommit = shard.snapshot()
    // The node taking it, at +10 s, with one of its own.
    var (node, _) = makeEngine(EngineOptions(idSeed: 7))
    _ = try node.start(.elapsed(id: "n1", from: nil, title: "n1"), at: t0)
    try node.advance(to: at(10_000))
    let own = node.snapshot()

    let assembled = ShardAssembly.assemble(own, keeping: { _ in true }, taking: [lastCommit])

    // The events are the shard's own restart's, from +1 s to +10 s.
    let reference = Recorder()
    var restarted = try ActivityEngine(restoring: lastCommit) { reference.events.append($0) }
    try restarted.stepClock(to: at(10_000))
    #expect(assembled.events.map(Recorder.describe) == reference.lines)
    #expect(
      reference.lines(Set(ActivityEvent.Kind.allCases).subtracting([.tick])) == [
        "3000 milestone s1 half", "5000 expired s1", "5000 ended s1 0 expired", "6000 dismissed s1",
      ])
    // s1 was dismissed during the step; n1 and s2 remain, numbered in start order.
    let s = assembled.snapshot
    #expect(s.activities.map(\.id) == ["n1", "s2"])
    #expect(s.activities.map(\.order) == [0, 1] && s.nextOrder == 2)
    #expect(s.now == at(10_000) && s.idGeneratorState == own.idGeneratorState)
    #expect(s.activities[0] == own.activities[0].renumbered(0))
    #expect(s.activities[1] == restarted.stored("s2")!.renumbered(1))
    _ = try ActivityEngine(restoring: s)
  }

  @Test("A shard no longer served leaves without an event; the rest keep their order")
  func droppedShardLeaves() throws {
    var (node, _) = makeEngine()
    for (k, id) in ["a", "b", "c", "d"].enumerated() {
      _ = try node.start(Self.countdown(id, to: 30_000), at: at(Int64(k) * 100))
    }
    let assembled = ShardAssembly.assemble(
      node.snapshot(), keeping: { $0.id != "b" && $0.id != "d" }, taking: [])
    #expect(assembled.events.isEmpty)
    #expect(assembled.snapshot.activities.map(\.id) == ["a", "c"])
    #expect(assembled.snapshot.activities.map(\.order) == [0, 1])
  }

  @Test("An id in two parts: that part is refused, naming the id; the others are assembled")
  func duplicateRefused() throws {
    var (a, _) = makeEngine()
    _ = try a.start(Self.countdown("same", to: 30_000), at: t0)
    var (b, _) = makeEngine()
    _ = try b.start(Self.countdown("same", to: 40_000), at: t0)
    _ = try b.start(Self.countdown("b2", to: 40_000), at: t0)
    var (c, _) = makeEngine()
    _ = try c.start(Self.countdown("c1", to: 40_000), at: t0)
    let assembled = ShardAssembly.assemble(
      a.snapshot(), keeping: { _ in true }, taking: [b.snapshot(), c.snapshot()])
    #expect(assembled.refused.keys.sorted() == [0])
    #expect(assembled.refused[0]?.code == .invalidPayload)
    #expect(assembled.refused[0]?.message.contains(#""same""#) == true)
    #expect(assembled.snapshot.activities.map(\.id) == ["same", "c1"])
    #expect(assembled.snapshot.activities.first?.anchor == at(30_000).milliseconds)
  }

  @Test("A damaged row refuses its shard alone, as a restore names it; the rest are served")
  func damagedShardRefused() throws {
    var (a, _) = makeEngine()
    _ = try a.start(Self.countdown("a1", to: 30_000), at: t0)
    var damaged = a.snapshot()
    damaged.activities[0].nextMilestone = 9
    var (c, _) = makeEngine()
    _ = try c.start(Self.countdown("c1", to: 40_000), at: t0)
    let (node, _) = makeEngine()
    let assembled = ShardAssembly.assemble(
      node.snapshot(), keeping: { _ in true }, taking: [damaged, c.snapshot()])
    #expect(assembled.refused.keys.sorted() == [0])
    #expect(assembled.refused[0]?.message.contains("nextMilestone 9") == true)
    #expect(assembled.snapshot.activities.map(\.id) == ["c1"])
  }

  @Test(
    "A shard's rows with orders from several nodes (duplicates, past nextOrder) restore in start order"
  )
  func mixedOrdersRestore() throws {
    // As issue 55 found them: "a189" and another row of shard 60 both at order 62, one
    // numbered by node b's engine and one by c's; and a row numbered past the engine row.
    var (owner, _) = makeEngine()
    for (k, id) in ["x", "y", "z", "w"].enumerated() {
      _ = try owner.start(Self.countdown(id, to: 30_000), at: at(Int64(k / 2) * 100))
    }
    var rows = owner.snapshot()
    rows.activities[0].order = 62
    rows.activities[1].order = 5
    rows.activities[2].order = 62
    rows.activities[3].order = 400
    rows.nextOrder = 63
    #expect(throws: CountdownError.self) { _ = try ActivityEngine(restoring: rows) }
    let normal = ShardAssembly.inStartOrder(rows)
    // By start instant (x and y at +0, z and w at +100), then the number, then the id.
    #expect(normal.activities.map(\.id) == ["y", "x", "z", "w"])
    #expect(normal.activities.map(\.order) == [0, 1, 2, 3] && normal.nextOrder == 4)
    let (node, _) = makeEngine()
    let assembled = ShardAssembly.assemble(node.snapshot(), keeping: { _ in true }, taking: [rows])
    #expect(assembled.refused.isEmpty)
    #expect(assembled.snapshot.activities.map(\.id) == ["y", "x", "z", "w"])
    // Equal instants and equal numbers: the id decides, the same on every node.
    rows.activities[1].order = 62
    #expect(ShardAssembly.inStartOrder(rows).activities.map(\.id) == ["x", "y", "z", "w"])
    var reversed = rows
    reversed.activities.reverse()
    #expect(
      ShardAssembly.inStartOrder(reversed).activities.map(\.id)
        == ShardAssembly.inStartOrder(rows).activities.map(\.id))
  }

  @Test(
    "Model check: any sequence of takes, hand-overs and commits leaves every shard's rows restorable",
    arguments: 0..<30)
  func handOversKeepRowsRestorable(round: Int) async throws {
    try await onThread(computing: true) {
      let seed = testSeed() &+ UInt64(round) &* 7919
      var g = RandomRun(seed: seed, grid: 1)
      let shardCount = 4
      let nodeCount = 3
      func shard(of id: String) -> Int { Int(id.dropFirst().prefix { $0 != "-" })! }
      // PostgreSQL: each shard's rows and engine row as its last commit left them.
      var database = [EngineSnapshot?](repeating: nil, count: shardCount)
      // Each node: its engine (nil: not running) and the shards it serves.
      var nodes = (0..<nodeCount).map { n in
        (
          engine: ActivityEngine(now: t0, options: EngineOptions(idSeed: UInt64(n))),
          shards: Set<Int>()
        )
      }
      var now = t0.milliseconds
      var made = 0
      /// A node's commit of `ids` (the rows it changed): only those rows are written, with the
      /// numbers its engine gives them, as a node's store writes them.
      func commit(_ n: Int, _ ids: [String]) {
        let e = nodes[n].engine
        for s in nodes[n].shards {
          let changed = e.snapshot(of: ids.filter { shard(of: $0) == s })
          var rows =
            database[s]
            ?? EngineSnapshot(
              now: e.now, options: e.options, nextOrder: 0, idGeneratorState: 0, activities: [])
          for a in changed.activities {
            if let k = rows.activities.firstIndex(where: { $0.id == a.id }) {
              rows.activities[k] = a
            } else {
              rows.activities.append(a)
            }
          }
          let gone = Set(ids).subtracting(changed.activities.map(\.id))
          rows.activities.removeAll { gone.contains($0.id) }
          rows.now = e.now
          rows.nextOrder = changed.nextOrder
          database[s] = rows
        }
      }
      for step in 0..<120 {
        now += g.rand(0...400)
        let n = Int(g.rand(0...Int64(nodeCount - 1)))
        try nodes[n].engine.advance(to: Instant(milliseconds: now))
        switch g.rand(0...9) {
        case 0...1:
          // Takes a shard nobody serves (its owner lost it: stopped, or handed it over).
          let free = (0..<shardCount).filter { s in !nodes.contains { $0.shards.contains(s) } }
          guard let s = free.sorted().randomElement(using: &g.rng) else { continue }
          let taken = database[s].map { [$0] } ?? []
          let a = ShardAssembly.assemble(
            nodes[n].engine.snapshot(), keeping: { _ in true }, taking: taken)
          #expect(a.refused.isEmpty, "seed \(seed) step \(step): \(a.refused)")
          nodes[n].engine = try ActivityEngine(restoring: a.snapshot)
          nodes[n].shards.insert(s)
          // The step's events are committed: the rows it changed.
          commit(n, Array(Set(a.events.map { $0.id })).sorted())
        case 2:
          // Hands a shard over (or loses it): its activities leave the engine silently.
          guard let s = nodes[n].shards.sorted().randomElement(using: &g.rng) else { continue }
          nodes[n].shards.remove(s)
          let a = ShardAssembly.assemble(
            nodes[n].engine.snapshot(), keeping: { shard(of: $0.id) != s }, taking: [])
          nodes[n].engine = try ActivityEngine(restoring: a.snapshot)
        case 3:
          // Dies and comes back empty (kill -9): it serves nothing until it takes shards.
          nodes[n] = (ActivityEngine(now: Instant(milliseconds: now)), [])
        default:
          // Starts an activity in one of its shards, or pauses, resumes or ends one of them.
          guard let s = nodes[n].shards.sorted().randomElement(using: &g.rng) else { continue }
          let mine = nodes[n].engine.activities().map(\.id).filter { shard(of: $0) == s }
          if mine.isEmpty || g.rand(0...2) == 0 {
            made += 1
            let id = "s\(s)-\(made)"
            _ = try nodes[n].engine.start(
              Self.countdown(id, to: now - t0.milliseconds + g.rand(500...20_000)),
              at: Instant(milliseconds: now))
            commit(n, [id])
          } else {
            let id = mine.randomElement(using: &g.rng)!
            let t = Instant(milliseconds: now)
            switch g.rand(0...2) {
            case 0: try? nodes[n].engine.pause(id, at: t)
            case 1: try? nodes[n].engine.resume(id, at: t)
            default: try? nodes[n].engine.end(id, at: t)
            }
            commit(n, [id])
          }
        }
        // Every shard's rows, as they stand, are restorable by any node, in start order.
        for s in 0..<shardCount {
          guard let rows = database[s] else { continue }
          let (fresh, _) = makeEngine()
          let a = ShardAssembly.assemble(fresh.snapshot(), keeping: { _ in true }, taking: [rows])
          #expect(a.refused.isEmpty, "seed \(seed) step \(step) shard \(s): \(a.refused)")
          let order = ShardAssembly.inStartOrder(rows).activities
          #expect(zip(order, order.dropFirst()).allSatisfy { $0.startedAt <= $1.startedAt })
        }
      }
    }
  }

  @Test(
    "Randomized: the assembled engine gives each activity the events its shard's own engine would",
    arguments: 0..<40)
  func randomized(round: Int) throws {
    let seed = testSeed() &+ UInt64(round)
    var g = RandomRun(seed: seed, grid: round % 2 == 0 ? 500 : 1)
    // Three shards, each run by its own engine from t0 for a while (the last commit of its
    // owner), the node's own (part 0) furthest on: the node takes the other two.
    var parts: [ActivityEngine] = []
    var rest: [[(at: Int64, command: RandomCommands.Command)]] = []
    for p in 0..<3 {
      g.t = t0.milliseconds
      let ids = (0..<5).map { "p\(p)-\($0)" }
      let commands = RandomCommands.run(&g, count: 50, ids: ids).filter {
        switch $0.command {
        case .start(let r): r.id != nil
        case .enable: false
        default: true
        }
      }
      let cut = Int(g.rand(0...Int64(commands.count)))
      var e = ActivityEngine(now: t0, options: EngineOptions(idSeed: UInt64(p)))
      for (t, c) in commands[..<cut] { _ = RandomCommands.apply(c, at: t, to: &e) }
      try e.advance(to: e.now.advanced(by: g.rand(0...3_000)))
      parts.append(e)
      rest.append(Array(commands[cut...]))
    }
    let now = parts.map(\.now).max()!.advanced(by: g.rand(0...20_000))
    try parts[0].advance(to: now)
    let lastCommits = parts.map { $0.snapshot() }

    // Each shard alone: restarted from its last commit, stepped to `now`, then given its
    // commands after `now` and moved on 40 s.
    let references = (0..<3).map { _ in Recorder() }
    var alone = try (0..<3).map { p in
      try ActivityEngine(restoring: lastCommits[p]) { references[p].events.append($0) }
    }
    for p in 0..<3 { try alone[p].stepClock(to: now) }

    // The node: its own engine and the two taken, in one.
    let assembled = ShardAssembly.assemble(
      lastCommits[0], keeping: { _ in true }, taking: Array(lastCommits[1...]))
    let recorder = Recorder()
    var node = try ActivityEngine(restoring: assembled.snapshot) { recorder.events.append($0) }

    // The commands after `now` (each part's, at their instants, in time order), then 40 s.
    var later = rest.enumerated().flatMap { p, cs in
      cs.map { (p: p, at: max($0.at, now.milliseconds), command: $0.command) }
    }
    later.sort { $0.at < $1.at }
    for c in later {
      let a = RandomCommands.apply(c.command, at: c.at, to: &alone[c.p])
      let b = RandomCommands.apply(c.command, at: c.at, to: &node)
      #expect(a == b, "seed \(seed): \(c.command) at \(c.at)")
    }
    // 40 s past `now`, or past the last command (the runs go on for a while after `now`).
    let end = Instant(milliseconds: max(now.milliseconds, later.last?.at ?? 0) + 40_000)
    for p in 0..<3 { try alone[p].advance(to: end) }
    try node.advance(to: end)

    // Per activity, the same events in the same order; and the same final rows.
    func byID(_ lines: [(String, String)]) -> [String: [String]] {
      Dictionary(grouping: lines, by: \.0).mapValues { $0.map(\.1) }
    }
    let expected = byID(
      references.flatMap { $0.events }.map { ($0.id, Recorder.describe($0)) })
    let got = byID(
      (assembled.events + recorder.events).map { ($0.id, Recorder.describe($0)) })
    #expect(got == expected, "seed \(seed)")
    let expectedRows = Dictionary(
      uniqueKeysWithValues: alone.flatMap { $0.snapshot().activities }.map {
        ($0.id, $0.renumbered(0))
      })
    let gotRows = Dictionary(
      uniqueKeysWithValues: node.snapshot().activities.map { ($0.id, $0.renumbered(0)) })
    #expect(gotRows == expectedRows, "seed \(seed)")
    // One start order, by start instant, each part's own order kept within it.
    let order = assembled.snapshot.activities
    #expect(order.map(\.order) == order.indices.map { UInt64($0) })
    #expect(zip(order, order.dropFirst()).allSatisfy { $0.startedAt <= $1.startedAt })
  }
}

extension StoredActivity {
  /// The same row with another start order (the one thing an assembly changes).
  func renumbered(_ order: UInt64) -> StoredActivity {
    var a = self
    a.order = order
    return a
  }
}
