// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Testing

@testable import CountdownPostgres

@Suite("Unsettled events: what a node committed and has perhaps not relayed, per shard")
struct UnsettledEventsTests {
  static func line(_ s: String) -> [UInt8] { Array(s.utf8) }

  @Test("Lines kept per shard in order; settled by the hub's progress; forgotten with a shard")
  func backlog() {
    var b = UnsettledBacklog()
    #expect(b.isEmpty)
    b.add([0: [(1, Self.line("1 a\n")), (2, Self.line("2 b\n"))], 3: [(2, Self.line("3 c\n"))]])
    b.add([0: [(4, Self.line("9 d\n"))], 5: []])
    #expect(b.lines[5] == nil, "an empty shard is not kept")
    #expect(
      String(decoding: b.text(of: 0, adding: [(6, Self.line("10 e\n"))]), as: UTF8.self)
        == "1 a\n2 b\n9 d\n10 e\n")
    b.settle(before: 2)
    #expect(String(decoding: b.text(of: 0, adding: []), as: UTF8.self) == "2 b\n9 d\n")
    b.settle(before: 3)
    #expect(b.lines[3] == nil && b.lines[0]?.count == 1)
    b.forget(shard: 0)
    #expect(b.isEmpty)
  }

  @Test(
    "A line is SEQUENCE and the event's JSON as the hub writes it; parsed back; bad lines skipped")
  func lines() throws {
    let u = UnsettledEvents(incarnation: 7, formatter: TimerFormatter(style: .timer))
    let e = ActivityEvent(
      at: Instant(milliseconds: 1_500), kind: .ended, id: "q\"1",
      handle: ActivityHandle(slot: 0, generation: 0), activityKind: .countdown, value: 62,
      reason: .requested)
    let line = u.line(sequence: 42, e)
    #expect(
      String(decoding: line, as: UTF8.self)
        == #"42 {"at":1500,"event":"ended","id":"q\"1","reason":"requested","value":62,"text":"1:02"}"#
        + "\n")
    var text = line
    text += Self.line("not a line\n")
    text += Self.line("x {}\n")
    text += u.line(sequence: 43, e)
    text += Self.line("44 {\"at\":1")  // cut short: no newline
    let parsed = UnsettledEvents.parse(text)
    #expect(parsed.map(\.sequence) == [42, 43])
    #expect(parsed.first.map { Array($0.json) } == Array(line.dropFirst(3)))
  }
}
