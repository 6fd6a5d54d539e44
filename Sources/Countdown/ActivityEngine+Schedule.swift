// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

extension ActivityEngine {
  // MARK: - Values

  /// The instant at which slot `s`'s displayed value is read: now, or when it froze.
  @inline(__always)
  func effectiveNow(_ s: Int, _ now: Int64) -> Int64 {
    slots[s].phase == .active ? now : frozenAt(s)
  }

  /// The instant slot `s`'s value froze: its pause (kept in the side box), or for an ended
  /// activity not paused as it ended, its end. An active activity's is its last pause, or its
  /// start if it never paused: what a stored row carries, read back as it was written.
  @inline(__always)
  func frozenAt(_ s: Int) -> Int64 { cold[s].frozenOverride ?? impliedFrozenAt(s) }

  /// The instant slot `s`'s phase implies its value froze at, with no pause to say otherwise:
  /// its end if it ended, else its start. Only a different instant takes the side box.
  @inline(__always)
  func impliedFrozenAt(_ s: Int) -> Int64 {
    slots[s].phase == .ended ? cold[s].endedAt : cold[s].startedAt
  }

  /// The exact displayed quantity in milliseconds (remaining or elapsed), at least 0; below 0
  /// only for an expired countdown with overtime (the time since its end, negated).
  @inline(__always)
  func exactMilliseconds(_ s: Int, _ now: Int64) -> Int64 {
    // An expired countdown shows zero even if the clock is later stepped back before its end
    // (with overtime: zero until the clock passes its end again).
    if slots[s].isExpired {
      return cold[s].overtime ? min(0, slots[s].anchor - effectiveNow(s, now)) : 0
    }
    let t = effectiveNow(s, now)
    let v =
      slots[s].kind == .countdown ? slots[s].anchor - t : t - slots[s].anchor
    return max(0, v)
  }

  /// The displayed whole seconds: ceil for a countdown, floor for an elapsed timer. An overtime
  /// countdown shows −n from n whole seconds past its end (ceil of a negative quantity).
  @inline(__always)
  func displayedSeconds(_ s: Int, _ now: Int64) -> Int64 {
    slots[s].kind.rounding.signedSeconds(milliseconds: exactMilliseconds(s, now))
  }

  func progress(_ s: Int, _ now: Int64) -> Double? {
    switch slots[s].kind {
    case .countdown:
      guard let start = cold[s].countdownStart else { return nil }
      // Progress counts only time not spent paused, so a pause neither jumps nor drifts it.
      let total = slots[s].anchor - cold[s].pausedTotal - start
      let remaining = exactMilliseconds(s, now)
      guard total > 0 else { return remaining == 0 || effectiveNow(s, now) >= start ? 1 : 0 }
      return min(1, max(0, Double(total - remaining) / Double(total)))
    case .elapsed:
      guard let goal = cold[s].goalMs else { return nil }
      guard goal > 0 else { return 1 }
      return min(1, max(0, Double(exactMilliseconds(s, now)) / Double(goal)))
    }
  }

  // MARK: - Events

  /// Hands one event to `onEvent`, built in `scratchEvent`: a fresh `ActivityEvent` per call
  /// was copied once more before the call and both destroyed after it (three retains and four
  /// releases where one and two do).
  @inline(__always)
  mutating func emit(
    _ kind: ActivityEvent.Kind, _ slot: UInt32, at t: Int64, value: Int64? = nil,
    reason: EndReason? = nil, milestone: String? = nil, content: String? = nil
  ) {
    let s = Int(slot)
    hand(
      kind, id: slotID(s), handle: ActivityHandle(slot: slot, generation: slots[s].generation),
      activityKind: slots[s].kind, value: value ?? displayedSeconds(s, t), at: t, reason: reason,
      milestone: milestone, content: content)
  }

  /// Hands on the event just emitted for `slot` again as `kind`, with no reason: `dismissed`
  /// right after `ended` carries the same instant, id, handle and value, and only the fields
  /// that differ are written (and the id is not retained and released once more).
  @inline(__always)
  mutating func emitAgain(_ kind: ActivityEvent.Kind, _ slot: UInt32) {
    assert(scratchEvent.handle.slot == slot && scratchEvent.kind != .tick)
    scratchEvent.kind = kind
    scratchEvent.reason = nil
    onEvent(scratchEvent)
  }

  /// Slot `s`'s id, read alone. `slots[s].id` passed on (to a mutating call, into an entry)
  /// made the compiler copy the whole record, with loads wider than the phase or flag byte a
  /// command had just written: such a load cannot take its data from the store buffer, so it
  /// waited for every earlier store to land, misses included (56% of `finish`'s samples).
  @inline(__always)
  func slotID(_ s: Int) -> String {
    slots.withUnsafeBufferPointer { ($0.baseAddress! + s).pointer(to: \.id)!.pointee }
  }

  /// Fills `scratchEvent` and hands it to `onEvent` (``emit(_:_:at:value:reason:milestone:)``
  /// and the ticks of an instant shared with deadlines).
  @inline(__always)
  mutating func hand(
    _ kind: ActivityEvent.Kind, id: String, handle: ActivityHandle, activityKind: ActivityKind,
    value: Int64, at t: Int64, reason: EndReason? = nil, milestone: String? = nil,
    content: String? = nil
  ) {
    scratchEvent.at = Instant(milliseconds: t)
    scratchEvent.kind = kind
    scratchEvent.id = id
    scratchEvent.handle = handle
    scratchEvent.activityKind = activityKind
    scratchEvent.value = value
    scratchEvent.reason = reason
    scratchEvent.milestone = milestone
    scratchEvent.content = content
    onEvent(scratchEvent)
  }

  // MARK: - Scheduling

  /// Whether slot `s` ticks from the wheel now: it is active, a countdown not yet at its end
  /// (or, with overtime, expired and past it) or an elapsed timer past its origin.
  @inline(__always)
  func ticksNow(_ s: Int, _ now: Int64) -> Bool {
    guard options.deliversTicks, slots[s].phase == .active else { return false }
    guard slots[s].kind == .countdown else { return slots[s].anchor <= now }
    if slots[s].isExpired { return slots[s].anchor <= now && cold[s].overtime }
    return slots[s].anchor > now
  }

  /// Where slot `s`'s ticks fall within the second: a countdown's end, an elapsed timer's
  /// origin.
  @inline(__always)
  func tickPhase(_ s: Int) -> Int64 { slots[s].anchor }

  /// Puts slot `slot` back in the wheel and the heap after its dates or phase changed.
  ///
  /// An entry already in the right bucket with the right next value stays where it is (an
  /// update of content alone, a resume that lands on the same phase): moving it would cost
  /// two lines not in cache and put its bucket out of start order until the next walk.
  mutating func refresh(_ slot: UInt32, skippingPassedMilestones: Bool) {
    let s = Int(slot)
    let now = self.now.milliseconds
    // Whether the wheel carries a countdown's expiry, known here without reading the entry
    // back (``wheelCarriesExpiry(_:)``).
    var carried = false
    if ticksNow(s, now) {
      let phase = tickPhase(s)
      let firstTick = PhaseWheel.nextOccurrence(of: phase, after: now)
      let entry = wheelEntry(slot, firstTick: firstTick)
      if !wheel.holds(slot, bucket: PhaseWheel.bucket(of: phase), raw: entry.raw) {
        wheel.move(entry, seq: slots[s].seq, phase: phase)
      }
      carried = entry.raw > 1
    } else {
      wheel.remove(slot)
    }
    if skippingPassedMilestones, slots[s].phase == .active, cold[s].hasMilestonesAhead {
      // Read once, moved once: re-reading them through `cold[s]` at each turn made the
      // compiler copy the whole engine first, for every refresh.
      let milestones = cold[s].milestones
      var next = cold[s].nextMilestone
      while next < milestones.count, milestoneInstant(s, next) <= now { next += 1 }
      if next != cold[s].nextMilestone { cold[s].nextMilestone = next }
    }
    reschedule(slot, wheelCarriesExpiry: carried && !ticksSuppressed)
  }

  /// Puts slot `slot` on the wheel; its first tick is at `firstTick`.
  mutating func insertIntoWheel(_ slot: UInt32, phase: Int64, firstTick: Int64) {
    wheel.insert(wheelEntry(slot, firstTick: firstTick), seq: slots[Int(slot)].seq, phase: phase)
  }

  /// Slot `slot`'s wheel entry when its first tick is at `firstTick`.
  @inline(__always)
  func wheelEntry(_ slot: UInt32, firstTick: Int64) -> PhaseWheel.Entry {
    let s = Int(slot)
    let isCountdown = slots[s].kind == .countdown
    let value =
      isCountdown
      ? (slots[s].anchor - firstTick) / 1000
      : (firstTick - slots[s].anchor) / 1000
    return PhaseWheel.Entry(
      id: slotID(s), slot: slot, generation: slots[s].generation, value: value,
      isCountdown: isCountdown)
  }

  @inline(__always)
  func milestoneInstant(_ s: Int, _ k: Int) -> Int64 {
    let at = cold[s].milestones[k].atMs
    return slots[s].kind == .countdown
      ? slots[s].anchor - at : slots[s].anchor + at
  }

  /// Keys slot `slot`'s heap entry by its earliest pending rare deadline.
  mutating func reschedule(_ slot: UInt32) {
    reschedule(slot, wheelCarriesExpiry: wheelCarriesExpiry(slot))
  }

  /// ``reschedule(_:)`` when the caller knows ``wheelCarriesExpiry(_:)`` for `slot`.
  @inline(__always)
  mutating func reschedule(_ slot: UInt32, wheelCarriesExpiry carried: Bool) {
    let s = Int(slot)
    let now = self.now.milliseconds
    var best: (at: Int64, kind: Deadline)?
    func consider(_ at: Int64, _ kind: Deadline) {
      let at = max(at, now)
      if best == nil || at < best!.at || (at == best!.at && kind.rawValue < best!.kind.rawValue) {
        best = (at, kind)
      }
    }
    switch slots[s].phase {
    case .free: break
    case .ended: consider(cold[s].dismissAt, .dismissal)
    case .active, .paused:
      if !slots[s].isStale, let d = cold[s].staleDate { consider(d, .stale) }
      if let max = options.maxActiveDurationMs { consider(cold[s].startedAt + max, .maxDuration) }
      if slots[s].phase == .active {
        if slots[s].kind == .countdown, !slots[s].isExpired, !carried {
          consider(slots[s].anchor, .expiry)
        }
        if cold[s].hasMilestonesAhead {
          consider(milestoneInstant(s, cold[s].nextMilestone), .milestone)
        }
        // Ticks that begin later: an elapsed timer's at its origin, an expired overtime
        // countdown's at its end (after a backward clock step).
        if options.deliversTicks, !wheel.contains(slot),
          slots[s].kind == .elapsed || (slots[s].isExpired && cold[s].overtime)
        {
          consider(tickPhase(s), .armTicks)
        }
      }
    }
    if let best {
      heap.set(slot, at: best.at, order: slots[s].seq << 3 | best.kind.rawValue)
    } else {
      heap.remove(slot)
    }
  }

  /// Whether the wheel carries countdown `slot`'s expiry: its entry's next tick is not its
  /// last (value 0), so the walk that steps it to zero, one second before the end, puts the
  /// expiry in the heap (``armExpiry(_:seq:after:in:)``). Until then the heap holds nothing
  /// for it: a countdown to an hour from now costs no heap entry to start, update or end.
  /// While ticks are suppressed (a forward clock step) no walk runs, and the heap holds every
  /// expiry.
  @inline(__always)
  func wheelCarriesExpiry(_ slot: UInt32) -> Bool {
    guard !ticksSuppressed, let raw = wheel.raw(of: slot) else { return false }
    return raw > 1
  }

  /// The walk at `t` stepped countdown `slot` (start sequence `seq`) to its last tick, at
  /// `t + 1000`: its expiry, carried by the wheel until now, goes into `heap` at that instant
  /// (unless the slot's entry there is an earlier deadline, whose run reschedules it and brings
  /// the expiry). Both walks call it, the lone one on the heap it swapped out.
  @inline(__always)
  static func armExpiry(_ slot: UInt32, seq: UInt64, after t: Int64, in heap: inout DeadlineHeap) {
    heap.lower(slot, at: t + 1000, order: seq << 3 | Deadline.expiry.rawValue)
  }

  /// Ends slot `slot` at `t`: freezes its value (a paused one keeps its frozen value), leaves
  /// the wheel, emits `ended`, and schedules its dismissal (unless `schedules` is false: the
  /// caller dismisses it at once and the slot leaves the heap).
  mutating func finish(
    _ slot: UInt32, reason: EndReason, dismissal: DismissalPolicy, at t: Int64,
    schedules: Bool = true
  ) {
    let s = Int(slot)
    wheel.remove(slot)
    // An activity paused as it ends keeps its pause's instant; any other froze at its end.
    if slots[s].phase == .active, cold[s].frozenOverride != nil { cold[s].frozenOverride = nil }
    slots[s].phase = .ended
    cold[s].endedAt = t
    cold[s].endReason = reason
    cold[s].dismissAt = dismissal.dismissal(endedAt: Instant(milliseconds: t)).milliseconds
    emit(.ended, slot, at: t, reason: reason)
    if schedules { reschedule(slot) } else { heap.remove(slot) }
  }

  // MARK: - The run loop

  /// Delivers every event due at or before `limit`, in docs/events.md order, then sets the clock to
  /// `limit`.
  ///
  /// Instants are visited in order; at each one the wheel bucket's ticks (in start order) are
  /// merged with the heap's deadlines at that instant (by start order, then event kind).
  ///
  /// Inlined for its common case, a command at the clock's own instant with no deadline due
  /// (each command runs it twice): the loop below saves and restores a frame's worth of
  /// registers, about 50 instructions a call with nothing to do.
  @inline(__always)
  mutating func runDue(upTo limit: Int64) {
    if limit == now.milliseconds, heap.top.map({ $0.at > limit }) ?? true { return }
    runDueInOrder(upTo: limit)
  }

  /// ``runDue(upTo:)``'s loop.
  @inline(never)
  mutating func runDueInOrder(upTo limit: Int64) {
    while true {
      // Every wheel entry ticks at the first instant after the clock (the wheel's invariant),
      // so no tick is due unless the clock moves: a command's own run at its instant (every
      // command ends with one) reads the heap's top alone, not the wheel's occupancy map.
      let tickAt = limit > now.milliseconds ? nextTickInstant ?? .max : .max
      let deadlineAt = heap.top?.at ?? .max
      let t = min(tickAt, deadlineAt)
      guard t <= limit else { break }
      now = Instant(milliseconds: t)
      if tickAt == t { runTicks(at: t) }
      while let top = heap.top, top.at <= t { runDeadline() }
    }
    now = Instant(milliseconds: limit)
  }

  /// Delivers the ticks of the bucket due at `t`, interleaving earlier-started activities'
  /// deadlines at `t`. No allocation; removed entries are compacted in the same pass.
  mutating func runTicks(at t: Int64) {
    let b = PhaseWheel.bucket(of: t)
    if !wheel.header(b).sorted { wheel.sortBucket(b, slots: slots) }
    if (heap.top?.at ?? .max) > t {
      runTicksAlone(bucket: b, at: t)
      return
    }
    wheel.walking = b
    // Entries are read by index, each time: the deadlines run meanwhile may remove entries
    // or append to this bucket (elapsed timers armed at `t`), which may move its entries.
    let n = Int(wheel.header(b).count)
    var kept = 0
    var finished = 0
    for r in 0..<n {
      let slot = wheel.entry(b, r).slot
      if slot != PhaseWheel.tombstone {
        let order = slots[Int(slot)].seq << 3
        while let top = heap.top, top.at <= t, top.order < order { runDeadline() }
      }
      // Read after the deadlines: they may have removed this entry.
      var e = wheel.entry(b, r)
      if e.slot == PhaseWheel.tombstone { continue }
      if tick(&e, at: t) {
        if e.raw == 1 { Self.armExpiry(e.slot, seq: slots[Int(e.slot)].seq, after: t, in: &heap) }
        wheel.setEntry(b, kept, e)
        if kept != r { wheel.position[Int(e.slot)] = UInt32(kept) }
        kept += 1
      } else {
        // Its last tick: left behind the kept, and counted off the bucket below.
        wheel.bucketOf[Int(e.slot)] = -1
        finished += 1
      }
    }
    // Entries appended while walking (elapsed timers armed at `t`) move down behind the kept.
    let total = Int(wheel.header(b).count)
    for r in n..<total {
      let e = wheel.entry(b, r)
      if e.slot == PhaseWheel.tombstone { continue }
      wheel.setEntry(b, kept, e)
      wheel.position[Int(e.slot)] = UInt32(kept)
      kept += 1
    }
    wheel.walking = -1
    wheel.truncate(b, to: kept, finished: finished)
  }

  /// Emits the tick of `e` at `t` through `scratchEvent` and moves `e` to its next value;
  /// false after a countdown's final tick (a countdown at zero does not tick again). The walk
  /// of ``runTicksAlone(bucket:at:)`` keeps its own event: it holds the bucket exclusively.
  @inline(__always)
  mutating func tick(_ e: inout PhaseWheel.Entry, at t: Int64) -> Bool {
    let v = e.value
    hand(
      .tick, id: e.id, handle: ActivityHandle(slot: e.slot, generation: e.generation),
      activityKind: e.isCountdown ? .countdown : .elapsed, value: v, at: t)
    if e.isCountdown && v == 0 { return false }
    e.step()
    return true
  }

  /// The common case: no deadline shares the instant, so nothing but the ticks can run and
  /// the bucket is walked through one buffer pointer. The wheel's back indices and the heap
  /// are swapped out for the walk (O(1)) so that they can be kept exact without touching
  /// `self`; the slot records are read (for the start order of an expiry it arms) through a
  /// second reference, which nothing writes meanwhile.
  mutating func runTicksAlone(bucket b: Int, at t: Int64) {
    let handler = onEvent
    var position: [UInt32] = []
    var bucketOf: [Int16] = []
    var deadlines = DeadlineHeap()
    swap(&position, &wheel.position)
    swap(&bucketOf, &wheel.bucketOf)
    swap(&deadlines, &heap)
    let records = slots
    var finished = 0
    let kept = wheel.withEntries(inBucket: b) { entries in
      var kept = 0
      // Where entries began to move down over tombstones: their back indices are written
      // after the walk (see below).
      var firstMoved = -1
      // One event, its fields set per tick, and the entry's fields read in place: a fresh
      // event or a copied entry would copy the id (a retain and a release) once more each.
      var event = ActivityEvent(
        at: Instant(milliseconds: t), kind: .tick, id: "",
        handle: ActivityHandle(slot: 0, generation: 0), activityKind: .countdown, value: 0)
      for r in 0..<entries.count {
        let slot = entries[r].slot
        if slot == PhaseWheel.tombstone { continue }
        let raw = entries[r].raw
        event.id = entries[r].id
        event.handle = ActivityHandle(slot: slot, generation: entries[r].generation)
        event.activityKind = raw & 1 == 1 ? .countdown : .elapsed
        event.value = raw >> 1
        handler(event)
        // A countdown at zero does not tick again.
        if raw == 1 {
          bucketOf[Int(slot)] = -1
          finished += 1
          continue
        }
        entries[r].step()
        // Its last tick comes next, in a second: the expiry the wheel carried goes in the heap.
        if raw == 3 {
          Self.armExpiry(slot, seq: records[Int(slot)].seq, after: t, in: &deadlines)
        }
        if kept != r {
          entries.swapAt(kept, r)
          if firstMoved < 0 { firstMoved = kept }
        }
        kept += 1
      }
      // The moved entries' back indices, each a line of `position` not in cache under churn.
      // Written in the walk, each store waited to land before the next tick's event could be
      // handed on (the event's copy reads back the fields just written, wider than written).
      if firstMoved >= 0 {
        for k in firstMoved..<kept { position[Int(entries[k].slot)] = UInt32(k) }
      }
      return kept
    }
    swap(&position, &wheel.position)
    swap(&bucketOf, &wheel.bucketOf)
    swap(&deadlines, &heap)
    wheel.truncate(b, to: kept, finished: finished)
  }

  /// Pops the earliest deadline and acts on it.
  mutating func runDeadline() {
    guard let e = heap.pop() else { return }
    let slot = e.slot
    let s = Int(slot)
    let t = e.at
    switch Deadline(rawValue: e.order & 7)! {
    case .armTicks:
      let phase = tickPhase(s)
      insertIntoWheel(slot, phase: phase, firstTick: PhaseWheel.nextOccurrence(of: phase, after: t))
    case .milestone:
      let k = cold[s].nextMilestone
      cold[s].nextMilestone += 1
      let m = cold[s].milestones[k]
      var applied: String?
      // Its content patch, checked to fit when the milestone was given (and at every change of
      // the content since): a failure here would be a bug, and leaves the content as it was.
      if !m.content.isEmpty, let c = try? ActivityContent.patching(cold[s].content, with: m.content)
      {
        cold[s].content = c
        applied = c.canonical
      }
      emit(.milestone, slot, at: t, milestone: m.name, content: applied)
    case .stale:
      slots[s].isStale = true
      emit(.stale, slot, at: t)
    case .expiry:
      slots[s].isExpired = true
      wheel.remove(slot)
      emit(.expired, slot, at: t, value: 0)
      if let policy = cold[s].endOnExpiry {
        finish(slot, reason: .expired, dismissal: policy, at: t)
        return
      }
      if cold[s].overtime {
        // It ticks on past its end: -1 a second after it, from the wheel again.
        refresh(slot, skippingPassedMilestones: false)
        return
      }
    case .maxDuration:
      finish(slot, reason: .maxDuration, dismissal: .default, at: t)
      return
    case .dismissal:
      emit(.dismissed, slot, at: t)
      freeSlot(slot)
      return
    }
    reschedule(slot)
  }
}
