// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Foundation

/// `countdown-bench c-abi`: ticks through the C ABI's callback beside the Swift callback, at
/// each size, in alternating rounds of child processes (one per run, so that CPU and RSS are
/// each run's own), in two pairs that do the same work: `countdown` (a Swift closure gets
/// each `ActivityEvent`) beside `c-abi` with `event_text` 0 (a C function pointer gets each
/// `cd_event`), and `countdown --swift-event-text` (the closure also formats the tick's text)
/// beside `c-abi` (the loop formats it into the `cd_event`). Each C row's ratio is to its pair's
/// Swift row.
struct CABIBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "c-abi",
    abstract: "Ticks through the C callback beside the Swift callback (CPU and lateness).")

  @Option(help: "Activities, one size per option (default 100000 and 1000000).")
  var activities: [Int] = [100_000, 1_000_000]

  @Option(help: "Seconds measured per run.")
  var seconds = 8.0

  @Option(help: "Alternating rounds per size.")
  var rounds = 3

  func run() throws {
    let me = CommandLine.arguments[0]
    // Each driver with the index of the Swift row it is compared with.
    let drivers: [(name: String, args: [String], base: Int)] = [
      ("Swift callback (countdown)", ["--driver", "countdown"], 0),
      (
        "C callback, no text (c-abi --no-c-event-text)",
        ["--driver", "c-abi", "--no-c-event-text"], 0
      ),
      (
        "Swift callback, text (countdown --swift-event-text)",
        ["--driver", "countdown", "--swift-event-text"], 2
      ),
      ("C callback, text (c-abi)", ["--driver", "c-abi"], 2),
    ]
    print(
      "| activities | callback | CPU per round | median CPU | ÷ Swift | median p99 | p99 per round |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in activities {
      var cpu = Array(repeating: [Double](), count: drivers.count)
      var p99 = Array(repeating: [Double](), count: drivers.count)
      for _ in 0..<max(1, rounds) {
        for (k, d) in drivers.enumerated() {
          let args =
            ["ticks", "--activities", "\(n)", "--seconds", "\(seconds)", "--warmup", "3"] + d.args
          guard let r: TickResult = try SuiteBench.childResult(me, args) else {
            throw ValidationError("a run failed: \(args.joined(separator: " "))")
          }
          if r.earlyTicks > 0 || r.fellBehind {
            printError("  \(r.earlyTicks) early ticks, fell behind: \(r.fellBehind) in \(d.name)")
          }
          cpu[k].append(r.cpuPercent)
          p99[k].append(r.p99)
        }
      }
      func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
      for (k, d) in drivers.enumerated() {
        let ratio = median(cpu[k]) / median(cpu[d.base])
        print(
          "| \(n) | \(d.name) | \(cpu[k].map { String(format: "%.1f%%", $0) }.joined(separator: ", ")) | "
            + String(format: "%.1f%% | %.2f× | ", median(cpu[k]), ratio)
            + "\(fmt(median(p99[k]))) | \(p99[k].map(fmt).joined(separator: ", ")) |")
      }
    }
  }
}
