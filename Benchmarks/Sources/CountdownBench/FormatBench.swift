// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import Foundation

/// Formats per second for every style, through the buffer API and the String API, beside
/// Foundation's formatters and `String(format:)`, all on one thread in one run.
struct FormatBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "format",
    abstract: "Formatting throughput: every style, buffer and String APIs, and Foundation.")

  @Option(help: "Formats per measurement for Countdown's styles.")
  var count = 20_000_000

  @Option(help: "Formats per measurement for Foundation and String(format:).")
  var foundationCount = 100_000

  @Option(help: "Write the results as JSON to this file.")
  var json: String?

  @Option(
    help: ArgumentHelp(
      "Measure only this style (as the table names it, e.g. compact, \"units 4\"); repeatable.",
      valueName: "name"))
  var style: [String] = []

  @Option(
    help:
      "Rounds in which every measurement runs once, ours and Foundation's alike; each rate is the best of its runs."
  )
  var repetitions = 5

  func validate() throws {
    guard repetitions >= 1 else { throw ValidationError("--repetitions must be at least 1") }
    let known = FormatBenchmark.styles.map(\.0)
    for name in style where !known.contains(name) {
      throw ValidationError(
        "unknown style '\(name)'; one of: \(known.map { "'\($0)'" }.joined(separator: ", "))")
    }
  }

  func run() throws {
    let results = FormatBenchmark(
      count: count, foundationCount: foundationCount, only: Set(style), repetitions: repetitions
    ).run(progress: { printError($0) }, report: { line in print(line) })
    if let json {
      let data = try JSONSerialization.data(
        withJSONObject: results.map { ["name": $0.name, "perSecond": $0.perSecond] },
        options: [.prettyPrinted, .sortedKeys])
      try data.write(to: URL(fileURLWithPath: json))
    }
  }
}

/// One measured rate.
struct Rate {
  var name: String
  var perSecond: Double
}

struct FormatBenchmark {
  var count: Int
  var foundationCount: Int
  /// The styles to measure by name; empty means all.
  var only: Set<String> = []
  /// Rounds of runs; each rate is the best of its runs.
  var repetitions = 5

  /// Values a kiosk shows: mostly under an hour, some hours, some days.
  static func values(_ n: Int) -> [Int64] {
    var rng = SystemRandomNumberGenerator()
    return (0..<n).map { k in
      switch k % 10 {
      case 0..<6: Int64.random(in: 0..<3600, using: &rng)
      case 6..<9: Int64.random(in: 3600..<86_400, using: &rng)
      default: Int64.random(in: 86_400..<10_000_000, using: &rng)
      }
    }
  }

  static let styles: [(String, TimerStyle)] = [
    ("timer", .timer), ("compact", .compact), ("remaining", .remaining),
    ("positional", .positional), ("minute-second", .minuteSecond),
    ("timer --no-hours", .timerWithoutHours), ("units 2", .units(maxUnits: 2)),
    ("units 4", .units(maxUnits: 4)),
  ]

  /// One thing measured: its name, formats per run, and the loop, which returns a checksum.
  struct Measurement {
    var name: String
    var count: Int
    var body: (Int) -> Int
  }

  /// Formats per second of one run of `m`.
  @inline(never)
  static func once(_ m: Measurement) -> Double {
    var sink = 0
    let elapsed = ContinuousClock().measure { sink = m.body(m.count) }
    if sink == 42 { print("") }  // keep the checksum alive
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(m.count) / seconds
  }

  /// Every measurement once per round, `repetitions` rounds, each rate the best of its runs.
  /// Ours and Foundation's alike get the same number of runs, spread over the whole benchmark
  /// rather than back to back, so a stretch of contention on the shared machine does not decide
  /// a ratio. `progress` hears of each round.
  func run(progress: (String) -> Void = { _ in }, report: (String) -> Void) -> [Rate] {
    let values = Self.values(1 << 16)
    let mask = values.count - 1
    let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: TimerFormatter.maximumLength)
    defer { buffer.deallocate() }
    var list: [Measurement] = []
    for (name, style) in Self.styles where only.isEmpty || only.contains(name) {
      let f = TimerFormatter(style: style)
      list.append(
        Measurement(name: "countdown \(name) (buffer)", count: count) { n in
          Self.bufferLoop(f, values, mask, buffer, n)
        })
      list.append(
        Measurement(name: "countdown \(name) (String)", count: count) { n in
          Self.stringLoop(f, values, mask, n)
        })
    }
    let minuteSecond = Duration.TimeFormatStyle(pattern: .minuteSecond)
    list.append(
      Measurement(name: "Foundation .time(pattern: .minuteSecond)", count: foundationCount) { n in
        var total = 0
        for k in 0..<n {
          total &+= Duration.seconds(values[k & mask]).formatted(minuteSecond).utf8.count
        }
        return total
      })
    let units = Duration.UnitsFormatStyle(
      allowedUnits: [.days, .hours, .minutes, .seconds], width: .narrow, maximumUnitCount: 2)
    list.append(
      Measurement(name: "Foundation .units(narrow, maximumUnitCount: 2)", count: foundationCount) {
        n in
        var total = 0
        for k in 0..<n { total &+= Duration.seconds(values[k & mask]).formatted(units).utf8.count }
        return total
      })
    list.append(
      Measurement(name: "String(format: \"%d:%02d\")", count: foundationCount) { n in
        var total = 0
        for k in 0..<n {
          let s = values[k & mask]
          total &+= String(format: "%d:%02d", s / 60, s % 60).utf8.count
        }
        return total
      })
    var best = [Double](repeating: 0, count: list.count)
    let rounds = max(1, repetitions)
    for round in 0..<rounds {
      progress("format: round \(round + 1) of \(rounds)")
      for (k, m) in list.enumerated() { best[k] = max(best[k], Self.once(m)) }
    }
    var rates: [Rate] = []
    for (k, m) in list.enumerated() {
      rates.append(Rate(name: m.name, perSecond: best[k]))
      report(pad(m.name, 44) + String(format: "%14.0f /s", best[k]))
    }
    func rate(_ name: String) -> Double { rates.first { $0.name == name }?.perSecond ?? .nan }
    report("")
    // Each style against the Foundation formatter that writes the same kind of text.
    let pairs = [
      ("timer", "Foundation .time(pattern: .minuteSecond)"),
      ("minute-second", "Foundation .time(pattern: .minuteSecond)"),
      ("compact", "Foundation .units(narrow, maximumUnitCount: 2)"),
      ("units 2", "Foundation .units(narrow, maximumUnitCount: 2)"),
    ]
    for (style, peer) in pairs where only.isEmpty || only.contains(style) {
      for api in ["buffer", "String"] {
        let ratio = rate("countdown \(style) (\(api))") / rate(peer)
        rates.append(Rate(name: "ratio \(style) (\(api)) / \(peer)", perSecond: ratio))
        report(
          pad("\(style) (\(api)) vs \(peer.dropFirst(11))", 60) + String(format: "%8.0fx", ratio))
      }
    }
    return rates
  }

  @inline(never)
  static func bufferLoop(
    _ f: TimerFormatter, _ values: [Int64], _ mask: Int,
    _ buffer: UnsafeMutableBufferPointer<UInt8>,
    _ n: Int
  ) -> Int {
    var total = 0
    values.withUnsafeBufferPointer { v in
      for k in 0..<n { total &+= f.write(seconds: v[k & mask], into: buffer) }
    }
    return total &+ Int(buffer[0])
  }

  @inline(never)
  static func stringLoop(_ f: TimerFormatter, _ values: [Int64], _ mask: Int, _ n: Int) -> Int {
    var total = 0
    values.withUnsafeBufferPointer { v in
      for k in 0..<n { total &+= f.string(seconds: v[k & mask]).utf8.count }
    }
    return total
  }
}

func pad(_ s: String, _ width: Int) -> String {
  s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
}
