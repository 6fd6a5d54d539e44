extension ActivityEngine {
  /// Re-anchors the engine after the wall clock was stepped to `t`, either way.
  ///
  /// Deadlines are absolute, so a countdown to 12:00 still reaches zero at 12:00 by the new
  /// clock. A forward step delivers the deadlines it jumped over (expiry, milestones,
  /// staleness, dismissal) once each at their own instants, but not the ticks in between:
  /// each activity still ticking gets one catch-up `tick` with its new value, at the last
  /// instant before the new time. A backward step delivers nothing twice: what has fired
  /// stays fired (an expired countdown stays at zero), and each ticking activity whose
  /// displayed value changed gets one catch-up `tick` at `t`.
  /// - Complexity: O(n log n) plus the deadlines jumped over.
  public mutating func stepClock(to t: Instant) {
    let old = now.milliseconds
    let target = t.milliseconds
    guard target != old else { return }
    // Values shown before the step, for every activity on the wheel, in start order.
    var shown: [(slot: UInt32, value: Int64)] = []
    for b in 0..<PhaseWheel.bucketCount where wheel.buckets[b].live > 0 {
      for slot in wheel.buckets[b].entries where slot != PhaseWheel.tombstone {
        shown.append((slot, displayedSeconds(Int(slot), old)))
      }
    }
    shown.sort { seq[Int($0.slot)] < seq[Int($1.slot)] }
    let catchUpAt: Int64
    if target > old {
      ticksSuppressed = true
      runDue(upTo: target - 1)
      ticksSuppressed = false
      catchUpAt = target - 1
    } else {
      now = t
      catchUpAt = target
      // Elapsed timers whose origin is now in the future leave the wheel until it comes.
      for (slot, _) in shown where wheel.contains(slot) {
        refresh(slot, skippingPassedMilestones: false)
      }
    }
    for (slot, value) in shown {
      let s = Int(slot)
      guard phaseOf[s] == .active, wheel.contains(slot) || kindOf[s] == .elapsed else { continue }
      let v = displayedSeconds(s, catchUpAt)
      if v != value { emit(.tick, slot, at: catchUpAt, value: v) }
    }
    if target > old { runDue(upTo: target) }
  }
}
