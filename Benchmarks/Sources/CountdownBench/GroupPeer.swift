// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop

/// Our driver as a `CountdownLoopGroup` of N loops (one thread each), activities sharded by
/// id. Each loop records into its own recorder (no state shared between loop threads); they
/// are merged into the run's recorder when the measured window closes.
final class GroupPeer: TickPeer {
  let precision: TimerPrecision
  let count: Int
  var group: CountdownLoopGroup?
  var recorders: [TickRecorder] = []
  var main: TickRecorder?
  /// Each index's current id generation, for churn.
  var generations = IDGenerations()

  init(precision: TimerPrecision, loops: Int) {
    self.precision = precision
    self.count = loops
  }

  func start(ends: [Int64], recorder: TickRecorder) async throws {
    main = recorder
    let recorders = (0..<count).map { _ in TickRecorder(clock: recorder.clock) }
    self.recorders = recorders
    // Each loop's share, with a margin: ids hash evenly, not exactly.
    let share = ends.count / count + ends.count / (10 * count) + 16
    let group = try CountdownLoopGroup(
      count: count,
      options: LoopOptions(precision: precision, engine: EngineOptions(reservedActivities: share))
    ) { k in
      let r = recorders[k]
      return { e in if e.kind == .tick { r.record(atMs: e.at.milliseconds) } }
    }
    self.group = group
    generations.count = ends.count
    var perLoop: [[(id: String, end: Int64)]] = Array(repeating: [], count: count)
    for (k, end) in ends.enumerated() {
      let id = CountdownPeer.id(k, 0)
      perLoop[group.shard(for: id)].append((id, end))
    }
    // The loops start their shares in parallel, in slices that keep each command short.
    try await withThrowingTaskGroup(of: Void.self) { tasks in
      for (k, items) in perLoop.enumerated() {
        let loop = group.loops[k]
        tasks.addTask {
          for slice in stride(from: 0, to: items.count, by: 100_000) {
            let part = Array(items[slice..<min(slice + 100_000, items.count)])
            try await loop.submit { engine throws(CountdownError) in
              for (id, end) in part {
                try engine.start(.countdown(id: id, to: Instant(milliseconds: end), title: "A"))
              }
            }
          }
        }
      }
      try await tasks.waitForAll()
    }
  }

  /// Runs `body` (which sets the run's recorder), then gives every loop's recorder the same
  /// state on its own thread; when recording stops, merges them into the run's recorder.
  func barrier(_ body: @escaping @Sendable () -> Void) async throws {
    body()
    let main = main!
    let recording = main.recording
    for (k, loop) in group!.loops.enumerated() {
      let r = recorders[k]
      try await loop.submit { _ in
        if recording { r.reset() }
        r.recording = recording
      }
    }
    if !recording {
      for r in recorders {
        main.state.pointee.histogram.add(r.histogram)
        main.state.pointee.ticks &+= r.ticks
        main.state.pointee.early &+= r.early
      }
    }
  }

  func replace(_ items: [(index: Int, end: Int64)]) async throws {
    guard let group else { return }
    var perLoop: [[(old: String, new: String, end: Int64)]] = Array(repeating: [], count: count)
    for (index, end) in items {
      let g = generations.advance(index)
      let old = CountdownPeer.id(index, g.old)
      let new = CountdownPeer.id(index, g.new)
      // The new id may hash to another loop: end on the old one's, start on the new one's.
      perLoop[group.shard(for: old)].append((old, "", end))
      perLoop[group.shard(for: new)].append(("", new, end))
    }
    for (k, changes) in perLoop.enumerated() where !changes.isEmpty {
      try await group.loops[k].submit { engine throws(CountdownError) in
        for c in changes {
          if !c.old.isEmpty { try engine.end(c.old, ActivityEnding(dismissal: .immediate)) }
          if !c.new.isEmpty {
            try engine.start(.countdown(id: c.new, to: Instant(milliseconds: c.end), title: "A"))
          }
        }
      }
    }
  }

  func note(seconds: Double) async throws -> String { "\(count) loops" }

  func stop() async { group?.shutdown() }
}
