// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CPrefetch

/// Per-second ticks by phase: 1000 one-millisecond buckets keyed by `instant mod 1 s`.
///
/// Every activity that ticks changes its displayed second at the same millisecond phase each
/// second, so it stays in one bucket for as long as it ticks and nothing is ever re-sorted per
/// tick. Each bucket is a contiguous buffer of entries in start order, its header (``Bucket``)
/// kept with the others in the wheel's ``Storage``; removal leaves a tombstone that the next
/// pass over the bucket compacts away, so start order survives without shifting. A 1000-bit
/// map of non-empty buckets finds the next due instant in a few word scans.
///
/// Invariant: every live entry of bucket `b` ticks at the first instant `t > cursor` with
/// `t mod 1000 == b`, where `cursor` is the engine's clock, and its `value` is the value it
/// shows from then on. An entry carries everything a tick needs, so the per-tick path reads
/// the bucket sequentially instead of one slot array after another.
struct PhaseWheel {
  static let bucketCount = 1000
  /// The slot number of a removed entry (which keeps its id until the bucket drops it).
  static let tombstone = UInt32.max

  /// One ticking activity: 32 bytes, its id included, so that a tick reads nothing but the
  /// bucket it walks.
  struct Entry {
    var id: String
    var slot: UInt32
    var generation: UInt32
    /// The next tick's value << 1, with bit 0 set for a countdown (which counts down).
    var raw: Int64

    init(id: String, slot: UInt32, generation: UInt32, value: Int64, isCountdown: Bool) {
      self.id = id
      self.slot = slot
      self.generation = generation
      self.raw = value << 1 | (isCountdown ? 1 : 0)
    }

    @inline(__always) var value: Int64 { raw >> 1 }
    @inline(__always) var isCountdown: Bool { raw & 1 == 1 }
    /// Moves to the value of the tick one second later.
    @inline(__always) mutating func step() { raw += isCountdown ? -2 : 2 }
  }

  /// One bucket's header: where its entries live, how many there are (tombstones included),
  /// how many are live, and whether they are in start order. The headers sit together in
  /// the wheel's own table, so that an insert or a removal reads none of the bucket's entries:
  /// an `Array` per bucket kept its count and capacity (and the reference count that every
  /// write checks first) in the entries' own buffer, a line not in cache for each command.
  struct Bucket {
    /// `capacity` entries, the first `count` initialized; nil until the first is added.
    fileprivate var base: UnsafeMutablePointer<Entry>?
    /// Largest start sequence appended since the bucket was last emptied.
    var lastSeq: UInt64 = 0
    /// Entries, tombstones included.
    fileprivate(set) var count: UInt32 = 0
    fileprivate var capacity: UInt32 = 0
    /// Entries that are not tombstones.
    var live: UInt32 = 0
    /// False when an entry was appended out of start order.
    var sorted = true
  }

  /// The buckets' headers and entries, shared by copies of the wheel until one of them writes
  /// (``PhaseWheel/unique()`` copies them then), as an array's elements would be.
  final class Storage {
    let buckets: UnsafeMutablePointer<Bucket>

    init() {
      buckets = .allocate(capacity: PhaseWheel.bucketCount)
      buckets.initialize(repeating: Bucket(), count: PhaseWheel.bucketCount)
    }

    /// A copy with its own entries, each bucket with the same room.
    func copy() -> Storage {
      let c = Storage()
      for b in 0..<PhaseWheel.bucketCount {
        var h = buckets[b]
        if let base = h.base {
          let mine = UnsafeMutablePointer<Entry>.allocate(capacity: Int(h.capacity))
          mine.initialize(from: base, count: Int(h.count))
          h.base = mine
        }
        c.buckets[b] = h
      }
      return c
    }

    deinit {
      for b in 0..<PhaseWheel.bucketCount {
        guard let base = buckets[b].base else { continue }
        base.deinitialize(count: Int(buckets[b].count))
        base.deallocate()
      }
      buckets.deinitialize(count: PhaseWheel.bucketCount)
      buckets.deallocate()
    }
  }

  private var storage = Storage()
  /// Bit `b` is set when bucket `b` has live entries.
  var occupied = [UInt64](repeating: 0, count: 16)
  /// Live entries in all buckets.
  var count = 0
  /// The bucket of each slot, or -1 when the slot is not in the wheel.
  var bucketOf: [Int16] = []
  /// The index of each slot within its bucket.
  var position: [UInt32] = []
  /// The bucket being walked by the engine, whose entries must not be emptied meanwhile.
  var walking = -1

  /// The buckets' storage, this wheel's own: copied first if another wheel shares it.
  @inline(__always)
  private mutating func unique() -> UnsafeMutablePointer<Bucket> {
    if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
    return storage.buckets
  }

  /// Bucket `b`'s header.
  @inline(__always)
  func header(_ b: Int) -> Bucket { storage.buckets[b] }

  /// Bucket `b`'s entries, tombstones included, in a new array (for checks and tests).
  func entries(inBucket b: Int) -> [Entry] {
    let h = storage.buckets[b]
    guard let base = h.base else { return [] }
    return Array(UnsafeBufferPointer(start: base, count: Int(h.count)))
  }

  /// Room for entries in bucket `b` without growing.
  func capacity(ofBucket b: Int) -> Int { Int(storage.buckets[b].capacity) }

  /// Entry `r` of bucket `b`.
  @inline(__always)
  func entry(_ b: Int, _ r: Int) -> Entry {
    let h = storage.buckets[b]
    precondition(r < Int(h.count), "entry past the bucket's end")
    return h.base![r]
  }

  /// Replaces entry `r` of bucket `b`.
  @inline(__always)
  mutating func setEntry(_ b: Int, _ r: Int, _ e: Entry) {
    let h = unique()[b]
    precondition(r < Int(h.count), "entry past the bucket's end")
    h.base![r] = e
  }

  /// Calls `body` with bucket `b`'s entries, which it may change but not add to or remove.
  @inline(__always)
  mutating func withEntries<R>(
    inBucket b: Int, _ body: (UnsafeMutableBufferPointer<Entry>) throws -> R
  ) rethrows -> R {
    let h = unique()[b]
    return try body(UnsafeMutableBufferPointer(start: h.base, count: Int(h.count)))
  }

  /// Drops bucket `b`'s entries from `n` on (each a tombstone or moved down already) and
  /// takes `finished` live entries off its counts: those the walk saw tick for the last time.
  mutating func truncate(_ b: Int, to n: Int, finished: Int) {
    let buckets = unique()
    let h = buckets[b]
    precondition(n <= Int(h.count), "truncating bucket \(b) past its end")
    h.base?.advanced(by: n).deinitialize(count: Int(h.count) - n)
    buckets[b].count = UInt32(n)
    buckets[b].live -= UInt32(finished)
    count -= finished
    if buckets[b].live == 0 { clearBucket(b) }
  }

  /// Grows the per-slot back index to `slots` entries.
  mutating func reserveSlots(_ slots: Int) {
    if bucketOf.count < slots {
      bucketOf.append(contentsOf: repeatElement(-1, count: slots - bucketOf.count))
      position.append(contentsOf: repeatElement(0, count: slots - position.count))
    }
  }

  /// Reserves room for `perBucket` entries in every bucket.
  mutating func reserveBuckets(_ perBucket: Int) {
    let buckets = unique()
    for b in 0..<Self.bucketCount where Int(buckets[b].capacity) < perBucket {
      Self.grow(&buckets[b], to: perBucket)
    }
  }

  /// Moves bucket `h`'s entries to room for `capacity`.
  private static func grow(_ h: inout Bucket, to capacity: Int) {
    precondition(capacity <= Int(UInt32.max), "a wheel bucket of \(capacity) entries")
    let room = UnsafeMutablePointer<Entry>.allocate(capacity: capacity)
    if let old = h.base {
      room.moveInitialize(from: old, count: Int(h.count))
      old.deallocate()
    }
    h.base = room
    h.capacity = UInt32(capacity)
  }

  /// The bucket of instant `t`.
  @inline(__always)
  static func bucket(of t: Int64) -> Int {
    let r = Int(t % 1000)
    return r < 0 ? r + 1000 : r
  }

  @inline(__always)
  func contains(_ slot: UInt32) -> Bool { bucketOf[Int(slot)] >= 0 }

  /// `slot`'s entry's ``Entry/raw`` (its next tick's value and kind), or nil when the slot is
  /// not in the wheel.
  @inline(__always)
  func raw(of slot: UInt32) -> Int64? {
    let b = Int(bucketOf[Int(slot)])
    return b >= 0 ? entry(b, Int(position[Int(slot)])).raw : nil
  }

  /// Whether `slot`'s entry is in bucket `b` and shows `raw` (``Entry/raw``) at its next
  /// tick: then it is where an insert now would put it, start order aside.
  @inline(__always)
  func holds(_ slot: UInt32, bucket b: Int, raw: Int64) -> Bool {
    guard Int(bucketOf[Int(slot)]) == b else { return false }
    return entry(b, Int(position[Int(slot)])).raw == raw
  }

  /// Starts loading the line where an insert at `phase` will write its entry.
  @inline(__always)
  func prefetchInsert(phase: Int64) {
    let h = storage.buckets[Self.bucket(of: phase)]
    if let base = h.base, h.count < h.capacity { cd_prefetch_write(base + Int(h.count)) }
  }

  /// Starts loading `slot`'s places in the back index (its bucket and position), which
  /// finding its entry reads first.
  @inline(__always)
  func prefetchBackIndex(of slot: UInt32) {
    let s = Int(slot)
    guard s < bucketOf.count else { return }
    bucketOf.withUnsafeBufferPointer { cd_prefetch_write($0.baseAddress! + s) }
    position.withUnsafeBufferPointer { cd_prefetch_write($0.baseAddress! + s) }
  }

  /// Starts loading the line of `slot`'s entry, if it is in the wheel.
  @inline(__always)
  func prefetchEntry(of slot: UInt32) {
    let b = Int(bucketOf[Int(slot)])
    guard b >= 0, let base = storage.buckets[b].base else { return }
    cd_prefetch_write(base + Int(position[Int(slot)]))
  }

  /// Adds `entry` (start sequence `seq`) to the bucket of `phase`.
  /// - Complexity: O(1) amortized.
  mutating func insert(_ entry: Entry, seq: UInt64, phase: Int64) {
    place(entry, seq: seq, phase: phase, unique())
  }

  /// ``insert(_:seq:phase:)`` into `buckets`, this wheel's own.
  @inline(__always)
  private mutating func place(
    _ entry: Entry, seq: UInt64, phase: Int64, _ buckets: UnsafeMutablePointer<Bucket>
  ) {
    let slot = entry.slot
    let b = Self.bucket(of: phase)
    // A bucket left with no live entry is cleared at once, or at the end of its walk.
    assert(buckets[b].live > 0 || b == walking || buckets[b].count == 0)
    if seq < buckets[b].lastSeq { buckets[b].sorted = false }
    buckets[b].lastSeq = max(buckets[b].lastSeq, seq)
    let n = Int(buckets[b].count)
    if n == Int(buckets[b].capacity) { Self.grow(&buckets[b], to: max(16, 2 * n)) }
    (buckets[b].base! + n).initialize(to: entry)
    buckets[b].count += 1
    buckets[b].live += 1
    position[Int(slot)] = UInt32(n)
    bucketOf[Int(slot)] = Int16(b)
    occupied[b >> 6] |= 1 << UInt64(b & 63)
    count += 1
  }

  /// Moves `entry`'s slot to the bucket of `phase` with `entry`'s value: ``remove(_:)`` then
  /// ``insert(_:seq:phase:)`` (an update of an end, a resume), with one check that the storage
  /// is this wheel's own and the back index written once.
  /// - Complexity: O(1) amortized.
  mutating func move(_ entry: Entry, seq: UInt64, phase: Int64) {
    let buckets = unique()
    let old = Int(bucketOf[Int(entry.slot)])
    if old >= 0 { leave(old, at: Int(position[Int(entry.slot)]), buckets) }
    place(entry, seq: seq, phase: phase, buckets)
  }

  /// Removes `slot` if it is in the wheel.
  /// - Complexity: O(1).
  mutating func remove(_ slot: UInt32) {
    let b = Int(bucketOf[Int(slot)])
    guard b >= 0 else { return }
    bucketOf[Int(slot)] = -1
    leave(b, at: Int(position[Int(slot)]), unique())
  }

  /// Makes entry `r` of bucket `b` a tombstone and counts it off (its slot's back index is
  /// the caller's to write).
  @inline(__always)
  private mutating func leave(_ b: Int, at r: Int, _ buckets: UnsafeMutablePointer<Bucket>) {
    // Only the slot number is overwritten: the entry's id is released when the bucket's next
    // walk (or clearing) drops the tombstone, with its line in cache then. Replacing the
    // whole entry read the old id first, a wait on a line not in cache.
    buckets[b].base![r].slot = Self.tombstone
    buckets[b].live -= 1
    count -= 1
    if buckets[b].live == 0 {
      occupied[b >> 6] &= ~(1 << UInt64(b & 63))
      if b != walking { clearBucket(b) }
    }
  }

  /// Empties bucket `b`, which has no live entry left, keeping its room.
  mutating func clearBucket(_ b: Int) {
    let buckets = unique()
    occupied[b >> 6] &= ~(1 << UInt64(b & 63))
    buckets[b].base?.deinitialize(count: Int(buckets[b].count))
    buckets[b].count = 0
    buckets[b].lastSeq = 0
    buckets[b].sorted = true
  }

  /// The first instant after `cursor` in the bucket of `phase`.
  @inline(__always)
  static func nextOccurrence(of phase: Int64, after cursor: Int64) -> Int64 {
    var d = bucket(of: phase) - bucket(of: cursor)
    if d <= 0 { d += bucketCount }
    return cursor + Int64(d)
  }

  /// The first instant after `cursor` whose bucket has live entries.
  /// - Complexity: O(1): at most 17 word scans.
  func nextInstant(after cursor: Int64) -> Int64? {
    guard count > 0 else { return nil }
    let here = Self.bucket(of: cursor)
    let start = here + 1 == Self.bucketCount ? 0 : here + 1
    guard let b = firstOccupied(from: start) ?? firstOccupied(from: 0) else { return nil }
    let d = b > here ? b - here : b - here + Self.bucketCount
    return cursor + Int64(d)
  }

  private func firstOccupied(from start: Int) -> Int? {
    var w = start >> 6
    var word = occupied[w] & (~0 << UInt64(start & 63))
    while true {
      if word != 0 { return w << 6 + word.trailingZeroBitCount }
      w += 1
      if w == occupied.count { return nil }
      word = occupied[w]
    }
  }

  /// Drops the tombstones of bucket `b` and puts it in start order.
  /// - Complexity: O(k log k) for a bucket of k entries; only after out-of-order inserts.
  mutating func sortBucket(_ b: Int, slots: [ActivityEngine.Slot]) {
    let buckets = unique()
    guard let base = buckets[b].base else {
      buckets[b].sorted = true
      return
    }
    var kept = 0
    for r in 0..<Int(buckets[b].count) {
      if base[r].slot == Self.tombstone {
        (base + r).deinitialize(count: 1)
      } else {
        if kept != r { (base + kept).moveInitialize(from: base + r, count: 1) }
        kept += 1
      }
    }
    buckets[b].count = UInt32(kept)
    var entries = UnsafeMutableBufferPointer(start: base, count: kept)
    entries.sort { slots[Int($0.slot)].seq < slots[Int($1.slot)].seq }
    for (k, e) in entries.enumerated() { position[Int(e.slot)] = UInt32(k) }
    buckets[b].sorted = true
  }
}
