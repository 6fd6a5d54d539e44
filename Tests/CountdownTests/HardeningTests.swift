// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Foundation
import Testing

@testable import Countdown

/// Bad input through the public API and from outside: each returns or throws a typed error,
/// changes nothing, and never hangs or traps.
@Suite("Hardening: extreme instants, bad bytes, string layout", .timeLimit(.minutes(1)))
struct HardeningTests {
  /// Int64's edges and the first values past the wire's range on both sides.
  static let extremes: [Int64] = [
    .min, .min + 1, -1, 0, Instant.wireMinimum.milliseconds - 1,
    Instant.wireMaximum.milliseconds + 1, .max - 1, .max,
  ]

  /// An engine with one countdown, one paused elapsed timer and one ended activity, and the
  /// events it has delivered so far.
  final class Fixture {
    var events: [String] = []
    var engine: ActivityEngine

    init() throws {
      engine = ActivityEngine(now: t0)
      engine.onEvent = { [unowned self] e in self.events.append("\(e.kind) \(e.id) \(e.value)") }
      try engine.start(.countdown(id: "c", to: t0.advanced(by: 60_000), title: "C"), at: t0)
      try engine.start(.elapsed(id: "e", title: "E"), at: t0)
      try engine.start(.elapsed(id: "x", title: "X"), at: t0)
      try engine.advance(to: t0.advanced(by: 1_500))
      try engine.pause("e", at: engine.now)
      try engine.end("x", at: engine.now)
    }

    /// Runs `body`, which must throw `code`, and checks that nothing moved or was delivered.
    func expectRejected(
      _ code: CountdownError.Code, _ what: String,
      _ body: (inout ActivityEngine) throws(CountdownError) -> Void
    ) {
      let before = (engine.now, engine.count, events.count)
      do throws(CountdownError) {
        try body(&engine)
        Issue.record("\(what) was accepted")
      } catch {
        #expect(error.code == code, "\(what): \(error)")
        #expect(!error.message.isEmpty)
      }
      #expect(engine.now == before.0 && engine.count == before.1, "\(what) changed the engine")
      #expect(events.count == before.2, "\(what) delivered events: \(events.dropFirst(before.2))")
    }
  }

  @Test("Every entry point that takes an instant throws invalidDate for any out-of-range Int64")
  func extremeInstants() throws {
    let f = try Fixture()
    for raw in Self.extremes {
      let t = Instant(milliseconds: raw)
      f.expectRejected(.invalidDate, "advance \(raw)") { e throws(CountdownError) in
        try e.advance(to: t)
      }
      f.expectRejected(.invalidDate, "stepClock \(raw)") { e throws(CountdownError) in
        try e.stepClock(to: t)
      }
      f.expectRejected(.invalidDate, "start at \(raw)") { e throws(CountdownError) in
        try e.start(.elapsed(id: "n", title: "N"), at: t)
      }
      f.expectRejected(.invalidDate, "update at \(raw)") { e throws(CountdownError) in
        try e.update("c", ActivityUpdate(), at: t)
      }
      f.expectRejected(.invalidDate, "pause at \(raw)") { e throws(CountdownError) in
        try e.pause("c", at: t)
      }
      f.expectRejected(.invalidDate, "resume at \(raw)") { e throws(CountdownError) in
        try e.resume("e", at: t)
      }
      f.expectRejected(.invalidDate, "end at \(raw)") { e throws(CountdownError) in
        try e.end("c", at: t)
      }
      f.expectRejected(.invalidDate, "setEnabled at \(raw)") { e throws(CountdownError) in
        try e.setEnabled(false, at: t)
      }
      f.expectRejected(.invalidDate, "setMaxActiveDuration at \(raw)") { e throws(CountdownError) in
        try e.setMaxActiveDuration(1_000, at: t)
      }
      f.expectRejected(.invalidDate, "state at \(raw)") { e throws(CountdownError) in
        _ = try e.state(of: "c", at: t)
      }
      f.expectRejected(.invalidDate, "soonestEnding at \(raw)") { e throws(CountdownError) in
        _ = try e.soonestEnding(3, at: t)
      }
      // Instants inside requests.
      let now = f.engine.now
      f.expectRejected(.invalidDate, "endDate \(raw)") { e throws(CountdownError) in
        try e.start(.countdown(id: "n", to: t, title: "N"), at: now)
      }
      var r = ActivityRequest.elapsed(id: "n", from: t, title: "N")
      f.expectRejected(.invalidDate, "startDate \(raw)") { e throws(CountdownError) in
        try e.start(r, at: now)
      }
      r = .countdown(id: "n", to: now.advanced(by: 5_000), title: "N")
      r.staleDate = t
      f.expectRejected(.invalidDate, "staleDate \(raw)") { e throws(CountdownError) in
        try e.start(r, at: now)
      }
      r.staleDate = nil
      r.endOnExpiry = .after(t)
      f.expectRejected(.invalidDate, "endOnExpiry.after \(raw)") { e throws(CountdownError) in
        try e.start(r, at: now)
      }
      var u = ActivityUpdate()
      u.endDate = t
      f.expectRejected(.invalidDate, "update endDate \(raw)") { e throws(CountdownError) in
        try e.update("c", u, at: now)
      }
      u = ActivityUpdate()
      u.timestamp = t
      f.expectRejected(.invalidDate, "update timestamp \(raw)") { e throws(CountdownError) in
        try e.update("c", u, at: now)
      }
      f.expectRejected(.invalidDate, "pause timestamp \(raw)") { e throws(CountdownError) in
        try e.pause("c", at: now, timestamp: t)
      }
      f.expectRejected(.invalidDate, "end dismissal.after \(raw)") { e throws(CountdownError) in
        try e.end("c", ActivityEnding(dismissal: .after(t)), at: now)
      }
    }
    // Queries over any window and any count return.
    #expect(
      f.engine.ended(within: Instant(milliseconds: .min)...Instant(milliseconds: .max)).count == 1)
    #expect(try f.engine.soonestEnding(.max, at: f.engine.now).map(\.id) == ["c"])
    #expect(try f.engine.soonestEnding(.min, at: f.engine.now).isEmpty)
    f.engine.checkInvariants()
  }

  @Test("The last instant the wire allows is accepted and the engine walks to it")
  func wireMaximum() throws {
    // Without ticks: with them, 8000 years of one tick a second is 2.5·10^11 events.
    var e = ActivityEngine(now: t0, options: EngineOptions(deliversTicks: false))
    try e.start(.countdown(id: "far", to: Instant.wireMaximum, title: "Far"), at: t0)
    try e.advance(to: Instant.wireMaximum)
    let s = try e.state(of: "far", at: Instant.wireMaximum)
    #expect(s.value == 0 && s.expired && s.phase == .active)
    #expect(e.nextDeadline == nil)  // expired without endOnExpiry: it waits to be ended
  }

  @Test("Bytes that are not UTF-8 are rejected with the offset of the first bad byte")
  func invalidUTF8() {
    func decode(_ bytes: [UInt8]) -> Result<WireCommand, WireDecodingFailure> {
      bytes.withUnsafeBufferPointer { WireCommand.decode(bytes: $0) }
    }
    let head = Array(#"{"at":1795248000000,"op":"start","kind":"elapsed","title":""#.utf8)
    let tail = Array(#""}"#.utf8)
    let cases: [([UInt8], Int)] = [
      ([0xFF], 1),  // never valid
      ([0x61, 0xC3], 2),  // truncated two-byte sequence
      ([0xC0, 0xAF], 1),  // overlong "/"
      ([0xED, 0xA0, 0x80], 1),  // a UTF-16 surrogate encoded in UTF-8
      ([0xE2, 0x82, 0xAC, 0x80], 4),  // "€" then a lone continuation byte
      ([0xF4, 0x90, 0x80, 0x80], 1),  // past U+10FFFF
    ]
    for (bad, offsetInBad) in cases {
      guard case .failure(let f) = decode(head + bad + tail) else {
        Issue.record("\(bad) was accepted")
        continue
      }
      #expect(f.error.code == .invalidPayload)
      #expect(
        f.error.message.hasPrefix("invalid UTF-8 at byte \(head.count + offsetInBad) "),
        "\(f.error.message)")
    }
    // Valid multi-byte text goes through unchanged, byte for byte.
    let title = "Gate é — 東京 🛫"
    guard case .success(let c) = decode(head + Array(title.utf8) + tail),
      case .start(let r) = c.operation
    else {
      Issue.record("valid UTF-8 was rejected")
      return
    }
    #expect(r.content.title == title)
  }

  @Test("A replay session rejects a line with bad UTF-8 and changes nothing")
  func sessionRejectsBadBytes() throws {
    let session = WireSession(formatter: TimerFormatter(style: .timer), writesTicks: false)
    let good = Array(
      #"{"at":1795248000000,"op":"start","id":"a","kind":"elapsed","title":"A"}"#.utf8)
    var bad = Array(#"{"at":1795248001000,"op":"update","id":"a","title":"Bx"}"#.utf8)
    bad[bad.count - 3] = 0xFE
    good.withUnsafeBufferPointer { session.handle(bytes: $0, number: 1) }
    bad.withUnsafeBufferPointer { session.handle(bytes: $0, number: 2) }
    let lines = String(decoding: session.takeOutput(), as: UTF8.self).split(separator: "\n")
    #expect(lines.count == 2)
    #expect(
      lines.last?.contains(#""line":2,"code":"invalidPayload","message":"invalid UTF-8 at byte"#)
        == true)
    #expect(try session.engine!.content(of: "a").title == "A")
    #expect(session.engine!.now == t0)
  }

  @Test("The small-string layout is found once, and the public path gives the same strings")
  func smallStringLayout() {
    // On this toolchain the layout holds; the check reads strings the standard library built.
    #expect(TimerFormatter.smallStringLayoutHolds)
    let f = TimerFormatter(style: .compact)
    #expect(f.buildsSmallStrings)
    // Both paths build equal strings for every length a small string can have.
    let text = Array("123456789012345".utf8)
    for n in 0...15 {
      var words: (UInt64, UInt64) = (0, 0)
      withUnsafeMutableBytes(of: &words) { for k in 0..<n { $0[k] = text[k] } }
      let inPlace = TimerFormatter.smallString(words.0, words.1, count: n, inPlace: true)
      let viaAPI = TimerFormatter.smallString(words.0, words.1, count: n, inPlace: false)
      let want = String(decoding: text[0..<n], as: UTF8.self)
      #expect(inPlace == want && viaAPI == want && inPlace.utf8.count == n)
      #expect(Array(inPlace.utf8) == Array(viaAPI.utf8))
    }
  }

  @Test("A small string longer than 15 bytes stops the process instead of building one")
  func smallStringLengthChecked() async {
    await #expect(processExitsWith: .failure) {
      _ = TimerFormatter.smallString(0, 0, count: 16, inPlace: true)
    }
  }
}
