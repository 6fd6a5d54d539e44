// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownStore

/// The state file's checkpoints (`Checkpointer`): made on a thread of their own, not inside
/// the commits.
@Suite("Checkpoints")
struct CheckpointTests {
  func size(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1
  }

  /// Runs `body` off the cooperative pool with a state file in a scratch directory, opened
  /// with `sync: .normal`; closes it and removes the directory after.
  func withScratchStore(
    _ body: @escaping @Sendable (StateStore, String) throws -> Void
  ) async throws {
    try await onThread {
      let dir = StateFileTests.scratch()
      defer { try? FileManager.default.removeItem(atPath: dir) }
      let path = dir + "/s.db"
      let store = try StateStore(path: path, sync: .normal)
      defer { store.close() }
      try body(store, path)
    }
  }

  @Test(
    "Commits reach the database file within about a second, copied by the checkpoint thread; none is copied by the commit itself"
  )
  func copiedOffTheCommit() async throws {
    try await withScratchStore { store, path in
      // Let the checkpoint of the empty file's migrations pass first.
      usleep(UInt32(Checkpointer.idleInterval * 1_500_000))
      let before = size(path)

      var engine = ActivityEngine(now: t0)
      let ids = (0..<2000).map { "a\($0)" }
      for id in ids { try engine.start(.countdown(id: id, to: at(60_000), title: id), at: t0) }
      let started = Date()
      _ = try store.write([StoreChanges(engine: engine, ids: ids)], pushes: [])
      // Written to the log, not to the file: the commit does not checkpoint (2,000 rows are far
      // fewer pages than the backstop).
      #expect(size(path) == before)
      #expect(size(path + "-wal") > 100_000)
      while size(path) == before, Date().timeIntervalSince(started) < 5 { usleep(20_000) }
      let took = Date().timeIntervalSince(started)
      #expect(size(path) > before + 100_000)
      #expect(took < Checkpointer.idleInterval + 1)
    }
  }

  @Test(
    "Under commits back to back, the checkpoint thread copies into the file every tenth of a second, so that the commit that reaches the backstop has little left to copy"
  )
  func copiedOftenUnderAStream() async throws {
    try await withScratchStore { store, path in
      // New rows each commit, so that every checkpoint makes the file longer.
      var engine = ActivityEngine(now: t0)
      var longestStill: TimeInterval = 0
      var lastSize = size(path)
      var lastChange = Date()
      var checkpoints = 0
      let started = Date()
      var batch = 0
      while Date().timeIntervalSince(started) < 3 {
        let ids = (0..<100).map { "b\(batch)-\($0)" }
        batch += 1
        for id in ids { try engine.start(.countdown(id: id, to: at(60_000), title: id), at: t0) }
        _ = try store.write([StoreChanges(engine: engine, ids: ids)], pushes: [])
        let now = Date()
        let s = size(path)
        if s != lastSize {
          // The first copy may wait for the idle interval (the log had stopped growing).
          if checkpoints > 0 { longestStill = max(longestStill, now.timeIntervalSince(lastChange)) }
          checkpoints += 1
          lastSize = s
          lastChange = now
        }
      }
      // About 20 copies in the 2 s after the first (a second apart, there would be 2).
      #expect(checkpoints >= 8, "\(checkpoints) checkpoints in 3 s")
      #expect(
        longestStill < 0.6, "the file went \(longestStill) s without a copy while commits came")
    }
  }
}
