// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Testing

@testable import Countdown

@Suite("Randomized: the wheel engine against a brute-force reference")
struct RandomizedEngineTests {
  @Test("Thousands of random commands and instants give the same events", arguments: 1...12)
  func matchesReference(seed: UInt64) async throws {
    try await onThread(computing: true) {
      try run(seed: seed, grid: 1)
    }
  }

  /// Ends, deadlines and ticks on shared instants: the walks that interleave the heap's
  /// deadlines with a bucket's ticks, and a countdown's last second armed in them.
  @Test(
    "The same on a 500 ms grid, where ticks and deadlines keep sharing instants",
    arguments: 1...8)
  func matchesReferenceOnAGrid(seed: UInt64) async throws {
    try await onThread(computing: true) {
      try run(seed: seed, grid: 500)
    }
  }

  func run(seed: UInt64, grid: Int64) throws {
    var g = RandomRun(seed: seed, grid: grid)
    let maxActivities: Int? = seed % 3 == 0 ? 4 : nil
    let maxDuration: Int64? = seed % 4 == 1 ? 25_000 : nil
    let recorder = Recorder()
    var engine = ActivityEngine(
      now: t0,
      options: EngineOptions(maxActivities: maxActivities, maxActiveDurationMs: maxDuration)
    ) { recorder.events.append($0) }
    let reference = ReferenceModel(
      now: t0.milliseconds, maxActivities: maxActivities, maxDuration: maxDuration)
    let ids = ["a", "b", "c", "d", "e", "f"]
    var commands = 0
    func code(_ body: () throws -> Void) -> CountdownError.Code? { errorCode(body) }

    for _ in 0..<400 {
      g.step()
      let t = g.t
      let now = Instant(milliseconds: t)
      let id = ids[Int(g.rand(0...Int64(ids.count - 1)))]
      let kindOf = engine.handle(for: id).flatMap { engine.state(of: $0) }?.kind
      var got: CountdownError.Code?
      var want: CountdownError.Code?
      switch g.rand(0...99) {
      case 0..<30:
        var r: ActivityRequest
        if g.chance(0.6) {
          r = .countdown(id: id, to: g.instant(-2_000...20_000), title: id)
          if g.chance(0.4) { r.startDate = g.instant(-10_000...0) }
          if g.chance(0.5) {
            r.endOnExpiry = g.policy()
          } else if g.chance(0.5) {
            r.overtime = true
          }
        } else {
          r = .elapsed(id: id, from: g.chance(0.5) ? g.instant(-5_000...5_000) : nil, title: id)
          if g.chance(0.3) { r.goalMs = g.rand(0...20_000) }
        }
        if g.chance(0.4) { r.staleDate = g.instant(-2_000...20_000) }
        r.milestones = r.overtime ? g.overtimeMilestones() : g.milestones()
        if g.chance(0.3) { r.timestamp = g.instant(-5_000...5_000) }
        got = code { try engine.start(r, at: now) }
        want = reference.start(r, at: t)
      case 30..<50:
        var u = ActivityUpdate()
        if kindOf == .countdown {
          if g.chance(0.5) { u.endDate = g.instant(-3_000...15_000) }
          if g.chance(0.2) { u.startDate = g.chance(0.5) ? .set(g.instant(-10_000...0)) : .remove }
          if g.chance(0.3) { u.endOnExpiry = g.chance(0.7) ? .set(g.policy()) : .remove }
          // Sometimes refused: beside endOnExpiry, or turned off with milestones past the end.
          if g.chance(0.25) { u.overtime = g.chance(0.7) }
        } else if kindOf == .elapsed, g.chance(0.3) {
          u.startDate = .set(g.instant(-5_000...5_000))
        }
        if g.chance(0.3) {
          u.staleDate = g.chance(0.7) ? .set(g.instant(-2_000...10_000)) : .remove
        }
        if g.chance(0.3) {
          let m = kindOf == .countdown && g.chance(0.5) ? g.overtimeMilestones() : g.milestones()
          u.milestones = g.chance(0.8) ? .set(m) : .remove
        }
        if g.chance(0.3) { u.timestamp = g.instant(-5_000...5_000) }
        got = code { try engine.update(id, u, at: now) }
        want = reference.update(id, u, at: t)
      case 50..<62:
        got = code { try engine.pause(id, at: now) }
        want = reference.pause(id, at: t)
      case 62..<74:
        got = code { try engine.resume(id, at: now) }
        want = reference.resume(id, at: t)
      case 74..<84:
        let p = g.policy()
        got = code { try engine.end(id, ActivityEnding(dismissal: p), at: now) }
        want = reference.end(id, p, at: t)
      case 84..<97:
        let w = reference.state(id, at: t)
        do {
          let s = try engine.state(of: id, at: now)
          #expect(w != nil, "seed \(seed): engine has \(id), reference does not")
          if let w {
            #expect(
              s.phase == w.0 && s.value == w.1 && s.stale == w.2 && s.expired == w.3,
              "seed \(seed) state of \(id) at \(t - t0.milliseconds): \(s) vs \(w)")
          }
        } catch {
          #expect(w == nil && error.code == .notFound, "seed \(seed): \(error)")
        }
      default:
        let on = g.chance(0.5)
        try engine.setEnabled(on, at: now)
        reference.setEnabled(on, at: t)
      }
      commands += 1
      // The wheel, the heap and the id index stay consistent after every command (a broken
      // invariant stops the run with its message).
      engine.checkInvariants()
      #expect(got == want, "seed \(seed) command \(commands) at \(t - t0.milliseconds) on \(id)")
      if got != want || recorder.lines != reference.events { break }
    }
    try engine.advance(to: Instant(milliseconds: g.t + 30_000))
    engine.checkInvariants()
    reference.advance(to: g.t + 30_000)
    let mine = recorder.lines
    let theirs = reference.events
    if mine != theirs {
      let k =
        (0..<min(mine.count, theirs.count)).first { mine[$0] != theirs[$0] }
        ?? min(mine.count, theirs.count)
      Issue.record(
        "seed \(seed): first difference at event \(k): engine \(mine.dropFirst(k).prefix(4)) vs reference \(theirs.dropFirst(k).prefix(4))"
      )
    }
    #expect(mine.count > 100, "the run should exercise many events")
  }
}
