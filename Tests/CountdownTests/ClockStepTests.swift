// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Testing

@Suite("Wall-clock steps")
struct ClockStepTests {
  @Test("A forward step: no burst of ticks, skipped deadlines fire once at their instants")
  func forward() throws {
    var (e, r) = makeEngine()
    var c = ActivityRequest.countdown(id: "c", to: at(1_800_000), title: "C")
    c.milestones = [Milestone(name: "ten", atMs: 600_000)]
    try e.start(c, at: t0)
    try e.start(.countdown(id: "far", to: at(7_200_000), title: "F"), at: t0)
    try e.start(.elapsed(id: "e", title: "E"), at: t0)
    try e.advance(to: at(2_000))
    r.clear()
    try e.stepClock(to: at(3_600_000))
    #expect(
      r.lines == [
        "1200000 milestone c ten", "1800000 expired c", "3599999 tick far 3601",
        "3599999 tick e 3599", "3600000 tick far 3600", "3600000 tick e 3600",
      ])
    r.clear()
    try e.advance(to: at(3_601_000))
    #expect(r.lines == ["3601000 tick far 3599", "3601000 tick e 3601"])
  }

  @Test("A forward step over the ends of plain countdowns: each expires at its own instant")
  func forwardOverPlainEnds() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "p", to: at(900_000), title: "P"), at: t0)
    var q = ActivityRequest.countdown(id: "q", to: at(1_500_000), title: "Q")
    q.endOnExpiry = .immediate
    try e.start(q, at: t0)
    try e.start(.countdown(id: "far", to: at(7_200_000), title: "F"), at: t0)
    try e.advance(to: at(2_000))
    r.clear()
    try e.stepClock(to: at(3_600_000))
    #expect(
      r.lines == [
        "900000 expired p", "1500000 expired q", "1500000 ended q 0 expired",
        "1500000 dismissed q", "3599999 tick far 3601", "3600000 tick far 3600",
      ])
    e.checkInvariants()
  }

  @Test("A backward step: one catch-up tick, then each second, and zero at the same instant")
  func backward() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "c", to: at(20_000), title: "C"), at: t0)
    try e.advance(to: at(15_000))
    r.clear()
    try e.stepClock(to: at(5_000))  // the wall clock went back 10 s
    #expect(r.lines == ["5000 tick c 15"])
    try e.advance(to: at(20_000))
    #expect(r.lines.count == 1 + 15 + 1)
    #expect(r.lines.suffix(2) == ["20000 tick c 0", "20000 expired c"])
    #expect(Set(r.lines).count == r.lines.count)
  }

  @Test("A backward step keeps what fired: an expired countdown stays at zero, no re-delivery")
  func backwardAfterExpiry() throws {
    var (e, r) = makeEngine()
    var c = ActivityRequest.countdown(id: "c", to: at(2_000), title: "C")
    c.milestones = [Milestone(name: "one", atMs: 1_000)]
    try e.start(c, at: t0)
    try e.start(.elapsed(id: "e", from: at(1_000), title: "E"), at: t0)
    try e.advance(to: at(3_000))
    r.clear()
    try e.stepClock(to: at(500))
    #expect(r.lines == ["500 tick e 0"])
    #expect(try e.state(of: "c", at: at(500)).value == 0)
    try e.advance(to: at(2_500))
    #expect(r.lines == ["500 tick e 0", "2000 tick e 1"])
  }
}
