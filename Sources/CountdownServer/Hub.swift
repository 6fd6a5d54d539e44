// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop
import CountdownPostgres
import CountdownProtocol
import NIOCore

/// The subscribers and their output, confined to one NIO event loop.
///
/// The loop thread hands each wake's events here in one hop (`publish`), after handing over
/// the replies of that wake's commands, so a subscription registered by a command is in place
/// before the events that follow it; events before it are told apart by sequence number.
/// Each wake's events are encoded once and copied to each subscriber whose filter takes them.
///
/// The hub holds the registry and does the I/O; its decisions are pure state machines, each
/// in its own file and tested alone on a virtual clock: ``CommitGate`` (events held until
/// their commit), ``SubscriberOutput`` (what waits for a slow subscriber, tick coalescing,
/// the bound and the cut-off), ``StreamPacer`` and ``PacingSchedule`` (an event stream's
/// writes), ``EventFraming`` (lines and SSE frames). Nothing here ever waits for a client.
final class Hub: @unchecked Sendable {
  // @unchecked Sendable: every field is touched only on `eventLoop` (asserted in debug).

  let eventLoop: EventLoop
  let formatter: TimerFormatter
  let bound: Int
  let slowConsumerAfter: TimeAmount
  /// The bytes all subscribers together may have unwritten (waiting here or in their
  /// connections' buffers) before those holding the most are cut off (``checkOutputBudget()``).
  let outputBudget: Int
  /// Whether a budget check is scheduled (``scheduleBudgetCheck()``).
  var budgetCheckScheduled = false
  /// Counters for `/metrics`.
  let metrics: ServerMetrics
  /// The hub's clock (NIO's uptime clock; a test may pass another).
  private let now: @Sendable () -> NIODeadline
  private(set) var subscribers: [ObjectIdentifier: Subscriber] = [:]
  /// Set by ``closeStreams()``: no event stream subscribes after it.
  private var streamsClosed = false
  private var gate = CommitGate()
  private var pacing = PacingSchedule<ObjectIdentifier>()
  private var writer: WireEventWriter
  private var offsets: [Int] = []
  /// A cluster node's (``enableRelays(incarnation:)``): the nodes relaying its events, and
  /// the recent ones kept for a node that connects again.
  private(set) var relays: PeerRelays?
  /// This process's incarnation as a cluster node: the space its sequence and delivery
  /// numbers belong to (0 for a server alone).
  var incarnation: UInt64 { relays?.incarnation ?? 0 }
  /// Whether a relaying node takes ticks.
  private var relaysTakeTicks: Bool { relays?.takeTicks ?? false }
  /// Told (on this event loop) when this node's subscribers start or stop wanting ticks: a
  /// cluster node then asks the other nodes for theirs, or stops (``RelayLinks``).
  var onTicksWanted: ((Bool) -> Void)?
  private var ticksWanted = false
  /// A cluster node's events committed and not yet relayed, kept by its writer: told how far
  /// this hub has come at each commit's end.
  var unsettled: UnsettledEvents?
  /// A cluster node's own lifecycle events whose commit failed, in case it landed (``landed(_:)``).
  var undecided = UndecidedEvents()
  /// The tests' fault (``ClusterOptions/stallAfterCommitOf``), and whether it has struck.
  var stallAfterCommitOf: String?
  private var stalled = false
  /// The group of each activity that has one, as the events delivered so far (and the state
  /// the server started from) tell it: what a subscriber with a scope is filtered by
  /// (docs/security.md, "Groups"). An activity's group is fixed at its start.
  /// Touched on `eventLoop` only, as every field (Hub+Groups.swift).
  var groupOf: [String: String] = [:]

  init(
    eventLoop: EventLoop, formatter: TimerFormatter, bound: Int, slowConsumerAfter: TimeAmount,
    outputBudget: Int = 64 << 20, metrics: ServerMetrics,
    now: @escaping @Sendable () -> NIODeadline = { .now() }
  ) {
    self.outputBudget = outputBudget
    self.metrics = metrics
    self.eventLoop = eventLoop
    self.formatter = formatter
    self.bound = bound
    self.slowConsumerAfter = slowConsumerAfter
    self.now = now
    writer = WireEventWriter(formatter: formatter, writesTicks: true)
  }

  // MARK: - The registry

  private func output(pending: Bool) -> SubscriberOutput {
    SubscriberOutput(bound: bound, cutOffAfter: slowConsumerAfter, pending: pending)
  }

  /// Registers (or replaces) the subscription of `sink`.
  func subscribe(
    _ sink: any EventSink, ids: [String]?, ticks: Bool, scope: GroupScope = .everything,
    fromSequence: UInt64
  ) {
    eventLoop.assertInEventLoop()
    subscribers[sink.key] = Subscriber(
      sink: sink, ids: ids, ticks: ticks, scope: scope, fromSequence: fromSequence,
      output: output(pending: false))
    metrics.subscribers.record(subscribers.count)
    noteTicks()
    checkInvariants()
  }

  /// Registers `sink` before its `subscribe` request runs: the events published from now on
  /// are kept for it, framed, until ``activate(_:first:fromSequence:)`` knows where its
  /// snapshot stands. Nothing published after the request is missed. False, and nothing
  /// registered, once ``closeStreams()`` has run: the server is stopping, and a stream
  /// registered then would never be ended (the HTTP server would wait for it, then give up).
  func subscribePending(
    _ sink: any EventSink, ids: [String]?, ticks: Bool, scope: GroupScope = .everything
  ) -> Bool {
    eventLoop.assertInEventLoop()
    guard !streamsClosed else { return false }
    subscribers[sink.key] = Subscriber(
      sink: sink, ids: ids, ticks: ticks, scope: scope, fromSequence: 0,
      output: output(pending: true))
    metrics.subscribers.record(subscribers.count)
    noteTicks()
    checkInvariants()
    return true
  }

  /// Writes `first` (the snapshot) to the pending subscription `key`, then the events kept for
  /// it numbered from `fromSequence` on (those before are in the snapshot), and delivers to it
  /// as to any subscriber from then on.
  ///
  /// On a cluster node, `cuts` says where the snapshot stands in each other node's events
  /// (by incarnation): their events numbered from there on follow it.
  func activate(
    _ key: ObjectIdentifier, first: ByteBuffer, fromSequence: UInt64, cuts: [UInt64: UInt64] = [:]
  ) {
    eventLoop.assertInEventLoop()
    guard let sub = subscribers[key], sub.output.isPending else { return }
    sub.fromSequence = fromSequence
    sub.cuts = cuts
    var bytes = first
    sub.output.activate(from: fromSequence, cuts: cuts, after: &bytes)
    if bytes.readableBytes > 0 { sub.sink.write(bytes) }
    // A snapshot its client does not read waits in the connection's buffer.
    if !sub.sink.isWritable { scheduleBudgetCheck() }
    checkInvariants()
  }

  func unsubscribe(_ key: ObjectIdentifier) {
    eventLoop.assertInEventLoop()
    relays?.remove(key)
    guard subscribers.removeValue(forKey: key) != nil else { return }
    metrics.subscribers.record(subscribers.count)
    noteTicks()
  }

  /// Tells ``onTicksWanted`` when whether some subscriber wants ticks has changed.
  private func noteTicks() {
    guard let onTicksWanted else { return }
    let wanted = subscribers.values.contains { $0.ticks }
    guard wanted != ticksWanted else { return }
    ticksWanted = wanted
    onTicksWanted(wanted)
  }

  // MARK: - Relays between cluster nodes

  /// Makes this hub keep its lifecycle events for the other nodes of a cluster (each with a
  /// delivery number, in a ``RelayRing``) and take relay connections (``relay(_:after:known:ticks:)``).
  func enableRelays(incarnation: UInt64) {
    eventLoop.assertInEventLoop()
    guard relays == nil else { return }
    relays = PeerRelays(
      incarnation: incarnation, eventLoop: eventLoop, bound: bound,
      cutOffAfter: slowConsumerAfter, metrics: metrics, now: now)
  }

  /// Another node asks for this node's lifecycle events on `sink` (``PeerRelays/accept(_:after:known:ticks:)``);
  /// refused when this hub relays none.
  func relay(_ sink: any EventSink, after: UInt64, known: UInt64?, ticks: Bool) {
    eventLoop.assertInEventLoop()
    guard let relays else {
      let refusal = PeerMessage.RelayAnswer.refused(
        code: .unavailable, message: "this node relays no events (it has no cluster token)")
      sink.close(after: sink.allocator.buffer(bytes: refusal.line))
      return
    }
    relays.accept(sink, after: after, known: known, ticks: ticks)
  }

  /// A lifecycle event of another node (`source`, its incarnation), numbered `sequence` by it,
  /// its JSON line `line` (with its newline): to each subscriber of this node that takes it,
  /// as an event of its own (docs/cluster.md, "Subscriptions across nodes").
  ///
  /// A `recovered` event (one the node that made it never relayed: found beside a shard's
  /// rows by the node that took it) goes only to subscribers whose snapshot stands somewhere
  /// in `source`'s events: a later snapshot was taken from the shard's new owner, with the
  /// event's change in it.
  ///
  /// `group`: the group of its activity as the relay line names it (none: nil).
  func relayed(
    from source: UInt64, sequence: UInt64, id: String, kind: ActivityEvent.Kind,
    group: String? = nil, line: ByteBuffer, recovered: Bool = false
  ) {
    eventLoop.assertInEventLoop()
    var sse: ByteBuffer?
    for sub in subscribers.values
    where sub.wantsRelayed(id, kind, group: group, sequence: sequence, from: source)
      && (!recovered || sub.output.isPending || sub.cuts[source] != nil)
    {
      // Another node's tick is not kept for a subscriber that is behind: the next supersedes it.
      if kind == .tick && !sub.output.isPending && (!sub.output.isEmpty || !sub.sink.isWritable) {
        continue
      }
      let framed: ByteBuffer
      if sub.sink.framing == .lines {
        framed = line
      } else if let made = sse {
        framed = made
      } else {
        var b = sub.sink.allocator.buffer(
          capacity: line.readableBytes + EventFraming.serverSentEvents.overhead + 32)
        line.withUnsafeReadableBytes { raw in
          EventFraming.serverSentEvents.frame(raw.bindMemory(to: UInt8.self), kind: kind) {
            b.writeBytes(UnsafeRawBufferPointer($0))
          }
        }
        sse = b
        framed = b
      }
      if sub.output.isPending {
        if !sub.output.keep(sequence: sequence, from: source, framed) {
          unsubscribe(sub.sink.key)
          sub.sink.close(after: nil)
        }
      } else if sub.output.isEmpty && sub.sink.isWritable {
        deliver(framed: framed, to: sub)
      } else {
        takeBatch(of: sub)
        sub.output.append(run: framed)
        measure(sub)
      }
    }
    checkInvariants()
  }

  /// Ends every subscription whose sink is an HTTP event stream, and refuses those that come
  /// after (the server is stopping: the streams must end for the HTTP server to finish).
  func closeStreams() {
    eventLoop.assertInEventLoop()
    streamsClosed = true
    for (key, sub) in subscribers where sub.sink.framing == .serverSentEvents {
      subscribers[key] = nil
      sub.sink.close(after: sub.pacer.batch)
    }
    metrics.subscribers.record(subscribers.count)
    noteTicks()
    checkInvariants()
  }

  // MARK: - Publishing

  /// One wake's events, the first numbered `first`, delivered now.
  func publish(first: UInt64, _ events: [ActivityEvent]) {
    eventLoop.assertInEventLoop()
    metrics.published(events)
    guard !subscribers.isEmpty || relays != nil else { return noteGroups(events) }
    deliver(events) { first + UInt64($0) }
    checkInvariants()
  }

  /// One wake's events with a durable store; `token` is the wake's commit (nil when it changed
  /// nothing durable). What ``CommitGate`` lets through goes out now, the rest at the commit
  /// (``finish(token:committed:)``).
  func publish(first: UInt64, _ events: [ActivityEvent], token: UInt64?) {
    eventLoop.assertInEventLoop()
    metrics.published(events)
    switch gate.admit(first: first, events, token: token) {
    case .all:
      if !subscribers.isEmpty || relays != nil {
        deliver(events) { first + UInt64($0) }
      } else {
        noteGroups(events)
      }
    case .some(let now, let sequences):
      if !now.isEmpty && (!subscribers.isEmpty || relays != nil) {
        deliver(now) { sequences[$0] }
      } else {
        noteGroups(now)
      }
    }
    checkInvariants()
  }

  /// The wake `token` (and every one before it) was committed, or failed: its held events go
  /// out, or are dropped with it (the engine goes back to the stored state).
  func finish(token: UInt64, committed: Bool) {
    eventLoop.assertInEventLoop()
    if let prefix = stallAfterCommitOf, committed,
      stalled
        || gate.held.contains(where: {
          $0.token <= token && $0.events.contains { $0.event.id.hasPrefix(prefix) }
        })
    {
      stalled = true
      return
    }
    gate.finish(
      token: token, committed: committed,
      dropped: { if relays != nil { undecided.keep($0) } },
      deliver: { released in
        guard !subscribers.isEmpty || relays != nil else {
          return noteGroups(released.map(\.event))
        }
        deliver(released.map(\.event)) { released[$0].sequence }
      })
    // Every wake to `token` went out (or was dropped): the writer need keep none of them.
    unsettled?.settled(through: token)
    checkInvariants()
  }

  // MARK: - Delivery

  /// One wake's events framed one way, once, for every subscriber that takes them so: the
  /// bytes and where each event starts (`offsets[k]..<offsets[k + 1]` is event `k`).
  private struct FramedWake {
    var buffer: ByteBuffer
    var offsets: [Int]

    /// Event `k`'s frame: a slice of the wake's bytes (shared, not copied).
    func event(_ k: Int) -> ByteBuffer {
      buffer.getSlice(at: buffer.readerIndex + offsets[k], length: offsets[k + 1] - offsets[k])!
    }
  }

  /// Encodes `events` once, frames them once per framing that a subscriber needs, and hands
  /// each subscriber those it wants; `sequence` numbers them.
  func deliver(_ events: [ActivityEvent], sequence: (Int) -> UInt64) {
    // One look at the wake's kinds (most wakes are ticks alone, and are not walked again).
    var hasTicks = false
    var onlyTicks = true
    var changesGroups = false
    for e in events {
      switch e.kind {
      case .tick: hasTicks = true
      case .started, .dismissed:
        onlyTicks = false
        changesGroups = true
      default: onlyTicks = false
      }
    }
    onlyTicks = onlyTicks && hasTicks
    // Kept for relaying alone (a cluster node with no subscriber): ticks only when a relaying
    // node takes them.
    if subscribers.isEmpty && !relaysTakeTicks && (onlyTicks || events.isEmpty) { return }
    // The wake's groups are known while it is delivered: a `started` carries its own, and a
    // `dismissed` forgets it once the wake is out.
    if changesGroups {
      // Known from the start of the wake (an activity may start and expire in one wake);
      // forgotten at its end, once its `dismissed` is out.
      for e in events where e.kind == .started { groupOf[e.id] = e.group }
    }
    defer { if changesGroups { noteGroups(events) } }
    // Batches that fell due since the last wake go out before this wake's events.
    writeDueBatches()
    offsets.removeAll(keepingCapacity: true)
    // Emptied in place: `take()` would hand out the bytes and so make the next wake allocate.
    writer.out.bytes.removeAll(keepingCapacity: true)
    for e in events {
      offsets.append(writer.out.bytes.count)
      writer.write(e)
    }
    offsets.append(writer.out.bytes.count)
    // Most wakes are ticks alone: a subscriber without ticks has nothing to look at then.
    let firstSequence = events.isEmpty ? 0 : sequence(0)
    var lines: FramedWake?
    var sse: FramedWake?
    writer.out.bytes.withUnsafeBufferPointer { encoded in
      if let relays, !onlyTicks || relays.takeTicks {
        relays.wake(events, encoded, offsets: offsets, sequence: sequence) {
          self.groupOf.isEmpty ? nil : self.group(of: $0)
        }
      }
      for sub in subscribers.values where sub.ticks || !onlyTicks {
        let framing = sub.sink.framing
        let wake: FramedWake
        if let made = framing == .lines ? lines : sse {
          wake = made
        } else {
          wake = frame(events, encoded, framing, allocator: sub.sink.allocator)
          if framing == .lines { lines = wake } else { sse = wake }
        }
        // Takes every event of the wake: no id filter, ticks wanted or none there, and the
        // wake is after its snapshot.
        let takesAll =
          sub.ids == nil && sub.scope.isEverything && !sub.output.isPending
          && firstSequence >= sub.fromSequence && (sub.ticks || !hasTicks)
        if takesAll && sub.output.isEmpty && sub.sink.isWritable {
          if wake.buffer.readableBytes > 0 { deliver(framed: wake.buffer, to: sub) }
        } else if takesAll && sub.output.takesRuns {
          // Behind: the whole wake waits as one run (one entry, no copy).
          takeBatch(of: sub)
          sub.output.append(run: wake.buffer)
          measure(sub)
        } else {
          deliver(events, sequence: sequence, wake, to: sub)
        }
      }
    }
  }

  /// The wake's events, encoded in `encoded` at `offsets`, framed `framing`.
  private func frame(
    _ events: [ActivityEvent], _ encoded: UnsafeBufferPointer<UInt8>, _ framing: EventFraming,
    allocator: ByteBufferAllocator
  ) -> FramedWake {
    var buffer = allocator.buffer(capacity: encoded.count + framing.overhead * events.count)
    var starts: [Int] = []
    starts.reserveCapacity(events.count + 1)
    for (k, e) in events.enumerated() {
      starts.append(buffer.readableBytes)
      framing.frame(
        UnsafeBufferPointer(rebasing: encoded[offsets[k]..<offsets[k + 1]]), kind: e.kind
      ) { buffer.writeBytes(UnsafeRawBufferPointer($0)) }
    }
    starts.append(buffer.readableBytes)
    return FramedWake(buffer: buffer, offsets: starts)
  }

  /// An event stream's gathered frames, older than what follows, join its waiting output.
  private func takeBatch(of sub: Subscriber) {
    if let batch = sub.pacer.takeBatch() { sub.output.append(run: batch) }
  }

  /// The events of the wake that `sub` wants, one by one, to `sub` alone: kept while it is
  /// pending, written when its connection can take them, waiting otherwise.
  private func deliver(
    _ events: [ActivityEvent], sequence: (Int) -> UInt64, _ wake: FramedWake, to sub: Subscriber
  ) {
    if sub.output.isPending {
      var within = true
      for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k), group: group(of:))
      {
        within = sub.output.keep(sequence: sequence(k), wake.event(k)) && within
      }
      // A stream whose snapshot never comes (its request stuck) may not gather without end;
      // nothing is written to it (its response has not begun).
      if !within {
        unsubscribe(sub.sink.key)
        sub.sink.close(after: nil)
      }
      return
    }
    if sub.output.isEmpty && sub.sink.isWritable {
      var size = 0
      for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k), group: group(of:))
      {
        size += wake.offsets[k + 1] - wake.offsets[k]
      }
      guard size > 0 else { return }
      var buffer = sub.sink.allocator.buffer(capacity: size)
      for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k), group: group(of:))
      {
        var slice = wake.event(k)
        buffer.writeBuffer(&slice)
      }
      deliver(framed: buffer, to: sub)
      return
    }
    takeBatch(of: sub)
    for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k), group: group(of:)) {
      if sub.output.append(wake.event(k), of: e.handle, isTick: e.kind == .tick) {
        metrics.coalescedTicks.increment()
      }
    }
    measure(sub)
  }

  /// Hands `buffer` (framed events `sub` wants) to `sub`, whose connection can take it and
  /// who has nothing waiting: to the connection now or, for an event stream written less than
  /// ``StreamPacer/interval`` ago, to its batch.
  private func deliver(framed buffer: ByteBuffer, to sub: Subscriber) {
    guard sub.sink.framing == .serverSentEvents else {
      sub.sink.write(buffer)
      return
    }
    switch sub.pacer.offer(buffer, now: now()) {
    case .write: sub.sink.write(buffer)
    case .gathered: break
    case .gather(let due):
      if let at = pacing.schedule(sub.sink.key, at: due) { armPacingTimer(at) }
    }
  }

  private func armPacingTimer(_ deadline: NIODeadline) {
    eventLoop.scheduleTask(deadline: deadline) { [weak self] in
      guard let self, self.pacing.fired(deadline) else { return }
      self.writeDueBatches()
      self.checkInvariants()
    }
  }

  /// Writes the batches that are due (or hands them to the waiting output when their
  /// connection cannot take them), and arms the timer for the next one.
  private func writeDueBatches() {
    guard !pacing.due.isEmpty else { return }
    let now = now()
    let next = pacing.takeDue(now: now) { key in
      guard let sub = subscribers[key], let batch = sub.pacer.takeBatch() else { return }
      if sub.sink.isWritable {
        sub.pacer.wrote(at: now)
        sub.sink.write(batch)
      } else {
        sub.output.append(run: batch)
        measure(sub)
      }
    }
    if let next { armPacingTimer(next) }
  }

  /// After `sub`'s output grew: starts its cut-off clock if it has just gone over its bound.
  private func measure(_ sub: Subscriber) {
    scheduleBudgetCheck()
    guard let check = sub.output.measure(now: now()) else { return }
    let key = sub.sink.key
    eventLoop.scheduleTask(deadline: check.at) { [weak self] in
      guard let self, let sub = self.subscribers[key], sub.output.staysOver(since: check.since)
      else {
        return
      }
      self.cutOff(sub)
    }
  }

  /// Disconnects a subscriber that stayed over its bound.
  private func cutOff(_ sub: Subscriber) {
    cutOff(
      sub,
      "the subscriber read too slowly: over \(bound) bytes of events waited for \(slowConsumerAfter.nanoseconds / 1_000_000_000) s; reconnect and subscribe again"
    )
  }

  /// Disconnects `sub` with `slowConsumer` and `message`.
  func cutOff(_ sub: Subscriber, _ message: String) {
    unsubscribe(sub.sink.key)
    var w = ReplyWriter(formatter: formatter)
    w.eventError(CountdownError(.slowConsumer, message), at: SystemWallClock.now())
    let line = w.take()
    let bytes = sub.sink.framing == .serverSentEvents ? EventFraming.sse("error", line) : line
    sub.sink.close(after: sub.sink.allocator.buffer(bytes: bytes))
  }

  /// The sink `key` can take more: hand it what waits.
  func writable(_ key: ObjectIdentifier) {
    eventLoop.assertInEventLoop()
    relays?.writable(key)
    guard let sub = subscribers[key], !sub.output.isEmpty, sub.sink.isWritable else { return }
    var buffer = sub.sink.allocator.buffer(capacity: sub.output.byteCount)
    sub.output.drain { buffer.writeImmutableBuffer($0) }
    sub.pacer.wrote(at: now())  // paced like any other write of an event stream
    sub.sink.write(buffer)
    checkInvariants()
  }

  // MARK: - Invariants

  /// Debug and test builds, after every change: each subscriber is under its own key,
  /// gathered frames exist only for an event stream with nothing waiting and are on the
  /// pacing schedule, and a timer is armed while batches are due. O(subscribers); the
  /// commit gate and each output check themselves as they change.
  func checkInvariants() {
    #if DEBUG
      for (key, sub) in subscribers {
        precondition(key == sub.sink.key, "a subscriber is registered under another key")
        if sub.pacer.batch != nil {
          precondition(sub.output.isEmpty, "gathered frames while output waits")
          precondition(pacing.isScheduled(key), "gathered frames that no timer writes")
          precondition(sub.sink.framing == .serverSentEvents, "a socket subscriber is paced")
        }
      }
      if !pacing.due.isEmpty { precondition(pacing.timerAt != nil, "batches due and no timer") }
    #endif
  }
}
