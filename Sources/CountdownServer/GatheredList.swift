// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

// Compiled alone with the core's sources too, in `make fuzz` (Fuzz/FuzzWire.swift).
#if canImport(Countdown)
  import Countdown
#endif

/// A list gathered from every node of a cluster (docs/cluster.md, "Lists across nodes"): the
/// activity objects of this node's reply and of each peer's, as JSON bytes, merged without
/// being decoded again.
enum GatheredList {
  /// The elements of the first `"activities":[…]` array (or `key`'s) in `json` (a reply line
  /// or an HTTP listing), each an object's bytes; nil when there is none, or when the array
  /// holds anything but objects (whitespace aside): a part that is not a list of activities is
  /// not spliced into one.
  static func activities(in json: [UInt8], key: String = "activities") -> [ArraySlice<UInt8>]? {
    let marker = Array("\"\(key)\":[".utf8)
    guard let start = json.firstRange(of: marker)?.upperBound else { return nil }
    var items: [ArraySlice<UInt8>] = []
    var depth = 0
    var objectStart = start
    // Objects since the last comma at the top level; anything else there makes it no list.
    var inSegment = 0
    var wellFormed = true
    var closed = false
    JSONScan.walk(json, from: start) { token in
      switch token {
      case .string:
        if depth == 0 { wellFormed = false }
        return wellFormed
      case .byte(let i, let b):
        switch b {
        case UInt8(ascii: "{"):
          if depth == 0 { objectStart = i }
          depth += 1
        case UInt8(ascii: "["):
          if depth == 0 { wellFormed = false }
          depth += 1
        case UInt8(ascii: "}"):
          depth -= 1
          if depth == 0 {
            items.append(json[objectStart...i])
            inSegment += 1
          }
          if depth < 0 { wellFormed = false }
        case UInt8(ascii: "]") where depth == 0:
          // `[]`, or one object after the last comma.
          if inSegment != 1 && !(items.isEmpty && inSegment == 0) { wellFormed = false }
          closed = true
          return false
        case UInt8(ascii: "]"): depth -= 1
        case UInt8(ascii: ",") where depth == 0:
          if inSegment != 1 { wellFormed = false }
          inSegment = 0
        case 0x20, 0x09, 0x0A, 0x0D: break
        default:
          if depth == 0 { wellFormed = false }
        }
        return wellFormed
      }
    }
    return closed && wellFormed ? items : nil
  }

  /// `local` (this node's reply or listing) with the peers' activities spliced into its array
  /// (`key`: `activities`, or a subscription's `snapshot`): this node's first, then each
  /// peer's in node order; for `soonest k`, the k with the earliest `endDate` of them all.
  static func merge(
    _ local: [UInt8], key: String = "activities", peers: [[UInt8]], soonest: Int?
  ) -> [UInt8] {
    guard let mine = activities(in: local, key: key),
      let close = local.lastIndex(of: UInt8(ascii: "]"))
    else { return local }
    var all = mine
    for reply in peers { all += activities(in: reply) ?? [] }
    if let k = soonest {
      let keyed = all.map { (end: endDate(of: $0) ?? .max, item: $0) }
      all = keyed.sorted { $0.end < $1.end }.prefix(k).map(\.item)
    }
    let open = local.firstRange(of: Array("\"\(key)\":[".utf8))!.upperBound
    var out = Array(local[..<open])
    for (n, item) in all.enumerated() {
      if n > 0 { out.append(UInt8(ascii: ",")) }
      out += item
    }
    out += local[close...]
    return out
  }

  /// The `endDate` member of an activity object's bytes.
  static func endDate(of object: ArraySlice<UInt8>) -> Int64? {
    let marker = Array(#""endDate":"#.utf8)
    guard let r = object.firstRange(of: marker) else { return nil }
    var v: Int64 = 0
    var i = r.upperBound
    var digits = 0
    while i < object.endIndex, let d = Optional(object[i]), d >= 0x30, d <= 0x39 {
      // More digits than an Int64 holds: not an instant any node writes (and no trap).
      let (times10, o1) = v.multipliedReportingOverflow(by: 10)
      let (next, o2) = times10.addingReportingOverflow(Int64(d - 0x30))
      guard !o1, !o2 else { return nil }
      v = next
      i += 1
      digits += 1
    }
    return digits > 0 ? v : nil
  }
}

/// A walk over JSON text that knows its strings: each byte outside a string, and each
/// string's span from its opening quote to its closing one. The one string-aware scan the
/// nodes' replies are cut with (``GatheredList/activities(in:key:)``, ``PeerMessage/head(of:)``).
enum JSONScan {
  enum Token {
    /// A byte outside any string, at its index.
    case byte(Int, UInt8)
    /// A string, quotes included (an unterminated one is not reported).
    case string(ClosedRange<Int>)
  }

  /// Calls `visit` with each token from `start` on, in order, until it returns false.
  @inline(__always)
  static func walk(_ bytes: [UInt8], from start: Int, _ visit: (Token) -> Bool) {
    var inString = false
    var escaped = false
    var stringStart = 0
    var i = start
    while i < bytes.count {
      let b = bytes[i]
      if inString {
        if escaped {
          escaped = false
        } else if b == UInt8(ascii: "\\") {
          escaped = true
        } else if b == UInt8(ascii: "\"") {
          inString = false
          if !visit(.string(stringStart...i)) { return }
        }
      } else if b == UInt8(ascii: "\"") {
        inString = true
        stringStart = i
      } else if !visit(.byte(i, b)) {
        return
      }
      i += 1
    }
  }
}
