// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CPrefetch

/// A four-ary min-heap of each activity's next rare deadline (expiry, milestone, stale, maximum
/// duration, dismissal), at most one entry per slot, ordered by instant, then start order, then
/// the per-activity event order of docs/events.md. A back index per slot makes re-keying O(log n).
///
/// Four children per node halve the depth of a binary heap, and the four sit in two adjacent
/// cache lines: with a million deadlines a re-key touches about 10 levels instead of 20, and a
/// level not in cache is what a re-key mostly waits for.
struct DeadlineHeap {
  struct Entry {
    var at: Int64
    /// Start sequence << 3 | kind priority.
    var order: UInt64
    var slot: UInt32

    @inline(__always)
    static func precedes(_ a: Entry, _ b: Entry) -> Bool {
      a.at != b.at ? a.at < b.at : a.order < b.order
    }
  }

  private(set) var entries: [Entry] = []
  /// Index in `entries` of each slot's entry, or -1.
  private(set) var index: [Int32] = []

  var count: Int { entries.count }
  var top: Entry? { entries.first }

  mutating func reserveCapacity(_ n: Int) {
    entries.reserveCapacity(n)
    index.reserveCapacity(n)
  }

  /// Grows the back index to `slots` entries, and the entries' room to as many: a slot has at
  /// most one entry, so no `set` allocates, not even one that a tick walk makes (a countdown's
  /// expiry armed in its last second). Room not yet used is not touched, so not resident.
  mutating func reserveSlots(_ slots: Int) {
    if index.count < slots {
      index.append(contentsOf: repeatElement(-1, count: slots - index.count))
    }
    // Doubling, as appends would: this is called a block of slots at a time, and an engine
    // without ticks keeps every countdown's expiry here, which a reservation per block would
    // copy each time.
    if entries.capacity < slots { entries.reserveCapacity(max(slots, 2 * entries.capacity)) }
  }

  /// Starts loading `slot`'s place in the back index, which re-keying or removing it reads.
  @inline(__always)
  func prefetchIndex(of slot: UInt32) {
    let s = Int(slot)
    guard s < index.count else { return }
    index.withUnsafeBufferPointer { cd_prefetch_write($0.baseAddress! + s) }
  }

  /// Sets (or replaces) the entry of `slot`.
  /// - Complexity: O(log n).
  mutating func set(_ slot: UInt32, at: Int64, order: UInt64) {
    let e = Entry(at: at, order: order, slot: slot)
    let i = Int(index[Int(slot)])
    if i < 0 {
      entries.append(e)
      index[Int(slot)] = Int32(entries.count - 1)
      siftUp(entries.count - 1)
    } else {
      let old = entries[i]
      entries[i] = e
      if Entry.precedes(e, old) { siftUp(i) } else { siftDown(i) }
    }
  }

  /// Sets the entry of `slot` to the given deadline unless its entry precedes that already.
  /// - Complexity: O(log n).
  mutating func lower(_ slot: UInt32, at: Int64, order: UInt64) {
    let i = Int(index[Int(slot)])
    if i >= 0, !Entry.precedes(Entry(at: at, order: order, slot: slot), entries[i]) { return }
    set(slot, at: at, order: order)
  }

  /// Removes the entry of `slot`, if any.
  /// - Complexity: O(log n).
  mutating func remove(_ slot: UInt32) {
    let i = Int(index[Int(slot)])
    guard i >= 0 else { return }
    index[Int(slot)] = -1
    let last = entries.removeLast()
    guard i < entries.count else { return }
    entries[i] = last
    index[Int(last.slot)] = Int32(i)
    siftUp(i)
    siftDown(Int(index[Int(last.slot)]))
  }

  /// Removes and returns the earliest entry.
  /// - Complexity: O(log n).
  mutating func pop() -> Entry? {
    guard let first = entries.first else { return nil }
    remove(first.slot)
    return first
  }

  private mutating func siftUp(_ start: Int) {
    var i = start
    let e = entries[i]
    while i > 0 {
      let parent = (i - 1) >> 2
      guard Entry.precedes(e, entries[parent]) else { break }
      entries[i] = entries[parent]
      index[Int(entries[i].slot)] = Int32(i)
      i = parent
    }
    entries[i] = e
    index[Int(e.slot)] = Int32(i)
  }

  private mutating func siftDown(_ start: Int) {
    var i = start
    let e = entries[i]
    let n = entries.count
    while true {
      let first = 4 * i + 1
      guard first < n else { break }
      var child = first
      for c in (first + 1)..<min(first + 4, n) where Entry.precedes(entries[c], entries[child]) {
        child = c
      }
      guard Entry.precedes(entries[child], e) else { break }
      entries[i] = entries[child]
      index[Int(entries[i].slot)] = Int32(i)
      i = child
    }
    entries[i] = e
    index[Int(e.slot)] = Int32(i)
  }
}
