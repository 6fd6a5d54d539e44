// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Engine-wide settings (docs/activities.md, "Engine-wide options").
public struct EngineOptions: Sendable, Hashable {
  /// Starting beyond this many activities (not yet dismissed) fails with `limitReached`.
  public var maxActivities: Int?
  /// An activity this long past its start (paused time included, as ActivityKit's 8-hour limit
  /// counts) is ended with reason `maxDuration` and the `default` dismissal. Off when nil.
  public var maxActiveDurationMs: Int64?
  /// When false, every start fails with `disabled`.
  public var enabled: Bool
  /// When false the engine never produces `tick` events and keeps no tick schedule: values
  /// are still exact in queries and in every other event. `countdown replay` without
  /// `--ticks` runs this way.
  public var deliversTicks: Bool
  /// Seed of the generator of activity ids, so that a replay is deterministic.
  public var idSeed: UInt64
  /// Storage reserved up front for this many activities, so that growing to them allocates
  /// nothing more (and leaves no freed, doubled buffers behind). 0 reserves nothing.
  public var reservedActivities: Int

  public init(
    maxActivities: Int? = nil, maxActiveDurationMs: Int64? = nil, enabled: Bool = true,
    deliversTicks: Bool = true, idSeed: UInt64 = 0, reservedActivities: Int = 0
  ) {
    self.maxActivities = maxActivities
    self.maxActiveDurationMs = maxActiveDurationMs
    self.enabled = enabled
    self.deliversTicks = deliversTicks
    self.idSeed = idSeed
    self.reservedActivities = reservedActivities
  }
}

extension Instant {
  /// Checks that a wire instant is in the accepted range, naming `field` in the error (built
  /// only when the check fails).
  ///
  /// Inlined: every command checks its instant and most check a date, and as a call (through
  /// the specialized closure's thunks) the two comparisons took about 40 instructions.
  @inline(__always)
  public func validated(_ field: @autoclosure () -> String) throws(CountdownError) -> Instant {
    guard milliseconds >= Instant.wireMinimum.milliseconds,
      milliseconds <= Instant.wireMaximum.milliseconds
    else { throw outOfRange(field()) }
    return self
  }

  /// The error of ``validated(_:)`` for this instant, out of range, named `field`.
  @inline(never)
  func outOfRange(_ field: String) -> CountdownError {
    if milliseconds < Instant.wireMinimum.milliseconds {
      return CountdownError(
        .invalidDate,
        "\(field) \(milliseconds) looks like seconds; the protocol takes milliseconds since 1970")
    }
    return CountdownError(
      .invalidDate,
      "\(field) \(milliseconds) is after 9999-12-31T23:59:59.999Z "
        + "(\(Instant.wireMaximum.milliseconds) ms), the latest instant accepted")
  }
}

/// Checks a wire duration: whole milliseconds from 0 to the largest wire instant.
func validatedDuration(_ field: @autoclosure () -> String, _ ms: Int64) throws(CountdownError)
  -> Int64
{
  guard ms >= 0 else { throw .payload("\(field()) \(ms) must be 0 or more milliseconds") }
  guard ms <= Instant.wireMaximum.milliseconds else {
    throw .payload("\(field()) \(ms) is larger than \(Instant.wireMaximum.milliseconds) ms")
  }
  return ms
}

/// UUID-shaped (version 4) activity ids from a seeded generator: the same seed gives the same
/// ids, so a replay is deterministic.
public struct ActivityIDGenerator: Sendable {
  var rng: SplitMix64
  public init(seed: UInt64) { rng = SplitMix64(state: seed) }
  /// The next id.
  public mutating func next() -> String { rng.uuid() }
}

/// SplitMix64: the tiny deterministic generator behind activity ids, public for tests and
/// benchmarks that need many random numbers cheaply (on Linux each number of the system
/// generator is a system call). Not for secrets.
public struct SplitMix64: RandomNumberGenerator, Sendable {
  var state: UInt64

  /// A generator whose sequence is fixed by `state`.
  public init(state: UInt64) { self.state = state }

  /// The next 64 random bits.
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A version-4 UUID string (lower-case hex) from the next 128 bits.
  package mutating func uuid() -> String {
    var hi = next()
    var lo = next()
    hi = (hi & ~0xF000) | 0x4000
    lo = (lo & ~(0xC000_0000_0000_0000)) | 0x8000_0000_0000_0000
    let hex = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(36)
    for k in 0..<32 {
      if k == 8 || k == 12 || k == 16 || k == 20 { out.append(UInt8(ascii: "-")) }
      let word = k < 16 ? hi : lo
      let nibble = Int((word >> UInt64(60 - 4 * (k % 16))) & 0xF)
      out.append(hex[nibble])
    }
    return String(decoding: out, as: UTF8.self)
  }
}

/// A milestone's `atMs`: a duration, or its negation (that long past an overtime countdown's
/// end).
func validatedOffset(_ field: @autoclosure () -> String, _ ms: Int64) throws(CountdownError)
  -> Int64
{
  guard ms.magnitude <= UInt64(Instant.wireMaximum.milliseconds) else {
    throw .payload(
      "\(field()) \(ms) is further from 0 than \(Instant.wireMaximum.milliseconds) ms")
  }
  return ms
}
