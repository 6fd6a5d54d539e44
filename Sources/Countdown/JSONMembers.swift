// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// The members of one JSON object as the parser met them, for decoders that read a handful of
/// known keys once each: a command line, a request. Up to ``JSONMembers/linearLimit`` members
/// are kept in one small array and looked up by comparing keys, which for the short ASCII keys
/// of the protocol is far cheaper than hashing each one into a `Dictionary` (measured: building
/// and probing that dictionary was the largest cost of decoding a request). Larger objects,
/// which only hostile or mistaken input sends, fall back to a dictionary so that lookups stay
/// O(1) and a 64 KiB line of keys cannot cost quadratic time.
///
/// A repeated key keeps its last value, as `JSONValue.object` does. Keys are compared by their
/// UTF-8 bytes, as RFC 8259 compares names, not by Unicode canonical equivalence as `String`'s
/// `==` does (under which "\u{212A}ind", with a Kelvin sign, would equal "Kind").
package struct JSONMembers: Sendable {
  /// Members kept in arrays before switching to a dictionary.
  package static let linearLimit = 16

  private var pairs: [(key: String, value: JSONValue)] = []
  private var large: [String: JSONValue]?

  /// No members yet, with room for a command's usual handful.
  package init() { pairs.reserveCapacity(8) }

  /// The members of a parsed object.
  package init(_ object: [String: JSONValue]) {
    if object.count > Self.linearLimit {
      large = object
    } else {
      pairs = object.map { (key: $0.key, value: $0.value) }
    }
  }

  /// How many distinct keys there are.
  package var count: Int { large?.count ?? pairs.count }

  /// The distinct keys, in no particular order.
  package var allKeys: [String] { large.map { Array($0.keys) } ?? pairs.map(\.key) }

  /// The members as a dictionary.
  package var dictionary: [String: JSONValue] {
    if let large { return large }
    return Dictionary(pairs, uniquingKeysWith: { _, last in last })
  }

  /// The index of `key` among the pairs.
  private func index(_ key: String) -> Int? {
    #if _pointerBitWidth(_64) && _endian(little)
      if TimerFormatter.smallStringLayoutHolds {
        // Two small ASCII strings are equal exactly when their two words are: no call into
        // the standard library's comparison for each key that does not match.
        let k = TimerFormatter.words(of: key)
        if TimerFormatter.isSmallASCII(k) {
          for i in pairs.indices {
            let p = TimerFormatter.words(of: pairs[i].key)
            if p == k { return i }
            if !TimerFormatter.isSmallASCII(p), pairs[i].key.utf8.elementsEqual(key.utf8) {
              return i
            }
          }
          return nil
        }
      }
    #endif
    for i in pairs.indices where pairs[i].key.utf8.elementsEqual(key.utf8) { return i }
    return nil
  }

  /// The value of `key` and, when the members are kept in order, a bit naming its position
  /// (0 when they are in a dictionary): decoders mark what they read with it, to report
  /// unknown keys without comparing strings again.
  package func lookup(_ key: String) -> (value: JSONValue, bit: UInt32)? {
    if let large { return large[key].map { ($0, 0) } }
    return index(key).map { (pairs[$0].value, UInt32(1) << UInt32($0)) }
  }

  /// The keys whose bit is not in `mask` and that are not in `names` (for members kept in a
  /// dictionary, whose lookups give no bit), in byte order.
  package func keys(notIn mask: UInt32, or names: [String]) -> [String] {
    var out: [String] = []
    if let large {
      out = large.keys.filter { !names.contains($0) }
    } else {
      for i in pairs.indices where mask & (UInt32(1) << UInt32(i)) == 0 { out.append(pairs[i].key) }
    }
    return out.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
  }

  /// The value of `key`, or nil when the object has no such key.
  package subscript(key: String) -> JSONValue? {
    get {
      if let large { return large[key] }
      return index(key).map { pairs[$0].value }
    }
    set {
      if large != nil {
        large![key] = newValue
        return
      }
      if let i = index(key) {
        if let newValue {
          pairs[i].value = newValue
        } else {
          pairs.remove(at: i)
        }
      } else if let newValue {
        if pairs.count == Self.linearLimit {
          var d = dictionary
          d[key] = newValue
          large = d
          pairs = []
        } else {
          pairs.append((key, newValue))
        }
      }
    }
  }

  /// Removes `key` and returns its value.
  package mutating func removeValue(forKey key: String) -> JSONValue? {
    let v = self[key]
    if v != nil { self[key] = nil }
    return v
  }
}

/// A JSON text whose top level, when it is an object, was read as ``JSONMembers``.
package enum JSONTopLevel: Sendable {
  case object(JSONMembers)
  /// Any other value.
  case other(JSONValue)
}
