// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Foundation
import Testing

@testable import Countdown

/// The core's own JSON parser beside Foundation's `JSONSerialization` on generated documents:
/// numbers at the Int64 and Double edges, every escape, surrogate pairs, raw multi-byte text,
/// duplicate keys, deep nesting, and mutations of all of these.
///
/// Where the two differ it is on purpose, and each difference is checked for what it is:
/// - ours rejects a trailing comma (`[1,]`), which RFC 8259 does not allow and Foundation takes;
/// - ours stops at 64 levels of nesting (Foundation at 512), to bound the stack;
/// - integers that fit Int64 stay exact in ours; Foundation gives Int64.min as a decimal number;
/// - a number past Double's range (`1e400`) is ±infinity in ours, so that the field that holds
///   it is rejected by name (`endDate is not a finite number`); Foundation rejects the text.
/// Otherwise ours is never more lenient: whatever it accepts, Foundation accepts with the same
/// value.
@Suite("JSON parser against Foundation's JSONSerialization")
struct JSONDifferentialTests {
  static let edgeNumbers = [
    "0", "-0", "1", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775806",
    "-9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
    "123456789012345678901234567890", "0.1", "-0.0", "1e2", "1E+2", "1e-2", "2.5E-3",
    "5e-324", "4.9e-324", "2.2250738585072014e-308", "1.7976931348623157e308",
    "-1.7976931348623157e308", "1.5", "100000000000", "253402300799999", "1795248000000.5",
    "9007199254740993",
  ]

  /// A generator of JSON texts, written with varied escapes and spacing, not canonically.
  struct Generator {
    var rng: SplitMix64
    var duplicates = 0

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    mutating func space() -> String { ["", " ", "\n", "\t", "\r\n ", "  "][int(0...5)] }

    mutating func number() -> String {
      switch int(0...3) {
      case 0:
        return JSONDifferentialTests.edgeNumbers[
          int(0...JSONDifferentialTests.edgeNumbers.count - 1)]
      case 1: return String(Int64.random(in: .min ... .max, using: &rng))
      case 2:
        let d = Double(bitPattern: UInt64.random(in: 0...0x7FEF_FFFF_FFFF_FFFF, using: &rng))
        return (chance(0.5) ? "-" : "") + "\(d)".replacingOccurrences(of: "inf", with: "1")
      default:
        return "\(int(-1000...1000))" + (chance(0.5) ? ".\(int(0...999))" : "")
          + (chance(0.3) ? "e\(int(-20...20))" : "")
      }
    }

    mutating func string() -> String {
      var s = "\""
      for _ in 0..<int(0...12) {
        switch int(0...9) {
        case 0: s += ["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"][int(0...7)]
        case 1:
          // A BMP scalar that is not a surrogate, as \uXXXX in either case.
          var v = int(0...0xFFFF)
          if (0xD800...0xDFFF).contains(v) { v -= 0x1000 }
          let hex = String(v, radix: 16)
          let padded = String(repeating: "0", count: 4 - hex.count) + hex
          s += "\\u" + (chance(0.5) ? padded.uppercased() : padded)
        case 2:
          // An astral scalar as a surrogate pair.
          let v = int(0x10000...0x10FFFF) - 0x10000
          s += String(format: "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF))
        case 3: s += ["é", "東京", "🛫", "Ω", "\u{7F}", "\u{FFFD}"][int(0...5)]
        default:
          s += String(UnicodeScalar(UInt8(int(0x20...0x7E))))
            .replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
              of: "\"", with: "\\\"")
        }
      }
      return s + "\""
    }

    mutating func value(depth: Int) -> String {
      let pick = depth > 6 ? int(0...3) : int(0...6)
      switch pick {
      case 0: return number()
      case 1: return string()
      case 2: return ["true", "false", "null"][int(0...2)]
      case 3: return number()
      case 4:
        return "[" + space()
          + (0..<int(0...5)).map { _ in value(depth: depth + 1) }.joined(
            separator: space() + "," + space()) + space() + "]"
      default:
        var keys = (0..<int(0...5)).map { _ in string() }
        if keys.count > 1, chance(0.3) {
          keys[keys.count - 1] = keys[0]  // a repeated key: the last value wins
          duplicates += 1
        }
        let members = keys.map { k in k + space() + ":" + space() + value(depth: depth + 1) }
        return "{" + space() + members.joined(separator: "," + space()) + space() + "}"
      }
    }
  }

  static func ours(_ text: String) -> JSONValue? { try? JSONParser.parse(text) }

  /// Foundation's value, or nil when it rejects the text (JSON null is `NSNull`).
  static func theirs(_ text: String) -> Any? {
    try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
  }

  /// Where Foundation's value differs from ours (a path and both leaves), or nil when it is
  /// the same: the same structure, strings, booleans, and numbers (exactly for Int64 and
  /// Double; within rounding where Foundation made a decimal).
  static func difference(_ a: JSONValue, _ b: Any, at path: String = "$") -> String? {
    let leaf = "\(path): ours \(a), Foundation's \(b) (\(type(of: b)))"
    switch a {
    case .null: return b is NSNull ? nil : leaf
    case .bool(let v):
      guard let n = b as? NSNumber, String(cString: n.objCType) == "c" else { return leaf }
      return n.boolValue == v ? nil : leaf
    case .int(let v):
      guard let n = b as? NSNumber, String(cString: n.objCType) != "c" else { return leaf }
      if n is NSDecimalNumber { return n.stringValue == String(v) ? nil : leaf }
      return n.int64Value == v && n.doubleValue == Double(v) ? nil : leaf
    case .double(let v):
      guard let n = b as? NSNumber, String(cString: n.objCType) != "c" else { return leaf }
      // A decimal's own doubleValue is not correctly rounded; its digits are exact, and
      // Double(String) rounds them correctly, as our parser does.
      if n is NSDecimalNumber { return Double(n.stringValue) == v ? nil : leaf }
      return n.doubleValue == v ? nil : leaf
    case .string(let s): return (b as? String) == s ? nil : leaf
    case .array(let items):
      guard let other = b as? [Any], other.count == items.count else { return leaf }
      for (k, pair) in zip(items, other).enumerated() {
        if let d = difference(pair.0, pair.1, at: "\(path)[\(k)]") { return d }
      }
      return nil
    case .object(let members):
      guard let other = b as? [String: Any], Set(other.keys) == Set(members.keys) else {
        return "\(path): keys differ"
      }
      for (k, v) in members {
        if let d = difference(v, other[k]!, at: "\(path).\(JSONValue.string(k))") { return d }
      }
      return nil
    }
  }

  @Test("Thousands of generated documents parse to the same values in both")
  func generated() async throws {
    try await onThread(computing: true) {
      let seed = testSeed()
      var g = Generator(rng: SplitMix64(state: seed))
      var compared = 0
      for _ in 0..<3_000 {
        let text = g.space() + g.value(depth: 0) + g.space()
        guard let mine = Self.ours(text) else {
          Issue.record("ours rejected a valid document (COUNTDOWN_TEST_SEED=\(seed)): \(text)")
          return
        }
        guard let theirs = Self.theirs(text) else {
          Issue.record("Foundation rejected: \(text)")
          return
        }
        let d = Self.difference(mine, theirs)
        #expect(d == nil, "\(d ?? "") (COUNTDOWN_TEST_SEED=\(seed))")
        compared += 1
      }
      #expect(compared == 3_000 && g.duplicates > 50)
    }
  }

  @Test(
    "Mutated documents: ours never accepts what Foundation rejects, and agrees when both accept")
  func mutations() async throws {
    try await onThread(computing: true) {
      let seed = testSeed()
      var g = Generator(rng: SplitMix64(state: seed))
      var rejectedByBoth = 0
      let noise = Array("{}[]\",:\\-+.eE0u\u{0}\u{1F} tfn".unicodeScalars)
      for _ in 0..<3_000 {
        var scalars = Array((g.value(depth: 0)).unicodeScalars)
        for _ in 0..<g.int(1...3) {
          let at = g.int(0...scalars.count)
          switch g.int(0...2) {
          case 0: scalars.insert(noise[g.int(0...noise.count - 1)], at: at)
          case 1: if at < scalars.count { scalars.remove(at: at) }
          default: scalars = Array(scalars.prefix(at))
          }
        }
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars)
        let mine = Self.ours(text)
        let theirs = Self.theirs(text)
        if let mine, !mine.hasInfinity {
          guard let theirs else {
            Issue.record(
              "ours accepted what Foundation rejects (COUNTDOWN_TEST_SEED=\(seed)): \(text)")
            continue
          }
          let d = Self.difference(mine, theirs)
          #expect(d == nil, "\(d ?? "") (COUNTDOWN_TEST_SEED=\(seed))")
        } else if theirs == nil {
          rejectedByBoth += 1
        }
      }
      #expect(rejectedByBoth > 500)
    }
  }

  @Test("Invalid documents are rejected by both, with a message naming the byte")
  func invalid() throws {
    let invalid = [
      "", " ", "01", "+1", "1.", ".5", "1e", "-", "NaN", "Infinity", "[1 2]",
      "{\"a\" 1}", "{a:1}", "{'a':1}", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
      "\"a\u{1}b\"", "\"unterminated", "[", "{\"a\":1", "tru", "nul", "[1]]", "\"\\ud83d\\u0041\"",
    ]
    for text in invalid {
      #expect(Self.theirs(text) == nil, "Foundation accepted \(text)")
      #expect(throws: CountdownError.self, "ours accepted \(text)") { try JSONParser.parse(text) }
      do {
        _ = try JSONParser.parse(text)
      } catch {
        #expect(error.code == .invalidPayload && error.message.hasPrefix("invalid JSON at byte "))
      }
    }
  }

  @Test("Where they differ on purpose: trailing commas, nesting past 64, Int64.min, 1e400")
  func intendedDifferences() throws {
    for text in ["1e400", "-1e400", "[1e999]"] {
      #expect(Self.theirs(text) == nil)
      #expect(Self.ours(text)?.hasInfinity == true)
    }
    for text in ["[1,]", "{\"a\":1,}"] {
      #expect(Self.theirs(text) != nil)
      #expect(Self.ours(text) == nil)
    }
    let deep = { (n: Int) in String(repeating: "[", count: n) + String(repeating: "]", count: n) }
    #expect(Self.ours(deep(64)) != nil && Self.theirs(deep(64)) != nil)
    #expect(Self.theirs(deep(65)) != nil)
    #expect(throws: CountdownError.self) { try JSONParser.parse(deep(65)) }
    // No stack overflow, however deep.
    #expect(throws: CountdownError.self) { try JSONParser.parse(deep(100_000)) }
    #expect(Self.ours("-9223372036854775808") == .int(.min))
    #expect(Self.theirs("-9223372036854775808") is NSDecimalNumber)
  }
}

extension JSONValue {
  /// Whether a number in this value is ±infinity (a number past Double's range in the text).
  var hasInfinity: Bool {
    switch self {
    case .double(let d): d.isInfinite
    case .array(let items): items.contains { $0.hasInfinity }
    case .object(let members): members.values.contains { $0.hasInfinity }
    default: false
    }
  }
}
