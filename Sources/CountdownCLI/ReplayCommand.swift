// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import CountdownClient

struct ReplayCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "replay",
    abstract: "Run JSON Lines commands on a virtual clock and print JSON Lines events.",
    discussion: """
      Each input line is a command with "at" (milliseconds since 1970, non-decreasing) and \
      "op": start, update, pause, resume, end, get, advance, or configure (enabled, \
      maxActivities, maxActiveDurationMs). Output is deterministic. A bad line gives an \
      "error" event and changes nothing; the exit status is 0 unless the input cannot be read.
      """
  )

  @Argument(help: "JSON Lines file of commands (default: standard input).")
  var file: String?

  @Flag(help: "Also write a tick event each time a displayed second changes.")
  var ticks = false

  @OptionGroup var styleOptions: StyleOptions

  @OptionGroup var limits: EngineLimitOptions

  func run() throws {
    let fd: Int32
    do {
      fd = try System.openInput(file)
    } catch {
      printError("countdown replay: \(error)")
      throw ExitCode.failure
    }
    // Output streams out as it is made: one command can produce billions of ticks.
    let out = OutputBuffer(fd: 1)
    let session = WireSession(
      formatter: TimerFormatter(style: styleOptions.timerStyle), writesTicks: ticks,
      options: limits.engineOptions,
      outputThreshold: OutputBuffer.flushThreshold, output: { out.append($0) })
    var reader = LineReader(fd: fd)
    var number = 0
    do {
      try reader.forEachLine { line in
        number += 1
        session.handle(bytes: line, number: number)
        if session.pendingOutput >= OutputBuffer.flushThreshold { out.append(session.takeOutput()) }
      }
    } catch {
      out.append(session.takeOutput())
      out.flush()
      printError("countdown replay: \(error)")
      throw ExitCode.failure
    }
    out.append(session.takeOutput())
    out.flush()
  }
}
