// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Something that happened to an activity, at the exact instant it happened.
public struct ActivityEvent: Sendable, Hashable {
  /// Event kinds (docs/events.md). `CaseIterable`, so that tables keyed by kind (the event streams'
  /// frame names) are derived from the cases, never written out by hand.
  public enum Kind: String, Sendable, Hashable, CaseIterable {
    case started, updated, tick, milestone, stale, expired, paused, resumed, ended, dismissed
  }

  /// The instant the displayed value changed or the deadline passed (not when delivered).
  public var at: Instant
  public var kind: Kind
  /// The activity's id.
  public var id: String
  /// The activity's handle (valid until it is dismissed).
  public var handle: ActivityHandle
  /// Whether the activity counts down or up.
  public var activityKind: ActivityKind
  /// The whole seconds displayed after the event (for `tick`, `paused`, `ended`: the new value;
  /// negative for a countdown in overtime).
  public var value: Int64
  /// For `ended`.
  public var reason: EndReason?
  /// For `milestone`.
  public var milestone: String?
  /// For a `milestone` that changed the content: the content after its patch, as canonical
  /// JSON (compact, keys sorted). Nil for every other event.
  public var content: String?
  /// For `started`: the activity's group (``ActivityRequest/group``), if it has one. Nil for
  /// every other event: a subscriber that filters by group learns an activity's group from its
  /// `started` event or its snapshot.
  public var group: String?

  public init(
    at: Instant, kind: Kind, id: String, handle: ActivityHandle, activityKind: ActivityKind,
    value: Int64, reason: EndReason? = nil, milestone: String? = nil, content: String? = nil,
    group: String? = nil
  ) {
    self.at = at
    self.kind = kind
    self.id = id
    self.handle = handle
    self.activityKind = activityKind
    self.value = value
    self.reason = reason
    self.milestone = milestone
    self.content = content
    self.group = group
  }
}

/// A generation-checked reference to an activity's storage slot. A handle outlives nothing:
/// once the activity is dismissed its slot's generation moves on and the handle stops matching.
public struct ActivityHandle: Hashable, Sendable {
  public var slot: UInt32
  public var generation: UInt32

  public init(slot: UInt32, generation: UInt32) {
    self.slot = slot
    self.generation = generation
  }

  /// A handle no activity has: what an event carries when its activity is not in the engine
  /// that hands it on (a cluster node's shard taken over, whose step dismissed it).
  public static let gone = ActivityHandle(slot: .max, generation: .max)
}

/// An activity as seen at one instant.
public struct ActivityState: Sendable, Hashable {
  public var id: String
  public var kind: ActivityKind
  public var phase: ActivityPhase
  /// Whole seconds displayed (ceil for countdowns, floor for elapsed timers); negative for a
  /// countdown in overtime (−n from n whole seconds past its end).
  public var value: Int64
  /// The exact displayed quantity in milliseconds (remaining or elapsed; negative past the end
  /// of a countdown in overtime).
  public var milliseconds: Int64
  /// 0…1, or nil when the activity has no start (countdown) or goal (elapsed).
  public var progress: Double?
  public var stale: Bool
  /// A countdown that has reached zero.
  public var expired: Bool
  /// A countdown's current end (moved later by pauses).
  public var endDate: Instant?
  /// When it ended, and why.
  public var endedAt: Instant?
  public var endReason: EndReason?
  /// A countdown's `startDate` (for progress), or an elapsed timer's origin moved by pauses,
  /// so that elapsed = now − startDate while it runs.
  public var startDate: Instant?
  /// When it was paused, while it is.
  public var pausedAt: Instant?
  /// An elapsed timer's goal in milliseconds (for its progress), if it has one.
  public var goalMs: Int64? = nil
  /// The name of the last milestone passed, if any.
  public var lastMilestone: String?
  /// The next milestone and when it passes at the current pace (a paused activity's as if it
  /// resumed now); nil when none is left or the activity has ended.
  public var nextMilestone: NextMilestone?
  /// The content as canonical JSON (compact, keys sorted).
  public var contentJSON: String
  /// The Live Activity it pushes to (docs/pushes.md), if any.
  public var liveActivity: LiveActivity? = nil
  /// A countdown that runs on past its end (``ActivityRequest/overtime``).
  public var overtime: Bool = false
  /// Its group (``ActivityRequest/group``), if any.
  public var group: String? = nil

  /// Whether it shows time past its end now: an expired countdown with overtime.
  public var isInOvertime: Bool { overtime && expired }

  /// A milestone still to come.
  public struct NextMilestone: Sendable, Hashable {
    public var name: String
    public var at: Instant
  }
}
