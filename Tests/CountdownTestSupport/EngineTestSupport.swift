// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Foundation

/// 2026-11-21T08:00:00Z, a whole second.
package let t0 = Instant(milliseconds: 1_795_248_000_000)

/// `t0` plus `ms` milliseconds.
package func at(_ ms: Int64) -> Instant { t0.advanced(by: ms) }

/// Collects an engine's events.
package final class Recorder {
  package var events: [ActivityEvent] = []

  /// The events as compact strings: `"<ms after t0> <kind> <id> [value] [extra]"`.
  package var lines: [String] { events.map(Recorder.describe) }

  package static func describe(_ e: ActivityEvent) -> String {
    var s = "\(e.at.milliseconds - t0.milliseconds) \(e.kind.rawValue) \(e.id)"
    switch e.kind {
    case .tick, .paused: s += " \(e.value)"
    case .ended: s += " \(e.value) \(e.reason!.rawValue)"
    case .milestone: s += " \(e.milestone!)" + (e.content.map { " " + $0 } ?? "")
    default: break
    }
    return s
  }

  /// Lines of the given kinds only.
  package func lines(_ kinds: Set<ActivityEvent.Kind>) -> [String] {
    events.filter { kinds.contains($0.kind) }.map(Recorder.describe)
  }

  /// The events as lines with everything but the handle (slots are renumbered by a restore),
  /// to compare an engine's events with a restored one's.
  package var comparableLines: [String] {
    events.map { "\(Recorder.describe($0)) \($0.activityKind)" }
  }

  package init() {}

  package func clear() { events.removeAll() }
}

/// A fresh engine at `t0` with a recorder.
package func makeEngine(_ options: EngineOptions = EngineOptions()) -> (ActivityEngine, Recorder) {
  let r = Recorder()
  let e = ActivityEngine(now: t0, options: options) { r.events.append($0) }
  return (e, r)
}

/// Runs `body` and returns the error code it threw, or nil.
package func errorCode(_ body: () throws -> Void) -> CountdownError.Code? {
  do {
    try body()
    return nil
  } catch let error as CountdownError {
    return error.code
  } catch {
    return CountdownError.Code(rawValue: "unexpected \(type(of: error))")
  }
}

/// The seed of a randomized test: `COUNTDOWN_TEST_SEED` when set (to replay a failure), else
/// a fresh one, which the test puts in its failure messages.
package func testSeed() -> UInt64 {
  if let text = ProcessInfo.processInfo.environment["COUNTDOWN_TEST_SEED"], let seed = UInt64(text)
  {
    return seed
  }
  return UInt64.random(in: .min ... .max)
}

/// Random values for the randomized engine tests, around an instant that moves forward.
package struct RandomRun {
  package var rng: SplitMix64
  package var t = t0.milliseconds
  /// Steps, instants and milestone offsets are multiples of this many milliseconds: with 500,
  /// ends, deadlines and ticks keep falling on the same instants (t0 is a whole second).
  package var grid: Int64 = 1

  package init(seed: UInt64, grid: Int64 = 1) {
    rng = SplitMix64(state: seed)
    self.grid = grid
  }

  package mutating func rand(_ r: ClosedRange<Int64>) -> Int64 { Int64.random(in: r, using: &rng) }
  package mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }

  /// `v` down to a multiple of the grid.
  package func onGrid(_ v: Int64) -> Int64 { v - ((v % grid) + grid) % grid }

  /// Mostly small steps, sometimes none (same-instant commands), sometimes longer.
  package mutating func step() {
    t += onGrid(chance(0.2) ? 0 : chance(0.9) ? rand(1...1_500) : rand(2_000...8_000))
  }

  package mutating func instant(_ r: ClosedRange<Int64>) -> Instant {
    Instant(milliseconds: t + onGrid(rand(r)))
  }

  package mutating func policy() -> DismissalPolicy {
    switch rand(0...2) {
    case 0: .immediate
    case 1: .after(instant(-1_000...30_000))
    default: .default
    }
  }

  package mutating func milestones() -> [Milestone] {
    (0..<rand(0...3)).map { k in
      Milestone(name: "m\(k)", atMs: onGrid(rand(0...12_000)), content: phase("m\(k)"))
    }
  }

  /// Milestones for an overtime countdown: some of them past its end (negative `atMs`).
  package mutating func overtimeMilestones() -> [Milestone] {
    (0..<rand(0...3)).map { k in
      Milestone(name: "o\(k)", atMs: onGrid(rand(-6_000...8_000)), content: phase("o\(k)"))
    }
  }

  /// Half the time, a milestone's content patch: `{"fields": {"phase": name}}`.
  mutating func phase(_ name: String) -> [String: JSONValue] {
    chance(0.5) ? ["fields": .object(["phase": .string(name)])] : [:]
  }
}

/// An engine at t0 + 12 s holding an activity in each stored state, with every field set:
/// "gate" (content with fields and relevance, a start date, stale, one of two milestones
/// passed, a dismissal after expiry, a timestamp, a Live Activity), "dose" (an elapsed timer with a goal,
/// paused), "park" (expired, the default dismissal), "done" (ended on request, dismissed
/// later), an elapsed timer with a generated id, a maximum active duration and the limit 9.
/// What the snapshot tests and the state-file tests carry through; returns the gate's content.
package func everyFieldEngine() throws -> (engine: ActivityEngine, gateContent: ActivityContent?) {
  var e = ActivityEngine(now: t0, options: EngineOptions(maxActivities: 9, idSeed: 5))
  let end = t0.advanced(by: 60_000)
  var r = ActivityRequest.countdown(id: "gate", to: end, title: "Gate B12")
  r.content = ActivityContent(
    title: "Gate B12", subtitle: "Boarding ✈︎", color: "#112233",
    fields: ["gate": .string("B12"), "n": .int(3)], relevance: 2.5)
  r.startDate = t0.advanced(by: -60_000)
  r.staleDate = t0.advanced(by: 5_000)
  r.milestones = [
    Milestone(name: "last \"call\"", atMs: 50_000), Milestone(name: "half", atMs: 30_000),
  ]
  r.endOnExpiry = .after(end.advanced(by: 1_000))
  r.timestamp = t0.advanced(by: -1)
  r.liveActivity = LiveActivity(
    pushTokens: ["a0b1c2d3"], startTokens: ["ffee"], attributesType: "GateAttributes",
    attributes: ["gate": .string("B12")], keys: ["endDate": "departs"], dateEncoding: .unix,
    priority: 10)
  r.group = "gate-b12"
  _ = try e.start(r, at: t0)
  var dose = ActivityRequest.elapsed(id: "dose", title: "Dose")
  dose.goalMs = 90_000
  dose.group = "ward.3_east-1"
  _ = try e.start(dose, at: t0)
  var park = ActivityRequest.countdown(id: "park", to: t0.advanced(by: 3_000), title: "Park")
  park.endOnExpiry = .default
  _ = try e.start(park, at: t0)
  _ = try e.start(.countdown(id: "done", to: end, title: "Done"), at: t0)
  _ = try e.start(.elapsed(title: "made id"), at: t0)
  try e.advance(to: t0.advanced(by: 12_000))  // gate stale, a milestone passed, park expired
  try e.pause("dose", at: e.now)
  try e.end("done", ActivityEnding(dismissal: .after(t0.advanced(by: 100_000))), at: e.now)
  try e.setMaxActiveDuration(3_600_000, at: e.now)
  return (e, r.content)
}

/// What a store holds and what an engine holds, side by side: the stored engine options are
/// the limits and `enabled` (the rest are the process's own); rows in the engine's order.
package func sameStoredState(_ loaded: EngineSnapshot, _ live: EngineSnapshot) -> Bool {
  loaded.now == live.now && loaded.nextOrder == live.nextOrder
    && loaded.idGeneratorState == live.idGeneratorState
    && loaded.options.maxActivities == live.options.maxActivities
    && loaded.options.maxActiveDurationMs == live.options.maxActiveDurationMs
    && loaded.options.enabled == live.options.enabled
    && loaded.activities.sorted { $0.order < $1.order } == live.activities
}
