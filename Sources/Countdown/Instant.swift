// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// A wall-clock instant: whole milliseconds since the Unix epoch, UTC.
///
/// The engine keeps time in milliseconds because every instant on the wire is one, and so every
/// displayed second changes on a millisecond boundary. A real clock's sub-millisecond part is
/// dropped (rounded down) when a driver stamps a command, which never moves a tick earlier.
public struct Instant: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// Milliseconds since 1970-01-01T00:00:00Z.
  public var milliseconds: Int64

  /// An instant `milliseconds` after the Unix epoch.
  @inlinable
  public init(milliseconds: Int64) { self.milliseconds = milliseconds }

  /// The smallest instant the wire accepts (1973-03-03): anything lower looks like seconds.
  public static let wireMinimum = Instant(milliseconds: 100_000_000_000)
  /// The largest instant the wire accepts: 9999-12-31T23:59:59.999Z.
  public static let wireMaximum = Instant(milliseconds: 253_402_300_799_999)

  @inlinable
  public static func < (a: Instant, b: Instant) -> Bool { a.milliseconds < b.milliseconds }

  /// `self` moved by `ms` milliseconds.
  @inlinable
  public func advanced(by ms: Int64) -> Instant { Instant(milliseconds: milliseconds + ms) }

  /// Milliseconds from `self` to `other` (negative when `other` is earlier).
  @inlinable
  public func distance(to other: Instant) -> Int64 { other.milliseconds - milliseconds }

  public var description: String { "\(milliseconds)ms" }

  /// `a / b` rounded toward negative infinity (Swift's `/` rounds toward zero): whole
  /// milliseconds of a clock's nanoseconds, whole seconds of an instant, days of seconds.
  @inlinable
  package static func floorDivision(_ a: Int64, by b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
  }
}
