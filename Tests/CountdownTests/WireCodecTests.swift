// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Testing

@Suite("Wire codec")
struct WireCodecTests {
  private func decodeError(_ line: String) -> CountdownError? {
    if case .failure(let f) = WireCommand.decode(line: line) { return f.error }
    return nil
  }

  @Test("Seconds instead of milliseconds are invalidDate, and the message says so")
  func seconds() throws {
    let e = try #require(
      decodeError(
        #"{"at":1795248000000,"op":"start","kind":"countdown","endDate":1767225600,"title":"x"}"#))
    #expect(e.code == .invalidDate)
    #expect(
      e.message
        == "endDate 1767225600 looks like seconds; the protocol takes milliseconds since 1970")
  }

  @Test("Instant bounds: 100000000000 and 253402300799999 are accepted, one beyond is not")
  func bounds() {
    #expect(decodeError(#"{"at":100000000000,"op":"advance"}"#) == nil)
    #expect(decodeError(#"{"at":253402300799999,"op":"advance"}"#) == nil)
    #expect(decodeError(#"{"at":99999999999,"op":"advance"}"#)?.code == .invalidDate)
    #expect(decodeError(#"{"at":253402300800000,"op":"advance"}"#)?.code == .invalidDate)
    #expect(decodeError(#"{"at":1e300,"op":"advance"}"#)?.code == .invalidDate)
    #expect(decodeError(#"{"at":-1e300,"op":"advance"}"#)?.code == .invalidDate)
  }

  @Test("Non-integers truncate toward zero; non-numbers and infinities are invalidPayload")
  func numbers() throws {
    guard
      case .success(let c) = WireCommand.decode(line: #"{"at":1795248000000.99,"op":"advance"}"#)
    else {
      Issue.record("should decode")
      return
    }
    #expect(c.at.milliseconds == 1_795_248_000_000)
    #expect(decodeError(#"{"at":"1795248000000","op":"advance"}"#)?.code == .invalidPayload)
    #expect(decodeError(#"{"at":1e999,"op":"advance"}"#)?.code == .invalidPayload)
    #expect(decodeError(#"{"at":true,"op":"advance"}"#)?.code == .invalidPayload)
    #expect(decodeError(#"{"at":NaN,"op":"advance"}"#)?.code == .invalidPayload)
  }

  @Test("Malformed and hostile JSON is invalidPayload, never a trap")
  func hostile() {
    for line in [
      "", "{", "}", "[", #"{"at":"#, #"{"at":1,}"#, "\u{0}", String(repeating: "[", count: 100_000),
      #"{"a":"\ud800"}"#, #"{"a":"\x"}"#, "{\"a\":\"\u{1}\"}", "nul", "01", "-", "1.", "1e",
    ] {
      #expect(decodeError(line)?.code == .invalidPayload, "\(line.prefix(20))")
    }
  }

  @Test("Unknown fields, ops and wrong types name the field")
  func fieldMessages() {
    #expect(
      decodeError(#"{"at":1795248000000,"op":"start","kind":"elapsed","title":"x","staleDat":1}"#)?
        .message == "staleDat is not a field of start")
    #expect(
      decodeError(#"{"at":1795248000000,"op":"jump"}"#)?.message.contains("unknown op \"jump\"")
        == true)
    #expect(
      decodeError(#"{"at":1795248000000,"op":"start","kind":"elapsed","title":7}"#)?.message
        == "title must be a string, not number")
    #expect(
      decodeError(#"{"at":1795248000000,"op":"end","id":"a","dismissal":"later"}"#)?.code
        == .invalidPayload)
    #expect(
      decodeError(
        #"{"at":1795248000000,"op":"start","kind":"elapsed","title":"x","milestones":[{"name":"m","atMs":"soon"}]}"#
      )?
      .code == .invalidPayload)
    #expect(
      decodeError(
        #"{"at":1795248000000,"op":"start","kind":"elapsed","title":"x","milestones":[{"name":"m","atMs":1,"content":"peak"}]}"#
      )?.message
        == "milestones[0].content must be an object (a merge patch of the content), not string")
    #expect(
      decodeError(
        #"{"at":1795248000000,"op":"start","kind":"elapsed","title":"x","fields":{"a":[1]}}"#)?.code
        == .invalidPayload)
  }

  @Test("Update fields: null removes, endDate cannot be removed, dismissal forms decode")
  func updateDecoding() throws {
    guard
      case .success(let c) = WireCommand.decode(
        line:
          #"{"at":1795248000000,"op":"update","id":"a","staleDate":null,"subtitle":null,"milestones":[{"name":"m","atMs":5}]}"#
      ),
      case .update(let u) = c.operation
    else {
      Issue.record("should decode an update")
      return
    }
    #expect(u.staleDate == .remove && u.content == ["subtitle": .null])
    #expect(u.milestones == .set([Milestone(name: "m", atMs: 5)]))
    #expect(
      decodeError(#"{"at":1795248000000,"op":"update","id":"a","endDate":null}"#)?.code
        == .invalidPayload)
    guard
      case .success(let e) = WireCommand.decode(
        line: #"{"at":1795248000000,"op":"end","id":"a","dismissal":{"after":1795248001000}}"#),
      case .end(let ending) = e.operation
    else {
      Issue.record("should decode an end")
      return
    }
    #expect(ending.dismissal == .after(Instant(milliseconds: 1_795_248_001_000)))
  }

  @Test("The JSON writer escapes and sorts keys; the parser reads it back")
  func roundTrip() throws {
    let v = JSONValue.object([
      "b": .string("quote \" backslash \\ newline \n tab \t bell \u{7} é 🕐"), "a": .int(-5),
      "c": .array([.bool(true), .null, .double(1.5)]),
    ])
    let text = v.canonicalText
    #expect(text.hasPrefix(#"{"a":-5,"b":"quote \" backslash \\ newline \n tab \t bell \u0007"#))
    #expect(try JSONParser.parse(text) == v)
  }
}

@Suite("Wire session output")
struct WireSessionOutputTests {
  @Test("One command's ticks stream out in bounded chunks instead of piling up")
  func streaming() {
    final class Chunks {
      var sizes: [Int] = []
      var bytes = 0
    }
    let chunks = Chunks()
    let session = WireSession(
      formatter: TimerFormatter(style: .timer), writesTicks: true, outputThreshold: 4096,
      output: { chunk in
        chunks.sizes.append(chunk.count)
        chunks.bytes += chunk.count
      })
    session.handle(
      line: #"{"at":1795248000000,"op":"start","id":"e","kind":"elapsed","title":"E"}"#, number: 1)
    var peak = 0
    session.handle(line: #"{"at":1795251600000,"op":"advance"}"#, number: 2)
    peak = max(peak, session.pendingOutput)
    let rest = session.takeOutput()
    let total = chunks.bytes + rest.count
    // 3600 ticks of about 70 bytes: far more than one chunk.
    #expect(total > 3_600 * 60)
    #expect(chunks.sizes.count > 40)
    #expect(chunks.sizes.allSatisfy { $0 >= 4096 && $0 < 4096 + 200 })
    #expect(peak < 4096)
  }
}
