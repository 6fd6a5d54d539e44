// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Testing

@testable import Countdown

/// docs/activities.md, "Formatting"'s table, column by column: 0, 59, 61, 3599, 3600, 3725, 86400, 90061 seconds.
private let specColumns: [Int64] = [0, 59, 61, 3599, 3600, 3725, 86400, 90061]
private let specTable: [(TimerStyle, [String])] = [
  (.compact, ["0m 0s", "0m 59s", "1m 1s", "59m 59s", "1h 0m", "1h 2m", "1d 0h", "1d 1h"]),
  (.remaining, ["Ended", "59s", "1m 1s", "59m 59s", "1h 0m", "1h 2m", "24h 0m", "25h 1m"]),
  (
    .positional,
    ["00:00", "00:59", "01:01", "59:59", "1:00:00", "1:02:05", "24:00:00", "25:01:01"]
  ),
  (.minuteSecond, ["00:00", "00:59", "01:01", "59:59", "60:00", "62:05", "1440:00", "1501:01"]),
  (.timer, ["0:00", "0:59", "1:01", "59:59", "1:00:00", "1:02:05", "24:00:00", "25:01:01"]),
  (.timerWithoutHours, ["0:00", "0:59", "1:01", "59:59", "60:00", "62:05", "1440:00", "1501:01"]),
  (.units(maxUnits: 2), ["0s", "59s", "1m 1s", "59m 59s", "1h", "1h 2m", "1d", "1d 1h"]),
]

/// Every style, for the loops below.
private let allStyles: [TimerStyle] = [
  .compact, .remaining, .positional, .minuteSecond, .timer, .timerWithoutHours,
  .units(maxUnits: 1), .units(maxUnits: 2), .units(maxUnits: 3), .units(maxUnits: 4),
]

/// Both APIs' text for `s`.
private func texts(_ style: TimerStyle, _ s: Int64) -> (buffer: String, string: String) {
  let f = TimerFormatter(style: style)
  var buf = [UInt8](repeating: 0, count: TimerFormatter.maximumLength)
  let n = buf.withUnsafeMutableBufferPointer { f.write(seconds: s, into: $0) }
  return (String(decoding: buf[0..<n], as: UTF8.self), f.string(seconds: s))
}

@Suite("Formatting")
struct FormatterTests {
  @Test("The whole table of §4, through both APIs", arguments: specTable.indices)
  func specTableRow(_ row: Int) {
    let (style, expected) = specTable[row]
    for (s, want) in zip(specColumns, expected) {
      let (b, str) = texts(style, s)
      #expect(b == want, "\(style) \(s)s via buffer")
      #expect(str == want, "\(style) \(s)s via String")
    }
  }

  @Test("Unit boundaries 59/60, 3599/3600, 86399/86400 in every style")
  func boundaries() {
    let expected: [TimerStyle: [Int64: String]] = [
      .compact: [
        59: "0m 59s", 60: "1m 0s", 3599: "59m 59s", 3600: "1h 0m", 86399: "23h 59m", 86400: "1d 0h",
      ],
      .remaining: [
        59: "59s", 60: "1m 0s", 3599: "59m 59s", 3600: "1h 0m", 86399: "23h 59m", 86400: "24h 0m",
      ],
      .positional: [
        59: "00:59", 60: "01:00", 3599: "59:59", 3600: "1:00:00", 86399: "23:59:59",
        86400: "24:00:00",
      ],
      .minuteSecond: [
        59: "00:59", 60: "01:00", 3599: "59:59", 3600: "60:00", 86399: "1439:59", 86400: "1440:00",
      ],
      .timer: [
        59: "0:59", 60: "1:00", 3599: "59:59", 3600: "1:00:00", 86399: "23:59:59",
        86400: "24:00:00",
      ],
      .timerWithoutHours: [
        59: "0:59", 60: "1:00", 3599: "59:59", 3600: "60:00", 86399: "1439:59", 86400: "1440:00",
      ],
      .units(maxUnits: 1): [
        59: "59s", 60: "1m", 3599: "59m", 3600: "1h", 86399: "23h", 86400: "1d",
      ],
      .units(maxUnits: 2): [
        59: "59s", 60: "1m", 3599: "59m 59s", 3600: "1h", 86399: "23h 59m", 86400: "1d",
      ],
      .units(maxUnits: 3): [
        59: "59s", 60: "1m", 3599: "59m 59s", 3600: "1h", 86399: "23h 59m 59s", 86400: "1d",
      ],
      .units(maxUnits: 4): [
        59: "59s", 60: "1m", 3599: "59m 59s", 3600: "1h", 86399: "23h 59m 59s", 86400: "1d",
      ],
    ]
    for (style, cases) in expected {
      for (s, want) in cases {
        let (b, str) = texts(style, s)
        #expect(b == want, "\(style) \(s)")
        #expect(str == want, "\(style) \(s)")
      }
    }
  }

  @Test("units keeps inner zero units and drops only trailing ones")
  func unitsInnerZeros() {
    #expect(texts(.units(maxUnits: 3), 86_400 + 300).string == "1d 0h 5m")
    #expect(texts(.units(maxUnits: 2), 86_400 + 300).string == "1d")
    #expect(texts(.units(maxUnits: 4), 90_061).string == "1d 1h 1m 1s")
    #expect(texts(.units(maxUnits: 4), 86_401).string == "1d 0h 0m 1s")
  }

  @Test("Countdowns round up and elapsed timers down, at ±1 ms around a second change")
  func rounding() {
    let f = TimerFormatter(style: .timer)
    #expect(f.string(milliseconds: 4_999, rounding: .up) == "0:05")
    #expect(f.string(milliseconds: 5_000, rounding: .up) == "0:05")
    #expect(f.string(milliseconds: 5_001, rounding: .up) == "0:06")
    #expect(f.string(milliseconds: 4_999, rounding: .down) == "0:04")
    #expect(f.string(milliseconds: 5_000, rounding: .down) == "0:05")
    #expect(f.string(milliseconds: 5_001, rounding: .down) == "0:05")
    #expect(f.string(milliseconds: 1, rounding: .up) == "0:01")
    #expect(f.string(milliseconds: 999, rounding: .down) == "0:00")
    #expect(SecondsRounding.up.seconds(nanoseconds: 1_000_000_001) == 2)
    #expect(SecondsRounding.down.seconds(nanoseconds: 1_999_999_999) == 1)
    #expect(SecondsRounding.up.seconds(nanoseconds: 1_000_000_000) == 1)
  }

  @Test("Negative values clamp to zero", arguments: allStyles)
  func negativeClamps(_ style: TimerStyle) {
    let zero = texts(style, 0)
    for v: Int64 in [-1, -59, -86_400, .min] {
      #expect(texts(style, v) == zero)
    }
    #expect(SecondsRounding.up.seconds(milliseconds: -1) == 0)
    #expect(SecondsRounding.down.seconds(milliseconds: .min) == 0)
  }

  @Test("The largest wire value and Int64.max format without trapping", arguments: allStyles)
  func largest(_ style: TimerStyle) {
    let s = SecondsRounding.up.seconds(milliseconds: Instant.wireMaximum.milliseconds)
    #expect(s == 253_402_300_800)
    let (b, str) = texts(style, s)
    #expect(b == str)
    #expect(!b.isEmpty && b.utf8.count <= TimerFormatter.maximumLength)
    let (bm, sm) = texts(style, .max)
    #expect(bm == sm && bm.utf8.count <= TimerFormatter.maximumLength)
    #expect(texts(.minuteSecond, s).string == "4223371680:00")
    #expect(texts(.positional, s).string == "70389528:00:00")
    #expect(texts(.units(maxUnits: 4), .max).string == "106751991167300d 15h 30m 7s")
  }

  @Test("Random values in 0…10^12 s agree with a plain reference", arguments: allStyles)
  func property(_ style: TimerStyle) async throws {
    try await onThread(computing: true) {
      // Seeded, and the seed is in every failure message: set COUNTDOWN_TEST_SEED to it to run
      // the same values again.
      let seed = testSeed()
      var rng = SplitMix64(state: seed)
      for k in 0..<20_000 {
        // Small values (every unit boundary), kiosk values (below and above 100 days, where
        // compact leaves its one-word path) and the whole range.
        let s: Int64 =
          switch k {
          case ..<5_000: Int64(k) * 37
          case ..<12_000: Int64.random(in: 0..<20_000_000, using: &rng)
          default: Int64.random(in: 0...1_000_000_000_000, using: &rng)
          }
        let want = referenceText(style, s)
        let (b, str) = texts(style, s)
        #expect(b == want, "\(style) \(s) (COUNTDOWN_TEST_SEED=\(seed))")
        #expect(str == want, "\(style) \(s) (COUNTDOWN_TEST_SEED=\(seed))")
        // A text of 15 bytes or fewer is a small string: no heap object behind it.
        #expect(
          want.utf8.count > 15 || isSmallString(str),
          "\(style) \(s) not small (COUNTDOWN_TEST_SEED=\(seed))")
        if b != want { return }
      }
    }
  }

  @Test("compact agrees with the reference on both sides of every minute change for 101 days")
  func compactExhaustive() async throws {
    try await onThread(computing: true) {
      // compact below 100 days divides by multiply and shift. Those quotients only ever grow
      // with s, so being right on both sides of every multiple of 60 (which includes every hour
      // and day change) means being right at every second of the range. The first day is
      // checked second by second too.
      var failures = 0
      func check(_ s: Int64) {
        let want = referenceText(.compact, s)
        let (b, str) = texts(.compact, s)
        if b != want || str != want {
          failures += 1
          Issue.record("compact \(s): buffer \(b), string \(str), want \(want)")
        }
      }
      for s in Int64(0)..<86_400 { check(s) }
      for minute in Int64(1440)...(101 * 1440) where failures < 5 {
        check(minute * 60 - 1)
        check(minute * 60)
      }
    }
  }

  @Test("timer's one-word path agrees with the reference at every second below 10 h and past it")
  func timerExhaustive() {
    // Every second of the fast path's range (0..<36000) and the first seconds past it, where
    // the general writer takes over; both APIs.
    var failures = 0
    for s in Int64(0)..<36_100 where failures < 5 {
      let want = referenceText(.timer, s)
      let (b, str) = texts(.timer, s)
      if b != want || str != want {
        failures += 1
        Issue.record("timer \(s): buffer \(b), string \(str), want \(want)")
      }
    }
  }

  @Test("Formatted strings are ordinary small strings, bit for bit like literals")
  func smallStringsAreOrdinary() {
    let cases: [(TimerStyle, Int64, String)] = [
      (.compact, 0, "0m 0s"), (.compact, 61, "1m 1s"), (.compact, 8_639_999, "99d 23h"),
      (.compact, 8_640_000, "100d 0h"), (.timer, 3725, "1:02:05"), (.remaining, 0, "Ended"),
      (.units(maxUnits: 3), 999_999_999, "11574d 1h 46m"),
      (.positional, 999_999_999, "277777:46:39"),
    ]
    for (style, s, literal) in cases {
      let text = TimerFormatter(style: style).string(seconds: s)
      #expect(text == literal)
      #expect(text.hashValue == literal.hashValue)
      #expect(text.count == literal.count && text.utf8.count == literal.utf8.count)
      #expect(Array(text.utf8) == Array(literal.utf8))
      #expect(text + "!" == literal + "!")
      #expect(text.withCString { strlenOf($0) } == literal.utf8.count)
      #expect(text.reversed().map(String.init).joined() == String(literal.reversed()))
      // The exact layout of a small string the standard library builds for the literal.
      let ours = unsafeBitCast(text, to: (UInt64, UInt64).self)
      let theirs = unsafeBitCast(literal, to: (UInt64, UInt64).self)
      #expect(ours == theirs, "\(literal)")
    }
  }

  @Test("The buffer API writes nothing past maximumLength", arguments: allStyles)
  func bufferBounds(_ style: TimerStyle) {
    let f = TimerFormatter(style: style)
    var buf = [UInt8](repeating: 0xAA, count: TimerFormatter.maximumLength + 16)
    for s: Int64 in [0, 61, 3725, 90061, 8_639_999, 253_402_300_800, .max] {
      let n = buf.withUnsafeMutableBufferPointer {
        f.write(
          seconds: s,
          into: UnsafeMutableBufferPointer(rebasing: $0[0..<TimerFormatter.maximumLength]))
      }
      #expect(String(decoding: buf[0..<n], as: UTF8.self) == referenceText(style, s))
      #expect(buf[TimerFormatter.maximumLength...].allSatisfy { $0 == 0xAA })
    }
  }

  @Test(
    "Signed: a negative value is - and the text of its magnitude, within maximumLength",
    arguments: allStyles)
  func signed(_ style: TimerStyle) {
    let f = TimerFormatter(style: style)
    var buf = [UInt8](repeating: 0xAA, count: TimerFormatter.maximumLength + 16)
    for s: Int64 in [
      0, 1, 61, 3725, 90061, -1, -5, -61, -3725, -90061, -253_402_300_800, .min + 1, .min, .max,
    ] {
      let n = buf.withUnsafeMutableBufferPointer {
        f.write(
          signedSeconds: s,
          into: UnsafeMutableBufferPointer(rebasing: $0[0..<TimerFormatter.maximumLength]))
      }
      let text = String(decoding: buf[0..<n], as: UTF8.self)
      #expect(f.string(signedSeconds: s) == text)
      if s == .min {
        // Its magnitude is past Int64 (the reference's type): the sign, then digits.
        #expect(text.hasPrefix("-") && text.count > 10)
      } else {
        let magnitude = referenceText(style, abs(s))
        #expect(text == (s < 0 ? "-" + magnitude : magnitude), "\(s)")
      }
      #expect(n <= TimerFormatter.maximumLength)
      #expect(buf[TimerFormatter.maximumLength...].allSatisfy { $0 == 0xAA })
    }
    // The texts of the issue: "-0:05", "-1m 2s".
    #expect(TimerFormatter(style: .timer).string(signedSeconds: -5) == "-0:05")
    #expect(TimerFormatter(style: .compact).string(signedSeconds: -62) == "-1m 2s")
    // The unsigned API still clamps (docs/activities.md, "Formatting").
    #expect(f.string(seconds: -5) == f.string(seconds: 0))
  }

  @Test("Signed rounding: up toward +infinity, down toward -infinity")
  func signedRounding() {
    let cases: [(Int64, Int64, Int64)] = [
      (0, 0, 0), (1, 1, 0), (999, 1, 0), (1000, 1, 1), (-1, 0, -1), (-999, 0, -1),
      (-1000, -1, -1), (-1001, -1, -2), (-1500, -1, -2), (.min, .min / 1000, .min / 1000 - 1),
    ]
    for (ms, up, down) in cases {
      #expect(SecondsRounding.up.signedSeconds(milliseconds: ms) == up, "\(ms)")
      #expect(SecondsRounding.down.signedSeconds(milliseconds: ms) == down, "\(ms)")
    }
  }

  @Test("Style names parse as the command line spells them")
  func names() {
    #expect(TimerStyle(name: "minute-second") == .minuteSecond)
    #expect(TimerStyle(name: "timer", showsHours: false) == .timerWithoutHours)
    #expect(TimerStyle(name: "units", maxUnits: 3) == .units(maxUnits: 3))
    #expect(TimerStyle(name: "units", maxUnits: 5) == nil)
    #expect(TimerStyle(name: "bogus") == nil)
  }
}

/// Whether `s` is stored inline in its two words (a small string), not in a heap buffer.
private func isSmallString(_ s: String) -> Bool {
  unsafeBitCast(s, to: (UInt64, UInt64).self).1 & 0x2000_0000_0000_0000 != 0
}

/// The length of a C string.
private func strlenOf(_ p: UnsafePointer<CChar>) -> Int {
  var n = 0
  while p[n] != 0 { n += 1 }
  return n
}

/// The rules of docs/activities.md written as plainly as possible, with string interpolation.
private func referenceText(_ style: TimerStyle, _ s: Int64) -> String {
  let d = s / 86400
  let h = s / 3600 % 24
  let m = s / 60 % 60
  let sec = s % 60
  let totalH = s / 3600
  let totalM = s / 60
  func pad(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
  switch style {
  case .compact:
    if d > 0 { return "\(d)d \(h)h" }
    if totalH > 0 { return "\(h)h \(m)m" }
    return "\(m)m \(sec)s"
  case .remaining:
    if s == 0 { return "Ended" }
    if totalH > 0 { return "\(totalH)h \(m)m" }
    if totalM > 0 { return "\(m)m \(sec)s" }
    return "\(sec)s"
  case .positional: return totalH > 0 ? "\(totalH):\(pad(m)):\(pad(sec))" : "\(pad(m)):\(pad(sec))"
  case .minuteSecond: return "\(pad(totalM)):\(pad(sec))"
  case .timer: return totalH > 0 ? "\(totalH):\(pad(m)):\(pad(sec))" : "\(totalM):\(pad(sec))"
  case .timerWithoutHours: return "\(totalM):\(pad(sec))"
  case .units(let n):
    let parts = [(d, "d"), (h, "h"), (m, "m"), (sec, "s")]
    guard let first = parts.firstIndex(where: { $0.0 != 0 }) else { return "0s" }
    var taken = Array(parts[first..<min(first + n, 4)])
    while taken.count > 1, taken.last!.0 == 0 { taken.removeLast() }
    return taken.map { "\($0.0)\($0.1)" }.joined(separator: " ")
  }
}
