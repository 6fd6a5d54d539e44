// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop
import Foundation

/// An event and when it was delivered (wall or virtual nanoseconds).
struct Delivered: Sendable {
  var event: ActivityEvent
  var deliveredNs: Int64
}

/// What a shared test body needs: the same calls on the virtual clock and on the real loop.
protocol TimerHarness: Sendable {
  /// The current instant.
  func now() async -> Instant
  func start(_ r: ActivityRequest) async throws -> String
  func pause(_ id: String) async throws
  func resume(_ id: String) async throws
  /// Lets time pass until every event due by `t` has been delivered.
  func wait(until t: Instant) async throws
  func delivered() async -> [Delivered]
  func shutdown() async
}

/// The engine on a virtual clock: delivery happens at exactly the instant advanced to.
actor VirtualHarness: TimerHarness {
  private var engine: ActivityEngine
  private let log = EventLog()

  init() {
    let log = self.log
    let start = Instant(milliseconds: 1_795_248_000_000)
    var e = ActivityEngine(now: start)
    e.onEvent = { [log] event in log.append(event, at: event.at.milliseconds * 1_000_000) }
    engine = e
  }

  func now() -> Instant { engine.now }
  func start(_ r: ActivityRequest) throws -> String { try engine.start(r, at: engine.now) }
  func pause(_ id: String) throws { try engine.pause(id, at: engine.now) }
  func resume(_ id: String) throws { try engine.resume(id, at: engine.now) }
  func wait(until t: Instant) throws { try engine.advance(to: t) }
  func delivered() -> [Delivered] { log.all }
  func shutdown() {}
}

/// The real libuv loop on the wall clock.
final class RealHarness: TimerHarness {
  let loop: CountdownLoop
  let log = EventLog()
  let clock: any WallClock

  init(options: LoopOptions = LoopOptions()) throws {
    let log = self.log
    let clock = options.wallClock
    self.clock = clock
    loop = try CountdownLoop(options: options) { event in
      log.append(event, at: clock.nanosecondsSinceEpoch())
    }
  }

  func now() -> Instant { Instant(milliseconds: clock.nanosecondsSinceEpoch() / 1_000_000) }
  func start(_ r: ActivityRequest) async throws -> String { try await loop.start(r) }
  func pause(_ id: String) async throws { try await loop.pause(id) }
  func resume(_ id: String) async throws { try await loop.resume(id) }
  func wait(until t: Instant) async throws {
    // Sleep past `t`, then give the loop a moment to deliver what was due.
    let remaining = t.milliseconds - now().milliseconds
    if remaining > 0 { try await Task.sleep(for: .milliseconds(remaining)) }
    try await Task.sleep(for: .milliseconds(200))
  }
  func delivered() -> [Delivered] { log.all }
  func shutdown() { loop.shutdown() }
}

/// A thread-safe record of delivered events.
/// `@unchecked Sendable`: `events` is touched only while `lock` is held.
final class EventLog: @unchecked Sendable {
  private let lock = NSLock()
  private var events: [Delivered] = []
  func append(_ e: ActivityEvent, at ns: Int64) {
    lock.withLock { events.append(Delivered(event: e, deliveredNs: ns)) }
  }
  var all: [Delivered] { lock.withLock { events } }
}

/// The system clock plus an offset that a test can step.
/// `@unchecked Sendable`: `offsetNs` is touched only while `lock` is held.
final class SteppableClock: WallClock, @unchecked Sendable {
  private let lock = NSLock()
  private var offsetNs: Int64 = 0
  func nanosecondsSinceEpoch() -> Int64 {
    SystemWallClock().nanosecondsSinceEpoch() + lock.withLock { offsetNs }
  }
  func step(byMilliseconds ms: Int64) { lock.withLock { offsetNs += ms * 1_000_000 } }
}

enum HarnessKind: String, CaseIterable, Sendable, CustomStringConvertible {
  case virtual, realTimerfd, realPrecise, realUVTimer
  var description: String { rawValue }

  func make() throws -> any TimerHarness {
    switch self {
    case .virtual: VirtualHarness()
    case .realTimerfd: try RealHarness()
    case .realPrecise: try RealHarness(options: LoopOptions(precision: .precise))
    case .realUVTimer: try RealHarness(options: LoopOptions(usesTimerfd: false))
    }
  }
}

extension Array where Element == Delivered {
  /// This activity's events as `"<ms after base> <kind> [value|name]"`.
  func lines(_ id: String, base: Instant, skipping: Set<ActivityEvent.Kind> = [.started])
    -> [String]
  {
    filter { $0.event.id == id && !skipping.contains($0.event.kind) }.map { d in
      let e = d.event
      var s = "\(e.at.milliseconds - base.milliseconds) \(e.kind.rawValue)"
      switch e.kind {
      case .tick, .paused: s += " \(e.value)"
      case .milestone: s += " \(e.milestone ?? "")"
      case .ended: s += " \(e.value) \(e.reason?.rawValue ?? "")"
      default: break
      }
      return s
    }
  }

  /// Events delivered before their instant.
  var early: [Delivered] { filter { $0.deliveredNs < $0.event.at.milliseconds * 1_000_000 } }
}
