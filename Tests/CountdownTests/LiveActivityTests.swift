// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Testing

/// `liveActivity` on start and update (docs/pushes.md): checked, merge-patched, kept through
/// a snapshot, and refused with a typed error naming the member while nothing changes.
@Suite("LiveActivity")
struct LiveActivityTests {
  /// A start line with `liveActivity`, decoded as the wire decodes it.
  func start(_ live: String, id: String = "gate", extra: String = "") throws -> ActivityRequest {
    let line =
      #"{"at":1795248000000,"op":"start","id":"\#(id)","kind":"countdown","endDate":1795248600000,"title":"Gate B12"\#(extra),"liveActivity":\#(live)}"#
    guard case .success(let c) = WireCommand.decode(line: line) else {
      throw CountdownError.payload("not decoded: \(line)")
    }
    guard case .start(let r) = c.operation else { throw CountdownError.payload("not a start") }
    return r
  }

  func decodeError(_ line: String) -> String? {
    guard case .failure(let f) = WireCommand.decode(line: line) else { return nil }
    return f.error.message
  }

  @Test("A start keeps it, tokens in lower case; an activity's state and snapshot carry it")
  func kept() throws {
    var (e, _) = makeEngine()
    let r = try start(
      #"{"pushTokens":{"A0B1":true,"ffee":true},"keys":{"startDate":"startedAt"},"priority":10,"sound":"chime.caf"}"#
    )
    try e.start(r, at: t0)
    let live = try #require(try e.state(of: "gate", at: t0).liveActivity)
    #expect(live.pushTokens == ["a0b1", "ffee"] && live.startTokens.isEmpty)
    #expect(live.keys == ["startDate": "startedAt"] && live.priority == 10)
    #expect(live.dateEncoding == .reference && live.sound == "chime.caf")
    let restored = try ActivityEngine(restoring: e.snapshot())
    #expect(restored.activities().first?.liveActivity == live)
    #expect(live.object["pushTokens"] == .object(["a0b1": .bool(true), "ffee": .bool(true)]))
  }

  @Test("An update merge-patches it: a token added, one removed by null in any case, all by null")
  func patched() throws {
    var (e, _) = makeEngine()
    try e.start(try start(#"{"pushTokens":{"aa11":true,"bb22":true}}"#), at: t0)
    func update(_ patch: String) throws {
      let line = #"{"at":1795248001000,"op":"update","id":"gate","liveActivity":\#(patch)}"#
      guard case .success(let c) = WireCommand.decode(line: line),
        case .update(let u) = c.operation
      else { throw CountdownError.payload("not decoded") }
      try e.update("gate", u, at: at(1_000))
    }
    try update(#"{"pushTokens":{"CC33":true,"AA11":null},"dateEncoding":"iso8601"}"#)
    var live = try #require(e.activities().first?.liveActivity)
    #expect(live.pushTokens == ["bb22", "cc33"] && live.dateEncoding == .iso8601)
    try update(
      #"{"attributesType":"Gate","attributes":{"gate":"B12"},"startTokens":{"dd44":true}}"#)
    live = try #require(e.activities().first?.liveActivity)
    #expect(live.startTokens == ["dd44"] && live.attributesType == "Gate")
    try update("null")
    #expect(e.activities().first?.liveActivity == nil)
  }

  @Test("Bad liveActivity: a typed error naming the member, and nothing changes")
  func refused() throws {
    let base =
      #"{"at":1795248000000,"op":"start","id":"g","kind":"countdown","endDate":1795248600000,"title":"G","liveActivity":"#
    let cases: [(String, String)] = [
      (#"{"pushTokens":{"xyz":true}}"#, #"liveActivity.pushTokens: "xyz" is not a hex token"#),
      (#"{"pushTokens":{"abc":true}}"#, "is not a hex token"),  // odd length
      (#"{"pushTokens":{"ab12":false}}"#, "liveActivity.pushTokens.ab12 must be true"),
      (#"{"pushTokens":["ab12"]}"#, "liveActivity.pushTokens must be an object"),
      (
        #"{"startTokens":{"ab12":true}}"#,
        "liveActivity.startTokens needs liveActivity.attributesType"
      ),
      (
        #"{"startTokens":{"ab12":true},"attributesType":"G"}"#,
        "needs liveActivity.attributesType and liveActivity.attributes"
      ),
      (
        #"{"dateEncoding":"julian"}"#,
        #"liveActivity.dateEncoding must be one of reference, unix, unixMs, iso8601, not "julian""#
      ),
      (#"{"priority":7}"#, "liveActivity.priority must be 5 or 10, not 7"),
      (#"{"sound":""}"#, #"liveActivity.sound must be a sound file's name or "default""#),
      (
        #"{"sound":3}"#,
        "liveActivity.sound must be a sound file's name or \"default\" (1 to 256 bytes), not 3"
      ),
      (#"{"sound":"\#(String(repeating: "s", count: 257))"}"#, "liveActivity.sound must be"),
      (#"{"keys":{"endDate":3}}"#, "liveActivity.keys.endDate must be the new key's name"),
      (#"{"tokens":{}}"#, "liveActivity.tokens is not a member of liveActivity"),
      ("[1]", "liveActivity must be an object, not array"),
    ]
    for (live, message) in cases {
      let error = decodeError(base + live + "}")
      #expect(error?.contains(message) == true, "\(live): \(error ?? "accepted")")
    }
    // Too many tokens.
    let many = (0..<101).map {
      #""\#(String($0, radix: 16).count % 2 == 0 ? String($0, radix: 16) : "0" + String($0, radix: 16))":true"#
    }
    let error = decodeError(base + "{\"pushTokens\":{\(many.joined(separator: ","))}}}")
    #expect(error?.contains("has 101 tokens; at most 100") == true, "\(error ?? "accepted")")

    // An update's bad patch changes nothing, the content it came with included.
    var (e, _) = makeEngine()
    try e.start(try start(#"{"pushTokens":{"aa11":true}}"#), at: t0)
    var u = ActivityUpdate(content: ["title": .string("Changed")])
    u.liveActivity = .object(["priority": .int(3)])
    #expect(errorCode { try e.update("gate", u, at: at(1_000)) } == .invalidPayload)
    let state = try e.state(of: "gate", at: at(1_000))
    #expect(state.contentJSON == #"{"title":"Gate B12"}"#)
    #expect(state.liveActivity?.priority == 5)
  }

  @Test(
    "liveActivity.channel: \"create\" or a base64 id (which is the channelId at once); channelId is the server's; channel fixed after the start"
  )
  func channel() throws {
    let made = try LiveActivity(object: ["channel": .string("create")])
    #expect(made.channel == "create" && made.channelId == nil && made.ownsChannel)
    let own = try LiveActivity(object: ["channel": .string("QUJDRA==")])
    #expect(own.channelId == "QUJDRA==" && !own.ownsChannel)
    #expect(own.object["channelId"] == .string("QUJDRA=="))
    for bad: JSONValue in [
      .string("nope!"), .string("abc"), .string("QUJ=RA=="), .string(""), .int(5),
      .string(String(repeating: "A", count: 260)),
    ] {
      #expect(throws: CountdownError.self) { try LiveActivity(object: ["channel": bad]) }
    }
    // A request may not set channelId; a stored row may.
    #expect(throws: CountdownError.self) {
      try LiveActivity(object: ["channel": .string("create"), "channelId": .string("QUJDRA==")])
    }
    var stored = try LiveActivity(
      object: ["channel": .string("create"), "channelId": .string("QUJDRA==")], stored: true)
    #expect(stored.channelId == "QUJDRA==")
    // Patches keep it, may repeat it, may not change it or the channel.
    stored = try #require(
      try LiveActivity.patched(stored, with: .object(["pushTokens": .object(["aa": .bool(true)])])))
    #expect(stored.channelId == "QUJDRA==" && stored.pushTokens == ["aa"])
    _ = try LiveActivity.patched(stored, with: .object(["channelId": .string("QUJDRA==")]))
    #expect(throws: CountdownError.self) {
      try LiveActivity.patched(stored, with: .object(["channelId": .string("RUZHSA==")]))
    }
    #expect(throws: CountdownError.self) {
      try LiveActivity.patched(stored, with: .object(["channel": .string("RUZHSA==")]))
    }
    #expect(throws: CountdownError.self) {
      try LiveActivity.patched(nil, with: .object(["channel": .string("create")]))
    }
    // Through the engine: the server's own change sets it, with an `updated` event; a request
    // cannot; an activity without a channel cannot take one.
    let r = Recorder()
    var e = ActivityEngine(now: t0) { r.events.append($0) }
    var start = ActivityRequest.countdown(id: "g", to: at(600_000), title: "G")
    start.liveActivity = made
    try e.start(start, at: t0)
    var named = ActivityUpdate()
    named.channelID = .some("QUJDRA==")
    try e.update("g", named, at: at(1_000))
    #expect(r.events.last?.kind == .updated)
    #expect(try e.state(of: "g", at: at(1_000)).liveActivity?.channelId == "QUJDRA==")
    #expect(throws: CountdownError.self) {
      try e.update(
        "g", ActivityUpdate(liveActivity: .object(["channelId": .string("RUZHSA==")])),
        at: at(2_000))
    }
    #expect(try e.state(of: "g", at: at(2_000)).liveActivity?.channelId == "QUJDRA==")
    try e.start(.countdown(id: "plain", to: at(600_000), title: "P"), at: at(2_000))
    #expect(throws: CountdownError.self) { try e.update("plain", named, at: at(3_000)) }
  }

  @Test("A push that could pass 4096 bytes is refused at the command: attributesTooLarge")
  func payloadLimit() throws {
    var (e, _) = makeEngine()
    // 3000 bytes of attributes: the content alone is small, the start push is not.
    let big = String(repeating: "x", count: 3_000)
    let live = LiveActivity(
      startTokens: ["ab12"], attributesType: "G", attributes: ["note": .string(big)])
    var r = ActivityRequest.countdown(id: "g", to: at(600_000), title: "G")
    r.content.subtitle = String(repeating: "s", count: 1_000)
    r.liveActivity = live
    #expect(errorCode { try e.start(r, at: t0) } == .attributesTooLarge)
    #expect(e.count == 0)
    // Without the start token the start push is not sent, and the rest fits.
    r.liveActivity = LiveActivity(pushTokens: ["ab12"])
    try e.start(r, at: t0)
    // An update whose content would make the update push too large: refused, nothing changed.
    let u = ActivityUpdate(content: ["alertMessage": .string(String(repeating: "a", count: 3_000))])
    #expect(errorCode { try e.update("g", u, at: at(1_000)) } == .attributesTooLarge)
    #expect(try e.content(of: "g").alertMessage == nil)
    // Milestones an update sets are measured too: a long name is in every later push.
    var m = ActivityUpdate()
    m.milestones = .set([Milestone(name: String(repeating: "m", count: 3_500), atMs: 1_000)])
    #expect(errorCode { try e.update("g", m, at: at(1_000)) } == .attributesTooLarge)
    #expect(try e.state(of: "g", at: at(1_000)).nextMilestone == nil)
    // The same content without a Live Activity is only held to the content's own limit.
    var plain = ActivityRequest.countdown(id: "p", to: at(600_000), title: "P")
    plain.content.subtitle = String(repeating: "s", count: 1_000)
    try e.start(plain, at: at(1_000))
    try e.update("p", u, at: at(1_000))
  }
}
