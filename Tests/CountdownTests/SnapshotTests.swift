// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Testing

@testable import Countdown

/// The engine's snapshot and restore (the core of durable state): an engine rebuilt from a
/// snapshot, without events, goes on to give exactly the events of one that never stopped.
@Suite("Snapshot and restore")
struct SnapshotTests {
  @Test("Snapshot, restore, continue: the same events as an engine that never stopped")
  func restoreContinues() async throws {
    try await onThread(computing: true) {
      let seed = testSeed()
      var g = RandomRun(seed: seed)
      var compared = 0
      var eventsAfter = 0
      var restoredActivities = 0
      for round in 0..<2_000 {
        let maxActivities: Int? = round % 3 == 0 ? 3 : nil
        let maxDuration: Int64? = round % 4 == 1 ? 25_000 : nil
        let options = EngineOptions(
          maxActivities: maxActivities, maxActiveDurationMs: maxDuration,
          idSeed: UInt64(round) &* 7919)
        let a = Recorder()
        // Sometimes the snapshot is taken after the clock moved on alone.
        var (original, commands, cut) = try RandomCommands.partlyRun(&g, options: options) {
          a.events.append($0)
        }
        let snapshot = original.snapshot()
        let before = a.events.count
        let b = Recorder()
        var restored = try ActivityEngine(restoring: snapshot) { b.events.append($0) }
        restored.checkInvariants()
        restoredActivities += snapshot.activities.count
        let context = "COUNTDOWN_TEST_SEED=\(seed) round \(round) cut \(cut)"
        #expect(b.events.isEmpty, "a restore emits nothing (\(context))")
        #expect(restored.snapshot() == snapshot, "snapshot of the restored engine (\(context))")
        #expect(restored.activities() == original.activities(), "\(context)")
        for (at, c) in commands[cut...] where at >= original.now.milliseconds {
          let x = RandomCommands.apply(c, at: at, to: &original)
          let y = RandomCommands.apply(c, at: at, to: &restored)
          #expect(
            x == y,
            "\(c) at \(at - t0.milliseconds): \(String(describing: x)) vs \(String(describing: y)) (\(context))"
          )
        }
        let end = Instant(milliseconds: max(original.now.milliseconds, commands.last!.at) + 40_000)
        try original.advance(to: end)
        try restored.advance(to: end)
        restored.checkInvariants()
        let mine = b.comparableLines
        let theirs = Array(a.comparableLines.dropFirst(before))
        if mine != theirs {
          let k =
            (0..<min(mine.count, theirs.count)).first { mine[$0] != theirs[$0] }
            ?? min(mine.count, theirs.count)
          Issue.record(
            "\(context): first difference at event \(k): restored \(mine.dropFirst(k).prefix(3)) vs original \(theirs.dropFirst(k).prefix(3))"
          )
          return
        }
        #expect(restored.snapshot() == original.snapshot(), "\(context)")
        compared += 1
        eventsAfter += mine.count
      }
      #expect(compared == 2_000)
      #expect(
        eventsAfter > 50_000 && restoredActivities > 2_000, "\(eventsAfter) \(restoredActivities)")
    }
  }

  @Test("Every field of an activity survives: paused, stale, expired, ended, milestones, content")
  func fieldsSurvive() throws {
    let (e, gateContent) = try everyFieldEngine()
    let s = e.snapshot()
    let gate = try #require(e.stored("gate"))
    #expect(gate.stale && gate.nextMilestone == 1 && gate.lastTimestamp == t0.milliseconds - 1)
    #expect(gate.countdownStart == t0.milliseconds - 60_000)
    #expect(try #require(e.stored("park")).expired)
    #expect(try #require(e.stored("dose")).phase == .paused)
    let done = try #require(e.stored("done"))
    #expect(done.phase == .ended && done.dismissAt == t0.milliseconds + 100_000)
    #expect(done.endReason == .requested)
    #expect(s.activities.map(\.id).prefix(4) == ["gate", "dose", "park", "done"])
    #expect(s.activities.count == 5)
    let restored = try ActivityEngine(restoring: s)
    #expect(restored.snapshot() == s)
    #expect(restored.activities() == e.activities())
    #expect(restored.options == e.options && restored.now == e.now)
    #expect(try restored.content(of: "gate") == gateContent)
  }

  @Test("A damaged row is refused by name, and no engine is made")
  func badRows() throws {
    var e = ActivityEngine(now: t0)
    _ = try e.start(.countdown(id: "gate", to: t0.advanced(by: 60_000), title: "G"), at: t0)
    _ = try e.start(.elapsed(id: "dose", title: "D"), at: t0)
    let good = e.snapshot()
    func refused(_ change: (inout EngineSnapshot) -> Void, _ message: String) {
      var s = good
      change(&s)
      #expect(throws: CountdownError.self) { try ActivityEngine(restoring: s) }
      do {
        _ = try ActivityEngine(restoring: s)
      } catch {
        #expect(error.message.contains(message), "\(error.message) should say \(message)")
      }
    }
    refused({ $0.activities[1].id = "gate" }, "stored twice")
    refused({ $0.activities[1].order = $0.activities[0].order }, "not unique")
    refused({ $0.activities[0].order = 99 }, "not below nextOrder")
    refused({ $0.activities[0].id = "" }, "id must be 1 to 128 bytes")
    refused({ $0.activities[0].anchor = 1_767_225_600 }, "anchor")
    refused({ $0.activities[0].content = "{\"title\":" }, "content is not JSON")
    refused({ $0.activities[0].content = "[1]" }, "content is not an object")
    refused({ $0.activities[0].content = "{\"subtitle\":\"x\"}" }, "title is required")
    refused({ $0.activities[0].nextMilestone = 3 }, "nextMilestone 3")
    refused({ $0.activities[0].pausedTotal = -1 }, "pausedTotal")
    refused({ $0.activities[0].goalMs = -5 }, "goalMs")
    refused({ $0.now = Instant(milliseconds: 5) }, "now")
    refused(
      {
        $0.activities[0].phase = .ended
        $0.activities[0].endedAt = t0.milliseconds
        $0.activities[0].dismissAt = t0.milliseconds - 1
      }, "dismissAt")
    #expect(try ActivityEngine(restoring: good).snapshot() == good)
  }
}
