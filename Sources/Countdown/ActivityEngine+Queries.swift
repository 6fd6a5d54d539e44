// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

extension ActivityEngine {
  /// The activity `id` as seen at `t` (events due by then are delivered first).
  /// - Throws: `notFound` when no activity has that id (or it was dismissed).
  /// - Complexity: O(1) plus the events due.
  public mutating func state(of id: String, at t: Instant) throws(CountdownError) -> ActivityState {
    try moveClock(to: t)
    return snapshot(try lookup(id))
  }

  /// The activity behind `handle` as seen at the engine's clock, or nil once it is dismissed.
  public func state(of handle: ActivityHandle) -> ActivityState? {
    guard id(of: handle) != nil else { return nil }
    return snapshot(handle.slot)
  }

  /// The value the activity `id` shows at the engine's clock (seconds, as its ticks carry
  /// it), or nil when no activity has that id. For a loop rebuilding its engine: a catch-up
  /// tick of the new engine that carries this value repeats what subscribers saw.
  package func shownValue(of id: String) -> Int64? {
    slotIndex.find(id, in: slots).map { displayedSeconds(Int($0), now.milliseconds) }
  }

  /// The group of the activity `id` (nil when it has none).
  /// - Throws: `notFound` when no activity has that id.
  public func group(of id: String) throws(CountdownError) -> String? {
    cold[Int(try lookup(id))].group
  }

  /// The content of the activity `id`.
  public func content(of id: String) throws(CountdownError) -> ActivityContent {
    content(ofSlot: try lookup(id))
  }

  func snapshot(_ slot: UInt32) -> ActivityState {
    let s = Int(slot)
    let now = self.now.milliseconds
    let phase = slots[s].phase.activityPhase
    let ended = slots[s].phase == .ended
    let milestones = cold[s].milestones
    let next = cold[s].nextMilestone
    var upcoming: ActivityState.NextMilestone?
    if !ended, next < milestones.count {
      // A paused activity's milestone moves later by the time it stays paused.
      let shift = slots[s].phase == .paused ? now - frozenAt(s) : 0
      upcoming = .init(
        name: milestones[next].name, at: Instant(milliseconds: milestoneInstant(s, next) + shift))
    }
    let startDate: Int64? =
      slots[s].kind == .countdown ? cold[s].countdownStart : slots[s].anchor
    return ActivityState(
      id: slots[s].id, kind: slots[s].kind, phase: phase, value: displayedSeconds(s, now),
      milliseconds: exactMilliseconds(s, now), progress: progress(s, now), stale: slots[s].isStale,
      expired: slots[s].isExpired,
      endDate: slots[s].kind == .countdown ? Instant(milliseconds: slots[s].anchor) : nil,
      endedAt: ended ? Instant(milliseconds: cold[s].endedAt) : nil,
      endReason: ended ? cold[s].endReason : nil,
      startDate: startDate.map(Instant.init(milliseconds:)),
      pausedAt: slots[s].phase == .paused ? Instant(milliseconds: frozenAt(s)) : nil,
      goalMs: slots[s].kind == .elapsed ? cold[s].goalMs : nil,
      lastMilestone: next > 0 ? milestones[next - 1].name : nil, nextMilestone: upcoming,
      contentJSON: cold[s].content.canonical, liveActivity: cold[s].liveActivity,
      overtime: cold[s].overtime, group: cold[s].group)
  }

  /// Every activity not yet dismissed, as seen at the engine's clock, in start order.
  /// - Complexity: O(n log n).
  public func activities() -> [ActivityState] {
    liveSlots().sorted { slots[Int($0)].seq < slots[Int($1)].seq }.map(snapshot)
  }

  /// How many activities are in each phase (`active`, `paused`, `ended`), and how many of
  /// them are stale. For metrics: O(n) over the slots, no allocation.
  public func phaseCounts() -> (active: Int, paused: Int, ended: Int, stale: Int) {
    var counts = (active: 0, paused: 0, ended: 0, stale: 0)
    for s in slots.indices {
      switch slots[s].phase {
      case .free: continue
      case .active: counts.active += 1
      case .paused: counts.paused += 1
      case .ended: counts.ended += 1
      }
      if slots[s].isStale { counts.stale += 1 }
    }
    return counts
  }

  /// The `k` active countdowns that end soonest after `t` (not paused, not yet at zero), the
  /// earliest first; equal ends in start order.
  /// - Complexity: O(n log k).
  public mutating func soonestEnding(
    _ k: Int, at t: Instant
  ) throws(CountdownError) -> [ActivityState] {
    try moveClock(to: t)
    return soonestEnding(k)
  }

  /// The `k` active countdowns that end soonest after the engine's clock (of those whose
  /// group `admits` takes, with one).
  func soonestEnding(_ k: Int, in admits: ((String?) -> Bool)? = nil) -> [ActivityState] {
    guard k > 0 else { return [] }
    let now = self.now.milliseconds
    // A bounded max-heap of (end, seq, slot): the root is the worst kept candidate.
    var kept: [(end: Int64, seq: UInt64, slot: UInt32)] = []
    kept.reserveCapacity(min(k, count))
    func worse(
      _ a: (end: Int64, seq: UInt64, slot: UInt32), _ b: (end: Int64, seq: UInt64, slot: UInt32)
    ) -> Bool {
      a.end != b.end ? a.end > b.end : a.seq > b.seq
    }
    func siftDown(_ start: Int) {
      var i = start
      while true {
        var m = i
        for c in [2 * i + 1, 2 * i + 2] where c < kept.count && worse(kept[c], kept[m]) { m = c }
        if m == i { return }
        kept.swapAt(i, m)
        i = m
      }
    }
    for slot in liveSlots(in: admits) {
      let s = Int(slot)
      guard slots[s].kind == .countdown, slots[s].phase == .active, slots[s].anchor > now else {
        continue
      }
      let c = (end: slots[s].anchor, seq: slots[s].seq, slot: slot)
      if kept.count < k {
        kept.append(c)
        var i = kept.count - 1
        while i > 0, worse(kept[i], kept[(i - 1) / 2]) {
          kept.swapAt(i, (i - 1) / 2)
          i = (i - 1) / 2
        }
      } else if worse(kept[0], c) {
        kept[0] = c
        siftDown(0)
      }
    }
    return kept.sorted { worse($1, $0) }.map { snapshot($0.slot) }
  }

  /// The activities that ended within `window` and are not yet dismissed, by end instant then
  /// start order.
  /// - Complexity: O(n + m log m) for m results.
  public func ended(within window: ClosedRange<Instant>) -> [ActivityState] {
    ended(within: window, in: nil)
  }

  func ended(within window: ClosedRange<Instant>, in admits: ((String?) -> Bool)?)
    -> [ActivityState]
  {
    let lo = window.lowerBound.milliseconds
    let hi = window.upperBound.milliseconds
    return liveSlots(in: admits)
      .filter { slots[Int($0)].phase == .ended && (lo...hi).contains(cold[Int($0)].endedAt) }
      .sorted {
        let (a, b) = (Int($0), Int($1))
        return cold[a].endedAt != cold[b].endedAt
          ? cold[a].endedAt < cold[b].endedAt : slots[a].seq < slots[b].seq
      }
      .map { snapshot($0) }
  }
}

/// The engine's activities as they stood at one instant, to be read on another thread: what
/// ``ActivityEngine/activitiesView()`` gives.
///
/// Taking one costs O(1) on the engine's thread: it shares the engine's per-slot records (the
/// hot and the cold array), copied on write, and builds nothing. The states are built where
/// ``all()``, ``soonestEnding(_:in:)`` or ``ended(within:in:)`` is called, so a service can
/// answer a listing or a subscription's snapshot of a million activities on a network thread
/// while the engine goes on ticking. While a view is alive, the first change the engine makes to one of those
/// arrays copies it (O(n) once per array); drop the view once its states are built.
///
/// A view never changes: its states are those of the engine at ``now``, whatever the engine
/// has done since.
public struct ActivitiesView: @unchecked Sendable {
  // `@unchecked`: the engine copy inside is never mutated and its `onEvent` does nothing.
  // Its arrays are values shared copy-on-write with the live engine, which copies an array
  // (and a slot's side box) before changing it while this copy holds a reference; reading
  // them on another thread is what Swift's atomic reference counts make safe.
  private let engine: ActivityEngine

  /// The instant the view was taken at: the engine's clock then.
  public var now: Instant { engine.now }
  /// Activities not yet dismissed at ``now``.
  public let count: Int

  init(_ source: ActivityEngine) {
    var e = source
    e.onEvent = { _ in }
    // Only the per-slot records are read: the structures that ticks and commands rewrite
    // most are left out, so that the live engine never copies them for the view.
    e.wheel = PhaseWheel()
    e.heap = DeadlineHeap()
    e.slotIndex = IDIndex()
    e.freeSlots = []
    e.scratchEvent.id = ""
    engine = e
    count = source.count
  }

  /// Every activity, in start order (see ``ActivityEngine/activities()``).
  /// - Complexity: O(n log n).
  public func all() -> [ActivityState] { engine.activities() }

  /// The activities whose group `admits` takes (``ActivityRequest/group``; nil for one
  /// without), in start order.
  /// - Complexity: O(n + m log m) for m results.
  public func all(in admits: (String?) -> Bool) -> [ActivityState] {
    withoutActuallyEscaping(admits) { admits in
      engine.liveSlots(in: admits).sorted { engine.slots[Int($0)].seq < engine.slots[Int($1)].seq }
        .map(engine.snapshot)
    }
  }

  /// The `k` active countdowns that end soonest after ``now``, the earliest first; equal ends
  /// in start order (see ``ActivityEngine/soonestEnding(_:at:)``). With `admits`, of those
  /// whose group it takes.
  /// - Complexity: O(n log k).
  public func soonestEnding(_ k: Int, in admits: ((String?) -> Bool)? = nil) -> [ActivityState] {
    guard let admits else { return engine.soonestEnding(k) }
    return withoutActuallyEscaping(admits) { engine.soonestEnding(k, in: $0) }
  }

  /// The activities that ended within `window`, by end instant then start order (see
  /// ``ActivityEngine/ended(within:)``). With `admits`, of those whose group it takes.
  /// - Complexity: O(n + m log m) for m results.
  public func ended(
    within window: ClosedRange<Instant>, in admits: ((String?) -> Bool)? = nil
  ) -> [ActivityState] {
    guard let admits else { return engine.ended(within: window) }
    return withoutActuallyEscaping(admits) { engine.ended(within: window, in: $0) }
  }
}

extension ActivityEngine {
  /// The activities as they stand now, to be read on another thread, in O(1) here (see
  /// ``ActivitiesView``).
  public func activitiesView() -> ActivitiesView { ActivitiesView(self) }
}
