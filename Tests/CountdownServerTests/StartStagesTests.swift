// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Testing

@testable import CountdownServer

/// Start-up's teardown in one place (``StartStages``): what a failure at a stage undoes, and
/// in which order.
@Suite("StartStages")
struct StartStagesTests {
  final class Log {
    var undone: [String] = []
  }

  @Test("A failure at stage k undoes stages k-1 to 1, last first, once each")
  func unwindsInReverse() {
    for k in 1...5 {
      let log = Log()
      var stages = StartStages()
      for i in 1..<k { stages.add("s\(i)") { log.undone.append("s\(i)") } }
      stages.unwind()
      #expect(log.undone == (1..<k).reversed().map { "s\($0)" })
      #expect(stages.names.isEmpty)
      stages.unwind()
      #expect(log.undone.count == k - 1, "a second unwind undid something again")
    }
  }

  @Test("A stage that takes another over undoes both, and the other is not undone by itself")
  func takingOver() {
    let log = Log()
    var stages = StartStages()
    stages.add("threads") { log.undone.append("threads") }
    stages.add("store") { log.undone.append("store") }
    stages.add("writer", takingOver: "store") { log.undone.append("writer") }
    stages.add("loop") { log.undone.append("loop") }
    #expect(stages.names == ["threads", "writer", "loop"])
    stages.unwind()
    #expect(log.undone == ["loop", "writer", "threads"])
  }

  @Test("After the hand-over nothing is undone by the stages")
  func handOver() {
    let log = Log()
    var stages = StartStages()
    stages.add("threads") { log.undone.append("threads") }
    stages.handOver()
    stages.unwind()
    #expect(log.undone.isEmpty)
  }
}
