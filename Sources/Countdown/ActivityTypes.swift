// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Which quantity an activity shows. Fixed at start.
public enum ActivityKind: String, Sendable, Hashable, CaseIterable {
  /// Time remaining until `endDate`, rounded up to whole seconds.
  case countdown
  /// Time since `startDate` less the time spent paused, rounded down to whole seconds.
  case elapsed

  /// How this kind rounds to whole seconds.
  public var rounding: SecondsRounding { self == .countdown ? .up : .down }
}

/// Where an activity is in its life: `active ⇄ paused → ended` (then dismissed and forgotten).
public enum ActivityPhase: String, Sendable, Hashable, CaseIterable {
  case active, paused, ended
}

/// Why an activity ended.
public enum EndReason: String, Sendable, Hashable, CaseIterable {
  /// An `end` command.
  case requested
  /// A countdown reached zero with `endOnExpiry`.
  case expired
  /// It reached the engine's `maxActiveDurationMs`.
  case maxDuration
  /// The engine was disabled.
  case disabled
}

/// When an ended activity is dismissed (forgotten; its id becomes free).
public enum DismissalPolicy: Hashable, Sendable {
  /// At the end instant.
  case immediate
  /// Four hours after the end.
  case `default`
  /// At the given instant, but no later than four hours after the end; an instant at or
  /// before the end means immediately.
  case after(Instant)

  /// The longest an ended activity stays before dismissal: 4 hours.
  public static let maximumDelayMs: Int64 = 4 * 3_600_000

  /// The dismissal instant for an activity that ended at `end`.
  public func dismissal(endedAt end: Instant) -> Instant {
    switch self {
    case .immediate: end
    case .default: end.advanced(by: Self.maximumDelayMs)
    case .after(let t): t <= end ? end : min(t, end.advanced(by: Self.maximumDelayMs))
    }
  }
}

/// A named point an activity passes once: remaining time for a countdown, elapsed time for an
/// elapsed timer.
public struct Milestone: Hashable, Sendable {
  /// Reported in the `milestone` event.
  public var name: String
  /// The displayed quantity, in milliseconds, at which it fires. Negative on an overtime
  /// countdown: that long after its end.
  public var atMs: Int64
  /// A merge patch (RFC 7396) of the activity's content, applied at the instant it fires
  /// (`["fields": ["phase": "peaking"]]`); empty: the content does not change.
  public var content: [String: JSONValue]

  public init(name: String, atMs: Int64, content: [String: JSONValue] = Dictionary()) {
    self.name = name
    self.atMs = atMs
    self.content = content
  }
}

/// A change to an optional setting in an update: leave it, set it, or remove it (`null`).
public enum Change<Value: Sendable & Hashable>: Sendable, Hashable {
  case keep
  case set(Value)
  case remove

  /// The setting after the change, from `current` (nil: not set).
  public func applied(to current: Value?) -> Value? {
    switch self {
    case .keep: current
    case .set(let v): v
    case .remove: nil
    }
  }
}
