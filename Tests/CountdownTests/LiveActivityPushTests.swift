// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Foundation
import Testing

@testable import Countdown

/// The app types the pushes must decode into, as the guides this project follows declare them
/// (a countdown widget to an end date; a walk or recording timer).
private struct CountdownState: Codable {
  var endDate: Date
  var title: String
  var color: String?
  var subtitle: String?
  var alertMessage: String?
}

private struct TimerState: Codable {
  var startedAt: Date?
  var pausedAt: Date?
  var isPaused: Bool
}

/// The content-state and payloads of Live Activity pushes, decoded as ActivityKit decodes them:
/// Foundation's `JSONDecoder` with its default date strategy (seconds since 2001-01-01).
@Suite("LiveActivityPush")
struct LiveActivityPushTests {
  /// 2026-11-21T08:00:00Z.
  let t: Int64 = 1_795_248_000_000

  func contentState<T: Decodable>(_ payload: [UInt8], as: T.Type) throws -> T {
    let o = try #require(JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    let aps = try #require(o["aps"] as? [String: Any])
    let state = try JSONSerialization.data(withJSONObject: try #require(aps["content-state"]))
    return try JSONDecoder().decode(T.self, from: state)
  }

  @Test("A countdown's update decodes into the app's state with the right end date")
  func countdownDecodes() throws {
    let s = LiveActivityPush.Subject(
      kind: .countdown, phase: .active,
      content: [
        "title": .string("Gate B12"), "color": .string("#1E88E5"),
        "fields": .object(["gate": .string("B12")]),
      ],
      endDate: t + 600_500)
    let payload = LiveActivityPush.payload(.update, s, LiveActivity(), at: t + 1_999)
    let state = try contentState(payload, as: CountdownState.self)
    // The default (reference) encoding: the date the phone shows is the activity's end.
    #expect(state.endDate == Date(timeIntervalSince1970: Double(t + 600_500) / 1000))
    #expect(state.title == "Gate B12" && state.color == "#1E88E5" && state.subtitle == nil)
    let o = try #require(JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    let aps = try #require(o["aps"] as? [String: Any])
    #expect(aps["timestamp"] as? Int == Int((t + 1_999) / 1000))
    #expect(aps["event"] as? String == "update" && aps["alert"] == nil)
    let cs = try #require(aps["content-state"] as? [String: Any])
    #expect(cs["gate"] as? String == "B12" && cs["phase"] as? String == "active")
    #expect(cs["isPaused"] as? Bool == false && cs["pausedAt"] is NSNull)
  }

  @Test("An overtime countdown says so in its content-state, and still decodes into the app's")
  func overtimeState() throws {
    let s = LiveActivityPush.Subject(
      kind: .countdown, phase: .active, content: ["title": .string("Keynote")],
      endDate: t + 60_000, overtime: true)
    let payload = LiveActivityPush.payload(.update, s, LiveActivity(), at: t)
    let state = try contentState(payload, as: CountdownState.self)
    #expect(state.endDate == Date(timeIntervalSince1970: Double(t + 60_000) / 1000))
    let o = try #require(JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    let cs = try #require((o["aps"] as? [String: Any])?["content-state"] as? [String: Any])
    #expect(cs["overtime"] as? Bool == true)
    // Without overtime the key is absent (payloads of other activities are as they were).
    var plain = s
    plain.overtime = false
    let other = LiveActivityPush.contentState(plain, LiveActivity())
    #expect(other["overtime"] == nil)
    // The size check counts it.
    let withIt = LiveActivityPush.largestPayload(
      kind: .countdown, content: s.content, milestones: [], staleDate: nil, overtime: true,
      LiveActivity())
    let without = LiveActivityPush.largestPayload(
      kind: .countdown, content: s.content, milestones: [], staleDate: nil, LiveActivity())
    #expect(withIt == without + #","overtime":true"#.utf8.count)
  }

  @Test("Unix seconds there would show a date 31 years late: the reference encoding does not")
  func referenceNotUnix() throws {
    let s = LiveActivityPush.Subject(
      kind: .countdown, phase: .active, content: ["title": .string("T")], endDate: t)
    let unix = LiveActivity(dateEncoding: .unix)
    let wrong = try contentState(
      LiveActivityPush.payload(.update, s, unix, at: t), as: CountdownState.self)
    let years = wrong.endDate.timeIntervalSince1970 - Double(t) / 1000
    #expect(years > 31 * 365 * 86_400 && years < 31.1 * 365 * 86_400)
    let right = try contentState(
      LiveActivityPush.payload(.update, s, LiveActivity(), at: t), as: CountdownState.self)
    #expect(right.endDate.timeIntervalSince1970 == Double(t) / 1000)
  }

  @Test("A paused elapsed timer, renamed startDate to startedAt, decodes with its frozen dates")
  func timerDecodes() throws {
    let config = LiveActivity(keys: ["startDate": "startedAt"])
    let running = LiveActivityPush.Subject(
      kind: .elapsed, phase: .active, content: ["title": .string("Walk")], startDate: t - 90_250)
    let r = try contentState(
      LiveActivityPush.payload(.update, running, config, at: t), as: TimerState.self)
    #expect(r.startedAt == Date(timeIntervalSince1970: Double(t - 90_250) / 1000))
    #expect(r.pausedAt == nil && !r.isPaused)
    let paused = LiveActivityPush.Subject(
      kind: .elapsed, phase: .paused, content: ["title": .string("Walk")], startDate: t - 90_250,
      pausedAt: t)
    let p = try contentState(
      LiveActivityPush.payload(.update, paused, config, at: t), as: TimerState.self)
    #expect(p.isPaused && p.pausedAt == Date(timeIntervalSince1970: Double(t) / 1000))
    // The frozen value the phone shows: pausedAt − startedAt.
    #expect(p.pausedAt!.timeIntervalSince(p.startedAt!) == 90.25)
  }

  @Test("Every date encoding decodes with its JSONDecoder strategy")
  func encodings() throws {
    let end = t + 61_000
    let s = LiveActivityPush.Subject(
      kind: .countdown, phase: .active, content: ["title": .string("T")], endDate: end)
    let cases: [(LiveActivity.DateEncoding, JSONDecoder.DateDecodingStrategy)] = [
      (.reference, .deferredToDate), (.unix, .secondsSince1970),
      (.unixMs, .millisecondsSince1970), (.iso8601, .iso8601),
    ]
    for (encoding, strategy) in cases {
      let payload = LiveActivityPush.payload(
        .update, s, LiveActivity(dateEncoding: encoding), at: t)
      let o = try #require(JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
      let aps = try #require(o["aps"] as? [String: Any])
      let data = try JSONSerialization.data(withJSONObject: try #require(aps["content-state"]))
      let decoder = JSONDecoder()
      decoder.dateDecodingStrategy = strategy
      let state = try decoder.decode(CountdownState.self, from: data)
      #expect(state.endDate.timeIntervalSince1970 == Double(end) / 1000, "\(encoding)")
    }
    #expect(LiveActivityPush.iso8601(0) == "1970-01-01T00:00:00Z")
    #expect(LiveActivityPush.iso8601(t / 1000) == "2026-11-21T08:00:00Z")
    #expect(LiveActivityPush.iso8601(253_402_300_799) == "9999-12-31T23:59:59Z")
    #expect(LiveActivityPush.iso8601(951_782_400) == "2000-02-29T00:00:00Z")
    #expect(LiveActivityPush.iso8601(-1) == "1969-12-31T23:59:59Z")
    // Whole seconds round down, before 1970 too.
    #expect(LiveActivityPush.floorSeconds(1_999) == 1 && LiveActivityPush.floorSeconds(-1) == -1)
    #expect(
      LiveActivityPush.floorSeconds(-1_000) == -1 && LiveActivityPush.floorSeconds(-1_001) == -2)
  }

  @Test("Start, end and alerts: the aps members the event needs, and priorities")
  func apsMembers() throws {
    let config = LiveActivity(
      startTokens: ["AB12"], attributesType: "GateAttributes",
      attributes: ["gate": .string("B12")])
    #expect(config.startTokens == ["ab12"])
    let s = LiveActivityPush.Subject(
      kind: .countdown, phase: .ended,
      content: [
        "title": .string("Gate B12"), "subtitle": .string("Boarding"),
        "relevance": .double(2.5),
      ],
      endDate: t, staleDate: t + 3_600_500)
    func aps(_ bytes: [UInt8]) throws -> [String: Any] {
      let o = try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
      return try #require(o["aps"] as? [String: Any])
    }
    let start = try aps(LiveActivityPush.payload(.start, s, config, at: t))
    #expect(start["attributes-type"] as? String == "GateAttributes")
    #expect((start["attributes"] as? [String: Any])?["gate"] as? String == "B12")
    #expect(start["input-push-token"] as? Int == 1)
    let alert = try #require(start["alert"] as? [String: Any])
    #expect(alert["title"] as? String == "Gate B12" && alert["body"] as? String == "Boarding")
    #expect(start["stale-date"] as? Int == Int((t + 3_600_500) / 1000))
    #expect(start["relevance-score"] as? Double == 2.5)
    let end = try aps(LiveActivityPush.payload(.end, s, config, at: t + 10, dismissal: t + 60_000))
    #expect(end["event"] as? String == "end" && end["dismissal-date"] as? Int == Int(t / 1000) + 60)
    let byDefault = try aps(LiveActivityPush.payload(.end, s, config, at: t))
    #expect(byDefault["dismissal-date"] == nil)
    var withMessage = s
    withMessage.content["alertMessage"] = .string("Final call")
    let update = try aps(LiveActivityPush.payload(.update, withMessage, config, at: t, alert: true))
    #expect((update["alert"] as? [String: Any])?["body"] as? String == "Final call")
    #expect((update["alert"] as? [String: Any])?["sound"] == nil, "a sound nobody asked for")
    // With a sound: on the alerts alone (a start, an update that sets alertMessage).
    var loud = config
    loud.sound = "chime.caf"
    let loudStart = try aps(LiveActivityPush.payload(.start, s, loud, at: t))
    #expect((loudStart["alert"] as? [String: Any])?["sound"] as? String == "chime.caf")
    let loudUpdate = try aps(
      LiveActivityPush.payload(.update, withMessage, loud, at: t, alert: true))
    #expect((loudUpdate["alert"] as? [String: Any])?["sound"] as? String == "chime.caf")
    let quietUpdate = try aps(LiveActivityPush.payload(.update, withMessage, loud, at: t))
    #expect(quietUpdate["alert"] == nil && quietUpdate["sound"] == nil)
    let loudEnd = try aps(LiveActivityPush.payload(.end, s, loud, at: t))
    #expect(loudEnd["alert"] == nil && loudEnd["sound"] == nil)
    #expect(LiveActivityPush.priority(.update, urgent: false, config) == 5)
    #expect(LiveActivityPush.priority(.update, urgent: true, config) == 10)
    #expect(LiveActivityPush.priority(.end, urgent: false, LiveActivity(priority: 5)) == 10)
  }

  @Test("Renames apply after the later keys win, and a swap of two keys works")
  func renames() {
    let s = LiveActivityPush.Subject(
      kind: .countdown, phase: .active,
      content: [
        "title": .string("T"), "fields": .object(["title": .string("field"), "x": .int(1)]),
      ],
      endDate: t)
    let swapped = LiveActivityPush.contentState(
      s, LiveActivity(keys: ["title": "x", "x": "title"]))
    #expect(swapped["x"] == .string("T") && swapped["title"] == .int(1))
  }
}

/// The model's `aps.alert`: title, body and the activity's sound if it has one.
private func alertObject(
  _ title: JSONValue, _ body: JSONValue, _ config: LiveActivity
) -> [String: JSONValue] {
  var alert: [String: JSONValue] = ["title": title, "body": body]
  if let sound = config.sound { alert["sound"] = .string(sound) }
  return alert
}

/// The payload as a JSON value built member by member (what ``LiveActivityPush/payload``
/// wrote before it wrote bytes directly): the model its bytes must equal.
private func modelPayload(
  _ event: LiveActivityPush.Event, _ s: LiveActivityPush.Subject, _ config: LiveActivity,
  at: Int64, alert: Bool, dismissal: Int64?
) -> [UInt8] {
  var aps: [String: JSONValue] = [
    "timestamp": .int(LiveActivityPush.floorSeconds(at)), "event": .string(event.rawValue),
    "content-state": .object(LiveActivityPush.contentState(s, config)),
  ]
  if let stale = s.staleDate { aps["stale-date"] = .int(LiveActivityPush.floorSeconds(stale)) }
  if let r = s.content["relevance"], r != .null { aps["relevance-score"] = r }
  let title = s.content["title"] ?? .string("")
  switch event {
  case .start:
    aps["attributes-type"] = config.attributesType.map(JSONValue.string) ?? .null
    aps["attributes"] = config.attributes.map(JSONValue.object) ?? .object([:])
    aps["input-push-token"] = .int(1)
    let body = s.content["alertMessage"] ?? s.content["subtitle"] ?? .string("")
    aps["alert"] = .object(alertObject(title, body, config))
  case .update:
    if alert, let body = s.content["alertMessage"] {
      aps["alert"] = .object(alertObject(title, body, config))
    }
  case .end:
    if let dismissal { aps["dismissal-date"] = .int(LiveActivityPush.floorSeconds(dismissal)) }
  }
  var out = JSONWriter()
  out.write(.object(["aps": .object(aps)]))
  return out.bytes
}

@Suite("LiveActivityPush bytes")
struct LiveActivityPushBytesTests {
  @Test("The payload written as bytes equals the model's JSON for random activities and settings")
  func equalsTheModel() async throws {
    try await onThread(computing: true) {
      var rng = SystemRandomNumberGenerator()
      func maybe<T>(_ v: @autoclosure () -> T) -> T? { Bool.random(using: &rng) ? v() : nil }
      func instant() -> Int64 {
        // Whole seconds, milliseconds, before 2001 and before 1970.
        let base: Int64 = [1_795_248_000_000, 978_307_200_000, 0, -86_400_000].randomElement()!
        return base + Int64.random(in: -5_000_000...5_000_000, using: &rng) / [1, 1000]
          .randomElement()!
          * [1, 1000].randomElement()!
      }
      let texts: [JSONValue] = [
        .string("Gate B12"), .string("é \"q\" \\ \n"), .null, .int(3), .double(0.5), .bool(true),
      ]
      var differences = 0
      for round in 0..<5_000 {
        var content: [String: JSONValue] = [:]
        for key in ["title", "subtitle", "color", "alertMessage", "relevance"] {
          if let v = maybe(texts.randomElement()!) { content[key] = v }
        }
        if round % 4 == 0 {
          content["fields"] = .object(["gate": .string("B12"), "title": .string("F"), "n": .int(2)])
        } else if round % 9 == 0 {
          content["fields"] = .string("not an object")
        }
        let kind: ActivityKind = Bool.random() ? .countdown : .elapsed
        let s = LiveActivityPush.Subject(
          kind: kind, phase: ActivityPhase.allCases.randomElement()!, content: content,
          endDate: kind == .countdown ? instant() : nil,
          startDate: kind == .elapsed ? instant() : nil, pausedAt: maybe(instant()),
          milestone: maybe(["half", "last \"call\""].randomElement()!),
          staleDate: maybe(instant()), overtime: kind == .countdown && Bool.random())
        let keys: [String: String] =
          round % 3 == 0 ? ["startDate": "startedAt", "endDate": "phase", "phase": "endDate"] : [:]
        let config = LiveActivity(
          startTokens: maybe(["ab"]) ?? [], attributesType: maybe("GateAttributes"),
          attributes: maybe(["gate": .string("B12")]), keys: keys,
          dateEncoding: LiveActivity.DateEncoding.allCases.randomElement()!,
          sound: maybe(["default", "chime.caf", "é \"q\""].randomElement()!))
        let event = LiveActivityPush.Event.allCases.randomElement()!
        let at = instant()
        let alert = Bool.random()
        let dismissal = maybe(instant())
        let bytes = LiveActivityPush.payload(
          event, s, config, at: at, alert: alert, dismissal: dismissal)
        let model = modelPayload(event, s, config, at: at, alert: alert, dismissal: dismissal)
        if bytes != model {
          differences += 1
          if differences <= 3 {
            Issue.record(
              "\(String(decoding: bytes, as: UTF8.self))\n  model: \(String(decoding: model, as: UTF8.self))"
            )
          }
        }
      }
      #expect(differences == 0)
    }
  }
}
