import Foundation

@testable import Countdown

/// 2026-11-21T08:00:00Z, a whole second.
let t0 = Instant(milliseconds: 1_795_248_000_000)

/// `t0` plus `ms` milliseconds.
func at(_ ms: Int64) -> Instant { t0.advanced(by: ms) }

/// Collects an engine's events.
final class Recorder {
  var events: [ActivityEvent] = []

  /// The events as compact strings: `"<ms after t0> <kind> <id> [value] [extra]"`.
  var lines: [String] { events.map(Recorder.describe) }

  static func describe(_ e: ActivityEvent) -> String {
    var s = "\(e.at.milliseconds - t0.milliseconds) \(e.kind.rawValue) \(e.id)"
    switch e.kind {
    case .tick, .paused: s += " \(e.value)"
    case .ended: s += " \(e.value) \(e.reason!.rawValue)"
    case .milestone: s += " \(e.milestone!)"
    default: break
    }
    return s
  }

  /// Lines of the given kinds only.
  func lines(_ kinds: Set<ActivityEvent.Kind>) -> [String] {
    events.filter { kinds.contains($0.kind) }.map(Recorder.describe)
  }

  func clear() { events.removeAll() }
}

/// A fresh engine at `t0` with a recorder.
func makeEngine(_ options: EngineOptions = EngineOptions()) -> (ActivityEngine, Recorder) {
  let r = Recorder()
  let e = ActivityEngine(now: t0, options: options) { r.events.append($0) }
  return (e, r)
}

/// Runs `body` and returns the error code it threw, or nil.
func errorCode(_ body: () throws -> Void) -> CountdownError.Code? {
  do {
    try body()
    return nil
  } catch let error as CountdownError {
    return error.code
  } catch {
    return CountdownError.Code(rawValue: "unexpected \(type(of: error))")
  }
}

/// The seed of a randomized test: `COUNTDOWN_TEST_SEED` when set (to replay a failure), else
/// a fresh one, which the test puts in its failure messages.
func testSeed() -> UInt64 {
  if let text = ProcessInfo.processInfo.environment["COUNTDOWN_TEST_SEED"], let seed = UInt64(text)
  {
    return seed
  }
  return UInt64.random(in: .min ... .max)
}

/// Random values for the randomized engine tests, around an instant that moves forward.
struct RandomRun {
  var rng: SplitMix64
  var t = t0.milliseconds

  init(seed: UInt64) { rng = SplitMix64(state: seed) }

  mutating func rand(_ r: ClosedRange<Int64>) -> Int64 { Int64.random(in: r, using: &rng) }
  mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }

  /// Mostly small steps, sometimes none (same-instant commands), sometimes longer.
  mutating func step() {
    t += chance(0.2) ? 0 : chance(0.9) ? rand(1...1_500) : rand(2_000...8_000)
  }

  mutating func instant(_ r: ClosedRange<Int64>) -> Instant { Instant(milliseconds: t + rand(r)) }

  mutating func policy() -> DismissalPolicy {
    switch rand(0...2) {
    case 0: .immediate
    case 1: .after(instant(-1_000...30_000))
    default: .default
    }
  }

  mutating func milestones() -> [Milestone] {
    (0..<rand(0...3)).map { k in Milestone(name: "m\(k)", atMs: rand(0...12_000)) }
  }
}
