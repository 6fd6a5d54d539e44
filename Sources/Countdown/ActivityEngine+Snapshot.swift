// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// One activity as the engine keeps it, in the engine's own terms: what a store writes as a
/// row and ``ActivityEngine/init(restoring:onEvent:)`` rebuilds a slot from, without events.
///
/// Instants are milliseconds since 1970. `anchor` is a countdown's end date, or an elapsed
/// timer's origin (its start date; `pausedTotal` is added to it as pauses accumulate).
public struct StoredActivity: Sendable, Hashable {
  public var id: String
  public var kind: ActivityKind
  public var phase: ActivityPhase
  /// Start order, unique, below ``EngineSnapshot/nextOrder``: ties between activities with
  /// events at the same instant are broken by it.
  public var order: UInt64
  public var stale: Bool
  public var expired: Bool
  public var anchor: Int64
  public var pausedTotal: Int64
  /// When the activity was paused or ended (its frozen value is read there).
  public var frozenAt: Int64
  /// The content's canonical JSON.
  public var content: String
  /// A countdown's start date, for progress.
  public var countdownStart: Int64?
  public var goalMs: Int64?
  public var staleDate: Int64?
  /// The milestones in firing order, and how many of them have fired or were passed.
  public var milestones: [Milestone]
  public var nextMilestone: Int
  public var endOnExpiry: DismissalPolicy?
  /// A countdown that runs on past its end.
  public var overtime: Bool
  public var startedAt: Int64
  /// For an ended activity: when it ended, why, and when it is dismissed.
  public var endedAt: Int64
  public var endReason: EndReason
  public var dismissAt: Int64
  public var lastTimestamp: Int64?
  /// The Live Activity it pushes to (docs/pushes.md), if any.
  public var liveActivity: LiveActivity?
  /// Its group (``ActivityRequest/group``), if any.
  public var group: String?

  /// A countdown's current end (moved later by pauses), as an activity object shows it.
  public var currentEndDate: Int64? { kind == .countdown ? anchor : nil }
  /// An elapsed timer's origin moved by pauses (elapsed = now − it while it runs), as an
  /// activity object shows it.
  public var elapsedOrigin: Int64? { kind == .elapsed ? anchor + pausedTotal : nil }
  /// When it was paused, while it is.
  public var pausedAt: Int64? { phase == .paused ? frozenAt : nil }
  /// The name of the last milestone passed.
  public var lastMilestone: String? {
    nextMilestone > 0 && nextMilestone <= milestones.count
      ? milestones[nextMilestone - 1].name : nil
  }

  public init(
    id: String, kind: ActivityKind, phase: ActivityPhase, order: UInt64, stale: Bool,
    expired: Bool, anchor: Int64, pausedTotal: Int64, frozenAt: Int64, content: String,
    countdownStart: Int64?, goalMs: Int64?, staleDate: Int64?, milestones: [Milestone],
    nextMilestone: Int, endOnExpiry: DismissalPolicy?, startedAt: Int64, endedAt: Int64,
    endReason: EndReason, dismissAt: Int64, lastTimestamp: Int64?,
    liveActivity: LiveActivity? = nil, overtime: Bool = false, group: String? = nil
  ) {
    self.id = id
    self.kind = kind
    self.phase = phase
    self.order = order
    self.stale = stale
    self.expired = expired
    self.anchor = anchor
    self.pausedTotal = pausedTotal
    self.frozenAt = frozenAt
    self.content = content
    self.countdownStart = countdownStart
    self.goalMs = goalMs
    self.staleDate = staleDate
    self.milestones = milestones
    self.nextMilestone = nextMilestone
    self.endOnExpiry = endOnExpiry
    self.overtime = overtime
    self.startedAt = startedAt
    self.endedAt = endedAt
    self.endReason = endReason
    self.dismissAt = dismissAt
    self.lastTimestamp = lastTimestamp
    self.liveActivity = liveActivity
    self.group = group
  }
}

/// Everything an engine holds, at one instant: enough to rebuild an engine that goes on to
/// give exactly the events this one would have given.
public struct EngineSnapshot: Sendable, Hashable {
  public var now: Instant
  public var options: EngineOptions
  /// The start order the next activity gets.
  public var nextOrder: UInt64
  /// The state of the generator of made ids, so that ids made after a restore are the ones
  /// the engine would have made.
  public var idGeneratorState: UInt64
  /// In start order.
  public var activities: [StoredActivity]

  public init(
    now: Instant, options: EngineOptions, nextOrder: UInt64, idGeneratorState: UInt64,
    activities: [StoredActivity]
  ) {
    self.now = now
    self.options = options
    self.nextOrder = nextOrder
    self.idGeneratorState = idGeneratorState
    self.activities = activities
  }
}

extension ActivityEngine {
  /// The stored form of the activity `id`, or nil when there is none.
  public func stored(_ id: String) -> StoredActivity? {
    slotIndex.find(id, in: slots).map { stored(slot: Int($0)) }
  }

  /// The engine's own state at ``now`` with the stored form of those of `ids` that exist
  /// (in the order given, each once): what changed in a wake, for a store. An id left out of
  /// the result has no activity now (it was dismissed, or never started).
  public func snapshot(of ids: some Sequence<String>) -> EngineSnapshot {
    var rows: [StoredActivity] = []
    for id in ids {
      if let slot = slotIndex.find(id, in: slots) { rows.append(stored(slot: Int(slot))) }
    }
    return EngineSnapshot(
      now: now, options: options, nextOrder: nextSeq, idGeneratorState: self.ids.state,
      activities: rows)
  }

  /// Every activity and the engine's own state, at ``now``.
  /// - Complexity: O(n log n).
  public func snapshot() -> EngineSnapshot {
    var live: [Int] = []
    live.reserveCapacity(count)
    for s in slots.indices where slots[s].phase != .free { live.append(s) }
    live.sort { slots[$0].seq < slots[$1].seq }
    return EngineSnapshot(
      now: now, options: options, nextOrder: nextSeq, idGeneratorState: ids.state,
      activities: live.map { stored(slot: $0) })
  }

  func stored(slot s: Int) -> StoredActivity {
    let c = cold[s]
    let phase = slots[s].phase.activityPhase
    return StoredActivity(
      id: slots[s].id, kind: slots[s].kind, phase: phase, order: slots[s].seq,
      stale: slots[s].isStale,
      expired: slots[s].isExpired,
      // The slot keeps an elapsed timer's origin; a row keeps its start and the time paused.
      anchor: slots[s].kind == .elapsed ? slots[s].anchor - c.pausedTotal : slots[s].anchor,
      pausedTotal: c.pausedTotal, frozenAt: frozenAt(s),
      content: c.content.canonical, countdownStart: c.countdownStart, goalMs: c.goalMs,
      staleDate: c.staleDate, milestones: c.milestones, nextMilestone: c.nextMilestone,
      endOnExpiry: c.endOnExpiry, startedAt: c.startedAt, endedAt: c.endedAt,
      endReason: c.endReason, dismissAt: c.dismissAt, lastTimestamp: c.lastTimestamp,
      liveActivity: c.liveActivity, overtime: c.overtime, group: c.group)
  }

  /// Rebuilds an engine from `snapshot` without emitting any event: the slots, their ticks and
  /// their pending deadlines (milestones not yet fired, staleness, expiry, maximum duration,
  /// dismissal) are as they were. Moving the clock on from `snapshot.now` then gives the
  /// events the original engine would have given.
  ///
  /// Every row is checked first; a bad one (from a damaged store) is `invalidPayload` naming
  /// the activity and the field, and no engine is made.
  /// - Complexity: O(n log n).
  public init(
    restoring snapshot: EngineSnapshot, onEvent: @escaping (ActivityEvent) -> Void = { _ in }
  ) throws(CountdownError) {
    _ = try snapshot.now.validated("now")
    for a in snapshot.activities { try Self.check(a, nextOrder: snapshot.nextOrder) }
    // In start order (a store gives rows in its own order): sort positions, not rows.
    let rows = snapshot.activities
    var byOrder = Array(rows.indices)
    if !zip(rows, rows.dropFirst()).allSatisfy({ $0.order < $1.order }) {
      byOrder.sort { rows[$0].order < rows[$1].order }
    }
    for (p, q) in zip(byOrder, byOrder.dropFirst()) where rows[p].order == rows[q].order {
      throw .payload(
        "activity \(JSONValue.string(rows[q].id)): order \(rows[q].order) is not unique")
    }
    var options = snapshot.options
    options.reservedActivities = max(options.reservedActivities, rows.count)
    self.init(now: snapshot.now, options: options, onEvent: onEvent)
    self.options.reservedActivities = snapshot.options.reservedActivities
    ids = SplitMix64(state: snapshot.idGeneratorState)
    nextSeq = snapshot.nextOrder
    for k in byOrder {
      let a = rows[k]
      let h = IDIndex.hash(a.id)
      if slotIndex.find(a.id, hash: h, in: slots) != nil {
        throw .payload("activity \(JSONValue.string(a.id)) is stored twice")
      }
      let slot = allocateSlot()
      let s = Int(slot)
      slots[s].seq = a.order
      slots[s].kind = a.kind
      slots[s].phase = SlotPhase(a.phase)
      slots[s].isStale = a.stale
      slots[s].isExpired = a.expired
      slots[s].anchor = a.kind == .elapsed ? a.anchor + a.pausedTotal : a.anchor
      slots[s].id = a.id
      // Written in place, as a start writes it (ColdState.reset).
      cold[s].reset(
        content: StoredContent(canonical: a.content), countdownStart: a.countdownStart,
        goalMs: a.goalMs, staleDate: a.staleDate, milestones: a.milestones,
        endOnExpiry: a.endOnExpiry, overtime: a.overtime, startedAt: a.startedAt,
        lastTimestamp: a.lastTimestamp, liveActivity: a.liveActivity, group: a.group)
      cold[s].nextMilestone = a.nextMilestone
      cold[s].endedAt = a.endedAt
      cold[s].endReason = a.endReason
      cold[s].dismissAt = a.dismissAt
      cold[s].pausedTotal = a.pausedTotal
      // The frozen instant takes the side box only where the phase does not imply it (the
      // phase, the start and the end are written above).
      if a.phase == .paused || a.frozenAt != impliedFrozenAt(s) {
        cold[s].frozenOverride = a.frozenAt
      }
      slotIndex.insert(slot, hash: h)
      refresh(slot, skippingPassedMilestones: false)
    }
  }

  /// The checks a stored row must pass to be restored.
  static func check(_ a: StoredActivity, nextOrder: UInt64) throws(CountdownError) {
    // Messages are built only for a bad row: this runs for every row of a restore.
    func field(_ f: String) -> String { "activity \(JSONValue.string(a.id).canonicalText): \(f)" }
    func instant(_ f: String, _ v: Int64?) throws(CountdownError) {
      if let v { _ = try Instant(milliseconds: v).validated(field(f)) }
    }
    do throws(CountdownError) {
      try validateID(a.id)
    } catch {
      throw .payload("stored \(error.message)")
    }
    guard a.order < nextOrder else {
      throw .payload(field("order \(a.order) is not below nextOrder \(nextOrder)"))
    }
    try instant("startedAt", a.startedAt)
    try instant("frozenAt", a.frozenAt)
    try instant("anchor", a.anchor)
    if a.phase == .ended {
      try instant("endedAt", a.endedAt)
      try instant("dismissAt", a.dismissAt)
      guard a.dismissAt >= a.endedAt, a.dismissAt - a.endedAt <= Int64(Int32.max) else {
        throw .payload(field("dismissAt \(a.dismissAt) is not within 24 days after endedAt"))
      }
    }
    try instant("staleDate", a.staleDate)
    try instant("countdownStart", a.countdownStart)
    try instant("lastTimestamp", a.lastTimestamp)
    guard a.pausedTotal >= 0, a.pausedTotal <= Instant.wireMaximum.milliseconds else {
      throw .payload(field("pausedTotal \(a.pausedTotal) is out of range"))
    }
    if let g = a.goalMs { _ = try validatedDuration(field("goalMs"), g) }
    if let g = a.group { _ = try ActivityGroup.validated(g, field: field("group")) }
    guard (0...a.milestones.count).contains(a.nextMilestone) else {
      throw .payload(field("nextMilestone \(a.nextMilestone) is not 0 to \(a.milestones.count)"))
    }
    do throws(CountdownError) {
      try checkOvertime(a.overtime, kind: a.kind, endOnExpiry: a.endOnExpiry)
      try validateMilestones(a.milestones, overtime: a.overtime)
      // The patches still to apply must apply (over the stored content, in firing order).
      _ = try milestoneContents(
        Array(a.milestones[a.nextMilestone...]), kind: a.kind,
        over: StoredContent(canonical: a.content), given: false)
    } catch {
      throw .payload(field(error.message))
    }
    // Read as members (no dictionary per row): a restore checks every row's content.
    var text = a.content
    let parsed = text.withUTF8 { bytes in
      Result { () throws(CountdownError) in try JSONParser.parseTopLevel(bytes: bytes) }
    }
    let top: JSONTopLevel
    switch parsed {
    case .success(let t): top = t
    case .failure(let error): throw .payload(field("content is not JSON: \(error.message)"))
    }
    guard case .object(let o) = top else { throw .payload(field("content is not an object")) }
    _ = try ActivityContent { o[$0] }
  }
}
