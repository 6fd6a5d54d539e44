// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation
import Testing

/// `countdown format` (docs/cli.md), run as a process.
@Suite("countdown format")
struct FormatCommandTests {
  @Test("Values as arguments, in each mode")
  func arguments() async throws {
    let r = try await CLI.run(["format", "--style", "timer", "1", "999", "1000", "3725000", "-5"])
    #expect(r.status == 0)
    #expect(r.stdout == "0:00\n0:00\n0:01\n1:02:05\n0:00\n")
    let up = try await CLI.run([
      "format", "--style", "timer", "--mode", "countdown", "1", "1000", "1001",
    ])
    #expect(up.stdout == "0:01\n0:01\n0:02\n")
  }

  @Test("--signed keeps a negative duration's sign, rounded as an overtime countdown's value")
  func signed() async throws {
    let up = try await CLI.run([
      "format", "--signed", "--style", "timer", "--mode", "countdown", "-999", "-1000", "-1500",
      "-62000", "5",
    ])
    #expect(up.status == 0)
    #expect(up.stdout == "0:00\n-0:01\n-0:01\n-1:02\n0:01\n")
    let units = try await CLI.run(["format", "--signed", "--style", "units", "-3725000"])
    #expect(units.stdout == "-1h 2m\n")
  }

  @Test("Values on standard input, with --max-units and --no-hours")
  func stdin() async throws {
    let r = try await CLI.run(
      ["format", "--style", "units", "--max-units", "3"], input: Data("90061000\n0\n3600000\n".utf8)
    )
    #expect(r.stdout == "1d 1h 1m\n0s\n1h\n")
    let n = try await CLI.run(
      ["format", "--style", "timer", "--no-hours"], input: Data("3725000\n".utf8))
    #expect(n.stdout == "62:05\n")
  }

  @Test("A bad line: empty output line, its number on stderr, the rest formatted, exit 2")
  func badLines() async throws {
    let r = try await CLI.run(
      ["format", "--style", "positional"], input: Data("61000\nabc\n\n12.5\n3600000\n".utf8))
    #expect(r.status == 2)
    #expect(r.stdout == "01:01\n\n\n\n1:00:00\n")
    #expect(r.stderr.contains("line 2:") && r.stderr.contains("\"abc\""))
    #expect(r.stderr.contains("line 3:") && r.stderr.contains("line 4:"))
    #expect(!r.stderr.contains("line 1:") && !r.stderr.contains("line 5:"))
  }

  @Test("A bad argument is reported the same way")
  func badArgument() async throws {
    let r = try await CLI.run(["format", "--style", "compact", "90061000", "x1"])
    #expect(r.status == 2)
    #expect(r.stdout == "1d 1h\n\n")
    #expect(r.stderr.contains("line 2:"))
  }

  @Test("-- ends the options, as in POSIX tools: values after it are values, never options")
  func doubleDash() async throws {
    let r = try await CLI.run(["format", "--style", "timer", "--", "999", "-5", "61000"])
    #expect(r.status == 0 && r.stderr.isEmpty, "\(r.stderr)")
    #expect(r.stdout == "0:00\n0:00\n1:01\n")
    // After --, an option's name is a value (and not an integer), and a second -- too.
    let o = try await CLI.run(["format", "--", "--style", "--", "5000"])
    #expect(o.status == 2)
    #expect(o.stdout == "\n\n0:05\n")
    #expect(o.stderr.contains("line 1: \"--style\"") && o.stderr.contains("line 2: \"--\""))
    // -- alone: no operands, so standard input.
    let i = try await CLI.run(
      ["format", "--style", "compact", "--"], input: Data("3725000\n".utf8))
    #expect(i.status == 0 && i.stdout == "1h 2m\n")
  }

  @Test("The largest wire value formats in every style")
  func largest() async throws {
    for style in ["compact", "remaining", "positional", "minute-second", "timer", "units"] {
      let r = try await CLI.run([
        "format", "--style", style, "--mode", "countdown", "253402300799999",
      ])
      #expect(r.status == 0 && r.stdout.count > 2, "\(style)")
    }
  }

  @Test("A one-million-line stream comes back line for line")
  func million() async throws {
    var input = ""
    input.reserveCapacity(12_000_000)
    for k in 0..<1_000_000 { input += "\(k * 997)\n" }
    let r = try await CLI.run(["format", "--style", "minute-second"], input: Data(input.utf8))
    #expect(r.status == 0)
    let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.count == 1_000_001)  // the last is the empty string after the final newline
    #expect(lines[0] == "00:00")
    #expect(lines[999_999] == "16616:39")  // 999999 * 997 ms = 996999003 ms = 16616 min 39 s
  }
}
