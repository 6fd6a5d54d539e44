// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Testing

@Suite("Engine rules on the virtual clock")
struct EngineTests {
  @Test("A countdown shows ceil seconds: 1 ms before, at, and after a second change")
  func countdownCeil() throws {
    var (e, _) = makeEngine()
    try e.start(.countdown(id: "c", to: at(10_000), title: "C"), at: t0)
    #expect(try e.state(of: "c", at: at(0)).value == 10)
    #expect(try e.state(of: "c", at: at(999)).value == 10)
    #expect(try e.state(of: "c", at: at(1_000)).value == 9)
    #expect(try e.state(of: "c", at: at(1_001)).value == 9)
    #expect(try e.state(of: "c", at: at(9_999)).value == 1)
    #expect(try e.state(of: "c", at: at(10_000)).value == 0)
    #expect(try e.state(of: "c", at: at(10_001)).value == 0)
  }

  @Test("An elapsed timer shows floor seconds and 0 for its first second")
  func elapsedFloor() throws {
    var (e, _) = makeEngine()
    try e.start(.elapsed(id: "e", title: "E"), at: t0)
    #expect(try e.state(of: "e", at: at(999)).value == 0)
    #expect(try e.state(of: "e", at: at(1_000)).value == 1)
    #expect(try e.state(of: "e", at: at(1_999)).value == 1)
    #expect(try e.state(of: "e", at: at(2_000)).value == 2)
  }

  @Test("A tick is delivered exactly when the displayed second changes, and only then")
  func ticksAtChanges() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "c", to: at(3_500), title: "C"), at: t0)
    try e.start(.elapsed(id: "e", from: at(-250), title: "E"), at: t0)
    try e.advance(to: at(3_999))
    #expect(
      r.lines([.tick]) == [
        "500 tick c 3", "750 tick e 1", "1500 tick c 2", "1750 tick e 2", "2500 tick c 1",
        "2750 tick e 3", "3500 tick c 0", "3750 tick e 4",
      ])
    #expect(e.nextDeadline == at(4_750))
  }

  @Test("Expiry exactly at the end, after the final tick; the countdown stays at zero")
  func expiry() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "c", to: at(2_000), title: "C"), at: t0)
    try e.advance(to: at(1_999))
    #expect(!r.lines.contains("2000 expired c"))
    try e.advance(to: at(2_000))
    #expect(Array(r.lines.suffix(2)) == ["2000 tick c 0", "2000 expired c"])
    try e.advance(to: at(60_000))
    #expect(r.lines.count == 4)  // started, 1, 0, expired: nothing more
    let s = try e.state(of: "c", at: at(60_000))
    #expect(s.phase == .active && s.expired && s.value == 0)
  }

  @Test("A countdown whose end has passed expires at its start")
  func expiredAtStart() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "c", to: at(-5_000), title: "C"), at: t0)
    #expect(r.lines == ["0 started c", "0 expired c"])
  }

  @Test("Pause freezes the value; resume moves a countdown's end by the time paused")
  func pauseResumeCountdown() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "c", to: at(10_000), title: "C"), at: t0)
    try e.pause("c", at: at(3_400))
    #expect(r.lines.last == "3400 paused c 7")
    try e.advance(to: at(20_000))
    #expect(try e.state(of: "c", at: at(20_000)).value == 7)
    #expect(!r.lines.contains { $0.contains("expired") })
    try e.resume("c", at: at(20_000))
    let s = try e.state(of: "c", at: at(20_000))
    #expect(s.endDate == at(26_600) && s.phase == .active && s.value == 7)
    r.clear()
    try e.advance(to: at(26_600))
    #expect(r.lines([.tick]).first == "20600 tick c 6")
    #expect(Array(r.lines.suffix(2)) == ["26600 tick c 0", "26600 expired c"])
  }

  @Test("Pause and resume of an elapsed timer grow its paused total")
  func pauseResumeElapsed() throws {
    var (e, r) = makeEngine()
    try e.start(.elapsed(id: "e", title: "E"), at: t0)
    try e.pause("e", at: at(2_500))
    #expect(r.lines.last == "2500 paused e 2")
    try e.resume("e", at: at(10_000))
    #expect(try e.state(of: "e", at: at(10_000)).value == 2)
    r.clear()
    try e.advance(to: at(10_500))
    #expect(r.lines == ["10500 tick e 3"])
  }

  @Test("Pause while paused and resume while active are accepted no-ops without events")
  func pauseResumeNoOps() throws {
    var (e, r) = makeEngine()
    try e.start(.elapsed(id: "e", title: "E"), at: t0)
    try e.resume("e", at: at(100))
    try e.pause("e", at: at(200))
    try e.pause("e", at: at(300))
    #expect(r.lines == ["0 started e", "200 paused e 0"])
  }

  @Test("A paused activity does not tick, expire, or pass milestones; it does go stale")
  func pausedIsQuiet() throws {
    var (e, r) = makeEngine()
    var req = ActivityRequest.countdown(id: "c", to: at(5_000), title: "C")
    req.milestones = [Milestone(name: "m", atMs: 2_000)]
    req.staleDate = at(4_000)
    try e.start(req, at: t0)
    try e.pause("c", at: at(500))
    try e.advance(to: at(10_000))
    #expect(r.lines == ["0 started c", "500 paused c 5", "4000 stale c"])
  }

  @Test("Stale at staleDate; a future staleDate or its removal makes it fresh again")
  func staleAndFresh() throws {
    var (e, r) = makeEngine()
    var req = ActivityRequest.elapsed(id: "e", title: "E")
    req.staleDate = at(1_000)
    try e.start(req, at: t0)
    try e.advance(to: at(1_000))
    #expect(r.lines.last == "1000 stale e")
    #expect(try e.state(of: "e", at: at(1_000)).stale)
    try e.update("e", ActivityUpdate(staleDate: .set(at(5_000))), at: at(2_000))
    #expect(try !e.state(of: "e", at: at(2_000)).stale)
    try e.advance(to: at(5_000))
    #expect(r.lines.last == "5000 stale e")
    try e.update("e", ActivityUpdate(staleDate: .remove), at: at(6_000))
    #expect(try !e.state(of: "e", at: at(6_000)).stale)
    // A staleDate already passed makes it stale at the update's instant.
    try e.update("e", ActivityUpdate(staleDate: .set(at(100))), at: at(7_000))
    #expect(r.lines.suffix(2) == ["7000 updated e", "7000 stale e"])
  }

  @Test("An ended activity does not go stale")
  func endedNotStale() throws {
    var (e, r) = makeEngine()
    var req = ActivityRequest.elapsed(id: "e", title: "E")
    req.staleDate = at(5_000)
    try e.start(req, at: t0)
    try e.end("e", at: at(1_000))
    try e.advance(to: at(10_000))
    #expect(!r.lines.contains("5000 stale e"))
  }

  @Test("Milestones fire once when the displayed quantity passes them; passed ones never")
  func milestones() throws {
    var (e, r) = makeEngine()
    var c = ActivityRequest.countdown(id: "c", to: at(10_000), title: "C")
    c.milestones = [
      Milestone(name: "five", atMs: 5_000), Milestone(name: "late", atMs: 60_000),
      Milestone(name: "zero", atMs: 0),
    ]
    var el = ActivityRequest.elapsed(id: "e", from: at(-3_000), title: "E")
    el.milestones = [Milestone(name: "two", atMs: 2_000), Milestone(name: "four", atMs: 4_000)]
    try e.start(c, at: t0)
    try e.start(el, at: t0)
    try e.advance(to: at(20_000))
    #expect(
      r.lines([.milestone, .expired]) == [
        "1000 milestone e four", "5000 milestone c five", "10000 milestone c zero",
        "10000 expired c",
      ])
  }

  @Test("Milestones follow the pause: an elapsed timer's fire after the paused time")
  func milestonesAfterPause() throws {
    var (e, r) = makeEngine()
    var el = ActivityRequest.elapsed(id: "e", title: "E")
    el.milestones = [Milestone(name: "m", atMs: 3_000)]
    try e.start(el, at: t0)
    try e.pause("e", at: at(1_000))
    try e.resume("e", at: at(5_000))
    try e.advance(to: at(10_000))
    #expect(r.lines([.milestone]) == ["7000 milestone e m"])
  }

  @Test("Dismissal immediate: ended and dismissed at once, and the id is free again")
  func dismissImmediate() throws {
    var (e, r) = makeEngine()
    try e.start(.elapsed(id: "e", title: "E"), at: t0)
    let handle = try #require(e.handle(for: "e"))
    try e.end("e", ActivityEnding(dismissal: .immediate), at: at(1_500))
    #expect(r.lines.suffix(2) == ["1500 ended e 1 requested", "1500 dismissed e"])
    // Every field, the reason of `ended` not carried over into `dismissed`.
    let ended = ActivityEvent(
      at: at(1_500), kind: .ended, id: "e", handle: handle, activityKind: .elapsed, value: 1,
      reason: .requested)
    var dismissed = ended
    dismissed.kind = .dismissed
    dismissed.reason = nil
    #expect(Array(r.events.suffix(2)) == [ended, dismissed])
    #expect(errorCode { _ = try e.state(of: "e", at: at(1_500)) } == .notFound)
    try e.start(.elapsed(id: "e", title: "again"), at: at(1_500))
  }

  @Test("Dismissal default: 4 hours after the end; the ended activity still holds its id")
  func dismissDefault() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "c", to: at(60_000), title: "C"), at: t0)
    try e.end("c", at: at(10_000))
    #expect(r.lines.last == "10000 ended c 50 requested")
    let s = try e.state(of: "c", at: at(20_000))
    #expect(s.phase == .ended && s.value == 50)
    #expect(
      errorCode { try e.start(.elapsed(id: "c", title: "x"), at: at(20_000)) } == .duplicateID)
    try e.advance(to: at(10_000 + 4 * 3_600_000 - 1))
    #expect(r.lines.last == "10000 ended c 50 requested")
    try e.advance(to: at(10_000 + 4 * 3_600_000))
    #expect(r.lines.last == "\(10_000 + 4 * 3_600_000) dismissed c")
    #expect(r.events.last?.reason == nil && r.events.last?.value == 50)
  }

  @Test("Dismissal after: at the instant, capped at end + 4 h; at or before the end is immediate")
  func dismissAfter() throws {
    var (e, r) = makeEngine()
    for id in ["a", "b", "c"] { try e.start(.elapsed(id: id, title: id), at: t0) }
    try e.end("a", ActivityEnding(dismissal: .after(at(1_000 + 30_000))), at: at(1_000))
    try e.end("b", ActivityEnding(dismissal: .after(at(1_000 + 5 * 3_600_000))), at: at(1_000))
    try e.end("c", ActivityEnding(dismissal: .after(at(1_000))), at: at(1_000))
    #expect(r.lines.last == "1000 dismissed c")
    try e.advance(to: at(6 * 3_600_000))
    #expect(
      r.lines([.dismissed]) == [
        "1000 dismissed c", "31000 dismissed a", "\(1_000 + 4 * 3_600_000) dismissed b",
      ])
  }

  @Test("The end freezes the value; a paused activity ends with its paused value")
  func endFreezes() throws {
    var (e, r) = makeEngine()
    try e.start(.elapsed(id: "e", title: "E"), at: t0)
    try e.pause("e", at: at(3_000))
    try e.end("e", at: at(9_000))
    #expect(r.lines.last == "9000 ended e 3 requested")
    #expect(try e.state(of: "e", at: at(100_000)).value == 3)
  }

  @Test("endOnExpiry ends the countdown at zero with reason expired and its dismissal policy")
  func endOnExpiry() throws {
    var (e, r) = makeEngine()
    var req = ActivityRequest.countdown(id: "c", to: at(2_000), title: "C")
    req.endOnExpiry = .after(at(2_000 + 60_000))
    try e.start(req, at: t0)
    try e.advance(to: at(100_000))
    #expect(
      r.lines == [
        "0 started c", "1000 tick c 1", "2000 tick c 0", "2000 expired c", "2000 ended c 0 expired",
        "62000 dismissed c",
      ])
  }

  @Test("Moving a countdown's end into the future after it expired makes it run again")
  func rerunAfterExpiry() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "c", to: at(1_000), title: "C"), at: t0)
    try e.advance(to: at(5_000))
    try e.update("c", ActivityUpdate(endDate: at(7_000)), at: at(5_000))
    #expect(try !e.state(of: "c", at: at(5_000)).expired)
    r.clear()
    try e.advance(to: at(8_000))
    #expect(r.lines == ["6000 tick c 1", "7000 tick c 0", "7000 expired c"])
  }

  @Test("maxActiveDurationMs ends an activity that long after its start, default dismissal")
  func maxDuration() throws {
    var (e, r) = makeEngine(EngineOptions(maxActiveDurationMs: 5_000))
    try e.start(.elapsed(id: "e", title: "E"), at: t0)
    try e.pause("e", at: at(1_000))
    try e.advance(to: at(5_000))
    #expect(r.lines.last == "5000 ended e 1 maxDuration")
    try e.advance(to: at(5_000 + 4 * 3_600_000))
    #expect(r.lines.last == "\(5_000 + 4 * 3_600_000) dismissed e")
  }

  @Test("enabled = false ends and dismisses everything in start order; starts then fail")
  func disable() throws {
    var (e, r) = makeEngine()
    try e.start(.elapsed(id: "a", title: "A"), at: t0)
    try e.start(.countdown(id: "b", to: at(9_000), title: "B"), at: t0)
    try e.end("b", at: at(500))
    r.clear()
    try e.setEnabled(false, at: at(1_000))
    #expect(
      r.lines == [
        "1000 tick a 1", "1000 ended a 1 disabled", "1000 dismissed a", "1000 dismissed b",
      ])
    #expect(errorCode { try e.start(.elapsed(id: "c", title: "C"), at: at(1_000)) } == .disabled)
    try e.setEnabled(true, at: at(2_000))
    try e.start(.elapsed(id: "c", title: "C"), at: at(2_000))
  }

  @Test("maxActivities: a start beyond it is limitReached")
  func limit() throws {
    var (e, _) = makeEngine(EngineOptions(maxActivities: 1))
    try e.start(.elapsed(id: "a", title: "A"), at: t0)
    #expect(errorCode { try e.start(.elapsed(id: "b", title: "B"), at: t0) } == .limitReached)
  }

  @Test("An update with an older timestamp is outOfOrder and changes nothing")
  func outOfOrder() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "c", to: at(60_000), title: "C"), at: t0)
    try e.update("c", ActivityUpdate(endDate: at(30_000), timestamp: at(-1_000)), at: at(1_000))
    #expect(
      errorCode {
        try e.update("c", ActivityUpdate(endDate: at(90_000), timestamp: at(-2_000)), at: at(2_000))
      } == .outOfOrder)
    #expect(try e.state(of: "c", at: at(2_000)).endDate == at(30_000))
    #expect(r.lines([.updated]) == ["1000 updated c"])
    // Equal is not older.
    try e.update("c", ActivityUpdate(endDate: at(40_000), timestamp: at(-1_000)), at: at(3_000))
  }

  @Test("Merge patch: null removes, objects merge, title cannot be removed")
  func mergePatch() throws {
    var (e, _) = makeEngine()
    let content = ActivityContent(
      title: "T", subtitle: "S", color: "#112233", fields: ["a": .int(1), "b": .string("x")])
    try e.start(ActivityRequest(id: "x", kind: .elapsed, content: content), at: t0)
    try e.update(
      "x",
      ActivityUpdate(content: [
        "subtitle": .null, "fields": .object(["a": .null, "c": .bool(true)]),
      ]),
      at: at(1))
    let c = try e.content(of: "x")
    #expect(c.subtitle == nil && c.title == "T" && c.color == "#112233")
    #expect(c.fields == ["b": .string("x"), "c": .bool(true)])
    #expect(
      errorCode { try e.update("x", ActivityUpdate(content: ["title": .null]), at: at(2)) }
        == .invalidPayload)
  }

  @Test("The typed merge equals RFC 7396 on the content's JSON, then init(json:), errors too")
  func mergeMatchesJSONMergePatch() async throws {
    try await onThread(computing: true) {
      var g = RandomRun(seed: testSeed())
      func pick<T>(_ xs: [T]) -> T { xs[Int(g.rand(0...Int64(xs.count - 1)))] }
      func scalar() -> JSONValue {
        pick([
          .null, .string("x"), .string("#A1B2C3"), .string("#a1b2c3d4"), .string("red"), .int(7),
          .double(2.5), .double(.infinity), .bool(true), .array([.int(1)]),
        ])
      }
      func value(_ depth: Int) -> JSONValue {
        guard depth < 2, g.chance(0.3) else { return scalar() }
        var o: [String: JSONValue] = [:]
        for _ in 0..<g.rand(0...3) { o[pick(["a", "b", "c"])] = value(depth + 1) }
        return .object(o)
      }
      func content() -> ActivityContent {
        var fields: [String: JSONValue] = [:]
        for _ in 0..<g.rand(0...2) { fields[pick(["a", "b"])] = pick([.int(1), .string("s")]) }
        return ActivityContent(
          title: pick(["T", "Gate B12"]), subtitle: g.chance(0.5) ? "S" : nil,
          alertMessage: g.chance(0.3) ? "A" : nil, color: g.chance(0.5) ? "#112233" : nil,
          fields: fields, relevance: g.chance(0.4) ? 0.5 : nil)
      }
      let names = [
        "title", "subtitle", "alertMessage", "color", "fields", "relevance", "extra", "Title",
      ]
      var outcomes: [String: Int] = [:]
      for _ in 0..<20_000 {
        let c = content()
        var patch: [String: JSONValue] = [:]
        for _ in 0..<g.rand(0...4) { patch[pick(names)] = value(0) }
        // The reference: the patch applied to the JSON object, read back by init(json:).
        let expected = Result { () throws(CountdownError) -> ActivityContent in
          for key in patch.keys where !ActivityContent.keys.contains(key) {
            throw .payload("\(key) is not a content field")
          }
          if case .null? = patch["title"] { throw .payload("title cannot be removed") }
          guard case .object(var merged) = c.json else { return c }
          MergePatch.apply(patch, to: &merged)
          return try ActivityContent(json: merged)
        }
        let got = Result { () throws(CountdownError) in try c.merging(patch: patch) }
        #expect(got == expected, "\(c) + \(patch)")
        switch got {
        case .success: outcomes["ok", default: 0] += 1
        case .failure(let e): outcomes[String(e.message.prefix(12)), default: 0] += 1
        }
      }
      // Successes and each kind of refusal all came up.
      #expect(outcomes["ok", default: 0] > 1_000 && outcomes.count >= 8, "\(outcomes)")
    }
  }

  @Test("Content over 4096 bytes of canonical JSON is attributesTooLarge, with the size")
  func contentLimit() throws {
    var (e, _) = makeEngine()
    // {"title":"…"} is 12 bytes plus the title.
    try e.start(.elapsed(id: "ok", title: String(repeating: "x", count: 4096 - 12)), at: t0)
    do {
      try e.start(.elapsed(id: "big", title: String(repeating: "x", count: 4096 - 11)), at: t0)
      Issue.record("expected attributesTooLarge")
    } catch {
      #expect(error.code == .attributesTooLarge)
      #expect(error.message.contains("4097"))
    }
    #expect(errorCode { _ = try e.state(of: "big", at: t0) } == .notFound)
    #expect(
      errorCode { try e.update("ok", ActivityUpdate(content: ["subtitle": .string("y")]), at: t0) }
        == .attributesTooLarge)
    #expect(try e.content(of: "ok").subtitle == nil)
  }

  @Test("Commands on ended activities are activityEnded; on unknown ids notFound")
  func endedAndUnknown() throws {
    var (e, _) = makeEngine()
    try e.start(.elapsed(id: "e", title: "E"), at: t0)
    try e.end("e", at: at(1))
    #expect(errorCode { try e.pause("e", at: at(2)) } == .activityEnded)
    #expect(errorCode { try e.resume("e", at: at(2)) } == .activityEnded)
    #expect(errorCode { try e.update("e", ActivityUpdate(), at: at(2)) } == .activityEnded)
    #expect(errorCode { try e.end("e", at: at(2)) } == .activityEnded)
    #expect(try e.state(of: "e", at: at(2)).phase == .ended)
    #expect(errorCode { try e.pause("nope", at: at(2)) } == .notFound)
  }

  @Test("Time never moves backwards")
  func backwards() throws {
    var (e, _) = makeEngine()
    try e.advance(to: at(1_000))
    #expect(errorCode { try e.advance(to: at(999)) } == .timeWentBackwards)
    #expect(errorCode { try e.start(.elapsed(title: "x"), at: at(0)) } == .timeWentBackwards)
  }

  @Test("Bad ids, dates and durations are rejected with the right code")
  func badInput() throws {
    var (e, _) = makeEngine()
    #expect(errorCode { try e.start(.elapsed(id: "", title: "x"), at: t0) } == .invalidPayload)
    #expect(
      errorCode { try e.start(.elapsed(id: "a\u{7}b", title: "x"), at: t0) } == .invalidPayload)
    #expect(
      errorCode { try e.start(.elapsed(id: String(repeating: "é", count: 65), title: "x"), at: t0) }
        == .invalidPayload)
    try e.start(.elapsed(id: String(repeating: "é", count: 64), title: "x"), at: t0)
    #expect(
      errorCode {
        try e.start(.countdown(to: Instant(milliseconds: 1_767_225_600), title: "x"), at: t0)
      }
        == .invalidDate)
    var goal = ActivityRequest.elapsed(title: "x")
    goal.goalMs = -1
    #expect(errorCode { try e.start(goal, at: t0) } == .invalidPayload)
    var color = ActivityRequest.elapsed(title: "x")
    color.content.color = "red"
    #expect(errorCode { try e.start(color, at: t0) } == .invalidPayload)
    #expect(e.count == 1)
  }

  @Test(
    "At one instant: by start order, and tick < milestone < stale < expired < ended < dismissed")
  func sameInstantOrdering() throws {
    var (e, r) = makeEngine()
    var a = ActivityRequest.countdown(id: "a", to: at(2_000), title: "A")
    a.milestones = [Milestone(name: "zero", atMs: 0)]
    a.staleDate = at(2_000)
    a.endOnExpiry = .immediate
    var b = ActivityRequest.countdown(id: "b", to: at(2_000), title: "B")
    b.endOnExpiry = .immediate
    let c = ActivityRequest.elapsed(id: "c", from: at(0), title: "C")
    try e.start(b, at: t0)  // b first: started earlier
    try e.start(a, at: t0)
    try e.start(c, at: t0)
    r.clear()
    try e.advance(to: at(2_000))
    #expect(
      r.lines.filter { $0.hasPrefix("2000 ") } == [
        "2000 tick b 0", "2000 expired b", "2000 ended b 0 expired", "2000 dismissed b",
        "2000 tick a 0", "2000 milestone a zero", "2000 stale a", "2000 expired a",
        "2000 ended a 0 expired", "2000 dismissed a", "2000 tick c 2",
      ])
  }

  @Test("Commands apply after every event due at or before their instant")
  func commandsAfterEvents() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "c", to: at(3_000), title: "C"), at: t0)
    try e.pause("c", at: at(2_000))
    #expect(r.lines.suffix(2) == ["2000 tick c 1", "2000 paused c 1"])
  }

  @Test("Progress: countdown from its start, elapsed against its goal, clamped, null otherwise")
  func progress() throws {
    var (e, _) = makeEngine()
    var c = ActivityRequest.countdown(id: "c", to: at(10_000), title: "C")
    c.startDate = at(-10_000)
    try e.start(c, at: t0)
    var g = ActivityRequest.elapsed(id: "g", title: "G")
    g.goalMs = 4_000
    try e.start(g, at: t0)
    try e.start(.elapsed(id: "n", title: "N"), at: t0)
    #expect(try e.state(of: "c", at: at(5_000)).progress == 0.75)
    #expect(try e.state(of: "g", at: at(5_000)).progress == 1)
    #expect(try e.state(of: "n", at: at(5_000)).progress == nil)
    // A pause does not make progress jump on resume.
    try e.pause("c", at: at(5_000))
    try e.resume("c", at: at(9_000))
    #expect(try e.state(of: "c", at: at(9_000)).progress == 0.75)
  }

  @Test("Queries: the k soonest-ending active countdowns, and those ended within a window")
  func queries() throws {
    var (e, _) = makeEngine()
    for (id, end) in [("a", 50_000), ("b", 10_000), ("c", 30_000), ("d", 20_000), ("e", 40_000)] {
      try e.start(.countdown(id: id, to: at(Int64(end)), title: id), at: t0)
    }
    try e.pause("d", at: at(1))
    #expect(try e.soonestEnding(2, at: at(2)).map(\.id) == ["b", "c"])
    #expect(try e.soonestEnding(10, at: at(2)).map(\.id) == ["b", "c", "e", "a"])
    try e.end("e", at: at(3_000))
    try e.end("a", at: at(5_000))
    try e.advance(to: at(12_000))
    #expect(e.ended(within: at(0)...at(4_000)).map(\.id) == ["e"])
    #expect(e.ended(within: at(0)...at(20_000)).map(\.id) == ["e", "a"])
    #expect(try e.soonestEnding(10, at: at(12_000)).map(\.id) == ["c"])
  }

  @Test("Update of a paused countdown re-anchors the pause at the update instant")
  func updateWhilePaused() throws {
    var (e, r) = makeEngine()
    try e.start(.countdown(id: "c", to: at(60_000), title: "C"), at: t0)
    try e.pause("c", at: at(10_000))
    try e.update("c", ActivityUpdate(endDate: at(40_000)), at: at(20_000))
    #expect(try e.state(of: "c", at: at(25_000)).value == 20)
    try e.resume("c", at: at(30_000))
    #expect(try e.state(of: "c", at: at(30_000)).endDate == at(50_000))
    _ = r
  }

  @Test("Without deliversTicks no tick is produced, and every other event is the same")
  func noTicksMode() throws {
    func run(_ ticks: Bool) throws -> [String] {
      var (e, r) = makeEngine(EngineOptions(deliversTicks: ticks))
      var a = ActivityRequest.countdown(id: "a", to: at(5_500), title: "A")
      a.milestones = [Milestone(name: "m", atMs: 2_000)]
      a.endOnExpiry = .immediate
      try e.start(a, at: t0)
      try e.start(.elapsed(id: "b", from: at(3_000), title: "B"), at: t0)
      try e.pause("b", at: at(4_200))
      try e.advance(to: at(10_000))
      return r.lines.filter { !$0.contains(" tick ") }
    }
    #expect(try run(true) == run(false))
  }

  @Test("Generated ids are UUIDs, deterministic for a seed")
  func generatedIDs() throws {
    var (e1, _) = makeEngine(EngineOptions(idSeed: 7))
    var (e2, _) = makeEngine(EngineOptions(idSeed: 7))
    let a = try e1.start(.elapsed(title: "x"), at: t0)
    let b = try e2.start(.elapsed(title: "x"), at: t0)
    #expect(a == b)
    #expect(a.utf8.count == 36 && Array(a)[14] == "4")
  }

  @Test("Handles are generation-checked: a dismissed activity's handle stops matching")
  func handles() throws {
    var (e, _) = makeEngine()
    try e.start(.elapsed(id: "a", title: "A"), at: t0)
    let h = try #require(e.handle(for: "a"))
    #expect(e.id(of: h) == "a")
    try e.end("a", ActivityEnding(dismissal: .immediate), at: t0)
    #expect(e.id(of: h) == nil)
    try e.start(.elapsed(id: "b", title: "B"), at: t0)
    let h2 = try #require(e.handle(for: "b"))
    #expect(h2.slot == h.slot && h2.generation != h.generation && e.id(of: h) == nil)
  }
}

@Suite("ActivityEngine.apply: one operation, one place")
struct EngineApplyTests {
  @Test("Each operation through apply; an operation that needs an id and has none is refused")
  func apply() throws {
    let t = t0
    var e = ActivityEngine(now: t)
    let started = try e.apply(
      .start(.countdown(to: t.advanced(by: 60_000), title: "Gate")), id: "g", at: t)
    #expect(started == .started(id: "g"))
    #expect(try e.apply(.pause(timestamp: nil), id: "g", at: t.advanced(by: 500)) == .done)
    guard case .state(let s) = try e.apply(.get, id: "g", at: t.advanced(by: 900)) else {
      Issue.record("get gave no state")
      return
    }
    #expect(s.phase == .paused && s.value == 60)
    #expect(throws: CountdownError.payload(#"this operation needs an "id""#)) {
      _ = try e.apply(.end(ActivityEnding()), id: nil, at: t.advanced(by: 900))
    }
    #expect(e.activities().first?.phase == .paused, "the refused end changed the activity")
    // configure: the clock first, then each setting; `.keep` leaves one alone.
    _ = try e.apply(
      .configure(enabled: nil, maxActivities: .set(1), maxActiveDurationMs: .keep), id: nil,
      at: t.advanced(by: 2_000))
    #expect(e.now == t.advanced(by: 2_000) && e.options.maxActivities == 1)
    _ = try e.apply(
      .configure(enabled: false, maxActivities: .remove, maxActiveDurationMs: .keep), id: nil,
      at: t.advanced(by: 2_000))
    #expect(e.options.maxActivities == nil && !e.options.enabled)
  }
}
