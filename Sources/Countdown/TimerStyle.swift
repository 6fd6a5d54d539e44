// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// How a whole number of seconds is written (docs/activities.md, "Formatting"). Every style is ASCII, locale-free and
/// without grouping separators.
public enum TimerStyle: Hashable, Sendable {
  /// `2d 3h`, `1h 2m`, `4m 5s`: the two largest of days, hours, minutes, seconds.
  case compact
  /// `Ended` at zero, else `25h 1m`, `4m 5s`, `59s`.
  case remaining
  /// `1:02:05` with hours, else `02:05`.
  case positional
  /// `MM:SS` with at least two minute digits and no upper bound: `62:05`, `1501:01`.
  case minuteSecond
  /// SwiftUI's timer text: `1:02:05` with hours, else `2:05`.
  case timer
  /// Timer text that never shows hours: `62:05`.
  case timerWithoutHours
  /// Up to `maxUnits` (1...4) consecutive units from the largest non-zero one, trailing zero
  /// units dropped: `1d 1h`, `1h`, `0s`.
  case units(maxUnits: Int)

  /// The style named on the command line (`compact`, `remaining`, `positional`,
  /// `minute-second`, `timer`, `units`), or nil for an unknown name.
  public init?(name: String, maxUnits: Int = 2, showsHours: Bool = true) {
    switch name {
    case "compact": self = .compact
    case "remaining": self = .remaining
    case "positional": self = .positional
    case "minute-second": self = .minuteSecond
    case "timer": self = showsHours ? .timer : .timerWithoutHours
    case "units":
      guard (1...4).contains(maxUnits) else { return nil }
      self = .units(maxUnits: maxUnits)
    default: return nil
    }
  }

  /// The names `init(name:)` accepts.
  public static let names = [
    "compact", "remaining", "positional", "minute-second", "timer", "units",
  ]
}

/// Which way a fraction of a second goes when a duration becomes whole seconds.
public enum SecondsRounding: Sendable, Hashable {
  /// Countdowns round up: `0:01` until the very instant they end.
  case up
  /// Elapsed timers round down: `0:00` for their whole first second.
  case down

  /// Whole seconds in `milliseconds`, negative clamped to zero.
  @inlinable
  public func seconds(milliseconds ms: Int64) -> Int64 {
    guard ms > 0 else { return 0 }
    let (q, r) = ms.quotientAndRemainder(dividingBy: 1000)
    return self == .up && r != 0 ? q + 1 : q
  }

  /// Whole seconds in `milliseconds`, sign kept: `up` rounds toward +infinity (−1500 ms is −1,
  /// the value of a countdown 1.5 s into overtime), `down` toward −infinity.
  @inlinable
  public func signedSeconds(milliseconds ms: Int64) -> Int64 {
    let (q, r) = ms.quotientAndRemainder(dividingBy: 1000)
    return self == .up ? (r > 0 ? q + 1 : q) : (r < 0 ? q - 1 : q)
  }

  /// Whole seconds in `nanoseconds`, negative clamped to zero.
  @inlinable
  public func seconds(nanoseconds ns: Int64) -> Int64 {
    guard ns > 0 else { return 0 }
    let (q, r) = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
    return self == .up && r != 0 ? q + 1 : q
  }
}
