// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown

/// `--style`, `--max-units` and `--no-hours`, shared by the commands that write timer text.
struct StyleOptions: ParsableArguments {
  @Option(help: "Text style: \(TimerStyle.names.joined(separator: ", ")).")
  var style: String = "timer"

  @Option(name: .customLong("max-units"), help: "Most units for the units style (1-4).")
  var maxUnits: Int = 2

  @Flag(name: .customLong("no-hours"), help: "Timer style without hours (62:05).")
  var noHours = false

  func validate() throws {
    guard (1...4).contains(maxUnits) else {
      throw ValidationError("--max-units must be 1, 2, 3 or 4, not \(maxUnits)")
    }
    guard TimerStyle(name: style) != nil else {
      throw ValidationError(
        "unknown style '\(style)'; expected one of \(TimerStyle.names.joined(separator: ", "))")
    }
  }

  var timerStyle: TimerStyle {
    TimerStyle(name: style, maxUnits: maxUnits, showsHours: !noHours) ?? .timer
  }
}

/// `--max-activities` and `--max-active-duration`, shared by replay and serve.
struct EngineLimitOptions: ParsableArguments {
  @Option(name: .customLong("max-activities"), help: "Engine limit on activities at once.")
  var maxActivities: Int?

  @Option(
    name: .customLong("max-active-duration"),
    help: "End activities this many milliseconds after their start (reason maxDuration).")
  var maxActiveDuration: Int64?

  func validate() throws {
    if let maxActivities, maxActivities < 0 {
      throw ValidationError("--max-activities must be ≥ 0")
    }
    if let maxActiveDuration, maxActiveDuration < 0 {
      throw ValidationError("--max-active-duration must be ≥ 0")
    }
  }

  var engineOptions: EngineOptions {
    EngineOptions(maxActivities: maxActivities, maxActiveDurationMs: maxActiveDuration)
  }
}
