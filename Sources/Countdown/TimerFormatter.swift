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

  public init(style: TimerStyle) { self.style = style }

  /// Writes the text for `seconds` (negative clamps to 0) into `buffer` and returns its length.
  /// No allocation. `buffer` must hold at least ``maximumLength`` bytes.
  @inlinable
  public func write(seconds: Int64, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
    precondition(buffer.count >= Self.maximumLength, "buffer smaller than maximumLength")
    return Self.write(style, UInt64(max(0, seconds)), buffer.baseAddress!)
  }

  /// The text for `seconds` (negative clamps to 0). A result of 15 bytes or fewer is a small
  /// string and allocates nothing.
  @inlinable
  public func string(seconds: Int64) -> String {
    let s = UInt64(max(0, seconds))
    if s < 1_000_000_000, Self.fitsSmall(style) {
      // Every such text is at most 13 bytes: write it straight into a small string.
      return String(unsafeUninitializedCapacity: 15) { out in Self.write(style, s, out.baseAddress!)
      }
    }
    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.maximumLength) { tmp in
      let n = Self.write(style, s, tmp.baseAddress!)
      return String(unsafeUninitializedCapacity: n) { out in
        for k in 0..<n { out[k] = tmp[k] }
        return n
      }
    }
  }

  /// Whether every text of this style below 10^9 seconds fits a small string (15 bytes).
  @inlinable
  static func fitsSmall(_ style: TimerStyle) -> Bool {
    if case .units(let n) = style { return n < 4 }
    return true
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

  @inline(__always)
  static func two(_ v: UInt64, _ p: UnsafeMutablePointer<UInt8>, _ n: inout Int) {
    p[n] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v / 10)
    p[n + 1] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
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
