// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Testing

@testable import CountdownClient

/// The typed lines of docs/protocol.md and docs/events.md, from the lines the docs show.
@Suite("ServiceMessage")
struct ServiceMessageTests {
  func decode(_ text: String) throws(ServiceMessageError) -> ServiceMessage {
    try ServiceMessage(line: Array(text.utf8))
  }

  @Test("A get's reply: every member of the activity object, typed")
  func reply() throws {
    let line =
      ##"{"rid":2,"ok":true,"at":1795248000012,"activity":{"id":"gate-b12","kind":"countdown","phase":"active","value":600,"text":"10:00","progress":null,"stale":false,"content":{"title":"Gate B12","color":"#1E88E5"},"endDate":1795248600000,"startDate":null,"pausedAt":null,"goalMs":null,"milestone":null,"nextMilestone":{"name":"last-call","at":1795248300000}}}"##
    guard case .reply(let r) = try decode(line) else {
      Issue.record("not a reply")
      return
    }
    #expect(r.rid == .int(2) && r.ok && r.at == 1_795_248_000_012 && r.failure == nil)
    let a = try #require(r.activity)
    #expect(a.id == "gate-b12" && a.kind == .countdown && a.phase == .active)
    #expect(a.value == 600 && a.text == "10:00" && a.progress == nil && !a.stale)
    #expect(a.title == "Gate B12" && a.color == "#1E88E5" && a.subtitle == nil)
    #expect(a.endDate == 1_795_248_600_000 && a.startDate == nil && a.goalMs == nil)
    #expect(a.nextMilestone?.name == "last-call" && a.nextMilestone?.at == 1_795_248_300_000)
    // The clock the boards draw from: 9:59.988 left at the reply's instant shows 600.
    #expect(a.clock.value(at: r.at) == 600 && a.clock.value(at: r.at + 988) == 599)
  }

  @Test("Error replies, lists, snapshots and a start's id")
  func replies() throws {
    guard
      case .reply(let e) = try decode(
        ##"{"rid":null,"ok":false,"at":5,"code":"notFound","message":"no activity ghost"}"##)
    else {
      Issue.record("not a reply")
      return
    }
    #expect(
      !e.ok && e.rid == .null
        && e.failure == ServiceFailure(code: "notFound", message: "no activity ghost"))
    guard case .reply(let s) = try decode(##"{"rid":"a","ok":true,"at":5,"id":"x1"}"##) else {
      return
    }
    #expect(s.id == "x1" && s.rid == .string("a") && s.activities == nil)
    let object =
      ##"{"id":"d","kind":"elapsed","phase":"paused","value":61,"text":"1:01","progress":0.5,"stale":true,"content":{},"endDate":null,"startDate":1000,"pausedAt":62000,"goalMs":122000,"milestone":"half","nextMilestone":null}"##
    for key in ["activities", "snapshot"] {
      guard
        case .reply(let l) = try decode(##"{"rid":1,"ok":true,"at":5,"\##(key)":[\##(object)]}"##)
      else {
        Issue.record("not a reply")
        return
      }
      let a = try #require(l.activities?.first)
      #expect(a.kind == .elapsed && a.phase == .paused && a.progress == 0.5 && a.stale)
      #expect(a.pausedAt == 62_000 && a.goalMs == 122_000 && a.milestone == "half")
      #expect(a.clock.value(at: 1_000_000) == 61, "a paused timer keeps its value")
    }
  }

  @Test("Events, with their keys; the cut-off error event")
  func events() throws {
    guard
      case .event(let t) = try decode(
        ##"{"at":1795248001000,"event":"tick","id":"gate-b12","value":599,"text":"9:59"}"##)
    else {
      Issue.record("not an event")
      return
    }
    #expect(t.kind == .tick && t.id == "gate-b12" && t.value == 599 && t.text == "9:59")
    guard
      case .event(let e) = try decode(
        ##"{"at":1,"event":"ended","id":"a","reason":"expired","value":0,"text":"0:00"}"##)
    else { return }
    #expect(e.kind == .ended && e.reason == "expired")
    guard
      case .event(let m) = try decode(
        ##"{"at":1,"event":"milestone","id":"a","name":"last-call"}"##)
    else { return }
    #expect(m.kind == .milestone && m.name == "last-call")
    guard
      case .event(let x) = try decode(
        ##"{"at":1,"event":"error","id":null,"code":"slowConsumer","message":"read faster"}"##)
    else { return }
    #expect(x.kind == nil && x.id == nil && x.failure?.code == "slowConsumer")
  }

  @Test("A bad line is an error that names what is wrong")
  func badLines() {
    let cases: [(String, String)] = [
      ("not json", "not JSON"),
      ("[1]", "array, not an object"),
      (##"{"x":1}"##, "neither"),
      (##"{"ok":true,"at":1}"##, ""),  // rid may be absent: decodes
      (##"{"ok":"yes","at":1}"##, "reply.ok is a JSON string, not a boolean"),
      (##"{"ok":true}"##, "reply has no \"at\""),
      (##"{"ok":false,"at":1,"code":"x"}"##, "reply has no \"message\""),
      (
        ##"{"ok":true,"at":1,"activity":{"id":"a","kind":"sundial"}}"##,
        "activity.kind \"sundial\" is not a kind"
      ),
      (
        ##"{"ok":true,"at":1,"activities":[{"id":"a","kind":"countdown","phase":"active","value":"1"}]}"##,
        "activities[0].value is a JSON string, not an integer"
      ),
      (##"{"event":"tick","at":1.5}"##, "event.at is a JSON number, not an integer"),
    ]
    for (line, message) in cases {
      do throws(ServiceMessageError) {
        _ = try decode(line)
        #expect(message.isEmpty, "\(line) decoded")
      } catch {
        #expect(!message.isEmpty && error.message.contains(message), "\(line): \(error.message)")
      }
    }
  }

  @Test("The plain replies read without a JSON tree are what the parser reads; others go to it")
  func plainReplies() throws {
    func reply(_ line: String) throws -> ServiceReply? {
      if case .reply(let r) = try ServiceMessage(line: Array(line.utf8)) { return r }
      return nil
    }
    let bare = try #require(try reply(#"{"rid":null,"ok":true,"at":1795950065571}"#))
    #expect(bare.ok && bare.at == 1_795_950_065_571 && bare.id == nil && bare.rid == .null)
    #expect(bare.failure == nil && bare.activity == nil && bare.activities == nil)
    let started = try #require(try reply(#"{"rid":null,"ok":true,"at":5,"id":"gate-b12"}"#))
    #expect(started.id == "gate-b12" && started.at == 5)
    // What the plain reading leaves to the parser, read in full all the same.
    #expect(try reply(#"{"rid":null,"ok":true,"at":5,"id":"a\"b"}"#)?.id == "a\"b")
    #expect(try reply(#"{"rid":null,"ok":true,"at":5,"id":"\u00e9"}"#)?.id == "é")
    #expect(try reply(#"{"rid":null,"ok":true,"at":5,"id":"é"}"#)?.id == "é")
    let more = try #require(try reply(#"{"rid":null,"ok":true,"at":5,"id":"x","activity":null}"#))
    #expect(more.id == "x")
    #expect(try reply(#"{"rid":7,"ok":true,"at":5}"#)?.rid == .int(7))
    #expect(try reply(#"{"rid":null,"ok":true,"at":-5}"#)?.at == -5)
    #expect(try reply(#"{"rid":null,"ok":true,"at":1e3}"#)?.at == 1000)
    // Near misses are errors from the parser, as before.
    for bad in [
      #"{"rid":null,"ok":true,"at":12x}"#, #"{"rid":null,"ok":true,"at":05}"#,
      #"{"rid":null,"ok":true,"at":5}}"#,
      #"{"rid":null,"ok":true,"at":5,"id":"x"} x"#, #"{"rid":null,"ok":true,"at":}"#,
      #"{"rid":null,"ok":true,"at":5,"id":"x}"#,
    ] {
      #expect(throws: ServiceMessageError.self, "\(bad)") {
        _ = try ServiceMessage(line: Array(bad.utf8))
      }
    }
    // Bytes that are not UTF-8 in an id: the parser's error.
    #expect(throws: ServiceMessageError.self) {
      _ = try ServiceMessage(
        line: Array(#"{"rid":null,"ok":true,"at":5,"id":""#.utf8) + [0xFF, 0x22, 0x7D])
    }
  }

  @Test(
    "Whatever a mutated reply line holds, the plain reading agrees with the parser or leaves it")
  func plainAgreesWithParser() throws {
    var rng = SystemRandomNumberGenerator()
    let seeds = [
      #"{"rid":null,"ok":true,"at":1795950065571}"#,
      #"{"rid":null,"ok":true,"at":5,"id":"gate-b12"}"#,
      #"{"rid":null,"ok":true,"at":12,"id":"s3.1204"}"#,
    ]
    let alphabet = Array(#"{}":,\0123456789abidokrtnul- é"#.utf8) + [0x00, 0x0A, 0xFF, 0xC3]
    var taken = 0
    for _ in 0..<20_000 {
      var line = Array(seeds.randomElement(using: &rng)!.utf8)
      for _ in 0..<Int.random(in: 1...3, using: &rng) {
        let k = Int.random(in: 0..<line.count, using: &rng)
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: line[k] = alphabet.randomElement(using: &rng)!
        case 1: line.remove(at: k)
        default: line.insert(alphabet.randomElement(using: &rng)!, at: k)
        }
        if line.isEmpty { line = [0x7B] }
      }
      let plain = line.withUnsafeBufferPointer { ServiceReply(plain: $0) }
      guard let plain else { continue }
      taken += 1
      // Taken by the plain reading: the parser reads the same reply from it.
      let parsed = line.withUnsafeBufferPointer { try? JSONParser.parse(bytes: $0) }
      guard let o = parsed?.objectValue, let full = try? ServiceReply(Members(o, "reply")) else {
        Issue.record(
          "taken plainly but not a reply to the parser: \(String(decoding: line, as: UTF8.self))")
        continue
      }
      #expect(full == plain, "\(String(decoding: line, as: UTF8.self))")
    }
    #expect(taken > 0)
  }
}
