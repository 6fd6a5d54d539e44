// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop
import Testing

/// One test body, run against the virtual clock and the real loop (timerfd and uv_timer_t).
@Suite("Shared bodies: virtual clock and real loop", .serialized)
struct SharedTimerTests {
  @Test(
    "A countdown ticks once per change, in order, never early; then expires",
    arguments: HarnessKind.allCases)
  func countdown(_ kind: HarnessKind) async throws {
    let h = try kind.make()
    let base = await h.now()
    var r = ActivityRequest.countdown(id: "c", to: base.advanced(by: 2_500), title: "C")
    r.milestones = [Milestone(name: "one-left", atMs: 1_000)]
    _ = try await h.start(r)
    try await h.wait(until: base.advanced(by: 2_600))
    let d = await h.delivered()
    #expect(
      d.lines("c", base: base) == [
        "500 tick 2", "1500 tick 1", "1500 milestone one-left", "2500 tick 0", "2500 expired",
      ])
    #expect(d.early.isEmpty)
    await h.shutdown()
  }

  @Test(
    "Pause freezes an elapsed timer; resume continues from the frozen value",
    arguments: HarnessKind.allCases)
  func pauseResume(_ kind: HarnessKind) async throws {
    let h = try kind.make()
    let base = await h.now()
    _ = try await h.start(.elapsed(id: "e", from: base, title: "E"))
    try await h.wait(until: base.advanced(by: 1_300))
    try await h.pause("e")
    try await h.wait(until: base.advanced(by: 2_800))
    try await h.resume("e")
    let resumedAt = await h.now()
    let waited = resumedAt.advanced(by: 1_000)
    try await h.wait(until: waited)
    let d = await h.delivered()
    // A loaded machine may pause later than 1.3 s (a CI run once paused at 3.x s), so the value
    // expected is the one at the instant the pause took effect: whole seconds elapsed by then,
    // frozen through the pause, and the next second shown once the rest of it has run after
    // the resume.
    let events = d.filter { $0.event.id == "e" }
    guard let paused = events.first(where: { $0.event.kind == .paused }),
      let resumed = events.first(where: { $0.event.kind == .resumed })
    else {
      Issue.record("no paused or resumed event in \(events.map(\.event.kind))")
      return
    }
    let frozen = base.distance(to: paused.event.at)
    let p = frozen / 1_000
    let nextTick = resumed.event.at.advanced(by: 1_000 - frozen % 1_000)
    #expect(p >= 1 && nextTick <= waited)
    let kinds = events.filter { $0.event.at <= nextTick }.map {
      "\($0.event.kind.rawValue) \($0.event.value)"
    }
    let expected =
      ["started 0"] + (1...max(p, 1)).map { "tick \($0)" } + [
        "paused \(p)", "resumed \(p)", "tick \(p + 1)",
      ]
    #expect(kinds == expected)
    #expect(
      events.last(where: { $0.event.kind == .tick && $0.event.at <= nextTick })?.event.at
        == nextTick)
    #expect(d.early.isEmpty)
    await h.shutdown()
  }

  @Test("Stale and immediate dismissal at their instants", arguments: HarnessKind.allCases)
  func staleAndEnd(_ kind: HarnessKind) async throws {
    let h = try kind.make()
    let base = await h.now()
    var r = ActivityRequest.countdown(id: "s", to: base.advanced(by: 1_200), title: "S")
    r.staleDate = base.advanced(by: 700)
    r.endOnExpiry = .immediate
    _ = try await h.start(r)
    try await h.wait(until: base.advanced(by: 1_300))
    let d = await h.delivered()
    #expect(
      d.lines("s", base: base) == [
        "200 tick 1", "700 stale", "1200 tick 0", "1200 expired", "1200 ended 0 expired",
        "1200 dismissed",
      ])
    #expect(d.early.isEmpty)
    await h.shutdown()
  }
}
