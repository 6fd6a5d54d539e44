// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Testing

/// docs/activities.md, "Overtime": a countdown that runs on past its end.
@Suite("Overtime")
struct OvertimeTests {
  static func overtime(_ id: String = "c", to end: Int64) -> ActivityRequest {
    var r = ActivityRequest.countdown(id: id, to: at(end), title: "Talk")
    r.overtime = true
    return r
  }

  @Test("It ticks 0 and expires at its end, then −1, −2 … each second after it")
  func ticksPastTheEnd() throws {
    var (e, r) = makeEngine()
    try e.start(Self.overtime(to: 3_000), at: t0)
    try e.advance(to: at(6_000))
    #expect(
      r.lines == [
        "0 started c", "1000 tick c 2", "2000 tick c 1", "3000 tick c 0", "3000 expired c",
        "4000 tick c -1", "5000 tick c -2", "6000 tick c -3",
      ])
    let s = try e.state(of: "c", at: at(6_500))
    #expect(s.value == -3 && s.milliseconds == -3_500 && s.expired && s.isInOvertime)
    #expect(s.phase == .active && s.progress == nil)
    // Just before a whole second past the end it still shows the previous value.
    #expect(try e.state(of: "c", at: at(6_999)).value == -3)
    #expect(try e.state(of: "c", at: at(7_000)).value == -4)
    e.checkInvariants()
  }

  @Test("A plain countdown stays at zero beside it")
  func plainStaysAtZero() throws {
    var (e, r) = makeEngine()
    try e.start(Self.overtime("o", to: 1_000), at: t0)
    try e.start(.countdown(id: "p", to: at(1_000), title: "P"), at: t0)
    try e.advance(to: at(3_000))
    #expect(
      r.lines.dropFirst(2) == [
        "1000 tick o 0", "1000 expired o", "1000 tick p 0", "1000 expired p", "2000 tick o -1",
        "3000 tick o -2",
      ])
    #expect(try e.state(of: "p", at: at(3_000)).value == 0)
  }

  @Test("Milestones with a negative atMs fire that long after the end, in order")
  func negativeMilestones() throws {
    var (e, r) = makeEngine()
    var c = Self.overtime(to: 2_000)
    c.milestones = [
      Milestone(name: "over-3", atMs: -3_000), Milestone(name: "last", atMs: 1_000),
      Milestone(name: "over-1", atMs: -1_000),
    ]
    try e.start(c, at: t0)
    try e.advance(to: at(6_000))
    #expect(
      r.lines(Set([.milestone, .expired])) == [
        "1000 milestone c last", "2000 expired c", "3000 milestone c over-1",
        "5000 milestone c over-3",
      ])
    #expect(try e.state(of: "c", at: at(6_000)).lastMilestone == "over-3")
  }

  @Test("Pause freezes the negative value, resume goes on from it, end keeps it")
  func pauseResumeEnd() throws {
    var (e, r) = makeEngine()
    try e.start(Self.overtime(to: 1_000), at: t0)
    try e.advance(to: at(3_500))
    try e.pause("c", at: at(3_500))
    try e.advance(to: at(10_000))
    #expect(try e.state(of: "c", at: at(10_000)).value == -2)
    try e.resume("c", at: at(10_000))
    try e.advance(to: at(11_600))
    try e.end("c", at: at(11_600))
    #expect(
      r.lines.suffix(5) == [
        "3500 paused c -2", "10000 resumed c", "10500 tick c -3", "11500 tick c -4",
        "11600 ended c -4 requested",
      ])
    #expect(try e.state(of: "c", at: at(20_000)).value == -4)
  }

  @Test("Moving the end later after it expired counts down again; earlier, on into overtime")
  func moveEnd() throws {
    var (e, r) = makeEngine()
    try e.start(Self.overtime(to: 1_000), at: t0)
    try e.advance(to: at(2_000))
    try e.update("c", ActivityUpdate(endDate: at(4_000)), at: at(2_000))
    try e.advance(to: at(5_000))
    #expect(
      r.lines.suffix(5) == [
        "2000 updated c", "3000 tick c 1", "4000 tick c 0", "4000 expired c", "5000 tick c -1",
      ])
    // An end moved into the past expires at once and counts from that end.
    try e.update("c", ActivityUpdate(endDate: at(1_500)), at: at(5_200))
    try e.advance(to: at(6_500))
    #expect(try e.state(of: "c", at: at(6_500)).value == -5)
    #expect(
      r.lines.suffix(4) == ["5200 updated c", "5200 expired c", "5500 tick c -4", "6500 tick c -5"])
    e.checkInvariants()
  }

  @Test("Turning overtime off after the end stops the ticks at zero; on again, they go on")
  func toggle() throws {
    var (e, r) = makeEngine()
    try e.start(Self.overtime(to: 1_000), at: t0)
    try e.advance(to: at(2_500))
    var u = ActivityUpdate()
    u.overtime = false
    try e.update("c", u, at: at(2_500))
    #expect(try e.state(of: "c", at: at(2_500)).value == 0)
    try e.advance(to: at(5_000))
    #expect(r.lines.last == "2500 updated c")
    u.overtime = true
    try e.update("c", u, at: at(5_000))
    try e.advance(to: at(6_000))
    #expect(r.lines.suffix(2) == ["5000 updated c", "6000 tick c -5"])
    e.checkInvariants()
  }

  @Test("Refused: beside endOnExpiry, on an elapsed timer, negative milestones without it")
  func refused() throws {
    var (e, _) = makeEngine()
    var both = Self.overtime(to: 5_000)
    both.endOnExpiry = .immediate
    let (code, message) = errorOf { try e.start(both, at: t0) }
    #expect(code == .invalidPayload && message.contains("overtime and endOnExpiry"))
    var elapsed = ActivityRequest.elapsed(id: "e", title: "E")
    elapsed.overtime = true
    let (code2, message2) = errorOf { try e.start(elapsed, at: t0) }
    #expect(code2 == .invalidPayload && message2.contains("overtime applies to countdowns"))
    var plain = ActivityRequest.countdown(id: "p", to: at(5_000), title: "P")
    plain.milestones = [Milestone(name: "late", atMs: -1_000)]
    let (code3, message3) = errorOf { try e.start(plain, at: t0) }
    #expect(code3 == .invalidPayload && message3.contains("milestones[0].atMs -1000 is negative"))
    #expect(e.count == 0)

    // On a running one: nothing changes when refused.
    var c = Self.overtime(to: 5_000)
    c.milestones = [Milestone(name: "late", atMs: -1_000)]
    try e.start(c, at: t0)
    let before = e.stored("c")
    var off = ActivityUpdate(content: ["title": .string("Changed")])
    off.overtime = false
    #expect(errorOf { try e.update("c", off, at: t0) }.0 == .invalidPayload)
    let expiring = ActivityUpdate(endOnExpiry: .set(.default))
    #expect(errorOf { try e.update("c", expiring, at: t0) }.0 == .invalidPayload)
    #expect(e.stored("c") == before)
    // Both at once: overtime off, endOnExpiry set, milestones past the end removed.
    var swap = ActivityUpdate(milestones: .remove, endOnExpiry: .set(.default))
    swap.overtime = false
    try e.update("c", swap, at: t0)
    #expect(e.stored("c")?.overtime == false && e.stored("c")?.endOnExpiry == .default)
  }

  @Test("Restored from a snapshot in overtime, it goes on ticking the same")
  func restore() throws {
    var (e, r) = makeEngine()
    var c = Self.overtime(to: 1_000)
    c.milestones = [Milestone(name: "over-4", atMs: -4_000)]
    try e.start(c, at: t0)
    try e.advance(to: at(2_300))
    let snapshot = e.snapshot()
    #expect(snapshot.activities.first?.overtime == true)
    let again = Recorder()
    var restored = try ActivityEngine(restoring: snapshot) { again.events.append($0) }
    restored.checkInvariants()
    try e.advance(to: at(6_000))
    try restored.advance(to: at(6_000))
    let after = r.lines.drop { !$0.hasPrefix("3000") }
    #expect(Array(after) == again.lines)
    #expect(again.lines.contains("5000 milestone c over-4"))
  }

  @Test("Clock steps: forward gives one catch-up tick; back before the end shows 0 until it")
  func clockSteps() throws {
    var (e, r) = makeEngine()
    try e.start(Self.overtime(to: 1_000), at: t0)
    try e.advance(to: at(2_000))
    r.clear()
    try e.stepClock(to: at(60_000))
    #expect(r.lines == ["59999 tick c -58", "60000 tick c -59"])
    r.clear()
    try e.stepClock(to: at(500))
    #expect(r.lines == ["500 tick c 0"])
    #expect(try e.state(of: "c", at: at(900)).value == 0)
    try e.advance(to: at(3_000))
    // Expired already: no second `expired`; overtime ticks from its end again.
    #expect(r.lines == ["500 tick c 0", "2000 tick c -1", "3000 tick c -2"])
    e.checkInvariants()
  }
}

/// The code and message of what `body` throws.
private func errorOf(_ body: () throws -> Void) -> (CountdownError.Code?, String) {
  do {
    try body()
    return (nil, "")
  } catch let error as CountdownError {
    return (error.code, error.message)
  } catch {
    return (nil, "\(error)")
  }
}
