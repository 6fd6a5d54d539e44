// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Testing

@testable import CountdownClient

/// The boards' time model on plain instants (ms since 1970): the rules of docs/activities.md.
@Suite("ActivityClock")
struct ActivityClockTests {
  let t: Int64 = 1_795_248_000_000

  @Test("A countdown shows the ceil of what remains and changes at each second boundary")
  func countdown() {
    let c = ActivityClock(kind: .countdown, phase: .active, value: 10, endDate: t + 10_000)
    #expect(c.value(at: t) == 10)
    #expect(c.value(at: t + 1) == 10)  // 9.999 s left shows 10
    #expect(c.value(at: t + 1_000) == 9)
    #expect(c.nextChange(after: t + 1) == t + 1_000)
    #expect(c.value(at: t + 9_999) == 1 && c.nextChange(after: t + 9_999) == t + 10_000)
    #expect(c.value(at: t + 10_000) == 0 && c.nextChange(after: t + 10_000) == nil)
    #expect(c.value(at: t + 99_000) == 0)
  }

  @Test("An overtime countdown goes on past its end: -n from n whole seconds after it")
  func overtime() {
    let c = ActivityClock(
      kind: .countdown, phase: .active, value: 2, endDate: t + 2_000, overtime: true)
    #expect(c.value(at: t + 2_000) == 0 && c.nextChange(after: t + 2_000) == t + 3_000)
    #expect(c.value(at: t + 2_999) == 0)
    #expect(c.value(at: t + 3_000) == -1 && c.nextChange(after: t + 3_000) == t + 4_000)
    #expect(c.value(at: t + 64_500) == -62 && c.nextChange(after: t + 64_500) == t + 65_000)
    #expect(c.nextChange(after: t + 1_500) == t + 2_000)
  }

  @Test("An elapsed timer shows the floor of the time since its origin; progress by its goal")
  func elapsed() {
    let e = ActivityClock(
      kind: .elapsed, phase: .active, value: 0, progress: 0, startDate: t, goalMs: 60_000)
    #expect(e.value(at: t + 999) == 0 && e.nextChange(after: t + 999) == t + 1_000)
    #expect(e.value(at: t + 1_000) == 1)
    #expect(e.progress(at: t + 30_000) == 0.5)
    #expect(e.progress(at: t + 120_000) == 1)
    let noGoal = ActivityClock(kind: .elapsed, phase: .active, value: 0, startDate: t)
    #expect(noGoal.progress(at: t + 30_000) == nil)
  }

  @Test("Paused and ended activities keep the object's value and progress")
  func frozen() {
    let p = ActivityClock(
      kind: .countdown, phase: .paused, value: 42, progress: 0.25, endDate: t + 10_000,
      startDate: t - 10_000)
    #expect(p.value(at: t + 5_000) == 42 && p.nextChange(after: t) == nil)
    #expect(p.progress(at: t + 5_000) == 0.25)
    let ended = ActivityClock(kind: .elapsed, phase: .ended, value: 7, startDate: t)
    #expect(ended.value(at: t + 60_000) == 7)
  }

  @Test("Tiles sort soonest ending first: running countdowns, paused, elapsed, ended")
  func order() {
    let now = t
    let running = ActivityClock(kind: .countdown, phase: .active, value: 60, endDate: t + 60_000)
    let paused = ActivityClock(kind: .countdown, phase: .paused, value: 30, endDate: t + 90_000)
    let elapsed = ActivityClock(kind: .elapsed, phase: .active, value: 0, startDate: t - 5_000)
    let ended = ActivityClock(kind: .countdown, phase: .ended, value: 0, endDate: t - 1)
    let sorted = [ended, elapsed, paused, running].sorted {
      $0.sortKey(at: now) < $1.sortKey(at: now)
    }
    #expect(sorted == [running, paused, elapsed, ended])
    // A paused countdown sorts by the end it would have if resumed now.
    #expect(paused.sortKey(at: now) == .init(group: 1, instant: t + 30_000))
  }
}
