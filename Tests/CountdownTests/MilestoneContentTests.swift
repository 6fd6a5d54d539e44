// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Testing

/// docs/activities.md, "Milestone content": a timeline whose content changes at its own
/// instants, applied by the engine.
@Suite("Milestone content")
struct MilestoneContentTests {
  static func phase(_ p: String, subtitle: String? = nil) -> [String: JSONValue] {
    var patch: [String: JSONValue] = ["fields": .object(["phase": .string(p)])]
    if let subtitle { patch["subtitle"] = .string(subtitle) }
    return patch
  }

  /// A medication timeline: taken, kicking in at 20 min, peaking at 45, wearing off at 3 h.
  static func medication() -> ActivityRequest {
    var r = ActivityRequest.elapsed(id: "dose", from: t0, title: "Ibuprofen 400 mg")
    r.content.fields = ["phase": .string("taken")]
    r.milestones = [
      Milestone(name: "peaking", atMs: 2_700_000, content: phase("peaking", subtitle: "Peak")),
      Milestone(name: "kicking-in", atMs: 1_200_000, content: phase("kicking in")),
      Milestone(name: "wearing-off", atMs: 10_800_000, content: phase("wearing off")),
      Milestone(name: "note", atMs: 3_000_000),
    ]
    return r
  }

  @Test("Each patch applies at its milestone's instant; the event carries the content")
  func timeline() throws {
    var (e, r) = makeEngine(EngineOptions(deliversTicks: false))
    try e.start(Self.medication(), at: t0)
    #expect(try e.content(of: "dose").fields["phase"] == .string("taken"))
    try e.advance(to: at(1_199_999))
    #expect(try e.content(of: "dose").fields["phase"] == .string("taken"))
    try e.advance(to: at(1_200_000))
    #expect(try e.content(of: "dose").fields["phase"] == .string("kicking in"))
    try e.advance(to: at(11_000_000))
    #expect(
      r.lines(Set([.milestone])) == [
        #"1200000 milestone dose kicking-in {"fields":{"phase":"kicking in"},"title":"Ibuprofen 400 mg"}"#,
        #"2700000 milestone dose peaking {"fields":{"phase":"peaking"},"subtitle":"Peak","title":"Ibuprofen 400 mg"}"#,
        "3000000 milestone dose note",
        #"10800000 milestone dose wearing-off {"fields":{"phase":"wearing off"},"subtitle":"Peak","title":"Ibuprofen 400 mg"}"#,
      ])
    // No `updated` event: the milestone says it.
    #expect(r.lines(Set([.updated])).isEmpty)
    let s = try e.state(of: "dose", at: at(11_000_000))
    #expect(s.contentJSON.contains(#""phase":"wearing off""#) && s.lastMilestone == "wearing-off")
  }

  @Test("Paused, the phase waits; restored from a snapshot, the same content at the same instants")
  func pauseAndRestore() throws {
    var (e, r) = makeEngine(EngineOptions(deliversTicks: false))
    try e.start(Self.medication(), at: t0)
    try e.pause("dose", at: at(1_000_000))
    try e.advance(to: at(1_300_000))
    #expect(try e.content(of: "dose").fields["phase"] == .string("taken"))
    try e.resume("dose", at: at(1_300_000))
    let snapshot = e.snapshot()
    let again = Recorder()
    var restored = try ActivityEngine(restoring: snapshot) { again.events.append($0) }
    try e.advance(to: at(3_500_000))
    try restored.advance(to: at(3_500_000))
    #expect(again.lines == Array(r.lines.suffix(again.lines.count)))
    #expect(again.lines.first?.hasPrefix("1500000 milestone dose kicking-in {") == true)
    #expect(try restored.content(of: "dose") == e.content(of: "dose"))
    #expect(try restored.content(of: "dose").subtitle == "Peak")
  }

  @Test("A bad patch is refused when given, naming the milestone, and nothing changes")
  func refused() throws {
    var e = makeEngine().0
    let unknown = refusal(
      &e,
      [
        Milestone(name: "a", atMs: 5), Milestone(name: "b", atMs: 1, content: ["colour": .int(1)]),
      ])
    #expect(unknown.0 == .invalidPayload)
    #expect(
      unknown.1 == "milestones[1].content, applied when it fires: colour is not a content field")
    let untitled = refusal(&e, [Milestone(name: "a", atMs: 5, content: ["title": .null])])
    #expect(untitled.0 == .invalidPayload && untitled.1.contains("title cannot be removed"))
    let badColor = refusal(&e, [Milestone(name: "a", atMs: 5, content: ["color": .string("red")])])
    #expect(badColor.0 == .invalidPayload && badColor.1.hasPrefix("milestones[0].content"))
    // Two patches that fit alone but not together: the limit holds for what the second makes.
    let half = String(repeating: "x", count: 2_100)
    let big = refusal(
      &e,
      [
        Milestone(name: "one", atMs: 5, content: ["fields": .object(["a": .string(half)])]),
        Milestone(name: "two", atMs: 9, content: ["fields": .object(["b": .string(half)])]),
      ])
    #expect(big.0 == .attributesTooLarge && big.1.hasPrefix("milestones[1].content"))
    #expect(e.count == 0)

    // On a running one: an update whose content would make a pending patch overflow.
    var r = ActivityRequest.elapsed(id: "x", title: "X")
    r.milestones = [Milestone(name: "one", atMs: 60_000, content: ["subtitle": .string(half)])]
    try e.start(r, at: t0)
    let before = e.stored("x")
    let u = ActivityUpdate(content: ["fields": .object(["b": .string(half)])])
    do throws(CountdownError) {
      try e.update("x", u, at: t0)
      Issue.record("the update should be refused")
    } catch {
      #expect(error.code == .attributesTooLarge)
      #expect(error.message.hasPrefix(#"the content of milestone "one", applied when it fires"#))
    }
    #expect(e.stored("x") == before)
    // At its instant the patch applies.
    try e.advance(to: at(60_000))
    #expect(try e.content(of: "x").subtitle == half)
  }
}

/// The code and message with which starting an elapsed timer with milestones `m` is refused.
private func refusal(_ e: inout ActivityEngine, _ m: [Milestone]) -> (CountdownError.Code?, String)
{
  var r = ActivityRequest.elapsed(id: "x", title: "X")
  r.milestones = m
  do throws(CountdownError) {
    try e.start(r, at: t0)
    return (nil, "")
  } catch {
    return (error.code, error.message)
  }
}
