// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation
import Testing

/// `countdown replay` (docs/cli.md), run as a process on the fixture files.
@Suite("countdown replay on fixture files")
struct ReplayCommandTests {
  @Test(
    "Fixture output matches line for line",
    arguments: [
      (["replay", "kiosk.jsonl"], "kiosk.expected.jsonl"),
      (["replay", "errors.jsonl"], "errors.expected.jsonl"),
      (["replay", "--ticks", "--style", "compact", "ticks.jsonl"], "ticks-compact.expected.jsonl"),
      (["replay", "--ticks", "ticks.jsonl"], "ticks-timer.expected.jsonl"),
    ])
  func fixture(_ args: [String], _ expectedFile: String) async throws {
    let args = args.map {
      $0.hasSuffix(".jsonl") ? CLI.fixtures.appendingPathComponent($0).path : $0
    }
    let r = try await CLI.run(args)
    let expected = try String(
      contentsOf: CLI.fixtures.appendingPathComponent(expectedFile), encoding: .utf8)
    #expect(r.status == 0)
    let got = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
    let want = expected.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(got.count == want.count)
    for (k, (g, w)) in zip(got, want).enumerated() where g != w {
      Issue.record("line \(k + 1):\n got  \(g)\n want \(w)")
    }
  }

  @Test("Standard input works like a file, and output is deterministic")
  func stdinDeterministic() async throws {
    let input = try Data(contentsOf: CLI.fixtures.appendingPathComponent("kiosk.jsonl"))
    let a = try await CLI.run(["replay"], input: input)
    let b = try await CLI.run(["replay"], input: input)
    let expected = try String(
      contentsOf: CLI.fixtures.appendingPathComponent("kiosk.expected.jsonl"), encoding: .utf8)
    #expect(a.stdout == expected && b.stdout == expected)
  }

  @Test("An overtime countdown replays past its end with negative values and texts")
  func overtime() async throws {
    let input = """
      {"at":1795248000000,"op":"start","id":"talk","kind":"countdown","endDate":1795248002000,"title":"Talk","overtime":true,"milestones":[{"name":"over-2","atMs":-2000}]}
      {"at":1795248005500,"op":"get","id":"talk"}
      {"at":1795248006000,"op":"start","id":"bad","kind":"countdown","endDate":1795248009000,"title":"B","overtime":true,"endOnExpiry":"immediate"}
      {"at":1795248006000,"op":"start","id":"bad","kind":"elapsed","title":"B","milestones":[{"name":"m","atMs":-1}]}
      {"at":1795248006000,"op":"start","id":"bad","kind":"countdown","endDate":1795248009000,"title":"B","overtime":"yes"}

      """
    let r = try await CLI.run(["replay", "--ticks", "--style", "compact"], input: Data(input.utf8))
    let lines = r.stdout.split(separator: "\n").map(String.init)
    #expect(
      Array(lines.prefix(9)) == [
        #"{"at":1795248000000,"event":"started","id":"talk"}"#,
        #"{"at":1795248001000,"event":"tick","id":"talk","value":1,"text":"0m 1s"}"#,
        #"{"at":1795248002000,"event":"tick","id":"talk","value":0,"text":"0m 0s"}"#,
        #"{"at":1795248002000,"event":"expired","id":"talk"}"#,
        #"{"at":1795248003000,"event":"tick","id":"talk","value":-1,"text":"-0m 1s"}"#,
        #"{"at":1795248004000,"event":"tick","id":"talk","value":-2,"text":"-0m 2s"}"#,
        #"{"at":1795248004000,"event":"milestone","id":"talk","name":"over-2"}"#,
        #"{"at":1795248005000,"event":"tick","id":"talk","value":-3,"text":"-0m 3s"}"#,
        #"{"at":1795248005500,"event":"state","id":"talk","phase":"active","value":-3,"text":"-0m 3s","progress":null,"stale":false}"#,
      ])
    let errors = lines.filter { $0.contains(#""event":"error""#) }
    #expect(errors.count == 3)
    #expect(errors[0].contains("overtime and endOnExpiry") && errors[0].contains(#""line":3"#))
    #expect(errors[1].contains("milestones[0].atMs -1 is negative"))
    #expect(errors[2].contains("overtime must be a boolean, not string"))
  }

  @Test(
    "docs/cli.md's examples replay as it shows them",
    arguments: [("stage-timer", ["--ticks"]), ("medication", [])])
  func readmeExample(_ name: String, _ flags: [String]) async throws {
    let root = CLI.fixtures.deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let r = try await CLI.run(
      ["replay"] + flags + [root.appendingPathComponent("Examples/\(name).jsonl").path])
    let expected = try String(
      contentsOf: CLI.fixtures.appendingPathComponent("\(name).expected.jsonl"), encoding: .utf8)
    #expect(r.status == 0 && r.stdout == expected)
    let doc = try String(
      contentsOf: root.appendingPathComponent("docs/cli.md"), encoding: .utf8)
    for line in expected.split(separator: "\n") {
      #expect(doc.contains(line), "docs/cli.md lacks \(line)")
    }
  }

  @Test("Every event line is a JSON object with at, event and id")
  func eventShape() async throws {
    let r = try await CLI.run([
      "replay", "--ticks", CLI.fixtures.appendingPathComponent("errors.jsonl").path,
    ])
    for line in r.stdout.split(separator: "\n") {
      let obj = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      #expect(obj?["at"] != nil && obj?["event"] is String && obj?.keys.contains("id") == true)
    }
  }

  @Test("Without --ticks no tick is written; with it, ticks appear")
  func ticksFlag() async throws {
    let path = CLI.fixtures.appendingPathComponent("ticks.jsonl").path
    #expect(try await !CLI.run(["replay", path]).stdout.contains("\"tick\""))
    #expect(try await CLI.run(["replay", "--ticks", path]).stdout.contains("\"tick\""))
  }

  @Test("An unreadable input file exits non-zero with a message")
  func missingFile() async throws {
    let r = try await CLI.run(["replay", "/nonexistent/commands.jsonl"])
    #expect(r.status != 0)
    #expect(r.stderr.contains("cannot open /nonexistent/commands.jsonl"))
  }

  @Test("replay takes -- before a file name that starts with -, and rejects bad UTF-8 lines")
  func replayDoubleDashAndBytes() async throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cd-\(UUID())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    var bytes = Data(
      #"{"at":1795248000000,"op":"start","id":"a","kind":"elapsed","title":"A"}"#.utf8)
    bytes.append(0x0A)
    // 69 bytes, then the bad byte: byte 70.
    bytes.append(
      Data(#"{"at":1795248000000,"op":"start","id":"b","kind":"elapsed","title":"B"#.utf8))
    bytes.append(contentsOf: [0xC3, 0x28])  // an invalid two-byte sequence
    bytes.append(Data("\"}\n".utf8))
    let file = dir.appendingPathComponent("-scenario.jsonl")
    try bytes.write(to: file)
    let r = try await CLI.runIn(dir, ["replay", "--", "-scenario.jsonl"])
    #expect(r.status == 0, "\(r.stderr)")
    let lines = r.stdout.split(separator: "\n")
    #expect(lines.count == 2)
    #expect(lines.first?.contains(#""event":"started","id":"a""#) == true)
    #expect(
      lines.last?.contains(
        #""line":2,"code":"invalidPayload","message":"invalid UTF-8 at byte 70 (0xC3)"#) == true,
      "\(r.stdout)")
  }

  @Test("Unknown styles are refused with the list of styles")
  func badStyle() async throws {
    let r = try await CLI.run(["replay", "--style", "fancy"], input: Data())
    #expect(r.status != 0)
    #expect(r.stderr.contains("minute-second"))
  }
}
