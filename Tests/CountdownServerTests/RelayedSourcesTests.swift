// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Testing

@testable import CountdownServer

@Suite("RelayedSources: each other node's event passed on once, by relay or by recovery")
struct RelayedSourcesTests {
  @Test("A node's own relay, in order: each sequence new once; older and repeated ones not")
  func streamed() {
    var s = RelayedSources()
    func relayed(_ q: UInt64, _ source: UInt64 = 1) -> Bool { s.streamed(q, from: source) }
    #expect(relayed(5))
    #expect(relayed(9))
    #expect(!relayed(9))
    #expect(!relayed(7))
    // Another incarnation is another space of numbers.
    #expect(relayed(5, 2))
  }

  @Test(
    "Recovered events: new once, not when the relay brought them; one recovered first is not new when the relay brings it late"
  )
  func recovered() {
    var s = RelayedSources()
    func relayed(_ q: UInt64, _ source: UInt64 = 1) -> Bool { s.streamed(q, from: source) }
    func recovered(_ q: UInt64, _ source: UInt64 = 1) -> Bool { s.recovered(q, from: source) }
    #expect(relayed(10))
    #expect(!recovered(8), "relayed before")
    #expect(!recovered(10), "relayed before")
    #expect(recovered(12))
    #expect(!recovered(12), "recovered twice")
    #expect(recovered(14))
    // The node was stopped, not dead: its relay goes on, with 11 (never recovered), 12 and 14.
    #expect(relayed(11))
    #expect(!relayed(12))
    #expect(relayed(13))
    #expect(!relayed(14))
    #expect(!recovered(14))
    #expect(relayed(15))
    // Recovered from an incarnation never relayed here, its first event (numbered 0)
    // included; then its relay brings them late.
    #expect(recovered(0, 7))
    #expect(!recovered(0, 7))
    #expect(recovered(3, 7))
    #expect(!recovered(3, 7))
    #expect(!relayed(0, 7))
    #expect(relayed(1, 7))
    #expect(!relayed(3, 7))
  }

  @Test("Random interleavings of a relay and shards' recoveries: every event passed on once")
  func model() {
    for _ in 0..<1_000 {
      let n = Int.random(in: 1...40)
      // The events a node committed, in order (sequences with gaps: ticks between them), each
      // of one of three shards.
      var events: [(sequence: UInt64, shard: Int)] = []
      // The first is 0 as often as not (a node's first event is numbered 0).
      var next = UInt64.random(in: 0...1)
      for _ in 0..<n {
        events.append((next, Int.random(in: 0..<3)))
        next += UInt64.random(in: 1...3)
      }
      // Its relay brings a prefix before the fault, and perhaps the rest later (a node that
      // was stopped, not killed). Each shard's row holds its events from some point at or
      // before the fault (the unsettled ones); a row may be read twice (taken twice).
      let relayed = Int.random(in: 0...n)
      let late = Bool.random() ? events.dropFirst(relayed).map(\.sequence) : []
      var recoveries: [UInt64] = []
      for shard in 0..<3 {
        let from = Int.random(in: 0...relayed)
        let row = events.dropFirst(from).filter { $0.shard == shard }.map(\.sequence)
        recoveries += row
        if Bool.random() { recoveries += row }
      }
      // The recovered lines interleave with the late relay's, which keeps its own order.
      var tail: [(relay: Bool, sequence: UInt64)] = late.map { (true, $0) }
      for q in recoveries { tail.insert((false, q), at: Int.random(in: 0...tail.count)) }
      let steps = events.prefix(relayed).map { (relay: true, sequence: $0.sequence) } + tail
      var s = RelayedSources()
      var passed: [UInt64: Int] = [:]
      for step in steps {
        let new =
          step.relay ? s.streamed(step.sequence, from: 1) : s.recovered(step.sequence, from: 1)
        if new { passed[step.sequence, default: 0] += 1 }
      }
      #expect(passed.count == n && passed.values.allSatisfy { $0 == 1 }, "\(steps)")
    }
  }
}
