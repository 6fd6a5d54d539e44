// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Testing

@Suite("README")
struct ReadmeExampleTests {
  @Test("The library example does what the README says")
  func libraryExample() throws {
    var printed: [String] = []
    let t0 = Instant(milliseconds: 1_795_248_000_000)
    let text = TimerFormatter(style: .timer)
    var engine = ActivityEngine(now: t0) { event in
      if event.kind == .tick { printed.append("\(event.id) \(text.string(seconds: event.value))") }
    }
    var gate = ActivityRequest.countdown(
      id: "gate-b12", to: t0.advanced(by: 600_000), title: "Gate B12")
    gate.milestones = [Milestone(name: "last-call", atMs: 300_000)]
    gate.endOnExpiry = .after(t0.advanced(by: 900_000))
    try engine.start(gate, at: t0)
    try engine.advance(to: t0.advanced(by: 2_000))
    #expect(printed == ["gate-b12 9:59", "gate-b12 9:58"])
    try engine.pause("gate-b12", at: engine.now)
    let state = try engine.state(of: "gate-b12", at: t0.advanced(by: 60_000))
    #expect(state.phase == .paused && state.value == 598)
    try engine.resume("gate-b12", at: t0.advanced(by: 60_000))
    #expect(try engine.state(of: "gate-b12", at: engine.now).endDate == t0.advanced(by: 658_000))

    // Snapshot and restore: the restored engine gives the events the original would.
    let saved = engine.snapshot()
    var again: [String] = []
    var restored = try ActivityEngine(restoring: saved) { event in
      again.append("\(event.kind) \(event.id) \(event.value)")
    }
    var original: [String] = []
    engine.onEvent = { event in original.append("\(event.kind) \(event.id) \(event.value)") }
    try restored.advance(to: t0.advanced(by: 70_000))
    try engine.advance(to: t0.advanced(by: 70_000))
    #expect(again == original && again.count == 10)

    let f = TimerFormatter(style: .compact)
    var buffer = [UInt8](repeating: 0, count: TimerFormatter.maximumLength)
    let n = buffer.withUnsafeMutableBufferPointer { f.write(seconds: 90_061, into: $0) }
    #expect(String(decoding: buffer[0..<n], as: UTF8.self) == "1d 1h")
  }
}
