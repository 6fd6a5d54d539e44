// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

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
/// The table grows when it would pass seven eighths full, to twice its size; a reservation
/// sizes it to seven eighths full exactly, not to the next power of two (an entry's home is
/// its hash scaled to the table's size, a multiply where a mask would need a power of two):
/// 9.1 bytes per reserved activity, and 9 to 18 when it grows, where a
/// `Dictionary<String, UInt32>` takes about 42. Near that load a probe for an absent id reads
/// about 32 entries (four adjacent cache lines) and one for a present id about 5, but the
/// table is half the size it would be at three quarters (100k ids in 1 MiB instead of 2), and
/// the first line is the one that misses the cache: measured faster for start, update and end.
struct IDIndex {
  static let empty = UInt64.max
  /// Entries: hash << 32 | slot, or `empty`.
  private(set) var table = [UInt64](repeating: IDIndex.empty, count: 16)
  private(set) var count = 0

  /// Where the probe for hash `h` starts in a table of `size` entries: `h` scaled to the size
  /// (the high half of a 32 × 64-bit product), so that every size is spread over evenly.
  @inline(__always)
  private static func home(_ h: UInt32, size: Int) -> Int {
    Int(truncatingIfNeeded: (UInt64(h) &* UInt64(size)) >> 32)
  }

  /// The entry after `i` in a table of `size`, wrapping to the first.
  @inline(__always)
  private static func next(_ i: Int, size: Int) -> Int {
    i + 1 == size ? 0 : i + 1
  }

  /// The 32 bits of `id`'s hash that the index stores and probes from.
  ///
  /// Ids are compared as Strings are, by canonical equivalence, so equal ids must hash alike.
  /// An ASCII id (nearly every one) is hashed from its bytes by ``asciiHash(_:)``, several
  /// times faster than `String`'s SipHash, which checks normalization on the way. A non-ASCII
  /// id equals an ASCII one only through the three scalars whose canonical decomposition is one
  /// ASCII character (U+037E GREEK QUESTION MARK, U+1FEF GREEK VARIA, U+212A KELVIN SIGN; no
  /// other scalar decomposes to ASCII alone): such an id is hashed as that ASCII text, and any
  /// other by `String`'s own hash, which agrees with its equality.
  @inline(__always)
  static func hash(_ id: String) -> UInt32 {
    if let h = id.utf8.withContiguousStorageIfAvailable(asciiHash), let h { return h }
    return nonASCIIHash(id)
  }

  /// A seed drawn once per process: where probes start is not known outside it, so that ids
  /// cannot be chosen to collide (as `String`'s hash is seeded per process).
  static let seed = UInt64.random(in: .min ... .max)

  /// A seeded hash of `bytes` (wyhash's mixing: 64 x 64 -> 128-bit products folded), or nil
  /// when a byte is not ASCII.
  @inline(__always)
  static func asciiHash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32? {
    let n = bytes.count
    guard n > 0, let base = bytes.baseAddress else { return UInt32(truncatingIfNeeded: seed) }
    let p = UnsafeRawPointer(base)
    @inline(__always) func word(_ i: Int) -> UInt64 {
      UInt64(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt64.self))
    }
    @inline(__always) func half(_ i: Int) -> UInt64 {
      UInt64(UInt32(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt32.self)))
    }
    var acc = seed ^ (UInt64(n) &* 0x9E37_79B9_7F4A_7C15)
    var high: UInt64 = 0
    var i = 0
    while n - i > 16 {
      let x = word(i)
      let y = word(i + 8)
      high |= x | y
      acc = fold(x ^ 0xA076_1D64_78BD_642F ^ acc, y ^ 0xE703_7ED1_A0B4_28DB)
      i += 16
    }
    // The last 1 to 16 bytes, read as two overlapping words or halves (or three bytes).
    let rest = n - i
    let a: UInt64
    let b: UInt64
    if rest >= 8 {
      a = word(i)
      b = word(n - 8)
    } else if rest >= 4 {
      a = half(i)
      b = half(n - 4)
    } else {
      a = UInt64(base[i]) << 16 | UInt64(base[i + rest / 2]) << 8 | UInt64(base[n - 1])
      b = 0
    }
    guard (high | a | b) & 0x8080_8080_8080_8080 == 0 else { return nil }
    let h = fold(a ^ 0xA076_1D64_78BD_642F ^ acc, b ^ 0xE703_7ED1_A0B4_28DB ^ seed)
    return UInt32(truncatingIfNeeded: h ^ h >> 32)
  }

  @inline(__always)
  private static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
    let r = a.multipliedFullWidth(by: b)
    return r.high ^ r.low
  }

  /// ``hash(_:)`` of an id that is not all ASCII.
  static func nonASCIIHash(_ id: String) -> UInt32 {
    var ascii = String.UnicodeScalarView()
    for u in id.unicodeScalars {
      switch u.value {
      case 0..<0x80: ascii.append(u)
      case 0x037E: ascii.append(";")
      case 0x1FEF: ascii.append("`")
      case 0x212A: ascii.append("K")
      default: return UInt32(truncatingIfNeeded: id.hashValue)
      }
    }
    var text = String(ascii)
    return text.withUTF8 { asciiHash($0)! }
  }

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
    first(of: h) { ids[Int($0)].indexKey == id }
  }

  /// The slot of the first entry of `h`'s probe run that stores hash `h`, read before any id
  /// is compared; nil when the run has none. Nearly always the id's own slot: a command starts
  /// loading what it will touch of that slot from here, beside the comparison's own miss in
  /// the slot records, instead of after it. Only a hint: ``find(_:hash:in:)`` decides.
  @inline(__always)
  func candidate(_ h: UInt32) -> UInt32? {
    first(of: h) { _ in true }
  }

  /// The probe: the slot of the first entry of `h`'s run that stores hash `h` and that
  /// `accepts`, or nil at the run's end.
  @inline(__always)
  private func first(of h: UInt32, where accepts: (UInt32) -> Bool) -> UInt32? {
    table.withUnsafeBufferPointer { t in
      var i = Self.home(h, size: t.count)
      while true {
        let e = t[i]
        if e == Self.empty { return nil }
        if Self.hash(of: e) == h, accepts(Self.slot(of: e)) { return Self.slot(of: e) }
        i = Self.next(i, size: t.count)
      }
    }
  }

  /// Starts loading the line where a probe for hash `h` begins, so that its miss overlaps
  /// the caller's work before the probe.
  @inline(__always)
  func prefetch(_ h: UInt32) {
    table.withUnsafeBufferPointer {
      cd_prefetch_write($0.baseAddress! + Self.home(h, size: $0.count))
    }
  }

  /// Adds `slot`, whose id has ``hash(_:)`` `h` and is not in the index yet.
  /// - Complexity: O(1) amortized.
  mutating func insert(_ slot: UInt32, hash h: UInt32) {
    if !Self.fits(count + 1, in: table.count) { rebuild(size: table.count * 2) }
    let size = table.count
    var i = Self.home(h, size: size)
    while table[i] != Self.empty { i = Self.next(i, size: size) }
    table[i] = UInt64(h) << 32 | UInt64(slot)
    count += 1
  }

  /// Removes `slot`, whose id has ``hash(_:)`` `h`, shifting later entries of its probe run
  /// back so that no tombstone stays. Compares slot numbers only: no id is read.
  /// - Complexity: O(1) expected.
  mutating func remove(_ slot: UInt32, hash h: UInt32) {
    let removed = table.withUnsafeMutableBufferPointer { t in
      let size = t.count
      var i = Self.home(h, size: size)
      while true {
        let e = t[i]
        if e == Self.empty { return false }
        if Self.slot(of: e) == slot { break }
        i = Self.next(i, size: size)
      }
      var hole = i
      var j = i
      while true {
        j = Self.next(j, size: size)
        let e = t[j]
        if e == Self.empty { break }
        let home = Self.home(Self.hash(of: e), size: size)
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

  /// Sizes the table for `n` ids seven eighths full (the smallest size that fits them), unless
  /// it is larger already.
  mutating func reserveCapacity(_ n: Int) {
    let size = (n * 8 + 6) / 7
    if size > table.count { rebuild(size: size) }
  }

  private mutating func rebuild(size: Int) {
    let old = table
    table = [UInt64](repeating: Self.empty, count: size)
    table.withUnsafeMutableBufferPointer { t in
      for e in old where e != Self.empty {
        var i = Self.home(Self.hash(of: e), size: size)
        while t[i] != Self.empty { i = Self.next(i, size: size) }
        t[i] = e
      }
    }
  }
}
