// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownCluster
import Foundation
import Testing

@testable import CountdownLoop

@Suite("A loop's engine rebuilt with a shard taken over")
struct RebuildEngineTests {
  /// An event as the wake handler saw it: with the id its handle names in the engine then.
  struct Seen: Sendable {
    var event: ActivityEvent
    var handleNames: String?
  }

  @Test("The taken shard's missed events are handed on at their instants; its activities tick on")
  func takenShard() async throws {
    let seen = Locked<[Seen]>([])
    let loop = try CountdownLoop(options: LoopOptions(), restoring: nil) { engine, _, events in
      let named = events.map { Seen(event: $0, handleNames: engine.id(of: $0.handle)) }
      seen.withLock { $0 += named }
    }
    defer { loop.shutdown() }
    try await loop.submit { engine throws(CountdownError) in
      _ = try engine.start(.elapsed(id: "n1", from: nil, title: "own"))
    }
    // The shard's rows as its last owner committed them 3 s ago: s1 expired 1 s ago (and was
    // dismissed then), s2 ends in 5 s.
    let now = SystemWallClock.now()
    let lastCommit = now.advanced(by: -3_000)
    var owner = ActivityEngine(now: lastCommit, options: EngineOptions(idSeed: 9))
    var s1 = ActivityRequest.countdown(id: "s1", to: now.advanced(by: -1_000), title: "s1")
    s1.endOnExpiry = .immediate
    _ = try owner.start(s1, at: lastCommit)
    _ = try owner.start(
      .countdown(id: "s2", to: now.advanced(by: 5_000), title: "s2"), at: lastCommit)
    let rows = owner.snapshot()

    try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
      loop.rebuildEngine(
        { current throws(CountdownError) in
          let a = ShardAssembly.assemble(current, keeping: { _ in true }, taking: [rows])
          return (a.snapshot, a.events)
        },
        completion: { c.resume(with: $0.mapError { $0 as any Error }) })
    }
    try await Task.sleep(for: .milliseconds(1_300))
    let ids = try await loop.submit { engine in engine.activities().map(\.id) }
    #expect(Set(ids) == ["n1", "s2"])

    let events = seen.withLock { $0 }
    let s1Events = events.filter { $0.event.id == "s1" && $0.event.kind != .tick }
    #expect(s1Events.map(\.event.kind) == [.expired, .ended, .dismissed])
    #expect(s1Events.allSatisfy { $0.event.at == now.advanced(by: -1_000) })
    #expect(s1Events.allSatisfy { $0.event.handle == .gone && $0.handleNames == nil })
    // s2: its catch-up tick from the step names it in the new engine, and it ticks live after.
    let s2Ticks = events.filter { $0.event.id == "s2" && $0.event.kind == .tick }
    #expect(s2Ticks.allSatisfy { $0.handleNames == "s2" })
    #expect(s2Ticks.contains { $0.event.at > now.advanced(by: 500) }, "\(s2Ticks.map(\.event))")
    #expect(s2Ticks.allSatisfy { $0.event.at.milliseconds <= SystemWallClock.now().milliseconds })
  }

  @Test("A build that throws leaves the engine as it was and hands nothing on")
  func failedBuild() async throws {
    let seen = Locked<[ActivityEvent]>([])
    // No ticks: the only events are the start's and any a rebuild would hand on.
    let options = LoopOptions(engine: EngineOptions(deliversTicks: false))
    let loop = try CountdownLoop(options: options, restoring: nil) { _, _, events in
      seen.withLock { $0 += events }
    }
    defer { loop.shutdown() }
    try await loop.submit { engine throws(CountdownError) in
      _ = try engine.start(.elapsed(id: "n1", from: nil, title: "own"))
    }
    // The start's wake is handed on after its command's completion: wait for it.
    for _ in 0..<200 where seen.withLock({ $0.isEmpty }) {
      try await Task.sleep(for: .milliseconds(10))
    }
    let before = seen.withLock { $0.count }
    #expect(before == 1)
    let result = await withCheckedContinuation { (c: CheckedContinuation<CountdownError?, Never>) in
      loop.rebuildEngine(
        { _ throws(CountdownError) in throw .payload("no such shard") },
        completion: { r in c.resume(returning: r.failure) })
    }
    #expect(result?.code == .invalidPayload)
    let ids = try await loop.submit { engine in engine.activities().map(\.id) }
    #expect(ids == ["n1"])
    #expect(seen.withLock { $0.count } == before)
  }

  @Test(
    "A rebuild from an older commit (after a failed write) repeats no tick: a catch-up tick goes out only where the old engine showed another value"
  )
  func noRepeatedTick() async throws {
    let seen = Locked<[ActivityEvent]>([])
    let loop = try CountdownLoop(options: LoopOptions(), restoring: nil) { _, _, events in
      seen.withLock { $0 += events }
    }
    defer { loop.shutdown() }
    let now = SystemWallClock.now()
    // Ending half a second past a whole number of seconds from now, so that no tick falls
    // within the rebuild's few milliseconds.
    try await loop.submit { engine throws(CountdownError) in
      _ = try engine.start(.countdown(id: "c", to: now.advanced(by: 600_500), title: "c"))
      _ = try engine.start(.countdown(id: "u", to: now.advanced(by: 300_500), title: "u"))
    }
    let committed = try await loop.submit { engine in engine.snapshot() }
    // Past a tick of both; then u's end moves by a minute (a change the write will lose).
    try await Task.sleep(for: .milliseconds(1_200))
    try await loop.submit { engine throws(CountdownError) in
      var patch = ActivityUpdate()
      patch.endDate = now.advanced(by: 360_500)
      try engine.update("u", patch)
    }
    let before = seen.withLock { $0.count }
    try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
      loop.replaceEngine(
        with: committed, completion: { c.resume(with: $0.mapError { $0 as any Error }) })
    }
    var after: [ActivityEvent] = []
    for _ in 0..<500 {
      after = seen.withLock { Array($0[before...]) }.filter { $0.kind == .tick }
      if after.contains(where: { $0.id == "u" }) { break }
      try await Task.sleep(for: .milliseconds(10))
    }
    // u showed its moved end's value; the rebuilt engine shows the committed one, and says so
    // at once: its first tick carries the committed end's value at its instant.
    let u = try #require(after.first { $0.id == "u" }, "\(after)")
    let committedEnd = now.advanced(by: 300_500).milliseconds
    #expect(u.value == (committedEnd - u.at.milliseconds + 999) / 1000, "\(u)")
    #expect(u.value <= 300, "the old engine showed 359 or so: \(u)")
    // c showed the same value before and after: every tick of it, before and after, carries a
    // new value (the rebuild repeated it before).
    let c = seen.withLock { $0 }.filter { $0.id == "c" && $0.kind == .tick }.map(\.value)
    #expect(Set(c).count == c.count, "\(c)")
  }
}

extension Result {
  fileprivate var failure: Failure? {
    if case .failure(let e) = self { e } else { nil }
  }
}
