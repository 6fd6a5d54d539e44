// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// A libuv event loop on its own thread that runs a Countdown engine and delivers every
/// event at (never before) its instant.
///
/// One OS timer serves every activity: a timerfd with an absolute deadline, watched by a
/// `uv_poll_t` and re-armed only when the earliest deadline changes (a `uv_timer_t` where
/// timerfd is missing). The loop thread's timer slack is 1 ns.
///
/// Commands are callable from any thread; they travel through a short-lock queue and one
/// `uv_async_t`, run at the wall clock's now (whole milliseconds), and complete as `async`
/// functions. Events come out through the `onEvent` callback on the loop thread (no
/// allocation per tick) and, when ``LoopOptions/eventStreamCapacity`` is set, through
/// ``events``.
///
/// ```swift
/// let loop = try CountdownLoop { event in print(event.kind, event.id, event.value) }
/// let id = try await loop.start(.countdown(to: Instant(milliseconds: deadline), title: "Gate B12"))
/// try await loop.pause(id)
/// loop.shutdown()
/// ```
public final class CountdownLoop: Sendable {
  let core: LoopCore
  private let joined = Locked(false)

  /// Starts a loop thread. `onEvent` runs on that thread, in event order; it must not block.
  ///
  /// `onBatch`, when given, also runs there once at the end of each wake that produced events,
  /// with those events and the sequence number of the first (events are numbered from 0 in the
  /// order they happen; ``LoopEngine/eventSequence`` is the number the next one will get). It
  /// suits handing a wake's events to other threads in one hop: it allocates one array per
  /// wake, never per event.
  public init(
    options: LoopOptions = LoopOptions(), onEvent: (@Sendable (ActivityEvent) -> Void)? = nil,
    onBatch: (@Sendable (_ firstSequence: UInt64, _ events: [ActivityEvent]) -> Void)? = nil
  ) throws(CountdownError) {
    let core = try LoopCore(options: options, onEvent: onEvent, onBatch: onBatch)
    // Started before `self` is whole: if the thread cannot start, no deinit runs on a loop
    // whose handles creation has already closed.
    try core.startThread()
    self.core = core
  }

  /// A loop whose engine is rebuilt from `snapshot` (a store's state) and, first thing on its
  /// thread, stepped from the snapshot's instant to the wall clock's now, so that what fell
  /// due in between fires once at its own instant. `onWake` runs at the end of every wake
  /// that ran commands or produced events (see `WakeHandler`).
  /// - Throws: `invalidPayload` naming the activity and field of a bad stored row; the
  ///   errors of ``init(options:onEvent:onBatch:)``.
  package init(
    options: LoopOptions, restoring snapshot: EngineSnapshot?, onWake: @escaping WakeHandler
  ) throws(CountdownError) {
    let core = try LoopCore(
      options: options, onEvent: nil, onBatch: nil, restoring: snapshot, onWake: onWake)
    try core.startThread()
    self.core = core
  }

  /// Replaces the engine with one rebuilt from `snapshot` and stepped to now (after a store
  /// failed: its last committed state). `completion` runs on the loop thread with the
  /// outcome; on a bad snapshot the engine stays as it was.
  package func replaceEngine(
    with snapshot: EngineSnapshot,
    completion: @escaping @Sendable (Result<Void, CountdownError>) -> Void
  ) {
    let core = self.core
    core.submit(
      LoopCommand(
        run: { engine in
          completion(
            Result { () throws(CountdownError) in try core.replace(&engine, with: snapshot) })
        },
        fail: { completion(.failure($0)) }))
  }

  /// Replaces the engine with the one `build` makes of its snapshot at now, and hands on the
  /// events `build` gives with it (``ActivityHandle/gone`` for those whose activity is not in
  /// the new engine); then steps it to now. `build` runs on the loop thread and must not block;
  /// `completion` runs there after, with the outcome. On a throw the engine stays as it was.
  package func rebuildEngine(
    _ build:
      @escaping @Sendable (EngineSnapshot) throws(CountdownError) -> (
        EngineSnapshot, [ActivityEvent]
      ),
    completion: @escaping @Sendable (Result<Void, CountdownError>) -> Void
  ) {
    let core = self.core
    core.submit(
      LoopCommand(
        run: { engine in
          completion(Result { () throws(CountdownError) in try core.rebuild(&engine, build) })
        },
        fail: { completion(.failure($0)) }))
  }

  /// Releasing the loop without ``shutdown()`` stops it without waiting: the thread closes
  /// its handles and exits on its own.
  deinit {
    let wasJoined = joined.withLock { j in
      defer { j = true }
      return j
    }
    if !wasJoined {
      core.requestShutdown()
      LibUV.detach(core.thread)
    }
  }

  /// The events, when the loop was made with an `eventStreamCapacity`.
  public var events: ActivityEventStream? {
    core.stream.map { ActivityEventStream(buffer: $0) }
  }

  /// Closes every handle, completes pending commands with `shutdown`, joins the loop thread
  /// and frees everything. Later commands fail with `shutdown`. Blocks until the thread has
  /// exited; call it from any thread but the loop's own (not from `onEvent`).
  public func shutdown() {
    let first = joined.withLock { j in
      defer { j = true }
      return !j
    }
    guard first else { return }
    precondition(!LibUV.isCurrent(core.thread), "shutdown() on the loop thread")
    core.requestShutdown()
    LibUV.join(core.thread)
  }

  /// Whether the caller is running on this loop's thread (in `onEvent`, `onBatch` or a
  /// completion), where a call that waits for the loop would never return.
  package var isCurrentThread: Bool { LibUV.isCurrent(core.thread) }

  /// Runs `body` on the loop thread with the engine, then calls `completion` there with its
  /// result (or with `shutdown` if the loop closes first). For callers on plain threads;
  /// `completion` must not block.
  ///
  /// `body` gets a ``LoopEngine``: commands and queries at the command's instant (the loop's
  /// now), and nothing that moves the clock, so no command can make the loop tick early.
  public func submit<T>(
    _ body: @escaping @Sendable (borrowing LoopEngine) throws(CountdownError) -> T,
    completion: @escaping @Sendable (Result<T, CountdownError>) -> Void
  ) {
    let core = self.core
    core.submit(
      LoopCommand(
        run: { engine in
          let result = withUnsafeMutablePointer(to: &engine) { pointer in
            let view = LoopEngine(pointer, core)
            return Result { () throws(CountdownError) -> T in try body(view) }
          }
          completion(result)
        },
        fail: { error in completion(.failure(error)) }))
  }

  /// Runs `body` on the loop thread with the engine (see ``submit(_:completion:)``).
  @discardableResult
  public func submit<T: Sendable>(
    _ body: @escaping @Sendable (borrowing LoopEngine) throws(CountdownError) -> T
  ) async throws(CountdownError) -> T {
    let result = await withCheckedContinuation {
      (c: CheckedContinuation<Result<T, CountdownError>, Never>) in
      submit(body) { c.resume(returning: $0) }
    }
    return try result.get()
  }

  /// Starts an activity now and returns its id.
  @discardableResult
  public func start(_ r: ActivityRequest) async throws(CountdownError) -> String {
    try await submit { engine throws(CountdownError) in try engine.start(r) }
  }

  /// Updates an activity now (see `ActivityEngine/update(_:_:at:)`).
  public func update(_ id: String, _ u: ActivityUpdate) async throws(CountdownError) {
    try await submit { engine throws(CountdownError) in try engine.update(id, u) }
  }

  /// Pauses an activity now, freezing its value.
  public func pause(_ id: String, timestamp: Instant? = nil) async throws(CountdownError) {
    try await submit { engine throws(CountdownError) in
      try engine.pause(id, timestamp: timestamp)
    }
  }

  /// Resumes a paused activity now.
  public func resume(_ id: String, timestamp: Instant? = nil) async throws(CountdownError) {
    try await submit { engine throws(CountdownError) in
      try engine.resume(id, timestamp: timestamp)
    }
  }

  /// Ends an activity now.
  public func end(_ id: String, _ e: ActivityEnding = ActivityEnding()) async throws(CountdownError)
  {
    try await submit { engine throws(CountdownError) in try engine.end(id, e) }
  }

  /// The activity as seen now.
  public func state(of id: String) async throws(CountdownError) -> ActivityState {
    try await submit { engine throws(CountdownError) in try engine.state(of: id) }
  }

  /// The `k` active countdowns that end soonest.
  public func soonestEnding(_ k: Int) async throws(CountdownError) -> [ActivityState] {
    try await submit { engine throws(CountdownError) in try engine.soonestEnding(k) }
  }

  /// The activities that ended within `window` and are not yet dismissed.
  public func ended(within window: ClosedRange<Instant>) async throws(CountdownError)
    -> [ActivityState]
  {
    try await submit { engine in engine.ended(within: window) }
  }

  /// Turns the engine on or off now.
  public func setEnabled(_ enabled: Bool) async throws(CountdownError) {
    try await submit { engine throws(CountdownError) in try engine.setEnabled(enabled) }
  }

  /// Activities not yet dismissed.
  public func count() async throws(CountdownError) -> Int {
    try await submit { engine in engine.count }
  }

  /// How many times the OS timer has woken the loop.
  public func wakeups() async throws(CountdownError) -> UInt64 {
    try await statistics().wakeups
  }

  /// The loop's counters: wake-ups, and how its OS timer has fared.
  public func statistics() async throws(CountdownError) -> LoopStatistics {
    let core = self.core
    return try await submit { _ in core.statistics }
  }
}
