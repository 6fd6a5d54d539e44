// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#if DEBUG
  extension ActivityEngine {
    /// Checks every structural invariant of the engine's storage, and stops with a message
    /// naming the first one broken: the slot records, the phase wheel (back indices, occupancy
    /// bits, counts, start order, the value each entry will show), the deadline heap (back
    /// indices, heap order, nothing overdue, each running countdown's expiry in the heap or
    /// carried by the wheel) and the id index (every id findable, counts).
    ///
    /// Debug and test builds only; the randomized engine test calls it after every command.
    /// - Complexity: O(n) for n slots, plus O(n) id look-ups.
    package func checkInvariants() {
      checkSlots()
      checkWheel()
      checkHeap()
      checkIDIndex()
    }

    private func checkSlots() {
      let n = slots.count
      precondition(cold.count == n, "cold has \(cold.count) records, slots has \(n)")
      // The wheel's and the heap's per-slot arrays grow by blocks ahead of the slots.
      let counts: [(String, Int)] = [
        ("wheel.bucketOf", wheel.bucketOf.count), ("wheel.position", wheel.position.count),
        ("heap.index", heap.index.count),
      ]
      for (name, count) in counts {
        precondition(count >= n, "\(name) has \(count) slots, slots has \(n)")
      }
      var free = [Bool](repeating: false, count: n)
      for slot in freeSlots {
        let s = Int(slot)
        precondition(slots[s].phase == .free, "slot \(s) is on the free list but \(slots[s].phase)")
        precondition(!free[s], "slot \(s) is on the free list twice")
        free[s] = true
      }
      for s in 0..<n where slots[s].phase == .free {
        precondition(free[s], "slot \(s) is free but not on the free list")
      }
    }

    private func checkWheel() {
      var total = 0
      for b in 0..<PhaseWheel.bucketCount {
        let bucket = wheel.header(b)
        let entries = wheel.entries(inBucket: b)
        var live = 0
        var lastSeq: UInt64?
        for (k, e) in entries.enumerated() where e.slot != PhaseWheel.tombstone {
          let s = Int(e.slot)
          live += 1
          precondition(s < slots.count, "bucket \(b) holds slot \(s), past the slots")
          precondition(
            Int(wheel.bucketOf[s]) == b, "slot \(s) in bucket \(b) says bucket \(wheel.bucketOf[s])"
          )
          precondition(
            Int(wheel.position[s]) == k,
            "slot \(s) at \(k) in bucket \(b) says position \(wheel.position[s])")
          precondition(
            e.generation == slots[s].generation, "bucket \(b) holds a stale generation of slot \(s)"
          )
          precondition(
            e.id == slots[s].id,
            "bucket \(b) entry of slot \(s) has id \(e.id), the slot \(slots[s].id)")
          precondition(
            slots[s].phase == .active, "slot \(s) ticks from the wheel but is \(slots[s].phase)")
          precondition(
            e.isCountdown == (slots[s].kind == .countdown), "slot \(s) entry has the wrong kind")
          // The entry's value is what the activity shows from its next tick on.
          let t = PhaseWheel.nextOccurrence(of: Int64(b), after: now.milliseconds)
          precondition(
            e.value == displayedSeconds(s, t),
            "slot \(s) will tick \(e.value) at \(t) but shows \(displayedSeconds(s, t)) then")
          if bucket.sorted {
            if let last = lastSeq {
              precondition(
                last < slots[s].seq, "bucket \(b) is marked sorted but is out of start order")
            }
            lastSeq = slots[s].seq
          }
        }
        precondition(
          live == bucket.live, "bucket \(b) counts \(bucket.live) live entries, holds \(live)")
        let bit = wheel.occupied[b >> 6] >> UInt64(b & 63) & 1 == 1
        precondition(
          bit == (live > 0), "bucket \(b)'s occupancy bit is \(bit) with \(live) live entries")
        precondition(
          live > 0 || entries.isEmpty || b == wheel.walking,
          "bucket \(b) has no live entry but keeps \(entries.count) tombstones")
        total += live
      }
      precondition(total == wheel.count, "the wheel counts \(wheel.count) entries, holds \(total)")
      let onWheel = wheel.bucketOf.filter { $0 >= 0 }.count
      precondition(
        onWheel == total, "\(onWheel) slots say they are on the wheel, which holds \(total)")
    }

    private func checkHeap() {
      let entries = heap.entries
      var indexed = 0
      for (i, e) in entries.enumerated() {
        let s = Int(e.slot)
        precondition(
          Int(heap.index[s]) == i, "heap entry \(i) of slot \(s) is indexed at \(heap.index[s])")
        precondition(slots[s].phase != .free, "the heap holds a deadline of free slot \(s)")
        precondition(
          e.order >> 3 == slots[s].seq, "heap entry of slot \(s) carries another start order")
        precondition(
          e.at > now.milliseconds,
          "slot \(s)'s deadline \(e.at) is due but did not run (now \(now.milliseconds))")
        if i > 0 {
          precondition(
            !DeadlineHeap.Entry.precedes(e, entries[(i - 1) / 4]),
            "heap entry \(i) precedes its parent")
        }
      }
      for i in heap.index where i >= 0 { indexed += 1 }
      precondition(
        indexed == entries.count, "\(indexed) slots are indexed, the heap holds \(entries.count)")
      for s in 0..<slots.count where slots[s].phase == .ended {
        precondition(heap.index[s] >= 0, "ended slot \(s) has no dismissal deadline")
      }
      // A running countdown's expiry is carried by the wheel until its last second, then in
      // the heap (or behind an earlier deadline of the same slot there).
      for s in 0..<slots.count
      where slots[s].phase == .active && slots[s].kind == .countdown && !slots[s].isExpired {
        let i = Int(heap.index[s])
        let kind = i >= 0 ? Deadline(rawValue: entries[i].order & 7) : nil
        if wheelCarriesExpiry(UInt32(s)) {
          precondition(kind != .expiry, "slot \(s)'s expiry is in the heap and on the wheel")
        } else {
          precondition(
            i >= 0 && entries[i].at <= slots[s].anchor,
            "countdown slot \(s) ends at \(slots[s].anchor) with no deadline by then")
        }
      }
    }

    private func checkIDIndex() {
      let table = slotIndex.table
      precondition(table.count >= 16, "the id table's size \(table.count) is under 16")
      precondition(
        IDIndex.fits(slotIndex.count, in: table.count),
        "the id table holds \(slotIndex.count) ids in \(table.count) entries, over seven eighths")
      var seen = [Bool](repeating: false, count: slots.count)
      var filled = 0
      for e in table where e != IDIndex.empty {
        let s = IDIndex.slot(of: e)
        filled += 1
        precondition(
          Int(s) < slots.count && slots[Int(s)].phase != .free, "the id table holds free slot \(s)")
        precondition(!seen[Int(s)], "the id table holds slot \(s) twice")
        seen[Int(s)] = true
        precondition(
          IDIndex.hash(of: e) == IDIndex.hash(slots[Int(s)].id),
          "the id table holds a wrong hash for \(slots[Int(s)].id)")
        precondition(
          slotIndex.find(slots[Int(s)].id, in: slots) == s, "id \(slots[Int(s)].id) cannot be found"
        )
      }
      precondition(
        filled == slotIndex.count, "the id table counts \(slotIndex.count), holds \(filled)")
      let live = slots.filter { $0.phase != .free }.count
      precondition(filled == live, "\(live) activities live, \(filled) are indexed")
    }
  }
#endif
