// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Foundation

/// The default suite: the machine's wake-up floor (before and after the tick runs), tick
/// latency for every driver at 10k and 100k activities (ours precise and at its default
/// quantum), ours at 1M (recording lateness, and counting only), with aligned phases, at 100k
/// with 50k ends and starts a second (churn), and at 10M on a group of two loops, then
/// formatting and operations; a table of each peer's ratio to ours. Each tick run is a child
/// process, so that CPU and RSS belong to one driver.
struct SuiteBench: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "suite", abstract: "The default suite (about 3½ minutes), with a ratio table.")

  @Option(help: "Write every result as JSON to this file.")
  var json: String?

  @Option(
    help: "Write each tick run's HdrHistogram percentile distribution (.hgrm) into this directory.")
  var hgrm: String?

  @Option(help: "Seconds measured per tick run.")
  var seconds = 7.0

  @Option(help: "Seconds of warm-up per tick run.")
  var warmup = 2.0

  struct Run {
    var label: String
    var driver: String
    var activities: Int
    var precision: String
    var phases: String
    /// Activities ended and replaced per second.
    var churn = 0
    /// Loops in our driver's group.
    var loops = 1
    /// Ticks counted, lateness not recorded: the driver's own CPU (`ticks --count-only`).
    var countOnly = false

    /// What sets this run apart from a plain one, for the table (nil: nothing).
    var workload: String? {
      if countOnly { return Self.countingOnly }
      return churn > 0 ? "churn \(churn / 1_000)k/s" : loops > 1 ? "\(loops) loops" : nil
    }

    static let countingOnly = "counting only"
  }

  static var plan: [Run] {
    var runs: [Run] = []
    for n in [10_000, 100_000] {
      runs.append(
        Run(
          label: "countdown-precise-\(n)", driver: "countdown", activities: n, precision: "precise",
          phases: "random"))
      runs.append(
        Run(
          label: "countdown-\(n)", driver: "countdown", activities: n, precision: "1ms",
          phases: "random"))
      for peer in ["uv-timer", "nio", "dispatch"] {
        runs.append(
          Run(
            label: "\(peer)-\(n)", driver: peer, activities: n, precision: "1ms", phases: "random"))
      }
    }
    runs.append(
      Run(
        label: "countdown-1000000", driver: "countdown", activities: 1_000_000, precision: "1ms",
        phases: "random"))
    runs.append(
      Run(
        label: "countdown-1000000-count-only", driver: "countdown", activities: 1_000_000,
        precision: "1ms", phases: "random", countOnly: true))
    runs.append(
      Run(
        label: "countdown-aligned-100000", driver: "countdown", activities: 100_000,
        precision: "1ms", phases: "aligned"))
    runs.append(
      Run(
        label: "countdown-churn-100000", driver: "countdown", activities: 100_000,
        precision: "1ms", phases: "random", churn: 50_000))
    runs.append(
      Run(
        label: "countdown-10000000-2-loops", driver: "countdown", activities: 10_000_000,
        precision: "1ms", phases: "random", loops: 2))
    return runs
  }

  func run() async throws {
    let start = monotonicNanoseconds()
    let plan = Self.plan
    let total = plan.count + 4
    func progress(_ k: Int, _ what: String) {
      let elapsed = Double(monotonicNanoseconds() - start) / 1e9
      printError(String(format: "[%2d/%d %5.0fs] %@", k, total, elapsed, what))
    }
    if let hgrm {
      try FileManager.default.createDirectory(atPath: hgrm, withIntermediateDirectories: true)
    }
    let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    var wake: [WakeResult] = []
    func probe(_ k: Int, _ when: String) throws {
      progress(k, "wake (the machine's floor, \(when))")
      if var result: WakeResult = try Self.childResult(me, ["wake", "--seconds", "\(seconds)"]) {
        result.when = when
        wake.append(result)
      }
    }
    try probe(1, "before the tick runs")
    var ticks: [TickResult] = []
    for (k, r) in plan.enumerated() {
      var args = [
        "ticks", "--driver", r.driver, "--activities", "\(r.activities)", "--precision",
        r.precision,
        "--phases", r.phases, "--seconds", "\(seconds)", "--warmup", "\(warmup)",
      ]
      if r.churn > 0 { args += ["--churn", "\(r.churn)"] }
      if r.loops > 1 { args += ["--loops", "\(r.loops)"] }
      if r.countOnly { args += ["--count-only"] }
      progress(k + 2, args.joined(separator: " "))
      if let hgrm, !r.countOnly { args += ["--hgrm", "\(hgrm)/\(r.label).hgrm"] }
      if var result: TickResult = try Self.childResult(me, args) {
        result.workload = r.workload
        ticks.append(result)
      }
    }
    try probe(plan.count + 2, "after the tick runs")
    progress(plan.count + 3, "format")
    let format = FormatBenchmark(count: 10_000_000, foundationCount: 100_000).run { _ in }
    progress(plan.count + 4, "ops")
    let ops = try await OpsBenchmark(count: 200_000, submits: 200_000).run()
    print(Self.report(wake: wake, ticks: ticks, format: format, ops: ops))
    if let json {
      let doc = SuiteResult(
        date: ISO8601DateFormatter().string(from: Date()), machine: machineDescription(),
        wake: wake, ticks: ticks,
        format: format.map { OpsResult(name: $0.name, perSecond: $0.perSecond) }, ops: ops)
      let enc = JSONEncoder()
      enc.outputFormatting = [.prettyPrinted, .sortedKeys]
      try enc.encode(doc).write(to: URL(fileURLWithPath: json))
    }
    progress(total, "done")
  }

  /// Runs this executable with `args` and `--result-json` into a temporary file, its output
  /// discarded, and decodes the result it wrote; nil (and a message) when it fails.
  static func childResult<T: Decodable>(_ me: String, _ args: [String]) throws -> T? {
    let out = FileManager.default.temporaryDirectory.appendingPathComponent(
      "countdown-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json")
    defer { try? FileManager.default.removeItem(at: out) }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: me)
    p.arguments = args + ["--result-json", out.path]
    p.standardOutput = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    guard p.terminationStatus == 0, let data = try? Data(contentsOf: out) else {
      printError("  run failed (status \(p.terminationStatus))")
      return nil
    }
    return try JSONDecoder().decode(T.self, from: data)
  }

  struct SuiteResult: Codable {
    var date: String
    var machine: String
    /// The bare wake-up probe before and after the tick runs.
    var wake: [WakeResult]
    var ticks: [TickResult]
    var format: [OpsResult]
    var ops: [OpsResult]
  }

  /// The tables, in Markdown.
  static func report(wake: [WakeResult], ticks: [TickResult], format: [Rate], ops: [OpsResult])
    -> String
  {
    var s = "## Tick lateness (\(machineDescription()))\n\n"
    s +=
      "The machine's floor, a bare thread sleeping to each millisecond (`countdown-bench wake`):\n\n"
    s += "| when | p50 | p90 | p99 | p99.9 | max | over 1 ms |\n|---|---|---|---|---|---|---|\n"
    for w in wake {
      s +=
        "| \(w.when ?? "") | \(w.latency.cells) | \(w.overOneMs) of \(w.wakeUps) |\n"
    }
    s += "\n"
    s +=
      "| driver | activities | phases | p50 | p90 | p99 | p99.9 | max | early | CPU | RSS | ticks/s | p99 ÷ ours | CPU ÷ ours |\n"
    s += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    for r in ticks {
      let ours = ticks.first {
        $0.driver == "countdown" && $0.precision == "1ms quantum" && $0.activities == r.activities
          && $0.phases == "random" && $0.workload == nil
      }
      let name =
        (r.driver == "countdown" ? "countdown (\(r.precision))" : r.driver)
        + (r.workload.map { ", \($0)" } ?? "")
      let behind = r.fellBehind ? " **falls behind**" : ""
      guard r.workload != Run.countingOnly else {
        // No lateness was recorded: the CPU is the driver's own, and what it costs per tick.
        s +=
          "| \(name) | \(r.activities) | \(r.phases) | – | – | – | – | – | – | "
          + String(format: "%.1f%% (%.0f ns a tick)", r.cpuPercent, r.nanosecondsPerTick) + " | "
          + String(format: "%.0f MB", r.rssMB) + " | "
          + String(format: "%.0f / %.0f", r.ticksPerSecond, r.expectedPerSecond)
          + " | – | "
          + (ours.map { String(format: "%.1f×", r.cpuPercent / $0.cpuPercent) } ?? "–") + " |\n"
        continue
      }
      let p99Ratio = ours.map { String(format: "%.1f×", r.p99 / $0.p99) } ?? "–"
      let cpuRatio = ours.map { String(format: "%.1f×", r.cpuPercent / $0.cpuPercent) } ?? "–"
      s +=
        "| \(name) | \(r.activities) | \(r.phases) | \(r.latency.cells) | \(r.earlyTicks) | "
        + String(format: "%.1f%%", r.cpuPercent) + " | " + String(format: "%.0f MB", r.rssMB)
        + " | "
        + String(format: "%.0f / %.0f", r.ticksPerSecond, r.expectedPerSecond)
        + "\(behind) | \(p99Ratio) | \(cpuRatio) |\n"
    }
    s += "\n## Formatting (formats/s, one thread)\n\n| formatter | per second |\n|---|---|\n"
    for r in format {
      s +=
        "| \(r.name) | "
        + (r.name.hasPrefix("ratio")
          ? String(format: "%.0f×", r.perSecond) : String(format: "%.0f", r.perSecond)) + " |\n"
    }
    s += "\n## Operations\n\n| operation | per second |\n|---|---|\n"
    for r in ops { s += "| \(r.name) | " + String(format: "%.0f", r.perSecond) + " |\n" }
    return s
  }
}

/// `nproc` and the CPU model.
func machineDescription() -> String {
  let cpus = ProcessInfo.processInfo.activeProcessorCount
  let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
  let model =
    info.split(separator: "\n").first { $0.hasPrefix("model name") }
    .map {
      $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) }
        ?? ""
    } ?? "unknown CPU"
  return "nproc \(cpus), \(model)"
}

func printError(_ s: String) {
  FileHandle.standardError.write(Data((s + "\n").utf8))
}
