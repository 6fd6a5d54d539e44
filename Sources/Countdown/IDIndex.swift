import CPrefetch

/// What the index finds ids in: the engine's slot records (or, in tests, plain strings).
protocol IDIndexKeyed {
  /// The id kept at this position ("" for none).
  var indexKey: String { get }
}

extension String: IDIndexKeyed {
  var indexKey: String { self }
}

/// The index from activity id to slot: open addressing with linear probing over 8-byte
/// entries, each a slot number and 32 bits of its id's hash, the ids themselves living in the
/// engine's slot records. The stored hash answers most probes without reading the id (a cache
/// miss in the records) and lets removal and growth move entries without hashing any id again.
/// The table grows when it would pass seven eighths full: 9 to 18 bytes per activity where a
/// `Dictionary<String, UInt32>` takes about 42. Near that load a probe for an absent id reads
/// about 32 entries (four adjacent cache lines) and one for a present id about 5, but the
/// table is half the size it would be at three quarters (100k ids in 1 MiB instead of 2), and
/// the first line is the one that misses the cache: measured faster for start, update and end.
struct IDIndex {
  static let empty = UInt64.max
  /// Entries: hash << 32 | slot, or `empty`.
  private(set) var table = [UInt64](repeating: IDIndex.empty, count: 16)
  private(set) var count = 0

  private var mask: Int { table.count - 1 }

  /// The 32 bits of `id`'s hash that the index stores and probes from.
  @inline(__always)
  static func hash(_ id: String) -> UInt32 { UInt32(truncatingIfNeeded: id.hashValue) }

  /// Whether `n` ids fit in a table of `size` entries: at most seven eighths full.
  @inline(__always)
  static func fits(_ n: Int, in size: Int) -> Bool { n * 8 <= size * 7 }

  @inline(__always)
  static func slot(of entry: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: entry) }

  @inline(__always)
  static func hash(of entry: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: entry >> 32) }

  /// The slot of `id`.
  /// - Complexity: O(1) expected.
  @inline(__always)
  func find<K: IDIndexKeyed>(_ id: String, in ids: [K]) -> UInt32? {
    find(id, hash: Self.hash(id), in: ids)
  }

  /// The slot of `id`, whose ``hash(_:)`` is `h`.
  /// - Complexity: O(1) expected.
  func find<K: IDIndexKeyed>(_ id: String, hash h: UInt32, in ids: [K]) -> UInt32? {
    let m = mask
    var i = Int(h) & m
    return table.withUnsafeBufferPointer { t in
      while true {
        let e = t[i]
        if e == Self.empty { return nil }
        if Self.hash(of: e) == h, ids[Int(Self.slot(of: e))].indexKey == id {
          return Self.slot(of: e)
        }
        i = (i + 1) & m
      }
    }
  }

  /// Starts loading the line where a probe for hash `h` begins, so that its miss overlaps
  /// the caller's work before the probe.
  @inline(__always)
  func prefetch(_ h: UInt32) {
    table.withUnsafeBufferPointer { cd_prefetch_write($0.baseAddress! + (Int(h) & mask)) }
  }

  /// Adds `slot`, whose id has ``hash(_:)`` `h` and is not in the index yet.
  /// - Complexity: O(1) amortized.
  mutating func insert(_ slot: UInt32, hash h: UInt32) {
    if !Self.fits(count + 1, in: table.count) { rebuild(size: table.count * 2) }
    let m = mask
    var i = Int(h) & m
    while table[i] != Self.empty { i = (i + 1) & m }
    table[i] = UInt64(h) << 32 | UInt64(slot)
    count += 1
  }

  /// Removes `slot`, whose id has ``hash(_:)`` `h`, shifting later entries of its probe run
  /// back so that no tombstone stays. Compares slot numbers only: no id is read.
  /// - Complexity: O(1) expected.
  mutating func remove(_ slot: UInt32, hash h: UInt32) {
    let m = mask
    let removed = table.withUnsafeMutableBufferPointer { t in
      var i = Int(h) & m
      while true {
        let e = t[i]
        if e == Self.empty { return false }
        if Self.slot(of: e) == slot { break }
        i = (i + 1) & m
      }
      var hole = i
      var j = i
      while true {
        j = (j + 1) & m
        let e = t[j]
        if e == Self.empty { break }
        let home = Int(Self.hash(of: e)) & m
        // Move `e` into the hole unless its home lies cyclically in (hole, j].
        let stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j)
        if !stays {
          t[hole] = e
          hole = j
        }
      }
      t[hole] = Self.empty
      return true
    }
    if removed { count -= 1 }
  }

  /// Sizes the table for `n` ids at most seven eighths full.
  mutating func reserveCapacity(_ n: Int) {
    var size = table.count
    while !Self.fits(n, in: size) { size *= 2 }
    if size > table.count { rebuild(size: size) }
  }

  private mutating func rebuild(size: Int) {
    let old = table
    table = [UInt64](repeating: Self.empty, count: size)
    let m = size - 1
    table.withUnsafeMutableBufferPointer { t in
      for e in old where e != Self.empty {
        var i = Int(Self.hash(of: e)) & m
        while t[i] != Self.empty { i = (i + 1) & m }
        t[i] = e
      }
    }
  }
}
