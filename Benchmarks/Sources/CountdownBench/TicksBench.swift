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

  @Option(help: "Write the HdrHistogram percentile distribution (.hgrm) to this file.")
  var hgrm: String?

  func run() async throws {
    let spec = TickRunSpec(
      activities: activities, seconds: seconds, warmup: warmup, phases: phases, churn: churn,
      precision: try parsePrecision(precision))
    let (result, recorder) = try await spec.run(driver)
    print(result.line)
    if let hgrm { try writeHgrm(recorder, to: hgrm) }
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

func describe(_ p: TimerPrecision) -> String {
  switch p {
  case .precise: "precise"
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

  func endInstants(from nowMs: Int64) -> [Int64] {
    var rng = SystemRandomNumberGenerator()
    let base = (nowMs / 1_000 + 2) * 1_000 + 3_600_000
    return (0..<activities).map { k in
      let phase = phases == .random ? Int64.random(in: 0..<1_000, using: &rng) : 0
      return base + Int64(k % 600) * 1_000 + phase
    }
  }

  func run(_ driver: TicksBench.Driver) async throws -> (TickResult, TickRecorder) {
    switch driver {
    case .countdown: try await runCountdown()
    }
  }

  /// Our driver: one CountdownLoop, every activity started in one command.
  func runCountdown() async throws -> (TickResult, TickRecorder) {
    let recorder = TickRecorder()
    let loop = try CountdownLoop(options: LoopOptions(precision: precision)) { e in
      if e.kind == .tick { recorder.record(atMs: e.at.milliseconds) }
    }
    let ends = endInstants(from: wallNanoseconds() / 1_000_000)
    try await loop.submit { (engine, now) throws(CountdownError) in
      for (k, end) in ends.enumerated() {
        try engine.start(
          .countdown(id: "a\(k)", to: Instant(milliseconds: end), title: "A"), at: now)
      }
    }
    try await Task.sleep(for: .seconds(warmup))
    try await loop.submit { (_, _) in
      recorder.reset()
      recorder.recording = true
    }
    let cpu0 = cpuNanoseconds()
    let t0 = monotonicNanoseconds()
    let wakeups0 = try await loop.wakeups()
    var next = activities
    let churnPerTenth = churn / 10
    while Double(monotonicNanoseconds() - t0) < seconds * 1e9 {
      try await Task.sleep(for: .milliseconds(100))
      guard churnPerTenth > 0 else { continue }
      let first = next
      next += churnPerTenth
      let count = activities
      try await loop.submit { (engine, now) throws(CountdownError) in
        for k in first..<(first + churnPerTenth) {
          try engine.end("a\(k - count)", ActivityEnding(dismissal: .immediate), at: now)
          let end = now.milliseconds + 3_600_000 + Int64.random(in: 0..<1_000)
          try engine.start(
            .countdown(id: "a\(k)", to: Instant(milliseconds: end), title: "A"), at: now)
        }
      }
    }
    try await loop.submit { (_, _) in recorder.recording = false }
    let wall = Double(monotonicNanoseconds() - t0) / 1e9
    let cpu = cpuNanoseconds() - cpu0
    let rss = residentBytes()
    let wakeups = try await loop.wakeups() - wakeups0
    loop.shutdown()
    let result = TickResult.from(
      recorder, driver: "countdown", precision: describe(precision), activities: activities,
      phases: phases.rawValue, seconds: wall, cpuNs: cpu, rss: rss,
      expectedPerSecond: Double(activities),
      note: String(format: "%.0f wake-ups/s", Double(wakeups) / wall))
    return (result, recorder)
  }
}
