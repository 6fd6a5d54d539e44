// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Testing

/// An activity's group (docs/security.md, "Groups"): checked at start, carried by `started`
/// alone, shown in the state, kept by a snapshot, fixed after the start.
@Suite("Activity groups")
struct ActivityGroupTests {
  static let t0 = Instant(milliseconds: 1_767_225_600_000)

  @Test("The rule: 1 to 64 bytes of A-Z, a-z, 0-9, '.', '_' and '-'")
  func rule() {
    for good in ["a", "gate-12", "Ward.3_east", String(repeating: "x", count: 64)] {
      #expect(ActivityGroup.isValid(good), "\(good)")
    }
    for bad in ["", "a b", "gate/1", "é", "a,b", String(repeating: "x", count: 65), "a\n"] {
      #expect(!ActivityGroup.isValid(bad), "\(bad)")
    }
  }

  @Test(
    "started carries the group, no other event does; the state shows it; a bad one starts nothing")
  func events() throws {
    var seen: [ActivityEvent] = []
    var e = ActivityEngine(now: Self.t0) { seen.append($0) }
    var r = ActivityRequest.countdown(id: "g", to: Self.t0.advanced(by: 3_000), title: "G")
    r.group = "gate-12"
    _ = try e.start(r, at: Self.t0)
    _ = try e.start(.countdown(id: "n", to: Self.t0.advanced(by: 3_000), title: "N"), at: Self.t0)
    try e.advance(to: Self.t0.advanced(by: 4_000))
    let started = seen.filter { $0.kind == .started }
    #expect(started.map(\.group) == ["gate-12", nil])
    #expect(seen.filter { $0.kind != .started }.allSatisfy { $0.group == nil })
    #expect(seen.contains { $0.kind == .tick && $0.id == "g" })
    #expect(try e.state(of: "g", at: e.now).group == "gate-12")
    #expect(try e.state(of: "n", at: e.now).group == nil)
    #expect(try e.group(of: "g") == "gate-12")
    r.id = "bad"
    r.group = "gate 12"
    #expect(throws: CountdownError.self) { try e.start(r, at: e.now) }
    #expect(e.handle(for: "bad") == nil)
    // The wire's start event names it.
    var w = WireEventWriter()
    w.write(started[0])
    w.write(started[1])
    let text = String(decoding: w.take(), as: UTF8.self)
    #expect(text.contains(#""event":"started","id":"g","group":"gate-12"}"#), "\(text)")
    #expect(text.contains(#""event":"started","id":"n"}"#), "\(text)")
  }

  @Test("A snapshot keeps the group; a restore refuses a bad one by name")
  func snapshot() throws {
    var e = ActivityEngine(now: Self.t0)
    var r = ActivityRequest.elapsed(id: "g", title: "G")
    r.group = "ward.3"
    _ = try e.start(r, at: Self.t0)
    var snapshot = e.snapshot()
    #expect(snapshot.activities[0].group == "ward.3")
    let restored = try ActivityEngine(restoring: snapshot)
    #expect(try restored.group(of: "g") == "ward.3")
    snapshot.activities[0].group = "no spaces"
    #expect {
      try ActivityEngine(restoring: snapshot)
    } throws: { error in
      (error as? CountdownError)?.message.contains("activity \"g\": group") == true
    }
  }

  @Test("On the wire: group at start, refused in an update")
  func wire() throws {
    let start = try WireCommand.decode(
      line:
        #"{"at":1767225600000,"op":"start","id":"g","kind":"elapsed","title":"G","group":"gate-1"}"#
    ).get()
    guard case .start(let r) = start.operation else {
      Issue.record("not a start")
      return
    }
    #expect(r.group == "gate-1")
    for line in [
      #"{"at":1767225600000,"op":"start","id":"g","kind":"elapsed","title":"G","group":"a b"}"#,
      #"{"at":1767225600000,"op":"start","id":"g","kind":"elapsed","title":"G","group":5}"#,
      #"{"at":1767225600000,"op":"update","id":"g","group":"gate-2"}"#,
      #"{"at":1767225600000,"op":"update","id":"g","group":null}"#,
    ] {
      guard case .failure(let f) = WireCommand.decode(line: line) else {
        Issue.record("accepted: \(line)")
        continue
      }
      #expect(f.error.code == .invalidPayload, "\(line): \(f.error)")
    }
  }
}
