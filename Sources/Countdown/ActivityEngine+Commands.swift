// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CPrefetch

extension ActivityEngine {
  /// Starts an activity at `t` and returns its id.
  ///
  /// Emits `started`, then whatever is due at once (a countdown whose end has passed expires
  /// at `t`; a past `staleDate` makes it stale at `t`). Milestones already passed do not fire.
  /// - Complexity: O(log n).
  @discardableResult
  public mutating func start(_ r: ActivityRequest, at t: Instant) throws(CountdownError) -> String {
    // The given id's line of the index, and where the wheel entry will go: both misses begin
    // now and overlap the checks and the content's encoding below.
    let given = r.id.map { (id: $0, hash: IDIndex.hash($0)) }
    if let given { slotIndex.prefetch(given.hash) }
    if let phase = r.kind == .countdown ? r.endDate : r.startDate ?? t {
      wheel.prefetchInsert(phase: phase.milliseconds)
    }
    // Check the request before anything moves.
    if let id = r.id { try Self.validateID(id) }
    // Checked as the wire would check it, then encoded.
    try r.content.check()
    let content = try r.content.storedChecked()
    switch r.kind {
    case .countdown:
      guard let end = r.endDate else { throw .payload("a countdown needs endDate") }
      _ = try end.validated("endDate")
      if r.goalMs != nil { throw .payload("goalMs applies to elapsed activities, not countdowns") }
    case .elapsed:
      if r.endDate != nil {
        throw .payload("endDate applies to countdowns, not elapsed activities")
      }
      if r.endOnExpiry != nil {
        throw .payload("endOnExpiry applies to countdowns, not elapsed activities")
      }
      if let g = r.goalMs { _ = try validatedDuration("goalMs", g) }
    }
    if let s = r.startDate { _ = try s.validated("startDate") }
    if let s = r.staleDate { _ = try s.validated("staleDate") }
    if let ts = r.timestamp { _ = try ts.validated("timestamp") }
    if let g = r.group { _ = try ActivityGroup.validated(g) }
    if case .after(let d)? = r.endOnExpiry { _ = try d.validated("endOnExpiry.after") }
    // Both checks are calls worth skipping for the many starts with neither.
    if r.overtime { try Self.checkOvertime(r.overtime, kind: r.kind, endOnExpiry: r.endOnExpiry) }
    if !r.milestones.isEmpty { try Self.validateMilestones(r.milestones, overtime: r.overtime) }
    // The contents the milestones' patches make, each checked to fit (none without milestones).
    let phases =
      r.milestones.isEmpty
      ? [] : try Self.milestoneContents(r.milestones, kind: r.kind, over: content, given: true)
    if r.liveActivity != nil { try Self.checkPushSize(of: r, phases: phases) }

    try moveClock(to: t)
    guard options.enabled else {
      throw CountdownError(.disabled, "the engine is disabled; no activity can start")
    }
    var id: String
    var h: UInt32
    if let given {
      id = given.id
      h = given.hash
      if slotIndex.find(id, hash: h, in: slots) != nil {
        throw CountdownError(
          .duplicateID, "an activity with id \(JSONValue.string(id)) already exists")
      }
    } else {
      id = ""
      h = 0
    }
    if let limit = options.maxActivities, slotIndex.count >= limit {
      throw CountdownError(
        .limitReached, "\(slotIndex.count) activities exist; maxActivities is \(limit)")
    }
    if r.id == nil {
      repeat {
        id = ids.uuid()
        h = IDIndex.hash(id)
      } while slotIndex.find(id, hash: h, in: slots) != nil
    }

    let now = t.milliseconds
    let slot = allocateSlot()
    let s = Int(slot)
    slots[s].seq = nextSeq
    nextSeq += 1
    slots[s].kind = r.kind
    slots[s].phase = .active
    slots[s].isStale = false
    slots[s].isExpired = false
    slots[s].anchor =
      r.kind == .countdown ? r.endDate!.milliseconds : (r.startDate ?? t).milliseconds
    slots[s].id = id
    cold[s].reset(
      content: content,
      countdownStart: r.kind == .countdown ? r.startDate?.milliseconds : nil,
      goalMs: r.goalMs, staleDate: r.staleDate?.milliseconds,
      milestones: Self.firingOrder(r.milestones, r.kind), endOnExpiry: r.endOnExpiry,
      overtime: r.overtime, startedAt: now, lastTimestamp: r.timestamp?.milliseconds,
      liveActivity: r.liveActivity, group: r.group)
    slotIndex.insert(slot, hash: h)
    // Only `started` carries the group: set for it alone, so that no other event (and no
    // tick) writes the field.
    if r.group != nil { scratchEvent.group = r.group }
    emit(.started, slot, at: now)
    if r.group != nil { scratchEvent.group = nil }
    refresh(slot, skippingPassedMilestones: true)
    runDue(upTo: now)
    return id
  }

  /// Applies `u` to the activity `id` at `t` and emits `updated`.
  ///
  /// Content is merge-patched; `endDate`, `startDate`, `staleDate`, `goalMs`, `milestones` and
  /// `endOnExpiry` are replaced or removed. A countdown whose end moves past `t` after it
  /// expired runs again. On a paused activity, a new `endDate` or `startDate` re-anchors the
  /// pause at `t`: the frozen value becomes the one the new dates give at `t`.
  /// Milestones whose instant the update puts at or before `t` are passed without firing.
  /// - Complexity: O(log n) plus the content's size.
  public mutating func update(
    _ id: String, _ u: ActivityUpdate, at t: Instant
  ) throws(CountdownError) {
    // The id's line of the index, and where a new end date puts the wheel entry: both
    // misses begin now and overlap the checks below.
    let h = IDIndex.hash(id)
    slotIndex.prefetch(h)
    if let e = u.endDate { wheel.prefetchInsert(phase: e.milliseconds) }
    if let e = u.endDate { _ = try e.validated("endDate") }
    if case .set(let d) = u.startDate { _ = try d.validated("startDate") }
    if case .set(let d) = u.staleDate { _ = try d.validated("staleDate") }
    if case .set(let g) = u.goalMs { _ = try validatedDuration("goalMs", g) }
    if case .set(.after(let d)) = u.endOnExpiry { _ = try d.validated("endOnExpiry.after") }

    try moveClock(to: t)
    let slot = try lookupRunning(id, hash: h, for: "update", prefetching: true)
    prefetchState(of: slot)
    let s = Int(slot)
    let kind = slots[s].kind
    switch kind {
    case .countdown:
      if case .set = u.goalMs {
        throw .payload("goalMs applies to elapsed activities, not countdowns")
      }
    case .elapsed:
      if u.endDate != nil {
        throw .payload("endDate applies to countdowns, not elapsed activities")
      }
      if case .remove = u.startDate {
        throw .payload("an elapsed activity's startDate cannot be removed")
      }
      if case .set = u.endOnExpiry {
        throw .payload("endOnExpiry applies to countdowns, not elapsed activities")
      }
    }
    try checkTimestamp(u.timestamp, slot: slot)
    // Overtime, the end policy and the milestones are checked as they stand after the update,
    // when it touches one of them (an update of dates or content alone reads none of it).
    let touchesEnd: Bool
    switch (u.endOnExpiry, u.milestones) {
    case (.keep, .keep): touchesEnd = u.overtime != nil
    default: touchesEnd = true
    }
    if touchesEnd {
      let overtime = u.overtime ?? cold[s].overtime
      try Self.checkOvertime(
        overtime, kind: kind, endOnExpiry: u.endOnExpiry.applied(to: cold[s].endOnExpiry))
      switch u.milestones {
      case .set(let m): try Self.validateMilestones(m, overtime: overtime)
      case .keep where !overtime && cold[s].overtime:
        try Self.validateMilestones(cold[s].milestones, overtime: false)
      default: break
      }
    }
    let content = try patchedContent(slot, u.content)
    // A Live Activity's payloads are checked against the state after the update.
    var live = cold[s].liveActivity
    if let patch = u.liveActivity { live = try LiveActivity.patched(live, with: patch) }
    if let channel = u.channelID {
      guard live?.channel != nil else {
        throw .payload("activity \(JSONValue.string(id)) has no broadcast channel to set")
      }
      live?.channelId = channel
    }
    // The milestones' content patches still to apply, over the content after the update: new
    // milestones all, else (when the content changes, or for the pushes' size) those not yet
    // passed.
    var phases: [ActivityContent] = []
    if case .set(let m) = u.milestones {
      phases = try Self.milestoneContents(
        m, kind: kind, over: content ?? cold[s].content, given: true)
    } else if case .keep = u.milestones, content != nil || live != nil,
      cold[s].hasMilestonesAhead
    {
      let milestones = cold[s].milestones
      let next = cold[s].nextMilestone
      if next < milestones.count {
        phases = try Self.milestoneContents(
          Array(milestones[next...]), kind: kind, over: content ?? cold[s].content, given: false)
      }
    }
    if let live {
      try checkPushSize(after: u, slot: s, kind: kind, content: content, phases: phases, live)
    }

    // Everything is checked: apply.
    let now = t.milliseconds
    let movesDates: Bool
    switch u.startDate {
    case .keep: movesDates = u.endDate != nil
    default: movesDates = u.endDate != nil || kind == .elapsed
    }
    if slots[s].phase == .paused, movesDates { cold[s].frozenOverride = now }
    if let e = u.endDate {
      slots[s].anchor = e.milliseconds
      slots[s].isExpired = false
    }
    switch (u.startDate, kind) {
    case (.set(let d), .countdown): cold[s].countdownStart = d.milliseconds
    case (.remove, .countdown): cold[s].countdownStart = nil
    case (.set(let d), .elapsed): slots[s].anchor = d.milliseconds + cold[s].pausedTotal
    default: break
    }
    switch u.staleDate {
    case .keep: break
    case .set(let d):
      cold[s].staleDate = d.milliseconds
      if d.milliseconds > now { slots[s].isStale = false }
    case .remove:
      cold[s].staleDate = nil
      slots[s].isStale = false
    }
    switch u.goalMs {
    case .keep: break
    case .set(let g): cold[s].goalMs = g
    case .remove: cold[s].goalMs = nil
    }
    switch u.milestones {
    case .keep: break
    case .set(let m):
      cold[s].milestones = Self.firingOrder(m, kind)
      cold[s].nextMilestone = 0
    case .remove:
      cold[s].milestones = []
      cold[s].nextMilestone = 0
    }
    switch u.endOnExpiry {
    case .keep: break
    case .set(let p): cold[s].endOnExpiry = p
    case .remove: cold[s].endOnExpiry = nil
    }
    if let overtime = u.overtime, overtime != cold[s].overtime { cold[s].overtime = overtime }
    if let content { cold[s].content = content }
    if let ts = u.timestamp { cold[s].lastTimestamp = ts.milliseconds }
    if u.liveActivity != nil || u.channelID != nil { cold[s].liveActivity = live }
    emit(.updated, slot, at: now)
    refresh(slot, skippingPassedMilestones: true)
    runDue(upTo: now)
  }

  /// Freezes the displayed value at `t` and emits `paused`. Pausing a paused activity is an
  /// accepted no-op.
  /// - Complexity: O(log n).
  public mutating func pause(
    _ id: String, at t: Instant, timestamp: Instant? = nil
  ) throws(CountdownError) {
    try moveClock(to: t)
    let slot = try lookupRunning(id, for: "pause")
    try checkTimestamp(timestamp, slot: slot)
    let s = Int(slot)
    if let ts = timestamp { cold[s].lastTimestamp = ts.milliseconds }
    guard slots[s].phase == .active else { return }
    slots[s].phase = .paused
    cold[s].frozenOverride = t.milliseconds
    emit(.paused, slot, at: t.milliseconds)
    refresh(slot, skippingPassedMilestones: false)
    runDue(upTo: t.milliseconds)
  }

  /// Continues from the frozen value and emits `resumed`: a countdown's end and an elapsed
  /// timer's paused total move by the time spent paused. Resuming an active activity is an
  /// accepted no-op.
  /// - Complexity: O(log n).
  public mutating func resume(
    _ id: String, at t: Instant, timestamp: Instant? = nil
  ) throws(CountdownError) {
    try moveClock(to: t)
    let slot = try lookupRunning(id, for: "resume")
    try checkTimestamp(timestamp, slot: slot)
    let s = Int(slot)
    if let ts = timestamp { cold[s].lastTimestamp = ts.milliseconds }
    guard slots[s].phase == .paused else { return }
    let now = t.milliseconds
    let d = now - frozenAt(s)
    cold[s].pausedTotal += d
    // A countdown's end and an elapsed timer's origin move alike.
    slots[s].anchor += d
    slots[s].phase = .active
    emit(.resumed, slot, at: now)
    refresh(slot, skippingPassedMilestones: true)
    runDue(upTo: now)
  }

  /// Ends the activity at `t` (its value frozen then) and emits `ended` (reason `requested`);
  /// it is dismissed as `e.dismissal` says.
  /// - Complexity: O(log n) plus the content's size.
  public mutating func end(
    _ id: String, _ e: ActivityEnding = ActivityEnding(), at t: Instant
  ) throws(CountdownError) {
    _ = try ending(id, e, at: t, returningState: false)
  }

  /// ``end(_:_:at:)``, returning the activity as it stands once ended (before an immediate
  /// dismissal removes it): what an HTTP `end` answers with.
  package mutating func ending(
    _ id: String, _ e: ActivityEnding, at t: Instant
  ) throws(CountdownError) -> ActivityState {
    try ending(id, e, at: t, returningState: true)!
  }

  /// Inlined into both callers: out of line, `end` had it build an `ActivityState?` it then
  /// dropped, and writing the nil (176 bytes of zeros) filled the store buffer that an end's
  /// writes already crowd (9% of an end).
  @inline(__always)
  private mutating func ending(
    _ id: String, _ e: ActivityEnding, at t: Instant, returningState: Bool
  ) throws(CountdownError) -> ActivityState? {
    // Hashed once: the immediate dismissal below removes the id from the index with it.
    let h = IDIndex.hash(id)
    slotIndex.prefetch(h)
    if case .after(let d) = e.dismissal { _ = try d.validated("dismissal.after") }
    try moveClock(to: t)
    let slot = try lookupRunning(id, hash: h, for: "end", prefetching: true)
    prefetchState(of: slot)
    try checkTimestamp(e.timestamp, slot: slot)
    let content = try patchedContent(slot, e.content)
    let s = Int(slot)
    if let content, let live = cold[s].liveActivity {
      try Self.checkPushSize(
        kind: slots[s].kind, contents: [content.content], milestones: cold[s].milestones,
        staleDate: cold[s].staleDate, overtime: cold[s].overtime, live)
    }
    if let content { cold[s].content = content }
    if let ts = e.timestamp { cold[s].lastTimestamp = ts.milliseconds }
    let now = t.milliseconds
    // Everything due at or before `t` ran before the command, and no tick falls at `t`, so a
    // dismissal due at once is the only event left at `t`: it follows `ended` directly,
    // without a trip through the heap.
    let immediate = e.dismissal.dismissal(endedAt: t) <= t
    finish(slot, reason: .requested, dismissal: e.dismissal, at: now, schedules: !immediate)
    let ended = returningState ? snapshot(slot) : nil
    if immediate {
      emitAgain(.dismissed, slot)
      freeSlot(slot, hash: h)
    }
    runDue(upTo: now)
    return ended
  }

  /// Turns the engine on or off at `t`. Turning it off ends every activity with reason
  /// `disabled` and dismisses every activity at once, in start order.
  /// - Complexity: O(n log n) when disabling.
  public mutating func setEnabled(_ enabled: Bool, at t: Instant) throws(CountdownError) {
    try moveClock(to: t)
    let was = options.enabled
    options.enabled = enabled
    guard was, !enabled else { return }
    let now = t.milliseconds
    let live = liveSlots().sorted { slots[Int($0)].seq < slots[Int($1)].seq }
    for slot in live {
      if slots[Int(slot)].phase != .ended {
        finish(slot, reason: .disabled, dismissal: .immediate, at: now, schedules: false)
      }
      emit(.dismissed, slot, at: now)
      freeSlot(slot)
    }
  }

  /// Sets the most activities that may exist at once (nil: no limit).
  public mutating func setMaxActivities(_ limit: Int?) {
    options.maxActivities = limit
  }

  /// Sets the maximum active duration at `t` (nil: off) and reschedules every running
  /// activity; one already past it ends at `t`.
  /// - Complexity: O(n log n).
  public mutating func setMaxActiveDuration(_ ms: Int64?, at t: Instant) throws(CountdownError) {
    if let ms { _ = try validatedDuration("maxActiveDurationMs", ms) }
    try moveClock(to: t)
    options.maxActiveDurationMs = ms
    for slot in liveSlots() where slots[Int(slot)].phase != .ended {
      reschedule(slot)
    }
    runDue(upTo: t.milliseconds)
  }

  /// Starts loading what a command on `slot` writes after its checks: its cold record and
  /// its wheel entry, lines not in cache when commands name activities in no particular order.
  @inline(__always)
  func prefetchState(of slot: UInt32) {
    cold.withUnsafeBufferPointer { cd_prefetch_write($0.baseAddress! + Int(slot)) }
    wheel.prefetchEntry(of: slot)
  }

  /// The content after a merge patch, encoded and checked, or nil when the patch is empty.
  /// Inlined: called out of line from a mutating command, a non-mutating method is handed a
  /// copy of the whole engine (312 bytes copied by `memcpy` on every update, about 64
  /// instructions and a branch mispredicted in two, that `7f31bbe` did not pay).
  @inline(__always)
  func patchedContent(
    _ slot: UInt32, _ patch: [String: JSONValue]
  ) throws(CountdownError) -> StoredContent? {
    guard !patch.isEmpty else { return nil }
    return try ActivityContent.patching(cold[Int(slot)].content, with: patch)
  }

  func content(ofSlot slot: UInt32) -> ActivityContent {
    cold[Int(slot)].content.content
  }

  /// ``checkPushSize(kind:contents:milestones:staleDate:overtime:_:)`` for a start with a Live
  /// Activity and the contents its milestones' patches make. Out of line: inlined, its array of
  /// contents cost every start a copy of the request's content, Live Activity or not.
  @inline(never)
  static func checkPushSize(of r: ActivityRequest, phases: [ActivityContent])
    throws(CountdownError)
  {
    guard let live = r.liveActivity else { return }
    try checkPushSize(
      kind: r.kind, contents: [r.content] + phases, milestones: r.milestones,
      staleDate: r.staleDate?.milliseconds, overtime: r.overtime, live)
  }

  /// ``checkPushSize(kind:contents:milestones:staleDate:overtime:_:)`` for the activity in
  /// slot `s` as update `u` leaves it (`content`: the content after it, nil when unchanged).
  /// Out of line, as for a start: an update without a Live Activity pays nothing for it.
  @inline(never)
  func checkPushSize(
    after u: ActivityUpdate, slot s: Int, kind: ActivityKind, content: StoredContent?,
    phases: [ActivityContent], _ live: LiveActivity
  ) throws(CountdownError) {
    let stale = u.staleDate.applied(to: cold[s].staleDate.map(Instant.init(milliseconds:)))
    try Self.checkPushSize(
      kind: kind, contents: [(content ?? cold[s].content).content] + phases,
      milestones: u.milestones.applied(to: cold[s].milestones) ?? [],
      staleDate: stale?.milliseconds, overtime: u.overtime ?? cold[s].overtime, live)
  }

  /// Refuses a command after which some Live Activity push of the activity would be over
  /// APNs's 4096 bytes (docs/pushes.md): refused when the command is made, not when the push
  /// is sent.
  /// `contents`: every content the activity can show until the next command (now's, then each
  /// one a milestone's patch makes).
  static func checkPushSize(
    kind: ActivityKind, contents: [ActivityContent], milestones: [Milestone],
    staleDate: Int64?, overtime: Bool, _ live: LiveActivity
  ) throws(CountdownError) {
    var size = 0
    for content in contents {
      guard case .object(let members) = content.json else { continue }
      size = max(
        size,
        LiveActivityPush.largestPayload(
          kind: kind, content: members, milestones: milestones, staleDate: staleDate,
          overtime: overtime, live))
    }
    guard size > LiveActivityPush.maximumPayloadSize else { return }
    throw CountdownError(
      .attributesTooLarge,
      "a Live Activity push of this activity could take \(size) bytes and APNs takes at most \(LiveActivityPush.maximumPayloadSize); shorten the content, the milestone names or liveActivity.attributes"
    )
  }
}
