// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

// The engine's operations for `ops-instructions.sh`: the same commands as `countdown-bench
// ops` (OpsBench.swift), deterministic, phase by phase, then the tick walk. Each phase is a
// function of its own that is never inlined (`phase1` … `phase9`, then `phaseEnd`), called in
// order. `main PHASES COUNT` runs the first PHASES phases on COUNT activities. `main time COUNT PASSES` runs all phases PASSES
// times, each pass on a fresh engine, and prints each reported phase's median nanoseconds an
// operation (the script's `-t`: a bisect in seconds).
//
// The script runs it under callgrind with a dump of the counts before each phase and before
// `phaseEnd`, so each dump between two of them is one phase's own work alone, all in one
// process: not the set-up, not the engine's teardown at exit, and one draw of the id index's
// hash seed for every row.
//
// Phases 1-7 are the seven commands. Phase 8 starts COUNT countdowns again (an hour away at
// most, random milliseconds) and runs the clock through their first second, a call a
// millisecond as the loop's timer makes them; phase 9 runs it through five seconds more: the
// tick walk alone, counted (as `ticks --count-only` does), reported per tick (5 x COUNT).
// Phase 8 is set-up and not reported.
import Countdown

/// The commands' inputs, made once.
struct Inputs {
  let count: Int
  let t0 = Instant(milliseconds: 1_795_248_000_000)
  let ids: [String]
  let ends: [Instant]
  let randomIDs: [String]
  let randomEnds: [Instant]
  static let tickSeconds = 5

  init(count: Int) {
    self.count = count
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    let t0 = self.t0
    let ids = (0..<count).map { "op\($0)" }
    let ends = (0..<count).map { _ in t0.advanced(by: 60_000 + Int64(next() % 3_540_000)) }
    var order = Array(0..<count)
    for k in stride(from: count - 1, to: 0, by: -1) { order.swapAt(k, Int(next() % UInt64(k + 1))) }
    self.ids = ids
    self.ends = ends
    randomIDs = order.map { ids[$0] }
    randomEnds = order.map { ends[($0 + 1) % count] }
  }
}

/// Starts every activity: phases 1, 4 and 8. Inlined into each, so that a dump is made only
/// as a phase begins (a function of its own named `phase…` would make one more).
@inline(__always)
func startEach(_ engine: inout ActivityEngine, _ x: Inputs) throws {
  for k in 0..<x.count {
    try engine.start(.countdown(id: x.ids[k], to: x.ends[k], title: "A"), at: x.t0)
  }
}

@inline(never)
func phase1(_ engine: inout ActivityEngine, _ x: Inputs) throws { try startEach(&engine, x) }

@inline(never)
func phase2(_ engine: inout ActivityEngine, _ x: Inputs) throws {
  for k in 0..<x.count {
    try engine.update(x.ids[k], ActivityUpdate(endDate: x.ends[(k + 1) % x.count]), at: x.t0)
  }
}

@inline(never)
func phase3(_ engine: inout ActivityEngine, _ x: Inputs) throws {
  for k in 0..<x.count { try engine.end(x.ids[k], ActivityEnding(dismissal: .immediate), at: x.t0) }
}

@inline(never)
func phase4(_ engine: inout ActivityEngine, _ x: Inputs) throws { try startEach(&engine, x) }

@inline(never)
func phase5(_ engine: inout ActivityEngine, _ x: Inputs) throws {
  for k in 0..<x.count {
    try engine.update(x.ids[k], ActivityUpdate(content: ["title": .string("B")]), at: x.t0)
  }
}

@inline(never)
func phase6(_ engine: inout ActivityEngine, _ x: Inputs) throws {
  for k in 0..<x.count {
    try engine.update(x.randomIDs[k], ActivityUpdate(endDate: x.randomEnds[k]), at: x.t0)
  }
}

@inline(never)
func phase7(_ engine: inout ActivityEngine, _ x: Inputs) throws {
  for id in x.randomIDs { try engine.end(id, ActivityEnding(dismissal: .immediate), at: x.t0) }
}

@inline(never)
func phase8(_ engine: inout ActivityEngine, _ x: Inputs) throws {
  try startEach(&engine, x)
  for ms in 1...1_000 { try engine.advance(to: x.t0.advanced(by: Int64(ms))) }
}

@inline(never)
func phase9(_ engine: inout ActivityEngine, _ x: Inputs) throws {
  for ms in 1_001...(1_000 + Inputs.tickSeconds * 1_000) {
    try engine.advance(to: x.t0.advanced(by: Int64(ms)))
  }
}

/// Marks the end of the last phase for callgrind's `--dump-before`.
@inline(never) @_optimize(none)
func phaseEnd() {}

@main
struct Harness {
  static func main() throws {
    let arguments = CommandLine.arguments
    let timing = arguments[1] == "time"
    let phases = timing ? 9 : Int(arguments[1])!
    let count = Int(arguments[2])!
    let passes = timing ? Int(arguments[3])! : 1
    let inputs = Inputs(count: count)
    let steps = [phase1, phase2, phase3, phase4, phase5, phase6, phase7, phase8, phase9]
    // Nanoseconds an operation, per phase, one entry a pass.
    var times = [[Double]](repeating: [], count: steps.count)
    let clock = ContinuousClock()
    // The count of ticks behind a pointer: a captured variable would be checked for exclusive
    // access at every tick (about 130 instructions of the runtime's, the engine's own walk
    // being about 100), hiding the engine's share of the row.
    let ticks = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    ticks.initialize(to: 0)
    defer { ticks.deallocate() }
    for _ in 0..<passes {
      var engine = ActivityEngine(now: inputs.t0) { event in
        if event.kind == .tick { ticks.pointee += 1 }
      }
      for (k, step) in steps.enumerated() where k < phases {
        if k == 8 { ticks.pointee = 0 }
        let took = try clock.measure { try step(&engine, inputs) }
        let ns = Double(took.components.seconds) * 1e9 + Double(took.components.attoseconds) / 1e9
        times[k].append(ns / Double(k == 8 ? Inputs.tickSeconds * count : count))
      }
      phaseEnd()
      if phases >= 9 && ticks.pointee != Inputs.tickSeconds * count {
        fatalError("\(ticks.pointee) ticks in \(Inputs.tickSeconds) s of \(count) countdowns")
      }
      if !timing { print(engine.count) }
    }
    if timing {
      // The seven commands and the tick (phase 8 is set-up).
      let shown = Array(times[0..<7]) + [times[8]]
      print(shown.map { String($0.sorted()[$0.count / 2]) }.joined(separator: " "))
    }
  }
}
