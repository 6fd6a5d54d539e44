// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// What a server's start-up has set up so far, each stage with what undoes it, so that a stage
/// that fails undoes the ones before it, last first, in one place (``unwind()``), and a part
/// that takes another over (the store's writer takes the store) undoes it from then on.
///
/// ``CountdownServer/start()`` adds a stage as each part comes up (the network threads, the
/// store, its writer, the push and webhook senders, the loop, a cluster node's lease driver)
/// and unwinds on the first error; once the server is whole it hands the teardown to
/// ``CountdownServer/stop()`` (``handOver()``).
struct StartStages {
  private var stages: [(name: String, undo: () -> Void)] = []

  /// The stages set up and not undone, in order.
  var names: [String] { stages.map(\.name) }

  /// Stage `name` is up; `undo` takes it down.
  mutating func add(_ name: String, undo: @escaping () -> Void) {
    stages.append((name, undo))
  }

  /// Stage `name` takes the earlier stage `earlier` over: undoing `name` takes both down, and
  /// `earlier` is no longer undone by itself.
  mutating func add(_ name: String, takingOver earlier: String, undo: @escaping () -> Void) {
    stages.removeAll { $0.name == earlier }
    add(name, undo: undo)
  }

  /// Undoes every stage, last first, and forgets them.
  mutating func unwind() {
    while let last = stages.popLast() { last.undo() }
  }

  /// The stages are the server's now: nothing is undone here from now on.
  mutating func handOver() {
    stages = []
  }
}
