/// Per-second ticks by phase: 1000 one-millisecond buckets keyed by `instant mod 1 s`.
///
/// Every activity that ticks changes its displayed second at the same millisecond phase each
/// second, so it stays in one bucket for as long as it ticks and nothing is ever re-sorted per
/// tick. Each bucket is a contiguous array of slot numbers in start order; removal leaves a
/// tombstone that the next pass over the bucket compacts away, so start order survives without
/// shifting. A 1000-bit map of non-empty buckets finds the next due instant in a few word scans.
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

  struct Bucket {
    /// Entries in start order when `sorted`; may hold tombstones (`slot == tombstone`).
    var entries: [Entry] = []
    /// Entries that are not tombstones.
    var live = 0
    /// False when an entry was appended out of start order.
    var sorted = true
    /// Largest start sequence appended since the bucket was last emptied.
    var lastSeq: UInt64 = 0
  }

  var buckets = [Bucket](repeating: Bucket(), count: bucketCount)
  /// Bit `b` is set when bucket `b` has live entries.
  var occupied = [UInt64](repeating: 0, count: 16)
  /// Live entries in all buckets.
  var count = 0
  /// The bucket of each slot, or -1 when the slot is not in the wheel.
  var bucketOf: [Int16] = []
  /// The index of each slot within its bucket.
  var position: [UInt32] = []
  /// The bucket being walked by the engine, whose array must not be emptied meanwhile.
  var walking = -1

  /// Grows the per-slot back index to `slots` entries.
  mutating func reserveSlots(_ slots: Int) {
    if bucketOf.count < slots {
      bucketOf.append(contentsOf: repeatElement(-1, count: slots - bucketOf.count))
      position.append(contentsOf: repeatElement(0, count: slots - position.count))
    }
  }

  /// Reserves room for `perBucket` entries in every bucket.
  mutating func reserveBuckets(_ perBucket: Int) {
    for b in buckets.indices { buckets[b].entries.reserveCapacity(perBucket) }
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
    return b >= 0 ? buckets[b].entries[Int(position[Int(slot)])].raw : nil
  }

  /// Whether `slot`'s entry is in bucket `b` and shows `raw` (``Entry/raw``) at its next
  /// tick: then it is where an insert now would put it, start order aside.
  @inline(__always)
  func holds(_ slot: UInt32, bucket b: Int, raw: Int64) -> Bool {
    guard Int(bucketOf[Int(slot)]) == b else { return false }
    return buckets[b].entries[Int(position[Int(slot)])].raw == raw
  }

  /// Adds `entry` (start sequence `seq`) to the bucket of `phase`.
  /// - Complexity: O(1) amortized.
  mutating func insert(_ entry: Entry, seq: UInt64, phase: Int64) {
    let slot = entry.slot
    let b = Self.bucket(of: phase)
    // A bucket left with no live entry is cleared at once, or at the end of its walk.
    assert(buckets[b].live > 0 || b == walking || buckets[b].entries.isEmpty)
    if seq < buckets[b].lastSeq { buckets[b].sorted = false }
    buckets[b].lastSeq = max(buckets[b].lastSeq, seq)
    position[Int(slot)] = UInt32(buckets[b].entries.count)
    bucketOf[Int(slot)] = Int16(b)
    buckets[b].entries.append(entry)
    buckets[b].live += 1
    occupied[b >> 6] |= 1 << UInt64(b & 63)
    count += 1
  }

  /// Removes `slot` if it is in the wheel.
  /// - Complexity: O(1).
  mutating func remove(_ slot: UInt32) {
    let b = Int(bucketOf[Int(slot)])
    guard b >= 0 else { return }
    bucketOf[Int(slot)] = -1
    // Only the slot number is overwritten: the entry's id is released when the bucket's next
    // walk (or clearing) drops the tombstone, with its line in cache then. Replacing the
    // whole entry read the old id first, a wait on a line not in cache.
    buckets[b].entries[Int(position[Int(slot)])].slot = Self.tombstone
    buckets[b].live -= 1
    count -= 1
    if buckets[b].live == 0 {
      occupied[b >> 6] &= ~(1 << UInt64(b & 63))
      if b != walking { clearBucket(b) }
    }
  }

  /// Empties bucket `b`, which has no live entry left.
  mutating func clearBucket(_ b: Int) {
    occupied[b >> 6] &= ~(1 << UInt64(b & 63))
    buckets[b].entries.removeAll(keepingCapacity: true)
    buckets[b].lastSeq = 0
    buckets[b].sorted = true
  }

  /// The first instant after `cursor` in the bucket of `phase`.
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
    buckets[b].entries.removeAll { $0.slot == Self.tombstone }
    buckets[b].entries.sort { slots[Int($0.slot)].seq < slots[Int($1.slot)].seq }
    for (k, e) in buckets[b].entries.enumerated() { position[Int(e.slot)] = UInt32(k) }
    buckets[b].sorted = true
  }
}
