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
  var foundationCount = 200_000

  @Option(help: "Write the results as JSON to this file.")
  var json: String?

  @Option(
    help: ArgumentHelp(
      "Measure only this style (as the table names it, e.g. compact, \"units 4\"); repeatable.",
      valueName: "name"))
  var style: [String] = []

  @Option(help: "Runs per measurement, ours and Foundation's alike; each rate is the best.")
  var repetitions = 3

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
    ).run { line in print(line) }
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
  /// Runs per measurement; each rate is the best of them.
  var repetitions = 3

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

  /// Runs `body` over `n` values `repetitions` times, returning the best formats per second.
  /// Every rate, ours and Foundation's alike, is the best of the same number of runs, so a
  /// stall of the shared machine during one run does not decide a ratio.
  @inline(never)
  func measure(_ n: Int, _ body: (Int) -> Int) -> Double {
    var sink = 0
    var best = 0.0
    let clock = ContinuousClock()
    for _ in 0..<max(1, repetitions) {
      let elapsed = clock.measure { sink &+= body(n) }
      let seconds =
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
      best = max(best, Double(n) / seconds)
    }
    if sink == 42 { print("") }  // keep `sink` alive
    return best
  }

  func run(report: (String) -> Void) -> [Rate] {
    let values = Self.values(1 << 16)
    let mask = values.count - 1
    var rates: [Rate] = []
    func record(_ name: String, _ rate: Double) {
      rates.append(Rate(name: name, perSecond: rate))
      report(pad(name, 44) + String(format: "%14.0f /s", rate))
    }
    let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: TimerFormatter.maximumLength)
    defer { buffer.deallocate() }
    for (name, style) in Self.styles where only.isEmpty || only.contains(name) {
      let f = TimerFormatter(style: style)
      _ = Self.bufferLoop(f, values, mask, buffer, count / 10)  // warm up
      record(
        "countdown \(name) (buffer)",
        measure(count) { n in Self.bufferLoop(f, values, mask, buffer, n) })
      record(
        "countdown \(name) (String)",
        measure(count) { n in Self.stringLoop(f, values, mask, n) })
    }
    let minuteSecond = Duration.TimeFormatStyle(pattern: .minuteSecond)
    record(
      "Foundation .time(pattern: .minuteSecond)",
      measure(foundationCount) { n in
        var total = 0
        for k in 0..<n {
          total &+= Duration.seconds(values[k & mask]).formatted(minuteSecond).utf8.count
        }
        return total
      })
    let units = Duration.UnitsFormatStyle(
      allowedUnits: [.days, .hours, .minutes, .seconds], width: .narrow, maximumUnitCount: 2)
    record(
      "Foundation .units(narrow, maximumUnitCount: 2)",
      measure(foundationCount) { n in
        var total = 0
        for k in 0..<n { total &+= Duration.seconds(values[k & mask]).formatted(units).utf8.count }
        return total
      })
    record(
      "String(format: \"%d:%02d\")",
      measure(foundationCount) { n in
        var total = 0
        for k in 0..<n {
          let s = values[k & mask]
          total &+= String(format: "%d:%02d", s / 60, s % 60).utf8.count
        }
        return total
      })
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
