// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Formats whole seconds in a ``TimerStyle`` without locale, allocation or traps.
///
/// ```swift
/// let f = TimerFormatter(style: .timer)
/// f.string(seconds: 3725)                       // "1:02:05"
/// f.string(milliseconds: 1, rounding: .up)      // "0:01"
/// ```
public struct TimerFormatter: Sendable, Hashable {
  /// The longest text any style writes for any `Int64` number of seconds.
  public static let maximumLength = 32

  /// The style this formatter writes.
  public var style: TimerStyle
  /// ``smallStringLayoutHolds``, read once here so that each format tests a field instead of
  /// calling the lazy global's accessor (measured: a third of the String API's speed).
  @usableFromInline let buildsSmallStrings: Bool

  public init(style: TimerStyle) {
    self.style = style
    #if _pointerBitWidth(_64) && _endian(little)
      buildsSmallStrings = Self.smallStringLayoutHolds
    #else
      buildsSmallStrings = false
    #endif
  }

  /// Writes the text for `seconds` (negative clamps to 0) into `buffer` and returns its length.
  /// No allocation. `buffer` must hold at least ``maximumLength`` bytes; the bytes after the
  /// returned length may be overwritten as scratch space.
  @inlinable @inline(__always)
  public func write(seconds: Int64, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
    precondition(buffer.count >= Self.maximumLength, "buffer smaller than maximumLength")
    // The commonest case inline in the caller. A negative value is a huge UInt64, so one
    // comparison also rules it out (clamping first measured 11% slower).
    if case .compact = style, UInt64(bitPattern: seconds) < Self.compactWordLimit {
      return Self.writeCompactWord(UInt64(bitPattern: seconds), buffer.baseAddress!)
    }
    // The service's and the C ABI's default style, below ten hours, also as one word.
    if case .timer = style, UInt64(bitPattern: seconds) < Self.timerWordLimit {
      let (word, length) = Self.timerWord(UInt64(bitPattern: seconds))
      UnsafeMutableRawPointer(buffer.baseAddress!).storeBytes(
        of: word.littleEndian, as: UInt64.self)
      return length
    }
    return Self.write(style, UInt64(max(0, seconds)), buffer.baseAddress!)
  }

  /// The text for `seconds` (negative clamps to 0). A result of 15 bytes or fewer is a small
  /// string and allocates nothing.
  @inlinable
  public func string(seconds: Int64) -> String {
    #if _pointerBitWidth(_64) && _endian(little)
      // As in write(seconds:into:), without a stack buffer.
      if case .compact = style, UInt64(bitPattern: seconds) < Self.compactWordLimit {
        let (word, n) = Self.compactWord(UInt64(bitPattern: seconds))
        return Self.smallString(word, 0, count: n, inPlace: buildsSmallStrings)
      }
      if case .timer = style, UInt64(bitPattern: seconds) < Self.timerWordLimit {
        let (word, n) = Self.timerWord(UInt64(bitPattern: seconds))
        return Self.smallString(word, 0, count: n, inPlace: buildsSmallStrings)
      }
    #endif
    return Self.string(style, UInt64(max(0, seconds)), inPlace: buildsSmallStrings)
  }

  /// Every other style and value: a small string when the text fits (at most 13 bytes below
  /// 10^9 seconds, except `units(4)`), else a heap string.
  ///
  /// On 64-bit little-endian targets a small text is written straight into the two words of a
  /// small `String`: the bytes in order, zero padding, and the top byte holding the
  /// small-ASCII discriminator (`0xE0`) with the count. That is the layout of the standard
  /// library's `@frozen` `_SmallString`, which its own inlined code compiles into every
  /// client; `FormatterTests` checks it bit for bit against string literals, so a toolchain
  /// that changed it fails the tests instead of producing wrong strings. Skipping
  /// `String(unsafeUninitializedCapacity:)`, an opaque call that re-validates the bytes,
  /// halves the cost of a format. Elsewhere that initializer is used.
  @usableFromInline
  static func string(_ style: TimerStyle, _ s: UInt64, inPlace: Bool) -> String {
    if s < 1_000_000_000, fitsSmall(style) {
      #if _pointerBitWidth(_64) && _endian(little)
        var raw: (UInt64, UInt64) = (0, 0)
        let n = withUnsafeMutableBytes(of: &raw) { bytes in
          write(style, s, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return smallString(raw.0, raw.1, count: n, inPlace: inPlace)
      #else
        return String(unsafeUninitializedCapacity: 15) { out in write(style, s, out.baseAddress!) }
      #endif
    }
    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maximumLength) { tmp in
      let n = write(style, s, tmp.baseAddress!)
      return String(unsafeUninitializedCapacity: n) { out in
        for k in 0..<n { out[k] = tmp[k] }
        return n
      }
    }
  }

  /// Whether every text of this style below 10^9 seconds fits a small string (15 bytes).
  static func fitsSmall(_ style: TimerStyle) -> Bool {
    if case .units(let n) = style { return n < 4 }
    return true
  }

  #if _pointerBitWidth(_64) && _endian(little)
    /// The small string whose ASCII bytes are `low` then `high` (little-endian, zero after
    /// the `count` ≤ 15 bytes). The words are taken over, not copied, so no retain is made.
    ///
    /// That layout is the standard library's, not a promised ABI on Linux, so it is used only
    /// when `inPlace` says ``smallStringLayoutHolds`` found it in strings the standard library
    /// built itself; otherwise the same bytes go through the public initializer. A count over 15
    /// would not be a small string at all, so it stops the process rather than build one.
    @inlinable @inline(__always)
    static func smallString(_ low: UInt64, _ high: UInt64, count: Int, inPlace: Bool) -> String {
      precondition(count >= 0 && count <= 15, "a small string holds at most 15 bytes")
      guard inPlace else { return publicString(low, high, count: count) }
      var raw = (low, high | (0xE0 | UInt64(truncatingIfNeeded: count)) &<< 56)
      return withUnsafeMutablePointer(to: &raw) {
        $0.withMemoryRebound(to: String.self, capacity: 1) { $0.move() }
      }
    }

    /// The same text as ``smallString(_:_:count:inPlace:)``, through the public API.
    @usableFromInline
    static func publicString(_ low: UInt64, _ high: UInt64, count: Int) -> String {
      var raw = (low, high)
      return withUnsafeBytes(of: &raw) { bytes in
        String(unsafeUninitializedCapacity: count) { out in
          for k in 0..<count { out[k] = bytes[k] }
          return count
        }
      }
    }

    /// A string's two words as they lie in memory, read without a retain. Where
    /// ``smallStringLayoutHolds``, a small ASCII string's are its bytes, zero padding, and
    /// `0xE0 | count` in the top byte (see ``isSmallASCII(_:)``).
    @inline(__always)
    package static func words(of s: String) -> (UInt64, UInt64) {
      withUnsafeBytes(of: s) {
        ($0.load(as: UInt64.self), $0.load(fromByteOffset: 8, as: UInt64.self))
      }
    }

    /// Whether `words` (from ``words(of:)``) are a small ASCII string's; its byte count is then
    /// `(words.1 >> 56) & 0x0F`.
    @inline(__always)
    package static func isSmallASCII(_ words: (UInt64, UInt64)) -> Bool { words.1 >> 60 == 0xE }

    /// Whether `String`'s small form is laid out as ``smallString(_:_:count:inPlace:)`` writes it:
    /// checked once per process, by reading back the two words of strings of every length
    /// from 0 to 15 that the standard library built itself. Nothing is built by hand to check
    /// it, so a toolchain with another layout costs speed, never memory safety.
    @usableFromInline
    package static let smallStringLayoutHolds: Bool = {
      let probe = Array("0123456789:dhms".utf8)
      for n in 0...15 {
        let text = String(decoding: probe[0..<n], as: UTF8.self)
        var expected: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &expected) { for k in 0..<n { $0[k] = probe[k] } }
        expected.1 |= (0xE0 | UInt64(n)) << 56
        let actual = words(of: text)
        guard actual == expected, MemoryLayout<String>.size == 16 else { return false }
      }
      return true
    }()
  #endif

  // MARK: - Signed values (an overtime countdown)

  /// Writes the text for `seconds` with its sign: a value of 0 or more as
  /// ``write(seconds:into:)`` writes it, a negative one as `-` followed by the text for its
  /// magnitude (`-0:05`, `-1m 2s`: a countdown in overtime). No allocation; `buffer` must hold
  /// at least ``maximumLength`` bytes, which every signed text fits.
  @inlinable @inline(__always)
  public func write(signedSeconds seconds: Int64, into buffer: UnsafeMutableBufferPointer<UInt8>)
    -> Int
  {
    seconds >= 0
      ? write(seconds: seconds, into: buffer) : Self.writeNegative(style, seconds, buffer)
  }

  /// The text for `seconds` with its sign (see ``write(signedSeconds:into:)``).
  @inlinable
  public func string(signedSeconds seconds: Int64) -> String {
    guard seconds < 0 else { return string(seconds: seconds) }
    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.maximumLength) { tmp in
      let n = Self.writeNegative(style, seconds, tmp)
      return String(unsafeUninitializedCapacity: n) { out in
        for k in 0..<n { out[k] = tmp[k] }
        return n
      }
    }
  }

  /// `-` and the text for the magnitude of `seconds` < 0, through a scratch buffer on the stack
  /// (the writers may use bytes past their text as scratch space).
  @usableFromInline
  static func writeNegative(
    _ style: TimerStyle, _ seconds: Int64, _ buffer: UnsafeMutableBufferPointer<UInt8>
  ) -> Int {
    precondition(buffer.count >= maximumLength, "buffer smaller than maximumLength")
    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 2 * maximumLength) { tmp in
      let n = write(style, seconds.magnitude, tmp.baseAddress!)
      buffer[0] = UInt8(ascii: "-")
      for k in 0..<n { buffer[k + 1] = tmp[k] }
      return n + 1
    }
  }

  /// The text for a duration in milliseconds, rounded to whole seconds as `rounding` says.
  @inlinable
  public func string(milliseconds: Int64, rounding: SecondsRounding) -> String {
    string(seconds: rounding.seconds(milliseconds: milliseconds))
  }

  // MARK: - The writers

  @usableFromInline
  static func write(_ style: TimerStyle, _ s: UInt64, _ p: UnsafeMutablePointer<UInt8>) -> Int {
    var n = 0
    switch style {
    case .compact:
      if s < compactWordLimit { return writeCompactWord(s, p) }
      if s >= 86_400 {
        put(s / 86_400, p, &n, "d")
        space(p, &n)
        put(s / 3600 % 24, p, &n, "h")
      } else if s >= 3600 {
        put(s / 3600, p, &n, "h")
        space(p, &n)
        put(s / 60 % 60, p, &n, "m")
      } else {
        put(s / 60, p, &n, "m")
        space(p, &n)
        put(s % 60, p, &n, "s")
      }
    case .remaining:
      if s == 0 {
        for c in "Ended".utf8 {
          p[n] = c
          n += 1
        }
      } else if s >= 3600 {
        put(s / 3600, p, &n, "h")
        space(p, &n)
        put(s / 60 % 60, p, &n, "m")
      } else if s >= 60 {
        put(s / 60, p, &n, "m")
        space(p, &n)
        put(s % 60, p, &n, "s")
      } else {
        put(s, p, &n, "s")
      }
    case .positional:
      if s >= 3600 {
        digits(s / 3600, p, &n)
        colonTwo(s / 60 % 60, p, &n)
      } else {
        two(s / 60, p, &n)
      }
      colonTwo(s % 60, p, &n)
    case .minuteSecond:
      let minutes = s / 60
      if minutes < 10 {
        p[n] = UInt8(ascii: "0")
        n += 1
      }
      digits(minutes, p, &n)
      colonTwo(s % 60, p, &n)
    case .timer:
      if s >= 3600 {
        digits(s / 3600, p, &n)
        colonTwo(s / 60 % 60, p, &n)
      } else {
        digits(s / 60, p, &n)
      }
      colonTwo(s % 60, p, &n)
    case .timerWithoutHours:
      digits(s / 60, p, &n)
      colonTwo(s % 60, p, &n)
    case .units(let maxUnits):
      writeUnits(s, max(1, min(4, maxUnits)), p, &n)
    }
    return n
  }

  /// Below this many seconds (100 days) `compact` has two parts of at most two digits each.
  @inlinable static var compactWordLimit: UInt64 { 8_640_000 }

  /// `compact` below ``compactWordLimit``: the text (5 to 7 bytes) assembled in one
  /// little-endian word, zero after it, and its length. Kiosk values switch between `m s`,
  /// `h m` and `d h`; each part is a number below 100 followed by its letter.
  @inlinable @inline(__always)
  static func compactWord(_ s: UInt64) -> (UInt64, Int) {
    // Quotients by multiply and shift, exact for every s below 2^24 (> compactWordLimit).
    let minutes = (s &* 18_325_193_797) &>> 40
    let hours = (s &* 305_419_897) &>> 40
    let days = (s &* 12_725_830) &>> 40
    let isDay = s >= 86_400
    let isHour = s >= 3600
    let a = isDay ? days : (isHour ? hours : minutes)
    let b = isDay ? hours &- days &* 24 : (isHour ? minutes &- hours &* 60 : s &- minutes &* 60)
    // The two unit letters: d h, h m or m s.
    let units: UInt64 = isDay ? 0x6864 : (isHour ? 0x6D68 : 0x736D)
    let (first, firstLength) = token(a, units & 0xFF)
    let (second, secondLength) = token(b, units &>> 8)
    let word = first | 0x20 &<< (firstLength &* 8) | second &<< ((firstLength &+ 1) &* 8)
    return (word, Int(truncatingIfNeeded: firstLength &+ 1 &+ secondLength))
  }

  /// Below this many seconds (ten hours) `timer` is `H:MM:SS`, `MM:SS` or `M:SS`.
  @inlinable static var timerWordLimit: UInt64 { 36_000 }

  /// `timer` below ``timerWordLimit``: the text (4, 5 or 7 bytes) in one little-endian word,
  /// zero after it, and its length. Quotients by multiply and shift as in ``compactWord(_:)``;
  /// a single minute digit drops the pair's leading zero by shifting, not by a branch.
  @inlinable @inline(__always)
  static func timerWord(_ s: UInt64) -> (UInt64, Int) {
    let minutes = (s &* 18_325_193_797) &>> 40
    let hours = (s &* 305_419_897) &>> 40
    let seconds = pair(s &- minutes &* 60)
    if s >= 3600 {
      let word =
        (0x30 &+ hours) | 0x3A &<< 8 | pair(minutes &- hours &* 60) &<< 16 | 0x3A &<< 32
        | seconds &<< 40
      return (word, 7)
    }
    let twoDigits = (9 &- minutes) &>> 63  // 1 when minutes >= 10
    let minuteDigits = pair(minutes) &>> ((twoDigits ^ 1) &* 8)
    let length = twoDigits &+ 1
    let word = minuteDigits | 0x3A &<< (length &* 8) | seconds &<< ((length &+ 1) &* 8)
    return (word, Int(truncatingIfNeeded: length &+ 3))
  }

  /// The two ASCII digits of `v` < 100, little-endian in the low 16 bits.
  @inlinable @inline(__always)
  static func pair(_ v: UInt64) -> UInt64 {
    UInt64(
      UnsafeRawPointer(digitPairs.utf8Start).loadUnaligned(
        fromByteOffset: Int(truncatingIfNeeded: v &* 2), as: UInt16.self))
  }

  /// Stores ``compactWord(_:)`` at `p` (8 bytes, zero after the text) and returns the length.
  @inlinable @inline(__always)
  static func writeCompactWord(_ s: UInt64, _ p: UnsafeMutablePointer<UInt8>) -> Int {
    let (word, length) = compactWord(s)
    UnsafeMutableRawPointer(p).storeBytes(of: word.littleEndian, as: UInt64.self)
    return length
  }

  /// A number below 100 followed by a unit letter, as little-endian bytes, and its length.
  /// Arithmetic rather than a choice, so the optimizer cannot turn it into a branch that
  /// mispredicts on random values: below 10 the pair's leading "0" is shifted out.
  @inlinable @inline(__always)
  static func token(_ v: UInt64, _ unit: UInt64) -> (UInt64, UInt64) {
    let twoDigits = (9 &- v) &>> 63  // 1 when v >= 10
    let digits = pair(v) &>> ((twoDigits ^ 1) &* 8)
    return (digits | unit &<< ((twoDigits &+ 1) &* 8), twoDigits &+ 2)
  }

  /// "00" to "99", two bytes each.
  @inlinable static var digitPairs: StaticString {
    // swift-format-ignore
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
  }

  @inline(__always)
  static func writeUnits(
    _ s: UInt64, _ maxUnits: Int, _ p: UnsafeMutablePointer<UInt8>, _ n: inout Int
  ) {
    let parts = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60)
    func part(_ k: Int) -> UInt64 {
      switch k {
      case 0: parts.0
      case 1: parts.1
      case 2: parts.2
      default: parts.3
      }
    }
    var first = 0
    while first < 3, part(first) == 0 { first += 1 }
    var last = min(first + maxUnits, 4)
    while last - 1 > first, part(last - 1) == 0 { last -= 1 }
    let suffix: (UInt8, UInt8, UInt8, UInt8) = (
      UInt8(ascii: "d"), UInt8(ascii: "h"), UInt8(ascii: "m"), UInt8(ascii: "s")
    )
    for k in first..<last {
      if k > first { space(p, &n) }
      digits(part(k), p, &n)
      p[n] =
        switch k {
        case 0: suffix.0
        case 1: suffix.1
        case 2: suffix.2
        default: suffix.3
        }
      n += 1
    }
  }

  @inline(__always)
  static func space(_ p: UnsafeMutablePointer<UInt8>, _ n: inout Int) {
    p[n] = UInt8(ascii: " ")
    n += 1
  }

  @inline(__always)
  static func put(
    _ v: UInt64, _ p: UnsafeMutablePointer<UInt8>, _ n: inout Int, _ unit: Unicode.Scalar
  ) {
    digits(v, p, &n)
    p[n] = UInt8(unit.value)
    n += 1
  }

  /// Two digits of `v` < 100, with a leading zero.
  @inline(__always)
  static func two(_ v: UInt64, _ p: UnsafeMutablePointer<UInt8>, _ n: inout Int) {
    let pair = UnsafeRawPointer(digitPairs.utf8Start).loadUnaligned(
      fromByteOffset: Int(truncatingIfNeeded: v &* 2), as: UInt16.self)
    UnsafeMutableRawPointer(p + n).storeBytes(of: pair, as: UInt16.self)
    n += 2
  }

  @inline(__always)
  static func colonTwo(_ v: UInt64, _ p: UnsafeMutablePointer<UInt8>, _ n: inout Int) {
    p[n] = UInt8(ascii: ":")
    n += 1
    two(v, p, &n)
  }

  /// Decimal digits of `v`, most significant first.
  @inline(__always)
  static func digits(_ v: UInt64, _ p: UnsafeMutablePointer<UInt8>, _ n: inout Int) {
    if v < 10 {
      p[n] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v)
      n += 1
      return
    }
    if v < 100 {
      two(v, p, &n)
      return
    }
    var count = 0
    var x = v
    while x > 0 {
      count += 1
      x /= 10
    }
    x = v
    var k = n + count
    while x > 0 {
      k -= 1
      p[k] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: x % 10)
      x /= 10
    }
    n += count
  }
}
