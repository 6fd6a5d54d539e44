// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

// The engine's operations for `ops-instructions.sh`: the same commands as `countdown-bench
// ops` (OpsBench.swift), deterministic, phase by phase. `main PHASES COUNT` runs the first
// PHASES phases on COUNT activities; callgrind counts the instructions, and the script takes
// each phase's share as the difference between PHASES and PHASES - 1. `main time COUNT
// PASSES` runs all seven phases PASSES times, each pass on a fresh engine, and prints each
// phase's median nanoseconds an operation (the script's `-t`: a bisect in seconds).
import Countdown

@main
struct Harness {
  static func main() throws {
    let arguments = CommandLine.arguments
    let timing = arguments[1] == "time"
    let phases = timing ? 7 : Int(arguments[1])!
    let count = Int(arguments[2])!
    let passes = timing ? Int(arguments[3])! : 1
    let t0 = Instant(milliseconds: 1_795_248_000_000)
    let ids = (0..<count).map { "op\($0)" }
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    let ends = (0..<count).map { _ in t0.advanced(by: 60_000 + Int64(next() % 3_540_000)) }
    var order = Array(0..<count)
    for k in stride(from: count - 1, to: 0, by: -1) { order.swapAt(k, Int(next() % UInt64(k + 1))) }
    let randomIDs = order.map { ids[$0] }
    let randomEnds = order.map { ends[($0 + 1) % count] }
    // Nanoseconds an operation, per phase, one entry a pass.
    var times = [[Double]](repeating: [], count: 7)
    let clock = ContinuousClock()
    for _ in 0..<passes {
      var engine = ActivityEngine(now: t0)
      var phase = 0
      func run(_ body: () throws -> Void) rethrows {
        phase += 1
        guard phase <= phases else { return }
        let took = try clock.measure(body)
        let ns = Double(took.components.seconds) * 1e9 + Double(took.components.attoseconds) / 1e9
        times[phase - 1].append(ns / Double(count))
      }
      try run {
        for k in 0..<count {
          try engine.start(.countdown(id: ids[k], to: ends[k], title: "A"), at: t0)
        }
      }
      try run {
        for k in 0..<count {
          try engine.update(ids[k], ActivityUpdate(endDate: ends[(k + 1) % count]), at: t0)
        }
      }
      try run {
        for k in 0..<count { try engine.end(ids[k], ActivityEnding(dismissal: .immediate), at: t0) }
      }
      try run {
        for k in 0..<count {
          try engine.start(.countdown(id: ids[k], to: ends[k], title: "A"), at: t0)
        }
      }
      try run {
        for k in 0..<count {
          try engine.update(ids[k], ActivityUpdate(content: ["title": .string("B")]), at: t0)
        }
      }
      try run {
        for k in 0..<count {
          try engine.update(randomIDs[k], ActivityUpdate(endDate: randomEnds[k]), at: t0)
        }
      }
      try run {
        for id in randomIDs { try engine.end(id, ActivityEnding(dismissal: .immediate), at: t0) }
      }
      if !timing { print(engine.count) }
    }
    if timing {
      print(times.map { String($0.sorted()[$0.count / 2]) }.joined(separator: " "))
    }
  }
}
