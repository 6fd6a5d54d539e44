// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// How exactly the loop's OS timer follows the engine's deadlines.
public enum TimerPrecision: Sendable, Hashable {
  /// Arm the timer at the exact next deadline (instants are whole milliseconds), waking
  /// ``LoopOptions/preciseSpinNanoseconds`` early and spinning to it, so that the OS's
  /// wake-up jitter falls before the deadline instead of after it.
  case precise
  /// Wake at most once per `milliseconds` (on a grid of that size) and deliver everything due.
  case quantum(milliseconds: Int64)

  /// One millisecond: the resolution of every instant, so it costs no lateness beyond the
  /// wake-up itself, and a loop never wakes more than 1000 times a second.
  public static let `default` = TimerPrecision.quantum(milliseconds: 1)
}

/// A source of wall-clock time, in nanoseconds since the Unix epoch. Injectable so that tests
/// can step the clock.
public protocol WallClock: Sendable {
  func nanosecondsSinceEpoch() -> Int64
  /// Whether this is the system's `CLOCK_REALTIME`, whose steps the kernel reports.
  var isSystemClock: Bool { get }
}

extension WallClock {
  public var isSystemClock: Bool { false }
}

/// The system's `CLOCK_REALTIME`: the one place the package reads the wall clock (the loop,
/// the service, the C ABI and the terminal board all read it here; the engine reads none).
public struct SystemWallClock: WallClock {
  public init() {}
  public func nanosecondsSinceEpoch() -> Int64 { LibUV.realtimeNanoseconds() }
  public var isSystemClock: Bool { true }

  /// The wall clock now, in whole milliseconds (rounded down): the instant of a message that
  /// answers no command, a board's "now".
  public static func now() -> Instant {
    Instant(milliseconds: Instant.floorDivision(LibUV.realtimeNanoseconds(), by: 1_000_000))
  }
}

/// Settings of a ``CountdownLoop``.
public struct LoopOptions: Sendable {
  public var precision: TimerPrecision
  /// The engine's options. `idSeed` is replaced by a random seed.
  public var engine: EngineOptions
  /// When set, ``CountdownLoop/events`` delivers events through a buffer of this many
  /// events; ticks coalesce per activity when it is full, lifecycle events are never dropped.
  public var eventStreamCapacity: Int?
  public var wallClock: any WallClock
  /// False forces the `uv_timer_t` fallback used where timerfd is missing.
  public var usesTimerfd: Bool
  /// The longest the loop sleeps without a deadline, so that a step of an injected clock
  /// (which the kernel cannot report) is noticed within this time.
  public var maximumSleepMs: Int64
  /// In `.precise` mode, how early the timer fires before a deadline; the loop spins the
  /// rest of the way. It trades up to this much CPU per wake-up (at most 1000 a second) for
  /// the wake-up latency of the OS: measured here at 100k activities, 50 µs brings p50 from
  /// ~35 µs to ~5 µs and p99 from ~120–150 µs to ~60–80 µs, for ~1.5% more of a core. Where
  /// the machine wakes threads later (a busy VM), a longer spin holds the precision for more
  /// CPU: there 150 µs gave p99 16–54 µs at ~14.6% of a core, against 77–136 µs at ~5.4% with
  /// 50 µs. 0 turns it off.
  public var preciseSpinNanoseconds: Int64
  /// C calls that tests make fail on purpose (see `LibUVFaults`); none in real use.
  var faults = LibUVFaults()
  /// Ticks first (on by default; see ``LoopEngine/now``): a long command catches the engine
  /// up to the wall clock between its operations, and what fell due during a queue of
  /// commands is handed on between them, so commands never hold back ticks. Off, every
  /// operation of one command happens at the command's instant, and ticks that fall due while
  /// commands run wait for the queue to finish. (`countdown-bench ticks --no-ticks-first`
  /// measures the difference.)
  public var ticksFirst = true

  public init(
    precision: TimerPrecision = .default, engine: EngineOptions = EngineOptions(),
    eventStreamCapacity: Int? = nil, wallClock: any WallClock = SystemWallClock(),
    usesTimerfd: Bool = true, maximumSleepMs: Int64 = 1000, preciseSpinNanoseconds: Int64 = 50_000
  ) {
    self.precision = precision
    self.engine = engine
    self.eventStreamCapacity = eventStreamCapacity
    self.wallClock = wallClock
    self.usesTimerfd = usesTimerfd
    self.maximumSleepMs = maximumSleepMs
    self.preciseSpinNanoseconds = preciseSpinNanoseconds
  }
}

/// A loop's counters, read with ``CountdownLoop/statistics()``.
public struct LoopStatistics: Sendable, Hashable {
  /// How many times the OS timer woke the loop.
  public var wakeups: UInt64
  /// Whether the loop's timer is the timerfd (false: the `uv_timer_t`, where timerfd is
  /// missing or after a fallback).
  public var usesTimerfd: Bool
  /// Times arming the timerfd failed and the loop moved to the `uv_timer_t` (0 or 1).
  public var timerFallbacks: Int
  /// Times a timer or the clock-step watch could not be armed at all.
  public var armFailures: Int
}
