// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

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
  /// - Throws: `invalidDate` when `t` is outside the wire's range; nothing changes then.
  /// - Complexity: O(n log n) plus the deadlines jumped over.
  public mutating func stepClock(to t: Instant) throws(CountdownError) {
    _ = try t.validated("instant")
    let old = now.milliseconds
    let target = t.milliseconds
    guard target != old else { return }
    // Values shown before the step, for every activity on the wheel, by slot (.min: none).
    var shown = [Int64](repeating: .min, count: slots.count)
    var ticking: [UInt32] = slotsOnWheel()
    for slot in ticking { shown[Int(slot)] = displayedSeconds(Int(slot), old) }
    let catchUpAt: Int64
    if target > old {
      ticksSuppressed = true
      // No walk runs to arm the expiries the wheel carries: the heap takes them all.
      for slot in ticking where slots[Int(slot)].kind == .countdown { reschedule(slot) }
      runDue(upTo: target - 1)
      ticksSuppressed = false
      catchUpAt = target - 1
    } else {
      now = t
      catchUpAt = target
    }
    // Wheel entries carry values for the old clock: put every ticking activity back for the
    // new one (elapsed timers whose origin is now ahead leave the wheel until it comes).
    // Slots that joined the wheel during the step are ticking too.
    var listed = [Bool](repeating: false, count: slots.count)
    for slot in ticking { listed[Int(slot)] = true }
    for slot in slotsOnWheel() where !listed[Int(slot)] {
      listed[Int(slot)] = true
      ticking.append(slot)
    }
    for slot in ticking where slots[Int(slot)].phase != .free {
      refresh(slot, skippingPassedMilestones: false)
    }
    ticking.sort { slots[Int($0)].seq < slots[Int($1)].seq }
    for slot in ticking {
      let s = Int(slot)
      guard slots[s].phase == .active, !slots[s].isExpired || cold[s].overtime else { continue }
      let v = displayedSeconds(s, catchUpAt)
      let before = shown[s]
      if v != (before == .min ? 0 : before) { emit(.tick, slot, at: catchUpAt, value: v) }
    }
    if target > old { runDue(upTo: target) }
  }

  /// Every slot on the wheel.
  func slotsOnWheel() -> [UInt32] {
    var onWheel: [UInt32] = []
    for b in 0..<PhaseWheel.bucketCount where wheel.header(b).live > 0 {
      for e in wheel.entries(inBucket: b) where e.slot != PhaseWheel.tombstone {
        onWheel.append(e.slot)
      }
    }
    return onWheel
  }
}
