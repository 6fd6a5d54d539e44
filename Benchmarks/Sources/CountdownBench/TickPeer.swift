// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop

/// A timer driver under test. Each holds N activities, delivers each tick to the recorder on
/// its one delivery thread, and can replace activities (churn).
protocol TickPeer: AnyObject {
  /// Starts one activity per end instant (milliseconds since 1970), recording into `recorder`.
  func start(ends: [Int64], recorder: TickRecorder) async throws
  /// Runs `body` on the delivery thread, after everything delivered so far.
  func barrier(_ body: @escaping @Sendable () -> Void) async throws
  /// Replaces activity `index` with one ending at `end`, for each pair.
  func replace(_ items: [(index: Int, end: Int64)]) async throws
  /// Anything worth reporting (wake-ups, …).
  func note(seconds: Double) async throws -> String
  func stop() async
}

/// The first instant after `nowMs` at which a countdown to `end` changes its displayed value.
func firstChange(end: Int64, after nowMs: Int64) -> Int64 {
  let k = (end - nowMs - 1) / 1000
  return end - k * 1000
}

/// Our driver: one CountdownLoop; every activity started in one command.
/// Each activity's id generation, which a churn replacement moves on: the array is made at
/// the first replacement, so that a run without churn does not count its 8 bytes an activity.
struct IDGenerations {
  private var generations: [Int] = []
  /// Activities there are (set at start).
  var count = 0

  /// Moves `index` to its next generation: the generations of its old id and of its new one.
  mutating func advance(_ index: Int) -> (old: Int, new: Int) {
    if generations.isEmpty { generations = Array(repeating: 0, count: count) }
    generations[index] += 1
    return (generations[index] - 1, generations[index])
  }
}

final class CountdownPeer: TickPeer {
  let precision: TimerPrecision
  var loop: CountdownLoop?
  /// Each index's current id generation, for churn.
  var generations = IDGenerations()
  /// Wake-ups at the barriers that open and close the measured window.
  var wakeupMarks: [UInt64] = []

  /// The precise mode's early wake, or nil for the library's default.
  let spin: Int64?
  /// Count ticks only: no clock read, no histogram.
  let countOnly: Bool
  /// Whether the loop catches up between a command's operations (`LoopOptions.ticksFirst`).
  let ticksFirst: Bool
  /// Whether the callback formats each tick's text (what `c-abi`'s event text does).
  let eventText: Bool

  init(
    precision: TimerPrecision, spin: Int64? = nil, countOnly: Bool = false, ticksFirst: Bool = true,
    eventText: Bool = false
  ) {
    self.precision = precision
    self.spin = spin
    self.countOnly = countOnly
    self.ticksFirst = ticksFirst
    self.eventText = eventText
  }

  static func id(_ index: Int, _ generation: Int) -> String { "a\(index).\(generation)" }

  func start(ends: [Int64], recorder: TickRecorder) async throws {
    var options = LoopOptions(
      precision: precision, engine: EngineOptions(reservedActivities: ends.count))
    if let spin { options.preciseSpinNanoseconds = spin }
    options.ticksFirst = ticksFirst
    // The callback is chosen once, so that the measured path has no branch for it.
    let onEvent: @Sendable (ActivityEvent) -> Void
    if countOnly {
      onEvent = { e in if e.kind == .tick { recorder.count() } }
    } else if eventText {
      // As the C sink does: the text in the loop's default style (timer), on the stack.
      let formatter = TimerFormatter(style: .timer)
      onEvent = { e in
        guard e.kind == .tick else { return }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: TimerFormatter.maximumLength) {
          text in
          consumeText(text, formatter.write(seconds: e.value, into: text))
        }
        recorder.record(atMs: e.at.milliseconds)
      }
    } else {
      onEvent = { e in if e.kind == .tick { recorder.record(atMs: e.at.milliseconds) } }
    }
    let loop = try CountdownLoop(options: options, onEvent: onEvent)
    self.loop = loop
    generations.count = ends.count
    try await loop.submit { engine throws(CountdownError) in
      for (k, end) in ends.enumerated() {
        try engine.start(.countdown(id: Self.id(k, 0), to: Instant(milliseconds: end), title: "A"))
      }
    }
  }

  func barrier(_ body: @escaping @Sendable () -> Void) async throws {
    try await loop!.submit { _ in body() }
    wakeupMarks.append(try await loop!.wakeups())
  }

  func replace(_ items: [(index: Int, end: Int64)]) async throws {
    var changes: [(old: String, new: String, end: Int64)] = []
    for (index, end) in items {
      let g = generations.advance(index)
      changes.append((Self.id(index, g.old), Self.id(index, g.new), end))
    }
    let batch = changes
    try await loop!.submit { engine throws(CountdownError) in
      for c in batch {
        try engine.end(c.old, ActivityEnding(dismissal: .immediate))
        try engine.start(.countdown(id: c.new, to: Instant(milliseconds: c.end), title: "A"))
      }
    }
  }

  /// Lists every activity: built in a command on the loop thread, or taken there as a view
  /// and built here (`ticks --list-all`). Returns how many were listed.
  func listAll(offLoop: Bool) async throws -> Int {
    guard offLoop else { return try await loop!.submit { $0.activities().count } }
    let view = try await loop!.submit { $0.activitiesView() }
    return view.all().count
  }

  func note(seconds: Double) async throws -> String {
    let w = (wakeupMarks.last ?? 0) - (wakeupMarks.first ?? 0)
    return "\(Int((Double(w) / seconds).rounded())) wake-ups/s"
  }

  func stop() async { loop?.shutdown() }
}

/// Takes a formatted text the way a host's display call would: opaque to the optimizer, so
/// that the formatting before it is not removed as unused.
@_optimize(none)
func consumeText(_ text: UnsafeMutableBufferPointer<UInt8>, _ length: Int) {}
