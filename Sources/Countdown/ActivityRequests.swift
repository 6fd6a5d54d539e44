// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Everything needed to start an activity.
///
/// The optional properties of the request types (and of ``ActivityContent``) are spelled
/// `Optional<T>`, not `T?`: a `var x: T?` starts as nil before an initializer runs, so the
/// inlinable initializers, built in the caller's module, assigned each one over that nil and
/// the optimizer then copied and destroyed the whole request (every string and array in it,
/// each a call into the runtime) on the way to `start`, which ran 17% faster without them.
/// Empty-dictionary defaults are `Dictionary()`, which folds to the shared empty storage
/// where `[:]` called the literal initializer at every call.
public struct ActivityRequest: Sendable, Hashable {
  /// 1–128 bytes of UTF-8 without control characters; generated (UUID form) when nil.
  public var id: Optional<String>
  public var kind: ActivityKind
  /// Required for a countdown; not allowed for an elapsed timer.
  public var endDate: Optional<Instant>
  /// A countdown's start, for progress; an elapsed timer's start (default: now).
  public var startDate: Optional<Instant>
  /// An elapsed timer's goal, for progress.
  public var goalMs: Optional<Int64>
  public var content: ActivityContent
  /// When the activity becomes stale.
  public var staleDate: Optional<Instant>
  public var milestones: [Milestone]
  /// A countdown that reaches zero ends with this dismissal policy; without it, it stays at zero.
  public var endOnExpiry: Optional<DismissalPolicy>
  /// A countdown that goes on past its end, showing the time since as a negative value
  /// (`-0:05`); not with ``endOnExpiry``. Its milestones may then have a negative `atMs`.
  public var overtime: Bool
  /// The sender's clock; later updates older than it are rejected.
  public var timestamp: Optional<Instant>
  /// The iPhone Live Activity it pushes to (docs/pushes.md).
  public var liveActivity: Optional<LiveActivity>
  /// The group it belongs to, fixed at start (``ActivityGroup``): a key with groups sees and
  /// commands only its groups' activities (docs/security.md).
  public var group: Optional<String>

  @inlinable
  public init(
    id: String? = nil, kind: ActivityKind, endDate: Instant? = nil, startDate: Instant? = nil,
    goalMs: Int64? = nil, content: ActivityContent, staleDate: Instant? = nil,
    milestones: [Milestone] = [], endOnExpiry: DismissalPolicy? = nil, overtime: Bool = false,
    timestamp: Instant? = nil, liveActivity: LiveActivity? = nil, group: String? = nil
  ) {
    self.id = id
    self.kind = kind
    self.endDate = endDate
    self.startDate = startDate
    self.goalMs = goalMs
    self.content = content
    self.staleDate = staleDate
    self.milestones = milestones
    self.endOnExpiry = endOnExpiry
    self.overtime = overtime
    self.timestamp = timestamp
    self.liveActivity = liveActivity
    self.group = group
  }

  /// A countdown to `end` titled `title`.
  @inlinable
  public static func countdown(id: String? = nil, to end: Instant, title: String) -> Self {
    ActivityRequest(id: id, kind: .countdown, endDate: end, content: ActivityContent(title: title))
  }

  /// An elapsed timer from `start` (default: now) titled `title`.
  @inlinable
  public static func elapsed(id: String? = nil, from start: Instant? = nil, title: String) -> Self {
    ActivityRequest(
      id: id, kind: .elapsed, startDate: start, content: ActivityContent(title: title))
  }
}

/// A change to a running activity. Content changes are an RFC 7396 merge patch.
public struct ActivityUpdate: Sendable, Hashable {
  /// Merge patch over the content keys (`title`, `subtitle`, `alertMessage`, `color`,
  /// `fields`, `relevance`); `.null` removes.
  public var content: [String: JSONValue]
  /// A countdown's new end. Moving it past now after expiry makes it run again.
  public var endDate: Optional<Instant>
  public var startDate: Change<Instant>
  public var staleDate: Change<Instant>
  public var goalMs: Change<Int64>
  public var milestones: Change<[Milestone]>
  public var endOnExpiry: Change<DismissalPolicy>
  /// Turns overtime on or off (nil keeps it); see ``ActivityRequest/overtime``.
  public var overtime: Optional<Bool>
  /// Rejected with `outOfOrder` when older than the last applied timestamp.
  public var timestamp: Optional<Instant>
  /// A merge patch of the `liveActivity` object (``LiveActivity/patched(_:with:)``): nil keeps
  /// it, `.null` removes it.
  public var liveActivity: Optional<JSONValue>
  /// The server's own change of `liveActivity.channelId` (the channel APNs made, or nil once
  /// APNs said it is gone): never from a request (docs/pushes.md, "Broadcast channels").
  package var channelID: String?? = nil

  @inlinable
  public init(
    content: [String: JSONValue] = Dictionary(), endDate: Instant? = nil,
    startDate: Change<Instant> = .keep, staleDate: Change<Instant> = .keep,
    goalMs: Change<Int64> = .keep, milestones: Change<[Milestone]> = .keep,
    endOnExpiry: Change<DismissalPolicy> = .keep, overtime: Bool? = nil,
    timestamp: Instant? = nil, liveActivity: JSONValue? = nil
  ) {
    self.content = content
    self.endDate = endDate
    self.startDate = startDate
    self.staleDate = staleDate
    self.goalMs = goalMs
    self.milestones = milestones
    self.endOnExpiry = endOnExpiry
    self.overtime = overtime
    self.timestamp = timestamp
    self.liveActivity = liveActivity
  }
}

/// How to end an activity.
public struct ActivityEnding: Sendable, Hashable {
  /// Final content, as a merge patch.
  public var content: [String: JSONValue]
  public var dismissal: DismissalPolicy
  public var timestamp: Optional<Instant>

  @inlinable
  public init(
    content: [String: JSONValue] = Dictionary(), dismissal: DismissalPolicy = .default,
    timestamp: Instant? = nil
  ) {
    self.content = content
    self.dismissal = dismissal
    self.timestamp = timestamp
  }
}
