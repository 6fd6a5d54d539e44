// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#if DEBUG
  extension DeliveryQueue {
    /// Checks the queue's invariants and stops with a message naming the first one broken:
    /// the counts (held, in flight) against the lanes, no lane held empty, each lane's head
    /// within its entries, the heap's order, and every lane that waits (none in flight) found
    /// in the heap at or before its first entry's due instant (early is allowed, late never).
    ///
    /// Debug and test builds only; the randomized queue test calls it after every step.
    /// - Complexity: O(l + h) for l lanes and h heap nodes.
    package func checkInvariants() {
      var held = 0
      var sending = 0
      for (key, lane) in lanes {
        precondition(
          lane.head >= 0 && lane.head <= lane.entries.count,
          "lane \(key): head \(lane.head) outside its \(lane.entries.count) entries")
        precondition(!lane.isEmpty, "lane \(key) is held with no entry")
        held += lane.count
        if lane.inFlight { sending += 1 }
      }
      precondition(held == _count, "count is \(_count), the lanes hold \(held)")
      precondition(sending == _inFlight, "inFlight is \(_inFlight), \(sending) lanes are sending")
      let nodes = timers.nodes
      for i in nodes.indices.dropFirst() {
        let parent = (i - 1) / 2
        precondition(
          nodes[parent].due <= nodes[i].due,
          "heap node \(i) is due at \(nodes[i].due), before its parent's \(nodes[parent].due)")
      }
      var earliest: [Item.Lane: Int64] = [:]
      for n in nodes { earliest[n.key] = min(earliest[n.key] ?? .max, n.due) }
      for (key, lane) in lanes where !lane.inFlight {
        guard let first = lane.first else { continue }
        guard let due = earliest[key] else {
          preconditionFailure("lane \(key) waits, and is not in the heap: it would never be sent")
        }
        precondition(
          due <= first.due,
          "lane \(key) is in the heap at \(due), after its first entry's \(first.due)")
      }
    }
  }
#endif
