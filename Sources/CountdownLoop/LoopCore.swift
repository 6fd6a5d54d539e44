// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

#if canImport(Glibc)
  import Glibc
#endif

/// Everything the loop thread owns: the engine, the libuv handles, the timer state.
///
/// `@unchecked Sendable` because every field but `queue` and `stream` is touched by one thread
/// at a time: the creating thread until `pthread_create`, then only the loop thread (libuv
/// callbacks run there). `queue` is `Locked`; `stream` locks internally.
final class LoopCore: @unchecked Sendable {
  let options: LoopOptions
  let queue = Locked(CommandQueueState())
  let stream: EventStreamBuffer?
  var engine: ActivityEngine
  /// The events of one wake, handed to `stream` under one lock and to `onBatch` at once, and
  /// the count of every event so far.
  let batch: EventBatch
  /// Receives each wake's events, with the sequence number of the first.
  let onBatch: (@Sendable (UInt64, [ActivityEvent]) -> Void)?
  /// Runs at the end of each wake that ran commands or produced events, with the engine.
  let onWake: WakeHandler?
  /// What the engine calls with each event (kept to rebuild the engine in ``replace(_:with:)``).
  let emit: (ActivityEvent) -> Void
  /// Set when the engine was restored: the first thing the thread does is step its clock from
  /// the stored instant to now.
  let stepsOnStart: Bool
  let handles: LoopHandles
  /// The timer's armed instant (monotonic ns), so that it is re-armed only when it changes.
  var armedAt: Int64 = -1
  /// Wall minus monotonic time at the last look; a jump of it is a wall-clock step.
  var lastOffset: Int64
  /// How many times the OS timer woke the loop.
  var wakeups: UInt64 = 0
  /// In `.precise` mode, the monotonic deadline the early-armed timer stands for.
  var spinUntil: Int64 = 0
  /// The monotonic instant at which the wall clock's millisecond moves past the engine's
  /// clock: a command still running then catches the engine up (``catchUp(_:)``).
  var catchUpAt: Int64 = .max
  /// Whether a catch-up inside the running commands fired events not yet handed on.
  var caughtUp = false
  var thread = pthread_t()

  /// Steps smaller than this are clock-reading jitter, not steps.
  static let stepThresholdNs: Int64 = 2_000_000

  init(
    options: LoopOptions, onEvent: (@Sendable (ActivityEvent) -> Void)?,
    onBatch: (@Sendable (UInt64, [ActivityEvent]) -> Void)? = nil,
    restoring snapshot: EngineSnapshot? = nil, onWake: WakeHandler? = nil
  ) throws(CountdownError) {
    self.options = options
    let stream = options.eventStreamCapacity.map { EventStreamBuffer(capacity: max(1, $0)) }
    self.stream = stream
    let batch = EventBatch(collecting: stream != nil || onBatch != nil || onWake != nil)
    self.batch = batch
    self.onBatch = onBatch
    self.onWake = onWake
    let emit: (ActivityEvent) -> Void = { event in
      onEvent?(event)
      batch.count &+= 1
      if batch.collecting { batch.events.append(event) }
    }
    self.emit = emit
    let (wall, mono) = Self.readClocks(options.wallClock)
    lastOffset = wall - mono
    if let snapshot {
      engine = try ActivityEngine(restoring: snapshot, onEvent: emit)
      stepsOnStart = true
    } else {
      var engineOptions = options.engine
      engineOptions.idSeed = UInt64.random(in: .min ... .max)
      engine = ActivityEngine(
        now: Instant(milliseconds: Instant.floorDivision(wall, by: 1_000_000)),
        options: engineOptions,
        onEvent: emit)
      stepsOnStart = false
    }
    handles = try LoopHandles(LibUV(faults: options.faults))
    do {
      try handles.open(
        usesTimerfd: options.usesTimerfd, watchesClockSteps: options.wallClock.isSystemClock)
      try handles.attach(self)
    } catch {
      handles.abandon()
      throw error
    }
  }

  /// Wall and monotonic time read back to back; retried when the thread was preempted
  /// between the reads, so that their difference is trustworthy.
  static func readClocks(_ clock: any WallClock) -> (wall: Int64, mono: Int64) {
    var best: (Int64, Int64, Int64) = (0, 0, .max)
    for _ in 0..<3 {
      let m1 = LibUV.monotonicNanoseconds()
      let w = clock.nanosecondsSinceEpoch()
      let m2 = LibUV.monotonicNanoseconds()
      if m2 - m1 < best.2 { best = (w, m1 + (m2 - m1) / 2, m2 - m1) }
      if m2 - m1 < 50_000 { break }
    }
    return (best.0, best.1)
  }

  // MARK: - Loop thread

  /// The loop thread's body.
  func run() {
    _ = LibUV.setTimerSlack(nanoseconds: 1)
    nameCurrentThread("countdown-loop")
    PromptWakeups.request()
    if stepsOnStart {
      syncClock(&engine, stepping: true)
      afterWork(ranCommands: true)
    } else {
      rearm()
    }
    handles.run()
    handles.closeLoop()
    stream?.finish()
  }

  /// Moves the engine to the wall clock's now, re-anchoring it after a step.
  func syncClock() { syncClock(&engine, stepping: false) }

  /// Moves `engine` to the wall clock's now. With `stepping` (a restored engine, whose clock
  /// is the stored instant) it is re-anchored as after a wall-clock step: what fell due in
  /// between fires once, at its own instant (docs/state-file.md).
  func syncClock(_ engine: inout ActivityEngine, stepping: Bool) {
    let (wall, mono) = Self.readClocks(options.wallClock)
    let offset = wall - mono
    let ms = Instant(milliseconds: Instant.floorDivision(wall, by: 1_000_000))
    defer {
      if options.ticksFirst { catchUpAt = (engine.now.milliseconds + 1) &* 1_000_000 &- offset }
    }
    if stepping || abs(offset - lastOffset) > Self.stepThresholdNs {
      lastOffset = offset
      // A wall clock set outside the wire's range (before 1973, after 9999) is not followed:
      // the engine keeps its clock until the system's comes back.
      try? engine.stepClock(to: ms)
      return
    }
    lastOffset = offset
    if ms > engine.now { try? engine.advance(to: ms) }
  }

  /// Ticks first: called before each operation of a command (and between commands), it
  /// moves `engine` to the wall clock's now once the millisecond has moved on, so that what
  /// fell due while a long command ran fires at its own instant, before the operations that
  /// follow (docs/events.md: commands apply after every event due at or before their instant).
  /// `onEvent` gets those events at once; the stream, `onBatch` and the wake handler get
  /// them after the command. One monotonic clock read when the millisecond has not moved.
  @inline(__always)
  func catchUp(_ engine: inout ActivityEngine) {
    guard LibUV.monotonicNanoseconds() >= catchUpAt else { return }
    let before = batch.count
    syncClock(&engine, stepping: false)
    if batch.count != before { caughtUp = true }
  }

  /// Rebuilds `engine` (the loop's, handed to a command) from `snapshot`, a store's last
  /// committed state, and steps it to now; on a bad snapshot the engine stays as it was.
  ///
  /// What the wake did before this point is handed on first, as a wake of its own, so that
  /// the wake handler sees the old engine's work apart from the new one's.
  func replace(_ engine: inout ActivityEngine, with snapshot: EngineSnapshot)
    throws(CountdownError)
  {
    try install(snapshot, in: &engine, events: [])
  }

  /// Rebuilds `engine` (the loop's, handed to a command) from what `build` makes of its
  /// snapshot at now, and hands on the events `build` gives (events that the rebuilt engine's
  /// activities had elsewhere: a cluster node's shard taken over, stepped from its last commit),
  /// each with the rebuilt engine's handle of its activity (``ActivityHandle/gone`` when it is
  /// not there, dismissed during that step). On a throw the engine stays as it was.
  func rebuild(
    _ engine: inout ActivityEngine,
    _ build: (EngineSnapshot) throws(CountdownError) -> (EngineSnapshot, [ActivityEvent])
  ) throws(CountdownError) {
    syncClock(&engine, stepping: false)
    let (snapshot, events) = try build(engine.snapshot())
    try install(snapshot, in: &engine, events: events)
  }

  /// Puts an engine restored from `snapshot` in `engine`'s place (on a throw, nothing
  /// changes): what the old one did so far is handed on first; then `events` go out with the
  /// new engine's handles (``ActivityHandle/gone`` for an activity it does not hold), and the
  /// new engine steps to now.
  ///
  /// A catch-up tick (in `events`, or from the step) that carries the value the old engine
  /// shows for its activity is not handed on: the old engine ticked it already, and ticks
  /// are never held for a commit, so subscribers saw it (a tick only when the value changes;
  /// the rebuild after a failed write repeated every ticking activity's value once). Those
  /// of activities the old engine did not hold, or showed otherwise, go out.
  private func install(
    _ snapshot: EngineSnapshot, in engine: inout ActivityEngine, events: [ActivityEvent]
  ) throws(CountdownError) {
    let fresh = try ActivityEngine(restoring: snapshot, onEvent: emit)
    handOn(engine, ranCommands: true)
    let old = engine
    let emit = self.emit
    let handOnChanged: (ActivityEvent) -> Void = { e in
      if e.kind == .tick, old.shownValue(of: e.id) == e.value { return }
      emit(e)
    }
    engine = fresh
    for var e in events {
      e.handle = engine.handle(for: e.id) ?? .gone
      handOnChanged(e)
    }
    engine.onEvent = handOnChanged
    syncClock(&engine, stepping: true)
    engine.onEvent = emit
  }

  /// The OS timer fired.
  func timerFired() {
    wakeups &+= 1
    armedAt = -1  // the one-shot timer is spent
    if spinUntil > 0 {
      // Armed early on purpose: spin the last few microseconds to the deadline.
      while LibUV.monotonicNanoseconds() < spinUntil {}
      spinUntil = 0
    }
    syncClock()
    afterWork(ranCommands: false)
  }

  /// Commands arrived (or shutdown was asked for).
  func drainCommands() {
    let (commands, closing) = queue.withLock { state in
      let taken = state.pending
      state.pending = []
      if state.closing { state.asyncClosed = true }
      return (taken, state.closing)
    }
    if closing {
      for c in commands { c.fail(CountdownError(.shutdown, "the loop was shut down")) }
      handles.closeAll()
      return
    }
    syncClock()
    for (k, c) in commands.enumerated() {
      if k > 0 {
        // Ticks first: what fell due while the commands so far ran is handed on now, as its
        // own wake, not after the rest of the queue.
        catchUp(&engine)
        if caughtUp { handOn(engine, ranCommands: true) }
      }
      caughtUp = false
      c.run(&engine)
    }
    caughtUp = false
    afterWork(ranCommands: !commands.isEmpty)
  }

  /// Hands the wake's events to the wake handler and the stream, and re-arms the timer.
  func afterWork(ranCommands: Bool) {
    handOn(engine, ranCommands: ranCommands)
    rearm()
  }

  /// Hands the events so far to the wake handler, the stream and the batch callback.
  func handOn(_ engine: borrowing ActivityEngine, ranCommands: Bool) {
    let first = batch.count - UInt64(batch.events.count)
    if let onWake, ranCommands || !batch.events.isEmpty { onWake(engine, first, batch.events) }
    if !batch.events.isEmpty {
      stream?.push(batch.events)
      onBatch?(first, batch.events)
      batch.handedOn()
    }
  }

  /// Arms the OS timer for the engine's next deadline (rounded up to the quantum), or for the
  /// longest sleep when there is none.
  func rearm() {
    let (wall, mono) = Self.readClocks(options.wallClock)
    let nowMs = Instant.floorDivision(wall, by: 1_000_000)
    var target = engine.nextDeadline?.milliseconds ?? (nowMs + options.maximumSleepMs)
    if case .quantum(let q) = options.precision, q > 1 {
      target = (Instant.floorDivision(target - 1, by: q) + 1) * q
    }
    target = min(target, nowMs + options.maximumSleepMs)
    let monoTarget = max(1, mono + (target * 1_000_000 - wall))
    if monoTarget != armedAt {
      armedAt = monoTarget
      let spin = options.precision == .precise ? options.preciseSpinNanoseconds : 0
      spinUntil = spin > 0 && monoTarget - spin > mono ? monoTarget : 0
      handles.arm(monotonicNanoseconds: monoTarget - (spinUntil > 0 ? spin : 0), now: mono)
    }
  }

  // MARK: - Any thread

  /// Queues a command; fails it at once when the loop is shutting down.
  func submit(_ c: LoopCommand) {
    let accepted = queue.withLock { state -> Bool in
      guard !state.closing else { return false }
      state.pending.append(c)
      handles.wake()
      return true
    }
    if !accepted { c.fail(CountdownError(.shutdown, "the loop was shut down")) }
  }

  /// Asks the loop to close; pending and later commands fail with `shutdown`.
  func requestShutdown() {
    queue.withLock { state in
      guard !state.closing else { return }
      state.closing = true
      if !state.asyncClosed { handles.wake() }
    }
  }

  /// Starts the loop thread; when it cannot, closes everything the loop opened and throws.
  func startThread() throws(CountdownError) {
    do {
      thread = try handles.sys.startThread { self.run() }
    } catch {
      handles.abandon()
      throw error
    }
  }

  /// The loop's counters; loop thread only.
  var statistics: LoopStatistics {
    LoopStatistics(
      wakeups: wakeups, usesTimerfd: handles.usesTimerfd, timerFallbacks: handles.timerFallbacks,
      armFailures: handles.armFailures)
  }
}

/// Runs on the loop thread at the end of a wake, after its commands' completions: the engine
/// as the wake left it, the sequence number of the wake's first event, and its events (empty
/// when the wake only ran commands). It must not block; a durable service hands the wake's
/// changes to its store from here.
package typealias WakeHandler =
  @Sendable (
    _ engine: borrowing ActivityEngine, _ firstSequence: UInt64, _ events: [ActivityEvent]
  ) -> Void

/// Events collected during one wake, and the number of events ever emitted; loop-thread only.
final class EventBatch {
  var events: [ActivityEvent] = []
  /// Events emitted so far: the sequence number of the next one.
  var count: UInt64 = 0
  /// Whether `events` collects the wake's events (for a stream or a batch callback).
  let collecting: Bool
  /// The room a wake's array starts with.
  static let room = 1024

  init(collecting: Bool) {
    self.collecting = collecting
    if collecting { events.reserveCapacity(Self.room) }
  }

  /// Empties `events` once handed on. The stream and the batch callback keep the array
  /// handed to them, so emptying it in place makes another of its whole capacity: after one
  /// wake of 20k events (a pipelined burst of starts) every later wake allocated 1.5 MB, a
  /// block the allocator maps and unmaps each time. Past 4 times the usual room, a new array
  /// of the usual room instead.
  func handedOn() {
    if events.capacity > 4 * Self.room {
      events = []
      events.reserveCapacity(Self.room)
    } else {
      events.removeAll(keepingCapacity: true)
    }
  }
}
