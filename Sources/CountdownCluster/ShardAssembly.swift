import Countdown

/// How a cluster node's one engine is made from the shards it serves (SPEC §9, docs/cluster.md,
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
  }

  /// - Parameters:
  ///   - current: the node's engine as it is; its `now` is the instant everything is brought
  ///     to, its options and id generator carry on.
  ///   - keeping: which of `current`'s activities stay (false: its shard is no longer served).
  ///   - taking: the rows of each shard taken, with its own engine row (`now`: its last
  ///     commit's instant; `options`: as that commit left them).
  /// - Throws: `invalidPayload` for a bad stored row (as a restore does) or an id in two
  ///   parts (two shards, or a shard and the node, cannot share an activity); nothing is made.
  /// - Complexity: O(n log n) for n activities, plus the deadlines the steps pass.
  package static func assemble(
    _ current: EngineSnapshot, keeping: (StoredActivity) -> Bool, taking: [EngineSnapshot]
  ) throws(CountdownError) -> Assembled {
    var parts = [current.activities.filter(keeping)]
    var events: [ActivityEvent] = []
    for rows in taking {
      let fired = Fired()
      var engine = try ActivityEngine(restoring: rows, onEvent: { fired.events.append($0) })
      try engine.stepClock(to: current.now)
      events += fired.events
      parts.append(engine.snapshot().activities)
    }
    var seen = Set<String>()
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
      guard seen.insert(a.id).inserted else {
        throw .payload(
          "activity \(JSONValue.string(a.id).canonicalText) is in two shards' rows; nothing was taken"
        )
      }
      a.order = UInt64(merged.count)
      merged.append(a)
    }
    return Assembled(
      snapshot: EngineSnapshot(
        now: current.now, options: current.options, nextOrder: UInt64(merged.count),
        idGeneratorState: current.idGeneratorState, activities: merged),
      events: events)
  }

  /// The events a stepping engine gives.
  private final class Fired {
    var events: [ActivityEvent] = []
  }
}
