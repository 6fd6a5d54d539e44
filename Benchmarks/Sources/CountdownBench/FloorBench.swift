// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import CBenchUV
import Foundation

/// `countdown-bench floor`: the floor of the tick path at N activities. One bare thread sleeps
/// to each millisecond (as `wake` does) and walks that millisecond's entries, laid out as the
/// engine's wheel entries are (an id, slot, generation and value), handing each entry's id and
/// value to a callback that counts (as `ticks --count-only`'s does) and stepping the value. No
/// engine, no events, no deadlines, no recording: what visiting every activity once a second
/// and calling back costs on this machine. `ticks --count-only` measures the engine on the
/// same terms.
struct FloorBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "floor",
    abstract: "The tick path's floor: a bare walk of N entries a second, with a callback.")

  @Option(help: "Activities walked, each once a second.")
  var activities = 1_000_000

  @Option(help: "Seconds measured (after one second of warm-up).")
  var seconds = 6.0

  func validate() throws {
    guard (1_000...50_000_000).contains(activities) else {
      throw ValidationError("--activities must be 1000…50000000, not \(activities)")
    }
    guard seconds >= 1, seconds <= 600 else {
      throw ValidationError("--seconds must be 1…600, not \(seconds)")
    }
  }

  /// The wheel entry's layout.
  struct Entry {
    var id: String
    var slot: UInt32
    var generation: UInt32
    var raw: Int64
  }

  /// The host's callback, behind a class so that the walk cannot inline it.
  final class Sink {
    var count = 0
    var valueSum: Int64 = 0
    var call: (String, Int64) -> Void = { _, _ in }
  }

  func run() throws {
    var buckets = [[Entry]](repeating: [], count: 1_000)
    for k in 0..<activities {
      buckets[Int.random(in: 0..<1_000)].append(
        Entry(id: "a\(k).0", slot: UInt32(k), generation: 0, raw: 7_200_000))
    }
    let sink = Sink()
    sink.call = { [unowned sink] _, value in
      sink.count &+= 1
      sink.valueSum &+= value
    }
    _ = cbench_set_timer_slack_ns(1)
    let start = cbench_monotonic_ns()
    let measureFrom = start + 1_000_000_000
    let end = measureFrom + Int64(seconds * 1e9)
    var next = start + 1_000_000
    var cpuStart: Int64 = 0
    var countStart = 0
    var ms = 0
    while next <= end {
      sleepUntil(monotonicNanoseconds: next)
      if cpuStart == 0, next >= measureFrom {
        cpuStart = cpuNanoseconds()
        countStart = sink.count
      }
      let call = sink.call
      buckets[ms % 1_000].withUnsafeMutableBufferPointer { entries in
        for k in entries.indices {
          call(entries[k].id, entries[k].raw >> 1)
          entries[k].raw -= 2
        }
      }
      ms += 1
      next += 1_000_000
    }
    let cpu = cpuNanoseconds() - cpuStart
    let calls = sink.count - countStart
    let wall = Double(end - measureFrom) / 1e9
    print(
      String(
        format:
          "floor: %d activities, %.0f callbacks/s, CPU %.1f%% of a core, %.1f ns per callback (checksum %lld)",
        activities, Double(calls) / wall, Double(cpu) / (wall * 1e9) * 100,
        Double(cpu) / Double(max(1, calls)), sink.valueSum))
  }
}
