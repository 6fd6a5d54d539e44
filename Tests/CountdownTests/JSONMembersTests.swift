// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Testing

@testable import Countdown

/// The decoders' fast paths: a request's top-level object read as `JSONMembers` (an ordered
/// array, a dictionary past 16 keys), short ASCII strings built in place, and content encoded
/// without building a `JSONValue`. Each is checked against the general path it replaces.
@Suite("Decoding fast paths")
struct JSONMembersTests {
  static func topLevel(_ text: String) throws(CountdownError) -> JSONTopLevel {
    var copy = text
    let r = copy.withUTF8 { bytes in
      Result { () throws(CountdownError) -> JSONTopLevel in
        try JSONParser.parseTopLevel(bytes: bytes)
      }
    }
    return try r.get()
  }

  /// An object text with `n` members, some keys repeated, keys short and long, ASCII and not.
  static func object(_ n: Int, _ g: inout JSONDifferentialTests.Generator) -> String {
    var keys: [String] = []
    for k in 0..<n {
      switch g.int(0...3) {
      case 0 where !keys.isEmpty: keys.append(keys[g.int(0...keys.count - 1)])
      case 1: keys.append(g.string())
      case 2: keys.append("\"key\(k)\"")
      default: keys.append("\"a-much-longer-key-than-fifteen-\(k)\"")
      }
    }
    let members = keys.map { $0 + ":" + g.value(depth: 1) }
    return "{" + members.joined(separator: ",") + "}"
  }

  @Test("Objects of 0 to 40 members read as members equal the dictionary the parser builds")
  func membersEqualDictionary() async throws {
    try await onThread(computing: true) {
      let seed = testSeed()
      var g = JSONDifferentialTests.Generator(rng: SplitMix64(state: seed))
      var large = 0
      for round in 0..<820 {
        let text = Self.object(round % 41, &g)
        guard case .object(let members) = try Self.topLevel(text),
          case .object(let dict) = try JSONParser.parse(text)
        else {
          Issue.record("not an object: \(text)")
          return
        }
        if dict.count > JSONMembers.linearLimit { large += 1 }
        #expect(members.count == dict.count, "COUNTDOWN_TEST_SEED=\(seed): \(text)")
        #expect(members.dictionary == dict, "COUNTDOWN_TEST_SEED=\(seed): \(text)")
        for (key, value) in dict { #expect(members[key] == value) }
        for probe in ["absent-key", "k", "key1", "é"] { #expect(members[probe] == dict[probe]) }
        #expect(Set(members.allKeys) == Set(dict.keys))
        // Marking every member read leaves no unknown key.
        var bits: UInt32 = 0
        var names: [String] = []
        for key in dict.keys {
          let (_, bit) = try #require(members.lookup(key))
          if bit == 0 { names.append(key) } else { bits |= bit }
        }
        #expect(members.keys(notIn: bits, or: names).isEmpty)
      }
      #expect(large > 50)
    }
  }

  @Test("A value that is not an object is read whole, as parse reads it")
  func nonObjects() throws {
    for text in ["[1,2]", " \"text\" ", "12", "null", "[{\"a\":1}]"] {
      guard case .other(let v) = try Self.topLevel(text) else {
        Issue.record("\(text) read as members")
        continue
      }
      #expect(v == (try JSONParser.parse(text)))
    }
    #expect(throws: CountdownError.self) { try Self.topLevel("{\"a\":1} x") }
    #expect(throws: CountdownError.self) { try Self.topLevel("{\"a\":1,}") }
  }

  @Test("Keys compare by their UTF-8 bytes: a Kelvin sign is not a K")
  func keysCompareByBytes() throws {
    guard case .object(let m) = try Self.topLevel(#"{"\u212Aind":1,"K":2}"#) else {
      Issue.record("not an object")
      return
    }
    #expect(m["\u{212A}ind"] == .int(1))
    #expect(m["Kind"] == nil)
    #expect(m["K"] == .int(2))
    #expect(m.count == 2)
  }

  @Test("Short strings built in place equal the standard library's, ASCII or not")
  func shortStrings() throws {
    let texts = [
      "", "a", "id", "countdown", "123456789012345", "1234567890123456", "é", "gate-é",
      "\u{7F}", "tab\\tx", "東京",
    ]
    for t in texts {
      let v = try JSONParser.parse("\"\(t)\"")
      let expected = t.replacingOccurrences(of: "\\t", with: "\t")
      #expect(v == .string(expected))
      guard case .string(let s) = v else { continue }
      #expect(s.hashValue == expected.hashValue)
      #expect(Array(s.utf8) == Array(expected.utf8))
      #expect(s.utf8.count == expected.utf8.count)
    }
  }

  @Test("Past 16 keys, unknown keys are still named, the first in byte order")
  func unknownKeysInLargeCommands() {
    for extra in [1, 3, 20] {
      var members = [
        #""op":"start""#, #""at":1795248000000"#, #""kind":"countdown""#,
        #""endDate":1795248060000"#, #""title":"T""#,
      ]
      for k in 0..<extra { members.append("\"zz\(k)\":\(k)") }
      members.append(#""bogus":true"#)
      let line = "{" + members.joined(separator: ",") + "}"
      guard case .failure(let f) = WireCommand.decode(line: line) else {
        Issue.record("accepted \(line)")
        continue
      }
      #expect(f.error.message == "bogus is not a field of start", "\(extra) extra keys")
    }
    // Seventeen known keys with no unknown one decode.
    let line = """
      {"op":"start","at":1795248000000,"id":"g","kind":"countdown","endDate":1795248060000,\
      "startDate":1795247000000,"staleDate":1795248050000,"title":"T","subtitle":"S",\
      "alertMessage":"A","color":"#112233","fields":{"gate":"B7"},"relevance":2.5,\
      "milestones":[{"name":"m","atMs":1000}],"endOnExpiry":"default","timestamp":1795248000000,\
      "rid":null}
      """
    guard case .failure(let f) = WireCommand.decode(line: line) else {
      Issue.record("rid is not a field of a §5 command")
      return
    }
    #expect(f.error.message == "rid is not a field of start")
    let withoutRid = line.replacingOccurrences(of: ",\"rid\":null", with: "")
    guard case .success(let c) = WireCommand.decode(line: withoutRid) else {
      Issue.record("rejected \(withoutRid)")
      return
    }
    guard case .start(let r) = c.operation else {
      Issue.record("not a start")
      return
    }
    #expect(r.content.color == "#112233" && r.content.relevance == 2.5 && r.milestones.count == 1)
  }

  @Test("Content encoded from its fields equals the canonical text of its JSON object")
  func contentEncoding() throws {
    var g = JSONDifferentialTests.Generator(rng: SplitMix64(state: testSeed()))
    for _ in 0..<2_000 {
      func text() -> String {
        guard case .string(let s) = try? JSONParser.parse(g.string()) else { return "x" }
        return s
      }
      var fields: [String: JSONValue] = [:]
      for _ in 0..<g.int(0...3) {
        fields[text()] =
          [.int(Int64(g.int(-5...5))), .string(text()), .bool(true), .double(0.25)][g.int(0...3)]
      }
      let content = ActivityContent(
        title: text(), subtitle: g.chance(0.5) ? text() : nil,
        alertMessage: g.chance(0.5) ? text() : nil, color: g.chance(0.5) ? "#A1b2C3" : nil,
        fields: fields,
        relevance: g.chance(0.5) ? [1, -2.5, 1e300, 0.1][g.int(0...3)] : nil)
      #expect(try content.encodedChecked() == content.json.canonicalText)
    }
  }

  @Test("Title-only content, written straight into its string, equals the canonical text")
  func titleOnlyEncoding() throws {
    let titles = [
      "", "A", "Gate 12", "é", "e\u{301}", "🛫 boarding", "a\"b", "back\\slash", "tab\t",
      "line\nbreak", "\u{1}", "del\u{7F}", String(repeating: "x", count: 3),
      String(repeating: "y", count: 4), String(repeating: "z", count: 4_084),
      String(repeating: "é", count: 2_042),
    ]
    for title in titles {
      let content = ActivityContent(title: title)
      #expect(
        try content.encodedChecked() == content.json.canonicalText, "title \(title.prefix(20))")
    }
    // 12 bytes around the title: 4,084 bytes of title is the largest that fits in 4,096.
    for title in [String(repeating: "z", count: 4_085), String(repeating: "\"", count: 2_100)] {
      do {
        _ = try ActivityContent(title: title).encodedChecked()
        Issue.record("a title of \(title.utf8.count) bytes was accepted")
      } catch {
        #expect(error.code == .attributesTooLarge)
      }
    }
  }

  @Test("Bad content through the library is refused by start with the field named")
  func contentChecks() {
    var engine = ActivityEngine(now: Instant(milliseconds: 1_795_248_000_000))
    let end = Instant(milliseconds: 1_795_248_060_000)
    let cases: [(ActivityContent, String)] = [
      (ActivityContent(title: "T", color: "red"), "color \"red\" must be #RRGGBB or #RRGGBBAA"),
      (
        ActivityContent(title: "T", fields: ["b": .null, "a": .array([]), "c": .int(1)]),
        "fields.a must be a string, number or boolean, not array"
      ),
      (
        ActivityContent(title: "T", fields: ["x": .double(.infinity)]),
        "fields.x must be a string, number or boolean, not number"
      ),
      (ActivityContent(title: "T", relevance: .nan), "relevance must be a finite number, not nan"),
    ]
    for (content, message) in cases {
      let request = ActivityRequest(id: "a", kind: .countdown, endDate: end, content: content)
      #expect(throws: CountdownError(.invalidPayload, message)) {
        try engine.start(request, at: engine.now)
      }
    }
    #expect(engine.activities().isEmpty)
  }

  @Test("A new title for title-only content gives what the full merge gives, errors too")
  func titleUpdateFastPath() throws {
    var (e, _) = makeEngine()
    let before = [
      ActivityContent(title: "T"), ActivityContent(title: "T", subtitle: "S"),
      ActivityContent(title: "q\"uote", fields: ["a": .int(1)]), ActivityContent(title: "é"),
    ]
    let titles: [JSONValue] = [
      .string("New"), .string("with \"quote\" and \\"), .string("e\u{301}t\u{E9}"),
      .string(""), .string(String(repeating: "x", count: 4096 - 12)),
      .string(String(repeating: "x", count: 4096 - 11)), .int(3), .null,
    ]
    for (k, content) in before.enumerated() {
      for (j, title) in titles.enumerated() {
        let id = "a\(k).\(j)"
        try e.start(ActivityRequest(id: id, kind: .elapsed, content: content), at: t0)
        let slot = Int(e.handle(for: id)!.slot)
        let stored = e.cold[slot].content
        let expected = Result { () throws(CountdownError) in
          try content.merging(patch: ["title": title]).encodedChecked()
        }
        let got = Result { () throws(CountdownError) in
          try e.update(id, ActivityUpdate(content: ["title": title]), at: t0)
        }
        switch (expected, got) {
        case (.success(let text), .success):
          #expect(e.cold[slot].content.canonical == text, "\(content) + \(title)")
        case (.failure(let x), .failure(let y)):
          #expect(x == y, "\(content) + \(title)")
          #expect(e.cold[slot].content == stored, "a refused update changes nothing")
        default:
          Issue.record("\(content) + \(title): \(expected) vs \(got)")
        }
      }
    }
  }
}
