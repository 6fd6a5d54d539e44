// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import CBenchUV
import Foundation
import Histogram

/// How a recorder reads the instant each tick is delivered.
enum TickClock: String, CaseIterable, Codable, ExpressibleByArgument {
  /// The wall clock at the first tick of each instant, and the cycle counter from there for
  /// the ticks of the same instant that follow (a burst is timed to the nanosecond at a third
  /// of a clock read's cost).
  case anchored
  /// The wall clock at every tick.
  case wall
}

/// Nanoseconds per cycle of `cbench_cycles()`, measured once against the monotonic clock over
/// 200 ms (each end read back to back and kept from the closest of three pairs).
let nanosecondsPerCycle: Double = {
  func pair() -> (cycles: UInt64, ns: Int64) {
    var best = (cycles: UInt64(0), ns: Int64(0), gap: UInt64.max)
    for _ in 0..<3 {
      let c0 = cbench_cycles()
      let ns = cbench_monotonic_ns()
      let c1 = cbench_cycles()
      if c1 &- c0 < best.gap { best = (c0 / 2 + c1 / 2, ns, c1 &- c0) }
    }
    return (best.cycles, best.ns)
  }
  let a = pair()
  usleep(200_000)
  let b = pair()
  return Double(b.ns - a.ns) / Double(b.cycles &- a.cycles)
}()

/// Tick lateness as one driver's callbacks see it. `@unchecked Sendable`: while a run is
/// measured only the driver's one delivery thread records; the main thread reads and resets
/// it only between runs or through that thread (each driver hands it over with a barrier).
/// The state sits behind a pointer so that recording pays no exclusivity check.
final class TickRecorder: @unchecked Sendable {
  struct State {
    var histogram = latencyHistogram()
    var ticks: UInt64 = 0
    var early: UInt64 = 0
    var recording = false
    /// Wall-clock milliseconds at which recording started and stopped.
    var windowStartMs: Int64 = 0
    var windowEndMs: Int64 = 0
    /// `anchored`: the instant of the last tick, and the wall clock and cycle counter read at
    /// the first tick of that instant.
    var anchorAtMs = Int64.min
    var anchorWallNs: Int64 = 0
    var anchorCycles: UInt64 = 0
    /// The check of the cycle counter's time: at each new instant, how far the time it gives
    /// is from the wall clock read then (for instants within a second of the last).
    var anchors: UInt64 = 0
    var largestAnchorGapNs: Int64 = 0
  }

  let state = UnsafeMutablePointer<State>.allocate(capacity: 1)
  let clock: TickClock
  /// The counter's rate, measured only for `anchored` (the measure takes 200 ms).
  let nanosecondsPerCycle: Double

  init(clock: TickClock = .anchored) {
    self.clock = clock
    nanosecondsPerCycle = clock == .anchored ? CountdownBench.nanosecondsPerCycle : 1
    state.initialize(to: State())
  }

  deinit {
    state.deinitialize(count: 1)
    state.deallocate()
  }

  var histogram: Histogram<UInt64> { state.pointee.histogram }
  var ticks: UInt64 { state.pointee.ticks }
  var early: UInt64 { state.pointee.early }
  var recording: Bool {
    get { state.pointee.recording }
    set {
      state.pointee.recording = newValue
      state.pointee.anchorAtMs = .min
      if newValue {
        state.pointee.windowStartMs = wallNanoseconds() / 1_000_000
      } else {
        state.pointee.windowEndMs = wallNanoseconds() / 1_000_000
      }
    }
  }

  /// How many of `ends` fall on each millisecond of the second: all that
  /// ``expectedTicks(phaseCounts:)`` needs of them, in 8 KB instead of 8 bytes an activity.
  static func phaseCounts(_ ends: [Int64]) -> [Int] {
    var counts = [Int](repeating: 0, count: 1000)
    for e in ends { counts[Int(((e % 1000) + 1000) % 1000)] += 1 }
    return counts
  }

  /// Ticks due within the recorded window for activities whose ends fall on the milliseconds
  /// `phaseCounts` counts (``phaseCounts(_:)``; each changes at `end − k s`), counting every
  /// change instant `t` with `start < t ≤ end`: every end is an hour after the window, so an
  /// activity's count depends on its phase alone.
  func expectedTicks(phaseCounts: [Int]) -> Int {
    let a = state.pointee.windowStartMs
    let b = state.pointee.windowEndMs
    func floorDiv(_ x: Int64) -> Int64 { x >= 0 ? x / 1000 : -((-x + 999) / 1000) }
    var n: Int64 = 0
    for (phase, count) in phaseCounts.enumerated() where count > 0 {
      let e = Int64(phase)
      n += Int64(count) * (floorDiv(b - e) - floorDiv(a - e))
    }
    return Int(n)
  }

  /// Counts one tick without reading the clock or touching the histogram: for measuring the
  /// driver's own cost per tick (`ticks --count-only`).
  @inline(__always)
  func count() {
    guard state.pointee.recording else { return }
    state.pointee.ticks &+= 1
  }

  /// Records one tick whose displayed value changed at `atMs`, delivered now.
  @inline(__always)
  func record(atMs: Int64) {
    guard state.pointee.recording else { return }
    let lateness = deliveredNanoseconds(atMs: atMs) - atMs * 1_000_000
    state.pointee.ticks &+= 1
    if lateness < 0 {
      state.pointee.early &+= 1
    } else {
      _ = state.pointee.histogram.record(UInt64(lateness))
    }
  }

  /// Wall-clock nanoseconds now, for a tick of instant `atMs`: read from the wall clock at
  /// the first tick of an instant, from the cycle counter since that read for the rest.
  @inline(__always)
  func deliveredNanoseconds(atMs: Int64) -> Int64 {
    guard clock == .anchored else { return wallNanoseconds() }
    if atMs == state.pointee.anchorAtMs { return counterTime(cbench_cycles()) }
    // The wall clock between two counter reads, read again (up to twice) when they are far
    // apart (the thread was preempted between them): the pair must be one moment.
    var before = cbench_cycles()
    var now = wallNanoseconds()
    var after = cbench_cycles()
    for _ in 0..<2 where Double(after &- before) * nanosecondsPerCycle > 1_000 {
      before = cbench_cycles()
      now = wallNanoseconds()
      after = cbench_cycles()
    }
    let cycles = before / 2 + after / 2
    if state.pointee.anchorAtMs != .min, now - state.pointee.anchorWallNs < 1_000_000_000 {
      let gap = abs(now - counterTime(cycles))
      state.pointee.largestAnchorGapNs = max(state.pointee.largestAnchorGapNs, gap)
    }
    state.pointee.anchors &+= 1
    state.pointee.anchorCycles = cycles
    state.pointee.anchorWallNs = now
    state.pointee.anchorAtMs = atMs
    return now
  }

  /// Wall-clock nanoseconds at counter reading `cycles`, from the last anchor.
  @inline(__always)
  func counterTime(_ cycles: UInt64) -> Int64 {
    // Signed: a counter read on another core may be a few cycles behind.
    let since = Int64(bitPattern: cycles &- state.pointee.anchorCycles)
    return state.pointee.anchorWallNs + Int64(Double(since) * nanosecondsPerCycle)
  }

  /// The anchored clock's check, for the report.
  var anchorCheck: String? {
    guard clock == .anchored else { return nil }
    return "tick clock anchored at \(state.pointee.anchors) instants; the cycle counter's time "
      + "was within \(state.pointee.largestAnchorGapNs) ns of the wall clock at each"
  }

  func reset() {
    state.pointee.anchorAtMs = .min
    state.pointee.anchors = 0
    state.pointee.largestAnchorGapNs = 0
    state.pointee.histogram.reset()
    state.pointee.ticks = 0
    state.pointee.early = 0
  }
}

/// One tick-latency run's figures.
struct TickResult: Codable {
  var driver: String
  var precision: String
  var activities: Int
  var phases: String
  var seconds: Double
  var p50: Double
  var p90: Double
  var p99: Double
  var p999: Double
  var max: Double
  var earlyTicks: UInt64
  var cpuPercent: Double
  var rssMB: Double
  var ticksPerSecond: Double
  var expectedPerSecond: Double
  var fellBehind: Bool
  var note: String
  /// Set by the suite: what sets the run apart (churn, loops), nil for a plain run.
  var workload: String? = nil

  /// Percentiles in microseconds.
  static func from(
    _ r: TickRecorder, driver: String, precision: String, activities: Int, phases: String,
    seconds: Double, cpuNs: Int64, rss: Int64, expectedPerSecond: Double, note: String = ""
  ) -> TickResult {
    let l = Latency(r.histogram)
    let perSecond = Double(r.ticks) / seconds
    let p99 = l.p99
    return TickResult(
      driver: driver, precision: precision, activities: activities, phases: phases,
      seconds: seconds, p50: l.p50, p90: l.p90, p99: p99, p999: l.p999, max: l.max,
      earlyTicks: r.early,
      cpuPercent: Double(cpuNs) / (seconds * 1e9) * 100, rssMB: Double(rss) / 1_048_576,
      ticksPerSecond: perSecond, expectedPerSecond: expectedPerSecond,
      fellBehind: perSecond < expectedPerSecond * 0.98 || p99 > 1_000_000, note: note)
  }

  var latency: Latency { Latency(p50: p50, p90: p90, p99: p99, p999: p999, max: max) }

  /// The run's CPU per delivered tick, in nanoseconds.
  var nanosecondsPerTick: Double { cpuPercent / 100 * 1e9 / Swift.max(1, ticksPerSecond) }

  var line: String {
    let behind = fellBehind ? "  FALLS BEHIND" : ""
    return "\(driver) [\(precision)] \(activities) activities, \(phases) phases: "
      + "\(latency.text); early \(earlyTicks); CPU \(String(format: "%.1f", cpuPercent))%; RSS \(String(format: "%.0f", rssMB)) MB; "
      + "ticks/s \(String(format: "%.0f", ticksPerSecond)) of \(String(format: "%.0f", expectedPerSecond))"
      + (note.isEmpty ? "" : "; \(note)") + behind
  }
}

/// A histogram of lateness in nanoseconds: up to a minute, three significant digits.
func latencyHistogram() -> Histogram<UInt64> {
  Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
}

/// The percentiles every lateness result reports, in microseconds.
struct Latency {
  var p50: Double
  var p90: Double
  var p99: Double
  var p999: Double
  var max: Double

  init(p50: Double, p90: Double, p99: Double, p999: Double, max: Double) {
    (self.p50, self.p90, self.p99, self.p999, self.max) = (p50, p90, p99, p999, max)
  }

  /// From a histogram in nanoseconds.
  init(_ h: Histogram<UInt64>) {
    let us = { (v: UInt64) in Double(v) / 1_000 }
    self.init(
      p50: us(h.valueAtPercentile(50)), p90: us(h.valueAtPercentile(90)),
      p99: us(h.valueAtPercentile(99)), p999: us(h.valueAtPercentile(99.9)), max: us(h.max))
  }

  /// `p50 … p90 … p99 … p99.9 … max …`, as the one-line results print it.
  var text: String {
    "p50 \(fmt(p50)) p90 \(fmt(p90)) p99 \(fmt(p99)) p99.9 \(fmt(p999)) max \(fmt(max))"
  }

  /// The five as Markdown table cells, without the outer bars.
  var cells: String {
    "\(fmt(p50)) | \(fmt(p90)) | \(fmt(p99)) | \(fmt(p999)) | \(fmt(max))"
  }
}

/// Microseconds, printed as µs or ms.
func fmt(_ us: Double) -> String {
  us >= 1_000 ? String(format: "%.2f ms", us / 1_000) : String(format: "%.0f µs", us)
}
