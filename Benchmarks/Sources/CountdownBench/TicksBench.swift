// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import CountdownLoop
import Foundation

/// Tick lateness, CPU and memory of a timer driver holding N activities.
struct TicksBench: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "ticks",
    abstract: "Tick lateness (HdrHistogram), CPU, RSS and delivery rate for N activities.")

  enum Driver: String, ExpressibleByArgument, CaseIterable, Codable {
    case countdown
    /// Our loop through the C ABI, ticks to a C function pointer.
    case cABI = "c-abi"
    case uvTimer = "uv-timer"
    case nio
    case dispatch
  }

  enum Phases: String, ExpressibleByArgument, CaseIterable, Codable {
    case random, aligned
  }

  @Option(help: "Which timer driver: \(Driver.allCases.map(\.rawValue).joined(separator: ", ")).")
  var driver: Driver = .countdown

  @Option(help: "Activities ticking at once.")
  var activities = 100_000

  @Option(help: "Seconds measured.")
  var seconds = 10.0

  @Option(help: "Seconds run before measuring.")
  var warmup = 2.0

  @Option(help: "random: end times at random milliseconds; aligned: on whole seconds.")
  var phases: Phases = .random

  @Option(help: "Activities ended and replaced per second while measuring.")
  var churn = 0

  @Option(help: "Our driver's timer: 'precise' or a quantum such as '1ms'.")
  var precision = "1ms"

  @Option(
    name: .customLong("precise-spin-us"),
    help:
      "With --precision precise: how many microseconds early to wake and spin (library default 50)."
  )
  var preciseSpinMicroseconds: Int?

  @Flag(
    help:
      "With --driver countdown: count ticks only (no clock read, no histogram), and print the driver's CPU per tick."
  )
  var countOnly = false

  @Option(help: "With --driver countdown: a CountdownLoopGroup of this many loops (default 1).")
  var loops = 1

  @Flag(
    inversion: .prefixedNo,
    help: "With --driver c-abi: each cd_event carries its text (the loop formats every tick).")
  var cEventText = true

  @Flag(
    help:
      "With --driver countdown: the Swift callback formats each tick's text in the timer style into a stack buffer, as c-abi's event text does."
  )
  var swiftEventText = false

  @Flag(
    inversion: .prefixedNo,
    help:
      "With --driver countdown: ticks first (a long command catches the loop up between its operations); --no-ticks-first measures without."
  )
  var ticksFirst = true

  /// Where a listing of every activity is built (`--list-all`).
  enum ListAll: String, ExpressibleByArgument, CaseIterable, Codable {
    /// No listing.
    case off
    /// `engine.activities()` inside a command: built on the loop thread.
    case loop
    /// `engine.activitiesView()` inside a command, its states built on another thread (what
    /// `countdown serve` does for `list` and `subscribe`).
    case view
  }

  @Option(
    help:
      "With --driver countdown and one loop: once a second while measuring, list every activity, built on the loop thread (loop) or from a view on another thread (view)."
  )
  var listAll: ListAll = .off

  @Option(
    name: .customLong("tick-clock"),
    help:
      "How each tick's delivery is timed: anchored (the wall clock at an instant's first tick, the CPU's cycle counter for the rest of that instant's ticks) or wall (the wall clock at every tick, a clock read of about 22 ns each on this VM)."
  )
  var tickClock: TickClock = .anchored

  @Option(help: "Write the HdrHistogram percentile distribution (.hgrm) to this file.")
  var hgrm: String?

  @Option(name: .customLong("result-json"), help: "Write this run's result as JSON to this file.")
  var resultJSON: String?

  func validate() throws {
    guard (1...64).contains(loops) else {
      throw ValidationError("--loops must be 1…64, not \(loops)")
    }
    if countOnly, driver != .countdown || loops > 1 {
      throw ValidationError("--count-only applies to --driver countdown with one loop")
    }
    if loops > 1, driver != .countdown {
      throw ValidationError("--loops applies to --driver countdown only")
    }
    if swiftEventText, driver != .countdown || loops > 1 || countOnly {
      throw ValidationError(
        "--swift-event-text applies to --driver countdown with one loop, without --count-only")
    }
    if !ticksFirst, driver != .countdown || loops > 1 {
      throw ValidationError("--no-ticks-first applies to --driver countdown with one loop")
    }
    if listAll != .off, driver != .countdown || loops > 1 {
      throw ValidationError("--list-all applies to --driver countdown with one loop")
    }
    if let us = preciseSpinMicroseconds {
      guard (0...1_000).contains(us) else {
        throw ValidationError("--precise-spin-us must be 0…1000, not \(us)")
      }
      guard precision == "precise" else {
        throw ValidationError("--precise-spin-us applies only with --precision precise")
      }
    }
  }

  func run() async throws {
    let spec = TickRunSpec(
      activities: activities, seconds: seconds, warmup: warmup, phases: phases, churn: churn,
      precision: try parsePrecision(precision),
      preciseSpinNanoseconds: preciseSpinMicroseconds.map { Int64($0) * 1_000 },
      cEventText: cEventText, loops: loops, countOnly: countOnly, ticksFirst: ticksFirst,
      swiftEventText: swiftEventText, tickClock: tickClock, listAll: listAll)
    let (result, recorder) = try await spec.run(driver)
    print(result.line)
    if !countOnly, let check = recorder.anchorCheck { print(check) }
    if countOnly {
      print(String(format: "CPU per tick, counting only: %.1f ns", result.nanosecondsPerTick))
    }
    if let hgrm { try writeHgrm(recorder, to: hgrm) }
    if let resultJSON {
      try JSONEncoder().encode(result).write(to: URL(fileURLWithPath: resultJSON))
    }
  }
}

func parsePrecision(_ s: String) throws -> TimerPrecision {
  if s == "precise" { return .precise }
  let digits = s.hasSuffix("ms") ? String(s.dropLast(2)) : s
  guard let ms = Int64(digits), ms >= 1 else {
    throw ValidationError(
      "--precision must be 'precise' or a whole number of milliseconds such as 1ms")
  }
  return .quantum(milliseconds: ms)
}

func describe(_ p: TimerPrecision, spin: Int64? = nil) -> String {
  switch p {
  case .precise: spin.map { "precise, \($0 / 1_000) µs spin" } ?? "precise"
  case .quantum(let ms): "\(ms)ms quantum"
  }
}

/// Writes the percentile distribution in microseconds.
func writeHgrm(_ r: TickRecorder, to path: String) throws {
  var text = ""
  r.histogram.outputPercentileDistribution(to: &text, outputValueUnitScalingRatio: 1_000)
  try text.write(toFile: path, atomically: true, encoding: .utf8)
}

/// The activity set every driver gets: long countdowns whose end instants sit at random
/// milliseconds (or whole seconds), so each ticks once a second for the whole run.
struct TickRunSpec {
  var activities: Int
  var seconds: Double
  var warmup: Double
  var phases: TicksBench.Phases
  var churn: Int
  var precision: TimerPrecision
  /// Our precise mode's early wake, when not the library's default.
  var preciseSpinNanoseconds: Int64? = nil
  /// Whether the c-abi driver's events carry their text.
  var cEventText = true
  /// Loops in our driver's group (1: one `CountdownLoop`).
  var loops = 1
  /// Our driver counts ticks instead of recording their lateness.
  var countOnly = false
  /// Our driver catches up between a command's operations (the library's behaviour).
  var ticksFirst = true
  /// Our driver's callback formats each tick's text.
  var swiftEventText = false
  /// How the recorder times each tick's delivery.
  var tickClock = TickClock.anchored
  /// Whether (and where) every activity is listed once a second while measuring.
  var listAll = TicksBench.ListAll.off

  func endInstants(from nowMs: Int64) -> [Int64] {
    var rng = SplitMix64(state: UInt64.random(in: .min ... .max))
    let base = (nowMs / 1_000 + 2) * 1_000 + 3_600_000
    return (0..<activities).map { k in
      let phase = phases == .random ? Int64.random(in: 0..<1_000, using: &rng) : 0
      return base + Int64(k % 600) * 1_000 + phase
    }
  }

  func makePeer(_ driver: TicksBench.Driver) -> any TickPeer {
    switch driver {
    case .countdown where loops > 1: GroupPeer(precision: precision, loops: loops)
    case .countdown:
      CountdownPeer(
        precision: precision, spin: preciseSpinNanoseconds, countOnly: countOnly,
        ticksFirst: ticksFirst, eventText: swiftEventText)
    case .cABI: CABIPeer(precision: precision, eventText: cEventText)
    case .uvTimer: UVTimerPeer()
    case .nio: NIOPeer()
    case .dispatch: DispatchPeer()
    }
  }

  /// Starts the activity set on `driver`, warms up, measures for `seconds` (with churn), and
  /// reports. Every driver runs exactly this.
  func run(_ driver: TicksBench.Driver) async throws -> (TickResult, TickRecorder) {
    let recorder = TickRecorder(clock: tickClock)
    let peer = makePeer(driver)
    var ends = endInstants(from: wallNanoseconds() / 1_000_000)
    try await peer.start(ends: ends, recorder: recorder)
    // The ends themselves go (8 bytes an activity: 80 MB at 10M), so that the RSS reported is
    // the driver's and its activities', not this list's.
    let phaseCounts = TickRecorder.phaseCounts(ends)
    ends = []
    try await Task.sleep(for: .seconds(warmup))
    try await peer.barrier {
      recorder.reset()
      recorder.recording = true
    }
    let cpu0 = cpuNanoseconds()
    let t0 = monotonicNanoseconds()
    let perTenth = churn / 10
    var cursor = 0
    // Not the system generator: on Linux each of its numbers is a getrandom(2) call, which
    // the run's CPU would count (about 5% of the churn run's samples).
    var rng = SplitMix64(state: UInt64.random(in: .min ... .max))
    var tenths = 0
    var listed: [Int] = []
    while Double(monotonicNanoseconds() - t0) < seconds * 1e9 {
      try await Task.sleep(for: .milliseconds(100))
      tenths += 1
      if listAll != .off, tenths % 10 == 5, let peer = peer as? CountdownPeer {
        listed.append(try await peer.listAll(offLoop: listAll == .view))
      }
      guard perTenth > 0 else { continue }
      let nowMs = wallNanoseconds() / 1_000_000
      var items: [(index: Int, end: Int64)] = []
      for _ in 0..<perTenth {
        items.append((cursor, nowMs + 3_600_000 + Int64.random(in: 0..<1_000, using: &rng)))
        cursor = (cursor + 1) % activities
      }
      try await peer.replace(items)
    }
    try await peer.barrier { recorder.recording = false }
    let wall = Double(monotonicNanoseconds() - t0) / 1e9
    let cpu = cpuNanoseconds() - cpu0
    let rss = residentBytes()
    var note = try await peer.note(seconds: wall)
    if listAll != .off {
      note += "; \(listed.count) listings of \(listed.min() ?? 0)–\(listed.max() ?? 0) activities"
      note += listAll == .view ? " (views, built off the loop)" : " (built on the loop)"
    }
    await peer.stop()
    // Exact for a fixed set; with churn, each activity still ticks once a second.
    let expected =
      churn == 0
      ? Double(recorder.expectedTicks(phaseCounts: phaseCounts)) / wall : Double(activities)
    let result = TickResult.from(
      recorder, driver: driver.rawValue,
      precision: driver == .countdown || driver == .cABI
        ? describe(precision, spin: preciseSpinNanoseconds) : "-",
      activities: activities,
      phases: phases.rawValue, seconds: wall, cpuNs: cpu, rss: rss,
      expectedPerSecond: expected, note: note)
    return (result, recorder)
  }
}
