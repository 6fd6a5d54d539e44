// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Foundation
import Testing

@testable import Countdown
@testable import CountdownStore

/// The state file (SQLite) under the engine: written wake by wake from the events alone, as
/// the server writes it, it always equals the engine's snapshot, and an engine restored from
/// it goes on like one that never stopped.
@Suite("State file")
struct StateFileTests {
  /// Opens the store at `path` again after this process closed it. A child process that
  /// another test spawned in that instant holds a copy of the closed lock descriptor until it
  /// execs (O_CLOEXEC closes the copy only then), and so the file's lock for a moment: the
  /// lock error is retried for up to 5 s (500 tries). Any other error is thrown at once.
  static func reopen(_ path: String, sync: StoreSync) throws -> StateStore {
    for _ in 0..<500 {
      let opened = Result { () throws(StoreError) -> StateStore in
        try StateStore(path: path, sync: sync)
      }
      if case .failure(let error) = opened, error.message.contains("another countdown serve") {
        usleep(10_000)
        continue
      }
      return try opened.get()
    }
    return try StateStore(path: path, sync: sync)
  }

  static func scratch() -> String {
    let dir = "/tmp/cd-store-\(UInt32.random(in: 0...UInt32.max))"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
  }

  static func same(_ loaded: EngineSnapshot, _ live: EngineSnapshot) -> Bool {
    sameStoredState(loaded, live)
  }

  @Test(
    "Written from each wake's events, the file equals the engine; restored from it, the events go on alike"
  )
  func roundTrip() async throws {
    try await onThread(computing: true) {
      let dir = Self.scratch()
      defer { try? FileManager.default.removeItem(atPath: dir) }
      let seed = testSeed()
      var g = RandomRun(seed: seed)
      var rowsChecked = 0
      var eventsAfter = 0
      let rounds = 300
      for round in 0..<rounds {
        let path = "\(dir)/r\(round).db"
        let store = try StateStore(path: path, sync: .normal)
        defer { store.close() }
        let options = EngineOptions(
          maxActivities: round % 3 == 0 ? 3 : nil,
          maxActiveDurationMs: round % 4 == 1 ? 25_000 : nil, idSeed: UInt64(round) &* 7919)
        g.t = t0.milliseconds
        let commands = RandomCommands.run(&g, count: 60)
        let cut = Int(g.rand(0...Int64(commands.count)))
        let a = Recorder()
        var original = ActivityEngine(now: t0, options: options) { a.events.append($0) }
        var written = 0
        var ids: [String] = []
        var seen: Set<String> = []
        let context = "COUNTDOWN_TEST_SEED=\(seed) round \(round) cut \(cut)"
        // One wake: the events since the last one name the rows to write.
        func commit() throws {
          StoreChanges.collect(Array(a.events[written...]), into: &ids, seen: &seen)
          written = a.events.count
          try store.write([StoreChanges(engine: original, ids: ids)])
          ids.removeAll()
          seen.removeAll()
        }
        try commit()
        for (at, c) in commands[..<cut] {
          if g.chance(0.3), at > original.now.milliseconds {
            // The clock moves on alone first, in a wake of its own.
            try original.advance(to: Instant(milliseconds: at - 1))
            try commit()
          }
          _ = RandomCommands.apply(c, at: at, to: &original)
          try commit()
          if g.chance(0.1) {
            let loaded = try #require(try store.load())
            #expect(Self.same(loaded, original.snapshot()), "mid-run (\(context))")
          }
        }
        let loaded = try #require(try store.load())
        let live = original.snapshot()
        guard Self.same(loaded, live) else {
          Issue.record("the file differs from the engine (\(context))")
          return
        }
        rowsChecked += loaded.activities.count
        // Restored from the file (with this process's own options), it goes on alike.
        var stored = loaded
        stored.options = live.options
        let b = Recorder()
        var restored = try ActivityEngine(restoring: stored) { b.events.append($0) }
        let before = a.events.count
        for (at, c) in commands[cut...] where at >= original.now.milliseconds {
          _ = RandomCommands.apply(c, at: at, to: &original)
          _ = RandomCommands.apply(c, at: at, to: &restored)
        }
        let end = Instant(milliseconds: max(original.now.milliseconds, commands.last!.at) + 40_000)
        try original.advance(to: end)
        try restored.advance(to: end)
        let mine = b.comparableLines
        let theirs = Array(a.comparableLines.dropFirst(before))
        guard mine == theirs else {
          Issue.record("the restored engine's events differ (\(context))")
          return
        }
        eventsAfter += mine.count
      }
      #expect(rowsChecked > 300 && eventsAfter > 5_000, "\(rowsChecked) \(eventsAfter)")
    }
  }

  @Test("Every field survives the file: paused, stale, expired, ended, milestones, content")
  func fields() throws {
    let dir = Self.scratch()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let (e, gateContent) = try everyFieldEngine()
    let store = try StateStore(path: "\(dir)/s.db", sync: .full)
    let live = e.snapshot()
    try store.write([StoreChanges(engine: e, ids: live.activities.map(\.id))])
    store.close()
    let reopened = try Self.reopen("\(dir)/s.db", sync: .normal)
    defer { reopened.close() }
    let loaded = try #require(try reopened.load())
    #expect(Self.same(loaded, live))
    #expect(loaded.activities.count == 5)
    #expect(loaded.options.maxActiveDurationMs == 3_600_000 && loaded.options.maxActivities == 9)
    let restored = try ActivityEngine(restoring: loaded)
    #expect(try restored.content(of: "gate") == gateContent)
    #expect(restored.activities() == e.activities())
  }
}
