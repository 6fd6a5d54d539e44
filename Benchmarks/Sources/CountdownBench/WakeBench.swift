// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import CBenchUV
import Foundation
import Histogram

/// The machine's floor for tick lateness: one bare thread sleeping to each period boundary
/// with `clock_nanosleep(TIMER_ABSTIME)` on `CLOCK_MONOTONIC`, timer slack 1 ns, recording how
/// late it wakes. No timer library can deliver ticks sooner than this thread wakes, so on a
/// shared VM it tells stalls of the machine from lateness of a driver.
struct WakeBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "wake",
    abstract: "The machine's wake-up lateness: a bare clock_nanosleep loop, as a floor.")

  @Option(help: "Seconds measured.")
  var seconds = 7.0

  @Option(help: "Microseconds between wake-ups.")
  var periodMicroseconds = 1_000

  @Option(name: .customLong("result-json"), help: "Write the result as JSON to this file.")
  var resultJSON: String?

  func validate() throws {
    guard seconds > 0, seconds <= 3600 else {
      throw ValidationError("--seconds must be above 0 and at most 3600, not \(seconds)")
    }
    guard (10...1_000_000).contains(periodMicroseconds) else {
      throw ValidationError(
        "--period-microseconds must be 10…1000000, not \(periodMicroseconds)")
    }
  }

  func run() throws {
    let result = WakeProbe(seconds: seconds, periodNs: Int64(periodMicroseconds) * 1_000).run()
    print(result.line)
    if let resultJSON {
      try JSONEncoder().encode(result).write(to: URL(fileURLWithPath: resultJSON))
    }
  }
}

/// One wake-up probe's figures, in microseconds.
struct WakeResult: Codable {
  var seconds: Double
  var periodMicroseconds: Double
  var wakeUps: Int
  var p50: Double
  var p90: Double
  var p99: Double
  var p999: Double
  var max: Double
  /// Wake-ups more than a millisecond late.
  var overOneMs: Int
  /// When in a suite the probe ran.
  var when: String?

  var line: String {
    "bare clock_nanosleep every \(String(format: "%.0f", periodMicroseconds)) µs, \(wakeUps) wake-ups: "
      + "\(latency.text); \(overOneMs) over 1 ms"
  }

  var latency: Latency { Latency(p50: p50, p90: p90, p99: p99, p999: p999, max: max) }
}

struct WakeProbe {
  var seconds: Double
  var periodNs: Int64

  func run() -> WakeResult {
    _ = cbench_set_timer_slack_ns(1)
    var histogram = latencyHistogram()
    var over = 0
    let start = cbench_monotonic_ns()
    let end = start + Int64(seconds * 1e9)
    var next = start + periodNs
    var wakeUps = 0
    while next <= end {
      sleepUntil(monotonicNanoseconds: next)
      let late = cbench_monotonic_ns() - next
      _ = histogram.record(UInt64(max(0, late)))
      if late > 1_000_000 { over += 1 }
      wakeUps += 1
      next += periodNs
    }
    let l = Latency(histogram)
    return WakeResult(
      seconds: seconds, periodMicroseconds: Double(periodNs) / 1_000, wakeUps: wakeUps,
      p50: l.p50, p90: l.p90, p99: l.p99, p999: l.p999, max: l.max, overOneMs: over)
  }
}

/// Sleeps until the monotonic clock reads `t` (`clock_nanosleep` with `TIMER_ABSTIME`, again
/// after a signal).
func sleepUntil(monotonicNanoseconds t: Int64) {
  var ts = timespec(tv_sec: Int(t / 1_000_000_000), tv_nsec: Int(t % 1_000_000_000))
  while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}
