// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import CountdownClient

struct FormatCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "format",
    abstract: "Format millisecond durations as timer text, one line per input line.",
    discussion: """
      Values come from the arguments, or one per line on standard input. A line that is not \
      an integer gives an empty output line and a message on standard error with its line \
      number; the rest are still formatted and the exit status is 2.
      """
  )

  @OptionGroup var styleOptions: StyleOptions

  @Option(help: "countdown rounds up to whole seconds; elapsed (default) rounds down.")
  var mode: Mode = .elapsed

  @Flag(
    help: """
      Keep the sign of negative durations: `-` and the text of the rest (-0:05), as an overtime \
      countdown shows the time past its end. Without it a negative duration shows as 0.
      """)
  var signed = false

  @Argument(
    parsing: .allUnrecognized,
    help: "Durations in milliseconds (default: standard input); -- ends the options.")
  var values: [String] = []

  /// `values`, with the first `--` taken as the end of the options (POSIX): values are
  /// collected with `.allUnrecognized` so that negative numbers need no `--`, and that keeps
  /// the terminator among them.
  var operands: [String] {
    guard let k = values.firstIndex(of: "--") else { return values }
    var v = values
    v.remove(at: k)
    return v
  }

  enum Mode: String, ExpressibleByArgument, CaseIterable {
    case countdown, elapsed
  }

  func run() throws {
    let formatter = TimerFormatter(style: styleOptions.timerStyle)
    let rounding: SecondsRounding = mode == .countdown ? .up : .down
    let out = OutputBuffer(fd: 1)
    var failures = 0
    var number = 0
    func handle(_ line: UnsafeBufferPointer<UInt8>) {
      number += 1
      if let ms = parseMilliseconds(line) {
        let seconds =
          signed
          ? rounding.signedSeconds(milliseconds: ms) : rounding.seconds(milliseconds: ms)
        out.bytes.append(contentsOf: repeatElement(0, count: TimerFormatter.maximumLength))
        let base = out.bytes.count - TimerFormatter.maximumLength
        let n = out.bytes.withUnsafeMutableBufferPointer {
          formatter.write(
            signedSeconds: seconds, into: UnsafeMutableBufferPointer(rebasing: $0[base...]))
        }
        out.bytes.removeLast(TimerFormatter.maximumLength - n)
      } else {
        failures += 1
        let text = String(decoding: line, as: UTF8.self)
        printError(
          "countdown format: line \(number): \"\(text)\" is not an integer number of milliseconds")
      }
      out.bytes.append(0x0A)
      out.flushIfFull()
    }
    let operands = self.operands
    if operands.isEmpty {
      var reader = LineReader(fd: 0)
      do {
        try reader.forEachLine(handle)
      } catch {
        out.flush()
        printError("countdown format: \(error)")
        throw ExitCode.failure
      }
    } else {
      for v in operands {
        var v = v
        v.withUTF8 { handle($0) }
      }
    }
    out.flush()
    if failures > 0 { throw ExitCode(2) }
  }
}

/// An optionally signed decimal integer, surrounding spaces, tabs and a trailing CR allowed.
func parseMilliseconds(_ line: UnsafeBufferPointer<UInt8>) -> Int64? {
  var lo = 0
  var hi = line.count
  while lo < hi, line[lo] == 0x20 || line[lo] == 0x09 { lo += 1 }
  while hi > lo, line[hi - 1] == 0x20 || line[hi - 1] == 0x09 || line[hi - 1] == 0x0D { hi -= 1 }
  guard lo < hi else { return nil }
  var negative = false
  if line[lo] == UInt8(ascii: "-") || line[lo] == UInt8(ascii: "+") {
    negative = line[lo] == UInt8(ascii: "-")
    lo += 1
  }
  guard lo < hi else { return nil }
  var v: Int64 = 0
  for i in lo..<hi {
    let d = line[i] &- UInt8(ascii: "0")
    guard d < 10 else { return nil }
    let (m, o1) = v.multipliedReportingOverflow(by: 10)
    let (a, o2) = m.addingReportingOverflow(Int64(d))
    if o1 || o2 { return nil }
    v = a
  }
  return negative ? -v : v
}
