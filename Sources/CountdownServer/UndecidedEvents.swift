// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// A cluster node's own lifecycle events whose commit failed with its outcome unknown (the
/// connection to PostgreSQL went with the commit under way: "may or may not have been carried
/// out"), kept by sequence number until a shard's row shows whether the commit landed
/// (docs/cluster.md, "Faults short of death"). The hub dropped them when the commit failed;
/// when the row shows them, after all, they are delivered then (``Hub/landed(_:)``).
///
/// A pure store, bounded: at most `capacity` events, the oldest dropped first (a commit's
/// outcome shows within a takeover, seconds later; older ones are taken as not landed).
struct UndecidedEvents {
  /// The most events kept.
  let capacity: Int
  private var events: [UInt64: ActivityEvent] = [:]
  /// Sequence numbers in the order kept (some taken already), from `head` on.
  private var order: [UInt64] = []
  private var head = 0

  init(capacity: Int = 4096) {
    precondition(capacity > 0, "an undecided store keeps at least one event")
    self.capacity = capacity
  }

  /// Events kept.
  var count: Int { events.count }

  /// Keeps the lifecycle events of `numbered` (ticks are never committed).
  mutating func keep(_ numbered: [CommitGate.Numbered]) {
    for (sequence, event) in numbered where event.kind != .tick {
      guard events.updateValue(event, forKey: sequence) == nil else { continue }
      order.append(sequence)
      while events.count > capacity, head < order.count {
        events[order[head]] = nil
        head += 1
      }
    }
    if head > 1024, head * 2 > order.count {
      order.removeFirst(head)
      head = 0
    }
    checkInvariants()
  }

  /// The event numbered `sequence`, if kept, no longer kept.
  mutating func take(_ sequence: UInt64) -> ActivityEvent? {
    defer { checkInvariants() }
    return events.removeValue(forKey: sequence)
  }

  /// Debug and test builds: within the bound, and every event kept is in the order.
  func checkInvariants() {
    #if DEBUG
      precondition(events.count <= capacity, "more undecided events than the bound")
      precondition(head <= order.count, "the order's head past its end")
      let ordered = Set(order[head...])
      precondition(events.keys.allSatisfy(ordered.contains), "an undecided event out of order")
    #endif
  }
}
