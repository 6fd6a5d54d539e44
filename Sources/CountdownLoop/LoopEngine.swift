// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// The loop's engine as seen by one command: the commands and queries of `ActivityEngine`,
/// each stamped with the command's instant, and no way to move the clock.
///
/// ``CountdownLoop/submit(_:)`` hands one to its closure. It cannot be copied or kept, and it
/// has no `advance`, `stepClock` or explicit instants, so nothing run through the loop can put
/// the engine ahead of the wall clock: every tick the loop delivers is at or after its instant.
///
/// ```swift
/// try await loop.submit { engine throws(CountdownError) in
///   for gate in gates { try engine.start(.countdown(id: gate.id, to: gate.departs, title: gate.name)) }
/// }
/// ```
public struct LoopEngine: ~Copyable {
  private let engine: UnsafeMutablePointer<ActivityEngine>
  private unowned(unsafe) let core: LoopCore

  /// Only the loop thread makes one, around its own engine, for the length of one command.
  init(_ engine: UnsafeMutablePointer<ActivityEngine>, _ core: LoopCore) {
    self.engine = engine
    self.core = core
  }

  /// Ticks first: before each operation that changes the engine, what fell due since the
  /// command began fires at its own instant (see ``now``).
  @inline(__always)
  private func catchUp() { core.catchUp(&engine.pointee) }

  /// The sequence number the next event will get (see the `onBatch` callback of
  /// ``CountdownLoop/init(options:onEvent:onBatch:)``): what a subscriber registered now
  /// should receive starts there.
  public var eventSequence: UInt64 { core.batch.count }

  /// The command's instant: the loop's wall-clock now, in whole milliseconds.
  ///
  /// A long command does not hold back ticks: before each operation that changes the engine
  /// (start, update, pause, resume, end, the settings), the loop moves the engine to the
  /// wall clock's now when the millisecond has moved on, firing what fell due at its own
  /// instant, so `now` can move on between the operations of one command.
  public var now: Instant { engine.pointee.now }

  /// The engine-wide settings.
  public var options: EngineOptions { engine.pointee.options }

  /// Activities not yet dismissed.
  public var count: Int { engine.pointee.count }

  /// Starts an activity now and returns its id (see `ActivityEngine/start(_:at:)`).
  @discardableResult
  public func start(_ r: ActivityRequest) throws(CountdownError) -> String {
    catchUp()
    return try engine.pointee.start(r, at: now)
  }

  /// Updates an activity now (see `ActivityEngine/update(_:_:at:)`).
  public func update(_ id: String, _ u: ActivityUpdate) throws(CountdownError) {
    catchUp()
    try engine.pointee.update(id, u, at: now)
  }

  /// Pauses an activity now, freezing its value.
  public func pause(_ id: String, timestamp: Instant? = nil) throws(CountdownError) {
    catchUp()
    try engine.pointee.pause(id, at: now, timestamp: timestamp)
  }

  /// Resumes a paused activity now.
  public func resume(_ id: String, timestamp: Instant? = nil) throws(CountdownError) {
    catchUp()
    try engine.pointee.resume(id, at: now, timestamp: timestamp)
  }

  /// Ends an activity now.
  public func end(_ id: String, _ e: ActivityEnding = ActivityEnding()) throws(CountdownError) {
    catchUp()
    try engine.pointee.end(id, e, at: now)
  }

  /// Ends an activity now and returns it as it stands once ended (before an immediate
  /// dismissal removes it).
  package func ending(_ id: String, _ e: ActivityEnding) throws(CountdownError) -> ActivityState {
    catchUp()
    return try engine.pointee.ending(id, e, at: now)
  }

  /// Applies one protocol operation now (see `ActivityEngine/apply(_:id:at:)`), after the
  /// ticks that fell due since the command began.
  public func apply(_ operation: WireCommand.Operation, id: String?) throws(CountdownError)
    -> Applied
  {
    if operation.changesEngine { catchUp() }
    return try engine.pointee.apply(operation, id: id, at: now)
  }

  /// Turns the engine on or off now.
  public func setEnabled(_ enabled: Bool) throws(CountdownError) {
    catchUp()
    try engine.pointee.setEnabled(enabled, at: now)
  }

  /// Sets the most activities that may exist at once (nil: no limit).
  public func setMaxActivities(_ limit: Int?) {
    catchUp()
    engine.pointee.setMaxActivities(limit)
  }

  /// Sets the maximum active duration now (nil: off).
  public func setMaxActiveDuration(_ ms: Int64?) throws(CountdownError) {
    catchUp()
    try engine.pointee.setMaxActiveDuration(ms, at: now)
  }

  /// The activity as seen now.
  public func state(of id: String) throws(CountdownError) -> ActivityState {
    try engine.pointee.state(of: id, at: now)
  }

  /// The activity behind `handle` as seen now, or nil once it is dismissed.
  public func state(of handle: ActivityHandle) -> ActivityState? {
    engine.pointee.state(of: handle)
  }

  /// Every activity not yet dismissed, as seen now, in start order.
  ///
  /// Built here, on the loop thread, where it holds back ticks for as long as it takes
  /// (about half a microsecond an activity): for a large engine take ``activitiesView()``
  /// and build the list on another thread.
  public func activities() -> [ActivityState] { engine.pointee.activities() }

  /// The activities as they stand now, in O(1): build their states on another thread with
  /// `ActivitiesView/all()` (or its other queries), so that ticks go on meanwhile.
  public func activitiesView() -> ActivitiesView { engine.pointee.activitiesView() }

  /// How many activities are in each phase, and how many are stale.
  public func phaseCounts() -> (active: Int, paused: Int, ended: Int, stale: Int) {
    engine.pointee.phaseCounts()
  }

  /// The activity's group (nil when it has none).
  /// - Throws: `notFound` when no activity has that id.
  public func group(of id: String) throws(CountdownError) -> String? {
    try engine.pointee.group(of: id)
  }

  /// The activity's content.
  public func content(of id: String) throws(CountdownError) -> ActivityContent {
    try engine.pointee.content(of: id)
  }

  /// The `k` active countdowns that end soonest.
  public func soonestEnding(_ k: Int) throws(CountdownError) -> [ActivityState] {
    try engine.pointee.soonestEnding(k, at: now)
  }

  /// The activities that ended within `window` and are not yet dismissed.
  public func ended(within window: ClosedRange<Instant>) -> [ActivityState] {
    engine.pointee.ended(within: window)
  }

  /// The handle of the activity `id`, if it exists.
  public func handle(for id: String) -> ActivityHandle? { engine.pointee.handle(for: id) }

  /// The id of the activity behind `handle`, or nil once it is dismissed.
  public func id(of handle: ActivityHandle) -> String? { engine.pointee.id(of: handle) }

  /// The engine's state at its clock, as a store commits it (for tests of a rebuild).
  package func snapshot() -> EngineSnapshot { engine.pointee.snapshot() }

  /// The value the activity `id` shows at the engine's clock (nil when there is none).
  package func shownValue(of id: String) -> Int64? { engine.pointee.shownValue(of: id) }
}

@available(*, unavailable)
extension LoopEngine: Sendable {}
