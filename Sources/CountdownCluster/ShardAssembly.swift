// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// How a cluster node's one engine is made from the shards it serves (docs/cluster.md,
/// "Serving shards"): a shard taken over is restored from its rows as its last commit left
/// them and stepped from that commit's instant to the node's now, as a restart steps a state
/// file (§6: each deadline that passed fires once, at its own instant); a shard no longer
/// served leaves without a word (its new owner loads it). Pure: the loop thread runs it inside
/// a command and rebuilds its engine from the result.
package enum ShardAssembly {
  /// The node's engine to be, and what the taken shards' steps fired.
  package struct Assembled {
    /// Every kept and taken activity at the node's now, renumbered into one start order.
    package var snapshot: EngineSnapshot
    /// The events of the taken shards' steps, each shard's in its order; their handles are
    /// the stepping engines', not the rebuilt engine's (the loop gives each its own).
    package var events: [ActivityEvent]
    /// The taken parts left out, by their index in `taking`, with why: a row that cannot be
    /// restored (a damaged row: `invalidPayload` naming the activity and the field, as a
    /// restore says it), or an id already in another part (two shards, or a shard and the
    /// node, cannot share an activity). The other parts are assembled as if it were not there.
    package var refused: [Int: CountdownError]
  }

  /// - Parameters:
  ///   - current: the node's engine as it is; its `now` is the instant everything is brought
  ///     to, its options and id generator carry on.
  ///   - keeping: which of `current`'s activities stay (false: its shard is no longer served).
  ///   - taking: the rows of each shard taken, with its own engine row (`now`: its last
  ///     commit's instant; `options`: as that commit left them), their numbers in any state
  ///     (``inStartOrder(_:)``).
  /// - Complexity: O(n log n) for n activities, plus the deadlines the steps pass.
  package static func assemble(
    _ current: EngineSnapshot, keeping: (StoredActivity) -> Bool, taking: [EngineSnapshot]
  ) -> Assembled {
    var parts = [current.activities.filter(keeping)]
    var events: [ActivityEvent] = []
    var refused: [Int: CountdownError] = [:]
    var seen = Set(parts[0].lazy.map(\.id))
    for (k, rows) in taking.enumerated() {
      let fired = Fired()
      do throws(CountdownError) {
        if let twice = rows.activities.first(where: { seen.contains($0.id) }) {
          throw .payload(
            "activity \(JSONValue.string(twice.id).canonicalText) is in two shards' rows")
        }
        var engine = try ActivityEngine(
          restoring: inStartOrder(rows), onEvent: { fired.events.append($0) })
        try engine.stepClock(to: current.now)
        events += fired.events
        let stepped = engine.snapshot().activities
        for a in rows.activities { seen.insert(a.id) }
        parts.append(stepped)
      } catch {
        refused[k] = error
      }
    }
    var merged: [StoredActivity] = []
    merged.reserveCapacity(parts.reduce(0) { $0 + $1.count })
    // One start order: the parts merged by start instant, each part keeping its own order
    // (the node's own first among equals), so that a list's order changes only by insertion.
    var next = [Int](repeating: 0, count: parts.count)
    while true {
      var pick: Int?
      for p in parts.indices where next[p] < parts[p].count {
        if let q = pick, parts[q][next[q]].startedAt <= parts[p][next[p]].startedAt { continue }
        pick = p
      }
      guard let p = pick else { break }
      var a = parts[p][next[p]]
      next[p] += 1
      a.order = UInt64(merged.count)
      merged.append(a)
    }
    return Assembled(
      snapshot: EngineSnapshot(
        now: current.now, options: current.options, nextOrder: UInt64(merged.count),
        idGeneratorState: current.idGeneratorState, activities: merged),
      events: events, refused: refused)
  }

  /// A shard's rows as they stand in PostgreSQL, numbered `0..<n` in the shard's start order:
  /// by start instant, then by the number each row carries, then by id.
  ///
  /// A row's `order` is only a tie-break between activities started in the same millisecond:
  /// a node numbers the activities of all its shards in one sequence and writes the numbers
  /// of the rows it changes, so a shard's rows can carry numbers from several nodes'
  /// sequences, duplicates among them, and some at or above the engine row's `nextOrder`
  /// (rows written so before 2026-11-28 are read the same way: nothing to migrate). Within
  /// one node's sequence, numbers rise with start instants, so ordering by the instant first
  /// gives every shard one order however its rows were written, and the same order on every
  /// node that reads them.
  /// - Complexity: O(n log n).
  package static func inStartOrder(_ rows: EngineSnapshot) -> EngineSnapshot {
    var out = rows
    out.activities.sort {
      ($0.startedAt, $0.order) != ($1.startedAt, $1.order)
        ? ($0.startedAt, $0.order) < ($1.startedAt, $1.order) : $0.id < $1.id
    }
    for k in out.activities.indices { out.activities[k].order = UInt64(k) }
    out.nextOrder = UInt64(out.activities.count)
    return out
  }

  /// The events a stepping engine gives.
  private final class Fired {
    var events: [ActivityEvent] = []
  }
}
