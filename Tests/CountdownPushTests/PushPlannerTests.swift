// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownPush

/// The planner over a real engine's events and stored rows, wake by wake, on a virtual clock.
@Suite("PushPlanner")
struct PushPlannerTests {
  /// An engine whose wakes are planned as the store's writer would plan them.
  struct Harness {
    var engine: ActivityEngine
    var recorder = Recorder()
    var planner = PushPlanner()
    var seen = 0

    init() {
      let r = Recorder()
      recorder = r
      engine = ActivityEngine(now: t0) { r.events.append($0) }
    }

    /// The pushes of the events since the last wake, decided at `now` (ms after t0).
    mutating func wake(now: Int64) -> [PushOperation] {
      let events = recorder.events[seen...].map {
        PushPlanner.Event(kind: $0.kind, at: $0.at.milliseconds, id: $0.id)
      }
      seen = recorder.events.count
      let rows = engine.snapshot(of: Set(events.map(\.id))).activities
      return planner.plan(
        events, rows: Dictionary(uniqueKeysWithValues: rows.map { ($0.id, $0) }),
        now: t0.milliseconds + now)
    }
  }

  func aps(_ item: PushItem) throws -> [String: Any] {
    let o = try #require(JSONSerialization.jsonObject(with: Data(item.payload)) as? [String: Any])
    return try #require(o["aps"] as? [String: Any])
  }

  let live = LiveActivity(
    pushTokens: ["aa01", "bb02"], startTokens: ["cc03"], attributesType: "GateAttributes",
    attributes: ["gate": .string("B12")])

  @Test("A start pushes start to the start tokens; updates in one second coalesce, the latest wins")
  func startAndUpdates() throws {
    var h = Harness()
    var r = ActivityRequest.countdown(id: "gate", to: at(600_000), title: "Gate B12")
    r.liveActivity = live
    try h.engine.start(r, at: at(100))
    let started = h.wake(now: 101)
    #expect(started.count == 1)
    let s = started[0].item
    #expect(started[0] == .add(s) && s.token == "cc03" && s.event == .start && s.priority == 10)
    #expect(s.timestamp == t0.milliseconds / 1000 && s.notBefore == t0.milliseconds + 100)
    #expect(try aps(s)["attributes-type"] as? String == "GateAttributes")
    // Two updates in the same second: each token's first goes at once; the rest of the
    // second is one push at the next second, replaced by the latest.
    try h.engine.update(
      "gate", ActivityUpdate(content: ["subtitle": .string("Boarding")]), at: at(200))
    let first = h.wake(now: 201)
    #expect(first.map(\.item.token) == ["aa01", "bb02"])
    #expect(first.allSatisfy { if case .add = $0 { true } else { false } })
    #expect(first.allSatisfy { $0.item.priority == 5 && $0.item.event == .update })
    try h.engine.update(
      "gate", ActivityUpdate(content: ["alertMessage": .string("Gate closes soon")]), at: at(300))
    let second = h.wake(now: 301)
    #expect(second.count == 2 && second.allSatisfy { $0.item.notBefore == t0.milliseconds + 1_000 })
    #expect(second.allSatisfy { $0.item.timestamp == t0.milliseconds / 1000 + 1 })
    // It alerts: the alert message changed.
    #expect(try aps(second[0].item)["alert"] != nil)
    try h.engine.update(
      "gate", ActivityUpdate(content: ["subtitle": .string("Final call")]), at: at(600))
    let third = h.wake(now: 601)
    #expect(third.allSatisfy { if case .replace = $0 { true } else { false } })
    let replaced = try aps(third[0].item)
    #expect(replaced["timestamp"] as? Int64 == t0.milliseconds / 1000 + 1)
    #expect((replaced["content-state"] as? [String: Any])?["subtitle"] as? String == "Final call")
    // The replacement keeps the alert of the push it replaces.
    #expect(replaced["alert"] != nil)
  }

  @Test("Pause, resume and milestones are urgent; ticks, stale and expiry push nothing")
  func urgencyAndSilence() throws {
    var h = Harness()
    var r = ActivityRequest.countdown(id: "gate", to: at(3_000), title: "Gate")
    r.liveActivity = LiveActivity(pushTokens: ["aa01"])
    r.staleDate = at(1_500)
    r.milestones = [Milestone(name: "soon", atMs: 2_000)]
    try h.engine.start(r, at: t0)
    #expect(h.wake(now: 0).isEmpty, "no start tokens: nothing at start")
    try h.engine.advance(to: at(1_600))  // a tick, the milestone at 1 s, stale at 1.5 s
    let m = h.wake(now: 1_600)
    #expect(m.count == 1 && m[0].item.priority == 10, "the milestone alone pushes")
    #expect(
      (try aps(m[0].item)["content-state"] as? [String: Any])?["milestone"] as? String == "soon")
    try h.engine.pause("gate", at: at(2_500))
    let p = h.wake(now: 2_500)
    #expect(p.count == 1 && p[0].item.priority == 10)
    #expect((try aps(p[0].item)["content-state"] as? [String: Any])?["isPaused"] as? Bool == true)
    try h.engine.advance(to: at(9_000))
    #expect(h.wake(now: 9_000).isEmpty, "paused: no ticks, no expiry")
  }

  @Test("An end with an immediate dismissal pushes end with its dismissal date; then forgotten")
  func endImmediate() throws {
    var h = Harness()
    var r = ActivityRequest.countdown(id: "gate", to: at(600_000), title: "Gate")
    r.liveActivity = LiveActivity(pushTokens: ["aa01"])
    try h.engine.start(r, at: t0)
    _ = h.wake(now: 0)
    try h.engine.end("gate", ActivityEnding(dismissal: .immediate), at: at(5_000))
    let ops = h.wake(now: 5_000)
    #expect(ops.count == 1)
    let end = try aps(ops[0].item)
    #expect(ops[0].item.event == .end && ops[0].item.priority == 10)
    #expect(end["dismissal-date"] as? Int64 == (t0.milliseconds + 5_000) / 1000)
    #expect((end["content-state"] as? [String: Any])?["phase"] as? String == "ended")
    #expect(h.planner.budget.count == 0, "dismissed: its budget is forgotten")
    // A default dismissal carries no date; an `after` its own.
    var g = Harness()
    try g.engine.start(r, at: t0)
    try g.engine.end("gate", ActivityEnding(), at: at(1_000))
    #expect(try aps(g.wake(now: 1_000)[0].item)["dismissal-date"] == nil)
    var a = Harness()
    try a.engine.start(r, at: t0)
    try a.engine.end("gate", ActivityEnding(dismissal: .after(at(61_000))), at: at(2_000))
    let after = try aps(a.wake(now: 2_000)[0].item)
    #expect(after["dismissal-date"] as? Int64 == (t0.milliseconds + 61_000) / 1000)
  }

  @Test("An activity without a Live Activity, or whose tokens were removed, pushes nothing")
  func nothingWithoutTokens() throws {
    var h = Harness()
    try h.engine.start(.countdown(id: "plain", to: at(60_000), title: "P"), at: t0)
    try h.engine.pause("plain", at: at(100))
    #expect(h.wake(now: 100).isEmpty)
    var r = ActivityRequest.countdown(id: "gate", to: at(60_000), title: "G")
    r.liveActivity = LiveActivity(pushTokens: ["aa01"])
    try h.engine.start(r, at: at(200))
    _ = h.wake(now: 200)
    var u = ActivityUpdate()
    u.liveActivity = .null
    try h.engine.update("gate", u, at: at(3_000))
    try h.engine.pause("gate", at: at(4_000))
    #expect(h.wake(now: 4_000).isEmpty)
  }

  @Test(
    "A token that joins late gets the activity as it is now: a pause before it came, in one urgent update; a token removed, nothing"
  )
  func lateToken() throws {
    var h = Harness()
    var r = ActivityRequest.countdown(id: "g", to: at(600_000), title: "G")
    r.liveActivity = LiveActivity(
      startTokens: ["cc03"], attributesType: "GateAttributes", attributes: ["gate": .string("B")])
    try h.engine.start(r, at: at(100))
    #expect(h.wake(now: 101).map(\.item.event) == [.start])
    // Paused before the phone's update token came: no token to push to.
    try h.engine.pause("g", at: at(1_000))
    #expect(h.wake(now: 1_001).isEmpty)
    try h.engine.update(
      "g", ActivityUpdate(liveActivity: .object(["pushTokens": .object(["aa01": .bool(true)])])),
      at: at(2_500))
    let caughtUp = h.wake(now: 2_501)
    #expect(caughtUp.count == 1)
    let push = try #require(caughtUp.first?.item)
    #expect(push.token == "aa01" && push.event == .update && push.priority == 10)
    let state = try #require(try aps(push)["content-state"] as? [String: Any])
    #expect(state["isPaused"] as? Bool == true && state["phase"] as? String == "paused")
    // A second token: it alone gets the catch-up; removing one pushes nothing.
    try h.engine.update(
      "g", ActivityUpdate(liveActivity: .object(["pushTokens": .object(["bb02": .bool(true)])])),
      at: at(4_000))
    #expect(h.wake(now: 4_001).map(\.item.token) == ["bb02"])
    try h.engine.update(
      "g", ActivityUpdate(liveActivity: .object(["pushTokens": .object(["aa01": .null])])),
      at: at(5_000))
    #expect(h.wake(now: 5_001).isEmpty)
    // After a restart the planner knows the tokens from the rows: a new one is caught up, the
    // ones the rows had are not pushed again.
    var restored = PushPlanner()
    restored.restore(rows: h.engine.snapshot(of: ["g"]).activities, budget: [])
    h.planner = restored
    try h.engine.update(
      "g", ActivityUpdate(liveActivity: .object(["pushTokens": .object(["dd04": .bool(true)])])),
      at: at(6_000))
    #expect(h.wake(now: 6_001).map(\.item.token) == ["dd04"])
  }

  @Test(
    "A channel: made at the start, caught up once APNs named it, one broadcast per change beside the tokens, deleted at the dismissal"
  )
  func channelMadeUsedDeleted() throws {
    var h = Harness()
    h.planner = PushPlanner(channels: true)
    var r = ActivityRequest.countdown(id: "gate", to: at(600_000), title: "Gate 12")
    r.liveActivity = LiveActivity(pushTokens: ["aa01"], channel: LiveActivity.createChannel)
    try h.engine.start(r, at: at(100))
    let started = h.wake(now: 101)
    #expect(started.map(\.item.target) == [.createChannel])
    let create = try #require(started.first?.item)
    #expect(create.activity == "gate" && create.priority == 10 && create.expiration == nil)
    let body = try #require(
      JSONSerialization.jsonObject(with: Data(create.payload)) as? [String: Any])
    #expect(body["message-storage-policy"] as? Int == 1)
    #expect(body["push-type"] as? String == "LiveActivity")
    // Before APNs names the channel, changes go to the token alone.
    try h.engine.update(
      "gate", ActivityUpdate(content: ["title": .string("Gate 13")]), at: at(1_000))
    #expect(h.wake(now: 1_001).map(\.item.target) == [.device("aa01")])
    // The server sets the channel APNs made: the phones that subscribe get the activity as it
    // is, on the channel only (the token has it already).
    var named = ActivityUpdate()
    named.channelID = .some("Q0hBTk5FTA==")
    try h.engine.update("gate", named, at: at(2_000))
    let caughtUp = h.wake(now: 2_001)
    #expect(caughtUp.map(\.item.target) == [.channel("Q0hBTk5FTA==")])
    #expect(caughtUp.first?.item.priority == 10)
    // Each change from now on: one push to the token and one broadcast, the same payload.
    try h.engine.pause("gate", at: at(3_000))
    let paused = h.wake(now: 3_001)
    #expect(paused.map(\.item.target) == [.device("aa01"), .channel("Q0hBTk5FTA==")])
    #expect(paused[0].item.payload == paused[1].item.payload)
    #expect(paused[1].item.expiration == paused[0].item.expiration)
    // The broadcast decodes into the app's state with Foundation, as the phones decode it.
    struct GateState: Decodable {
      var endDate: Date
      var title: String
      var isPaused: Bool
    }
    let aps = try aps(paused[1].item)
    let state = try JSONDecoder().decode(
      GateState.self,
      from: JSONSerialization.data(withJSONObject: try #require(aps["content-state"])))
    #expect(state.title == "Gate 13" && state.isPaused)
    // The end is broadcast too; the dismissal deletes the channel the server made.
    try h.engine.end("gate", ActivityEnding(dismissal: .immediate), at: at(4_000))
    let ended = h.wake(now: 4_001)
    #expect(
      ended.map(\.item.target) == [
        .device("aa01"), .channel("Q0hBTk5FTA=="), .deleteChannel("Q0hBTk5FTA=="),
      ])
    #expect(ended[1].item.event == .end)
  }

  @Test(
    "A caller's channel is used at once and never deleted; without --apns-channels no channel is made or used"
  )
  func callersChannelAndChannelsOff() throws {
    for channels in [true, false] {
      var h = Harness()
      h.planner = PushPlanner(channels: channels)
      var r = ActivityRequest.countdown(id: "m", to: at(600_000), title: "Match")
      r.liveActivity = LiveActivity(
        pushTokens: ["aa01"], startTokens: ["cc03"], attributesType: "A", attributes: [:],
        channel: "T1dO")
      try h.engine.start(r, at: at(100))
      let started = h.wake(now: 101)
      #expect(started.map(\.item.target) == [.device("cc03")])
      // A phone started remotely joins the channel (docs/pushes.md).
      #expect(try aps(started[0].item)["input-push-channel"] as? String == "T1dO")
      try h.engine.pause("m", at: at(1_000))
      #expect(
        h.wake(now: 1_001).map(\.item.target)
          == (channels ? [.device("aa01"), .channel("T1dO")] : [.device("aa01")]))
      try h.engine.end("m", ActivityEnding(dismissal: .immediate), at: at(2_000))
      #expect(
        h.wake(now: 2_001).map(\.item.target)
          == (channels ? [.device("aa01"), .channel("T1dO")] : [.device("aa01")]),
        "the caller's channel is the caller's to delete")
      // "create" without --apns-channels: kept, nothing made.
      var off = Harness()
      off.planner = PushPlanner(channels: channels)
      var c = ActivityRequest.countdown(id: "c", to: at(600_000), title: "C")
      c.liveActivity = LiveActivity(pushTokens: ["aa01"], channel: LiveActivity.createChannel)
      try off.engine.start(c, at: at(100))
      #expect(off.wake(now: 101).map(\.item.target) == (channels ? [.createChannel] : []))
    }
  }

  @Test("An outbox row's token names the target: a device, a channel, a creation or a deletion")
  func targets() {
    let all: [PushTarget] = [
      .device("aa01"), .channel("Q0g="), .createChannel, .deleteChannel("Q0g="),
    ]
    for t in all { #expect(PushTarget(column: t.column) == t) }
    #expect(all.map(\.isManagement) == [false, false, true, true])
    #expect(PushTarget.channel("Q0g=").column == "channel:Q0g=")
  }

  @Test("An update that changes nothing a phone shows pushes nothing; a restored planner goes on")
  func quietUpdatesAndRestore() throws {
    var h = Harness()
    var r = ActivityRequest.countdown(id: "g", to: at(600_000), title: "G")
    r.liveActivity = LiveActivity(pushTokens: ["aa01"])
    try h.engine.start(r, at: at(100))
    #expect(h.wake(now: 101).isEmpty)  // no start tokens
    // A token added: nothing the phone shows changed, so the token that had it gets
    // nothing; the new one gets the activity as it is (the catch-up).
    try h.engine.update(
      "g", ActivityUpdate(liveActivity: .object(["pushTokens": .object(["bb02": .bool(true)])])),
      at: at(2000))
    let added = h.wake(now: 2001)
    #expect(added.map(\.item.token) == ["bb02"] && added.first?.item.event == .update, "\(added)")
    try h.engine.update("g", ActivityUpdate(content: ["title": .string("H")]), at: at(3000))
    let ops = h.wake(now: 3001)
    #expect(ops.map(\.item.token).sorted() == ["aa01", "bb02"])
    let second = t0.milliseconds / 1000 + 3
    #expect(ops.allSatisfy { $0.item.timestamp == second })

    // After a restart: the rows and the budget from the file. A change later in the same
    // second goes at the next one, as it would have without the restart.
    var restored = PushPlanner()
    restored.restore(
      rows: h.engine.snapshot(of: ["g"]).activities,
      budget: [(PushBudget.Key(activity: "g", token: "aa01"), second, at(3000).milliseconds)])
    try h.engine.update("g", ActivityUpdate(content: ["title": .string("I")]), at: at(3500))
    h.seen = h.recorder.events.count - 1
    h.planner = restored
    let after = h.wake(now: 3501)
    let aa = try #require(after.first { $0.item.token == "aa01" })
    #expect(aa == .add(aa.item) && aa.item.timestamp == second + 1)
    #expect(aa.item.notBefore == (second + 1) * 1000)
    // The other token had no budget kept: it goes at once.
    #expect(after.first { $0.item.token == "bb02" }?.item.timestamp == second)
  }

  @Test(
    "apns-expiration: a start and an update at the stale date, else a running countdown's end, else 8 hours; an end at its dismissal"
  )
  func expiration() throws {
    let s0 = t0.milliseconds / 1000
    // A countdown: its start and updates expire at its end (rounded up to a second).
    var h = Harness()
    var r = ActivityRequest.countdown(id: "gate", to: at(600_500), title: "Gate")
    r.liveActivity = live
    try h.engine.start(r, at: t0)
    let start = try #require(h.wake(now: 0).first?.item)
    #expect(start.event == .start && start.expiration == s0 + 601)
    try h.engine.update("gate", ActivityUpdate(content: ["title": .string("B")]), at: at(2_000))
    #expect(h.wake(now: 2_000).map(\.item.expiration) == [s0 + 601, s0 + 601])
    // Paused, it has no end yet: 8 hours after the push's second.
    try h.engine.pause("gate", at: at(4_000))
    #expect(h.wake(now: 4_000).map(\.item.expiration) == [s0 + 4 + 8 * 3600, s0 + 4 + 8 * 3600])
    // With a stale date, that date.
    var u = ActivityUpdate()
    u.staleDate = .set(at(30_000))
    try h.engine.update("gate", u, at: at(6_000))
    #expect(h.wake(now: 6_000).map(\.item.expiration) == [s0 + 30, s0 + 30])
    // An end: its dismissal instant, the default's four hours included.
    try h.engine.end("gate", ActivityEnding(), at: at(8_000))
    #expect(h.wake(now: 8_000).map(\.item.expiration) == [s0 + 8 + 4 * 3600, s0 + 8 + 4 * 3600])
    // An elapsed timer: 8 hours after the push. An immediate dismissal is already past when
    // the push is made: 0, tried once and not kept.
    var e = Harness()
    var w = ActivityRequest.elapsed(id: "walk", from: t0, title: "Walk")
    w.liveActivity = LiveActivity(pushTokens: ["aa01"])
    try e.engine.start(w, at: t0)
    _ = e.wake(now: 0)
    try e.engine.pause("walk", at: at(1_000))
    #expect(e.wake(now: 1_000).map(\.item.expiration) == [s0 + 1 + 8 * 3600])
    try e.engine.end("walk", ActivityEnding(dismissal: .immediate), at: at(3_000))
    #expect(e.wake(now: 3_000).map(\.item.expiration) == [0])
  }

  @Test("Each push has its own apns-id, a version-4 UUID drawn from the planner's seed")
  func apnsIDs() throws {
    func ids(seed: UInt64) throws -> [String] {
      var h = Harness()
      h.planner = PushPlanner(seed: seed)
      var r = ActivityRequest.countdown(id: "gate", to: at(600_000), title: "Gate")
      r.liveActivity = live
      try h.engine.start(r, at: t0)
      try h.engine.pause("gate", at: at(1_000))
      return (h.wake(now: 0) + h.wake(now: 1_000)).map(\.item.apnsID)
    }
    let a = try ids(seed: 7)
    #expect(a.count == 3 && Set(a).count == 3)
    let uuid = /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/
    #expect(a.allSatisfy { $0.wholeMatch(of: uuid) != nil }, "\(a)")
    #expect(try ids(seed: 7) == a)
    #expect(try ids(seed: 8) != a)
  }
}
