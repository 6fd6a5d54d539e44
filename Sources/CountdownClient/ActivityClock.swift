// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// What a client keeps of an activity object (docs/protocol.md) to show it between events:
/// enough to compute the value shown at any instant, the instant it next changes, the
/// progress and the order of tiles, from the server's clock rather than its own. The terminal
/// board uses it; the web board's script computes the same (BoardPage.swift), and both are
/// held to the rules of docs/activities.md: ceil of the remaining time for a countdown (negative
/// past the end of one with overtime), floor of the elapsed time.
public struct ActivityClock: Sendable, Hashable {
  public var kind: ActivityKind
  public var phase: ActivityPhase
  /// The value the object showed (kept while paused or ended).
  public var value: Int64
  /// The progress the object showed (kept while paused or ended), or nil.
  public var progress: Double?
  /// A countdown's current end (ms since 1970).
  public var endDate: Int64?
  /// A countdown's start, or an elapsed timer's origin moved by pauses (ms since 1970).
  public var startDate: Int64?
  /// An elapsed timer's goal (ms), for its progress.
  public var goalMs: Int64?
  /// A countdown that runs on past its end: −n from n whole seconds after it.
  public var overtime: Bool

  public init(
    kind: ActivityKind, phase: ActivityPhase, value: Int64, progress: Double? = nil,
    endDate: Int64? = nil, startDate: Int64? = nil, goalMs: Int64? = nil, overtime: Bool = false
  ) {
    self.kind = kind
    self.phase = phase
    self.value = value
    self.progress = progress
    self.endDate = endDate
    self.startDate = startDate
    self.goalMs = goalMs
    self.overtime = overtime
  }

  /// The whole seconds shown at `now` (ms since 1970, by the server's clock).
  public func value(at now: Int64) -> Int64 {
    guard phase == .active else { return value }
    if kind == .countdown, let end = endDate {
      let ms = end - now
      if ms > 0 { return (ms + 999) / 1000 }
      return overtime ? ms / 1000 : 0
    }
    if let start = startDate { return max(0, now - start) / 1000 }
    return value
  }

  /// The next instant after `now` at which the value shown changes; nil when it never does
  /// (paused, ended, a countdown at zero without overtime).
  public func nextChange(after now: Int64) -> Int64? {
    guard phase == .active else { return nil }
    let v = value(at: now)
    if kind == .countdown, let end = endDate {
      if v > 0 { return end - (v - 1) * 1000 }
      return overtime ? end + (1 - v) * 1000 : nil
    }
    if let start = startDate { return start + (v + 1) * 1000 }
    return nil
  }

  /// Whether it shows time past its end at `now`: an overtime countdown, running past its end or
  /// paused there. (An ended one keeps its frozen value; boards show it as ended.)
  public func isInOvertime(at now: Int64) -> Bool {
    guard overtime, kind == .countdown, phase != .ended else { return false }
    if value(at: now) < 0 { return true }
    return phase == .active && endDate.map { now >= $0 } == true
  }

  /// The progress (0…1) at `now`: a countdown with a start, an elapsed timer with a goal;
  /// otherwise the object's.
  public func progress(at now: Int64) -> Double? {
    guard phase == .active else { return progress }
    if kind == .countdown, let s = startDate, let e = endDate, e > s {
      return min(1, max(0, Double(now - s) / Double(e - s)))
    }
    if kind == .elapsed, let goal = goalMs, goal > 0, let s = startDate {
      return min(1, max(0, Double(now - s) / Double(goal)))
    }
    return progress
  }

  /// Where a tile sorts at `now`, soonest ending first: running countdowns by their end, then
  /// paused countdowns by the end they would have if resumed now, then elapsed timers by
  /// their start, ended activities last. Ties are for the caller (the boards use the id).
  public func sortKey(at now: Int64) -> SortKey {
    if phase == .ended { return SortKey(group: 3, instant: endDate ?? 0) }
    if kind == .countdown {
      return phase == .active
        ? SortKey(group: 0, instant: endDate ?? 0) : SortKey(group: 1, instant: now + value * 1000)
    }
    return SortKey(group: 2, instant: startDate ?? 0)
  }

  /// See ``sortKey(at:)``.
  public struct SortKey: Comparable, Sendable, Hashable {
    public var group: Int
    public var instant: Int64
    public static func < (a: Self, b: Self) -> Bool {
      (a.group, a.instant) < (b.group, b.instant)
    }
  }
}
