// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Testing

@testable import Countdown

/// ``ActivitiesView``: the engine's activities at one instant, read later (and elsewhere)
/// while the engine goes on.
@Suite("Activities view")
struct ActivitiesViewTests {
  @Test("A view keeps the activities of its instant, whatever the engine does after it")
  func viewIsFrozen() async throws {
    try await onThread(computing: true) {
      let seed = testSeed()
      var g = RandomRun(seed: seed)
      var compared = 0
      var listed = 0
      var changedAfter = 0
      for round in 0..<1_500 {
        let options = EngineOptions(
          maxActiveDurationMs: round % 4 == 1 ? 25_000 : nil, idSeed: UInt64(round) &* 7919)
        var (e, commands, cut) = try RandomCommands.partlyRun(&g, options: options)
        let context = "COUNTDOWN_TEST_SEED=\(seed) round \(round) cut \(cut)"

        let at = e.now
        let k = Int(g.rand(0...4))
        let window = Instant(milliseconds: at.milliseconds - g.rand(0...20_000))...at
        let all = e.activities()
        let soonest = e.soonestEnding(k)
        let ended = e.ended(within: window)
        let view = e.activitiesView()

        // Everything after the view: commands, and the clock well past every deadline (ticks,
        // expiries, staleness, milestones, dismissals).
        for (at, c) in commands[cut...] where at >= e.now.milliseconds {
          _ = RandomCommands.apply(c, at: at, to: &e)
        }
        try e.advance(
          to: Instant(milliseconds: max(e.now.milliseconds, commands.last!.at) + 40_000))
        e.checkInvariants()
        if e.activities() != all { changedAfter += 1 }

        #expect(view.now == at, "\(context)")
        #expect(view.count == all.count, "\(context)")
        #expect(view.all() == all, "\(context)")
        #expect(view.soonestEnding(k) == soonest, "k \(k) (\(context))")
        #expect(view.ended(within: window) == ended, "\(context)")
        compared += 1
        listed += all.count
      }
      #expect(compared == 1_500)
      // The runs exercise the point: most engines changed after their view was taken.
      #expect(listed > 2_000 && changedAfter > 1_000, "\(listed) \(changedAfter)")
    }
  }

  @Test("A view taken before 5 s of ticks and 1,000 ends lists its instant's 2,000 activities")
  func viewOutlivesTicksAndEnds() throws {
    var e = ActivityEngine(now: t0)
    for k in 0..<2_000 {
      try e.start(
        .countdown(id: "a\(k)", to: t0.advanced(by: 10_000 + Int64(k * 7)), title: "A"), at: t0)
    }
    let view = e.activitiesView()
    // Ticks for 5 s, then each activity ended, then all dismissed.
    try e.advance(to: t0.advanced(by: 5_000))
    for k in stride(from: 0, to: 2_000, by: 2) {
      try e.end("a\(k)", ActivityEnding(dismissal: .immediate), at: e.now)
    }
    e.checkInvariants()
    #expect(e.count == 1_000)
    let states = view.all()
    #expect(states.count == 2_000 && view.count == 2_000)
    #expect(states.map(\.id) == (0..<2_000).map { "a\($0)" })
    #expect(states.allSatisfy { $0.phase == .active })
    // Values at the view's instant: ceil(10 s) and ceil(23.993 s).
    #expect(states.first?.value == 10 && states.last?.value == 24)
  }
}
