// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Appends compact JSON to a byte buffer. Object keys are written sorted by their UTF-8 bytes,
/// so equal values always encode to equal bytes.
package struct JSONWriter {
  /// The bytes written so far.
  package var bytes: [UInt8] = []

  package init() {}

  /// The bytes written so far, as a string.
  package var string: String { String(decoding: bytes, as: UTF8.self) }

  /// Appends raw bytes, such as punctuation.
  @inlinable
  package mutating func raw(_ s: StaticString) {
    s.withUTF8Buffer { bytes.append(contentsOf: $0) }
  }

  /// Whether `write(string:)` escapes byte `c` (RFC 8259: the quote, the backslash and the
  /// controls below 0x20); every other byte is written as it is.
  @inline(__always)
  package static func escapes(_ c: UInt8) -> Bool { c < 0x20 || c == 0x22 || c == 0x5C }

  /// Appends `"code":…,"message":…`, the members every error carries (a reply, an `error`
  /// event, an HTTP error body; docs/errors.md). The one place errors are written.
  package mutating func write(errorMembers e: CountdownError) {
    raw("\"code\":")
    write(string: e.code.rawValue)
    raw(",\"message\":")
    write(string: e.message)
  }

  /// Appends a JSON string literal with the escapes RFC 8259 requires.
  package mutating func write(string s: String) {
    bytes.append(UInt8(ascii: "\""))
    for c in s.utf8 {
      guard Self.escapes(c) else {
        bytes.append(c)
        continue
      }
      switch c {
      case 0x22: raw("\\\"")
      case 0x5C: raw("\\\\")
      case 0x0A: raw("\\n")
      case 0x0D: raw("\\r")
      case 0x09: raw("\\t")
      default:
        raw("\\u00")
        bytes.append(Self.hexDigit(c >> 4))
        bytes.append(Self.hexDigit(c & 0xF))
      }
    }
    bytes.append(UInt8(ascii: "\""))
  }

  private static func hexDigit(_ v: UInt8) -> UInt8 {
    v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "a") + v - 10
  }

  /// Appends an integer in decimal.
  package mutating func write(int v: Int64) {
    if v < 0 {
      bytes.append(UInt8(ascii: "-"))
      write(unsigned: v.magnitude)
    } else {
      write(unsigned: UInt64(v))
    }
  }

  private mutating func write(unsigned v: UInt64) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { tmp in
      var n = 20
      var x = v
      repeat {
        n -= 1
        tmp[n] = UInt8(ascii: "0") + UInt8(x % 10)
        x /= 10
      } while x > 0
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: tmp[n..<20]))
    }
  }

  /// Appends a number: integral values of magnitude below 2^53 without a fraction, others in
  /// Swift's shortest round-trip form. Non-finite values (never valid JSON) are written `null`.
  package mutating func write(double d: Double) {
    guard d.isFinite else {
      raw("null")
      return
    }
    if d == d.rounded(.towardZero), abs(d) < 9_007_199_254_740_992 {
      write(int: Int64(d))
    } else {
      bytes.append(contentsOf: d.description.utf8)
    }
  }

  /// Appends any JSON value.
  package mutating func write(_ v: JSONValue) {
    switch v {
    case .null: raw("null")
    case .bool(let b): if b { raw("true") } else { raw("false") }
    case .int(let i): write(int: i)
    case .double(let d): write(double: d)
    case .string(let s): write(string: s)
    case .array(let a):
      bytes.append(UInt8(ascii: "["))
      for (k, item) in a.enumerated() {
        if k > 0 { bytes.append(UInt8(ascii: ",")) }
        write(item)
      }
      bytes.append(UInt8(ascii: "]"))
    case .object(let o):
      bytes.append(UInt8(ascii: "{"))
      let keys = o.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
      for (k, key) in keys.enumerated() {
        if k > 0 { bytes.append(UInt8(ascii: ",")) }
        write(string: key)
        bytes.append(UInt8(ascii: ":"))
        write(o[key]!)
      }
      bytes.append(UInt8(ascii: "}"))
    }
  }
}
