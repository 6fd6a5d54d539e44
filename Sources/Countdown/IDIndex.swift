/// The index from activity id to slot: open addressing with linear probing over 4-byte slot
/// numbers, the ids themselves living in the engine's `idOf` array. About 8 bytes per activity
/// where a `Dictionary<String, UInt32>` takes about 42.
struct IDIndex {
  static let empty = UInt32.max
  private(set) var table = [UInt32](repeating: IDIndex.empty, count: 16)
  private(set) var count = 0

  private var mask: Int { table.count - 1 }

  @inline(__always)
  static func home(_ id: String, _ mask: Int) -> Int { id.hashValue & mask }

  /// The slot of `id`.
  /// - Complexity: O(1) expected.
  func find(_ id: String, in ids: [String]) -> UInt32? {
    var i = Self.home(id, mask)
    while true {
      let s = table[i]
      if s == Self.empty { return nil }
      if ids[Int(s)] == id { return s }
      i = (i + 1) & mask
    }
  }

  /// Adds `slot`, whose id (`ids[slot]`) is not in the index yet.
  /// - Complexity: O(1) amortized.
  mutating func insert(_ slot: UInt32, in ids: [String]) {
    if (count + 1) * 4 > table.count * 3 { grow(ids) }
    var i = Self.home(ids[Int(slot)], mask)
    while table[i] != Self.empty { i = (i + 1) & mask }
    table[i] = slot
    count += 1
  }

  /// Removes `id`, shifting later entries of its probe run back so that no tombstone stays.
  /// - Complexity: O(1) expected.
  mutating func remove(_ id: String, in ids: [String]) {
    var i = Self.home(id, mask)
    while true {
      let s = table[i]
      if s == Self.empty { return }
      if ids[Int(s)] == id { break }
      i = (i + 1) & mask
    }
    var hole = i
    var j = i
    while true {
      j = (j + 1) & mask
      let s = table[j]
      if s == Self.empty { break }
      let h = Self.home(ids[Int(s)], mask)
      // Move `s` into the hole unless its home lies cyclically in (hole, j].
      let stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j)
      if !stays {
        table[hole] = s
        hole = j
      }
    }
    table[hole] = Self.empty
    count -= 1
  }

  /// Sizes the table for `n` ids at most three quarters full.
  mutating func reserveCapacity(_ n: Int, in ids: [String]) {
    var size = table.count
    while n * 4 > size * 3 { size *= 2 }
    if size > table.count { rebuild(size: size, ids) }
  }

  private mutating func grow(_ ids: [String]) { rebuild(size: table.count * 2, ids) }

  private mutating func rebuild(size: Int, _ ids: [String]) {
    let old = table
    table = [UInt32](repeating: Self.empty, count: size)
    count = 0
    for s in old where s != Self.empty {
      var i = Self.home(ids[Int(s)], mask)
      while table[i] != Self.empty { i = (i + 1) & mask }
      table[i] = s
      count += 1
    }
  }
}
