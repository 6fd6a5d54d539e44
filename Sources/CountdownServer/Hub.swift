import Countdown
import CountdownLoop
import CountdownProtocol
import NIOCore

/// The subscribers and their output, confined to one NIO event loop.
///
/// The loop thread hands each wake's events here in one hop (`publish`), after handing over
/// the replies of that wake's commands, so a subscription registered by a command is in place
/// before the events that follow it; events before it are told apart by sequence number.
/// Each wake's events are encoded once and copied to each subscriber whose filter takes them.
///
/// Backpressure (SPEC §6): while a subscriber's socket is writable its output goes straight
/// to the socket. Otherwise it waits here, up to `bound` bytes; past that a new tick replaces
/// the same activity's waiting tick and other events are kept; a subscriber over the bound for
/// `slowConsumerAfter` gets a `slowConsumer` error and is disconnected. Nothing here ever waits
/// for a client.
final class Hub: @unchecked Sendable {
  // @unchecked Sendable: every field is touched only on `eventLoop` (asserted in debug).

  final class Subscriber {
    let channel: Channel
    var ids: Set<String>?
    var ticks: Bool
    var fromSequence: UInt64
    /// Output waiting for the socket, one entry per event (ticks carry their activity, so
    /// that a newer tick can replace them).
    var waiting: [(handle: ActivityHandle?, bytes: [UInt8])] = []
    var waitingBytes = 0
    /// Where each activity's waiting tick is in `waiting`.
    var waitingTick: [ActivityHandle: Int] = [:]
    /// When `waitingBytes` went over the bound (nil while under it).
    var overSince: NIODeadline?
    var coalesced = 0

    init(channel: Channel, ids: [String]?, ticks: Bool, fromSequence: UInt64) {
      self.channel = channel
      self.ids = ids.map(Set.init)
      self.ticks = ticks
      self.fromSequence = fromSequence
    }

    func wants(_ e: ActivityEvent, sequence: UInt64) -> Bool {
      sequence >= fromSequence && (ticks || e.kind != .tick) && (ids?.contains(e.id) ?? true)
    }
  }

  let eventLoop: EventLoop
  let formatter: TimerFormatter
  let bound: Int
  let slowConsumerAfter: TimeAmount
  private var subscribers: [ObjectIdentifier: Subscriber] = [:]
  private var writer: WireEventWriter
  private var offsets: [Int] = []
  /// Ticks replaced while subscribers were over their bound, in all.
  private(set) var coalescedTicks = 0

  init(eventLoop: EventLoop, formatter: TimerFormatter, bound: Int, slowConsumerAfter: TimeAmount) {
    self.eventLoop = eventLoop
    self.formatter = formatter
    self.bound = bound
    self.slowConsumerAfter = slowConsumerAfter
    writer = WireEventWriter(formatter: formatter, writesTicks: true)
  }

  var subscriberCount: Int { subscribers.count }

  /// Registers (or replaces) the subscription of `channel`.
  func subscribe(_ channel: Channel, ids: [String]?, ticks: Bool, fromSequence: UInt64) {
    eventLoop.assertInEventLoop()
    subscribers[ObjectIdentifier(channel)] = Subscriber(
      channel: channel, ids: ids, ticks: ticks, fromSequence: fromSequence)
  }

  func unsubscribe(_ channel: Channel) {
    eventLoop.assertInEventLoop()
    subscribers[ObjectIdentifier(channel)] = nil
  }

  /// One wake's events, the first numbered `first`, delivered now.
  func publish(first: UInt64, _ events: [ActivityEvent]) {
    eventLoop.assertInEventLoop()
    guard !subscribers.isEmpty else { return }
    deliver(events) { first + UInt64($0) }
  }

  // MARK: - Events held for a commit (durable state)

  /// The events of wakes whose commit is pending, oldest first, with their sequence numbers.
  private var held: [(token: UInt64, events: [(sequence: UInt64, event: ActivityEvent)])] = []
  /// How many held events each activity has: its ticks wait behind them.
  private var heldPerActivity: [ActivityHandle: Int] = [:]

  /// One wake's events with a durable store. A wake with a `token` waits for its commit
  /// (``finish(token:committed:)``): its events but the ticks of activities with nothing else
  /// pending are held until then. Ticks never wait for the disk, except behind an earlier
  /// event of their own activity (one activity's events stay in order).
  func publish(first: UInt64, _ events: [ActivityEvent], token: UInt64?) {
    eventLoop.assertInEventLoop()
    if token == nil && held.isEmpty {
      publish(first: first, events)
      return
    }
    var lifecycle: Set<ActivityHandle> = []
    if token != nil {
      for e in events where e.kind != .tick { lifecycle.insert(e.handle) }
    }
    var now: [ActivityEvent] = []
    var sequences: [UInt64] = []
    var kept: [(sequence: UInt64, event: ActivityEvent)] = []
    for (k, e) in events.enumerated() {
      let sequence = first + UInt64(k)
      if e.kind == .tick && heldPerActivity[e.handle] == nil && !lifecycle.contains(e.handle) {
        now.append(e)
        sequences.append(sequence)
      } else {
        kept.append((sequence, e))
      }
    }
    if !now.isEmpty && !subscribers.isEmpty { deliver(now) { sequences[$0] } }
    for k in kept { heldPerActivity[k.event.handle, default: 0] += 1 }
    if let token {
      held.append((token, kept))
    } else if !kept.isEmpty {
      held[held.count - 1].events += kept
    }
  }

  /// The wake `token` (and every one before it) was committed, or failed: its held events go
  /// out, or are dropped with it (the engine goes back to the stored state).
  func finish(token: UInt64, committed: Bool) {
    eventLoop.assertInEventLoop()
    while let oldest = held.first, oldest.token <= token {
      held.removeFirst()
      for k in oldest.events {
        let h = k.event.handle
        if let n = heldPerActivity[h], n > 1 {
          heldPerActivity[h] = n - 1
        } else {
          heldPerActivity[h] = nil
        }
      }
      if committed && !oldest.events.isEmpty && !subscribers.isEmpty {
        deliver(oldest.events.map(\.event)) { oldest.events[$0].sequence }
      }
    }
  }

  /// Encodes `events` once and hands each subscriber those it wants; `sequence` numbers them.
  private func deliver(_ events: [ActivityEvent], sequence: (Int) -> UInt64) {
    offsets.removeAll(keepingCapacity: true)
    // Emptied in place: `take()` would hand out the bytes and so make the next wake allocate.
    writer.out.bytes.removeAll(keepingCapacity: true)
    for e in events {
      offsets.append(writer.out.bytes.count)
      writer.write(e)
    }
    offsets.append(writer.out.bytes.count)
    writer.out.bytes.withUnsafeBufferPointer { encoded in
      for sub in subscribers.values { deliver(events, sequence: sequence, encoded, to: sub) }
    }
  }

  private func deliver(
    _ events: [ActivityEvent], sequence: (Int) -> UInt64, _ encoded: UnsafeBufferPointer<UInt8>,
    to sub: Subscriber
  ) {
    if sub.waiting.isEmpty && sub.channel.isWritable {
      var size = 0
      for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k)) {
        size += offsets[k + 1] - offsets[k]
      }
      guard size > 0 else { return }
      var buffer = sub.channel.allocator.buffer(capacity: size)
      for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k)) {
        buffer.writeBytes(
          UnsafeRawBufferPointer(
            UnsafeBufferPointer(rebasing: encoded[offsets[k]..<offsets[k + 1]])))
      }
      sub.channel.writeAndFlush(buffer, promise: nil)
      return
    }
    for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k)) {
      let bytes = Array(encoded[offsets[k]..<offsets[k + 1]])
      if e.kind == .tick, sub.waitingBytes >= bound, let at = sub.waitingTick[e.handle] {
        sub.waitingBytes += bytes.count - sub.waiting[at].bytes.count
        sub.waiting[at].bytes = bytes
        sub.coalesced += 1
        coalescedTicks += 1
        continue
      }
      if e.kind == .tick {
        sub.waitingTick[e.handle] = sub.waiting.count
      } else {
        sub.waitingTick[e.handle] = nil
      }
      sub.waiting.append((e.kind == .tick ? e.handle : nil, bytes))
      sub.waitingBytes += bytes.count
    }
    checkBound(sub)
  }

  private func checkBound(_ sub: Subscriber) {
    if sub.waitingBytes <= bound {
      sub.overSince = nil
      return
    }
    guard sub.overSince == nil else { return }
    let since = NIODeadline.now()
    sub.overSince = since
    let key = ObjectIdentifier(sub.channel)
    eventLoop.scheduleTask(in: slowConsumerAfter) { [weak self] in
      guard let self, let sub = self.subscribers[key], sub.overSince == since else { return }
      self.cutOff(sub)
    }
  }

  /// Disconnects a subscriber that stayed over its bound.
  private func cutOff(_ sub: Subscriber) {
    subscribers[ObjectIdentifier(sub.channel)] = nil
    var w = ReplyWriter(formatter: formatter)
    w.eventError(
      CountdownError(
        .slowConsumer,
        "the subscriber read too slowly: over \(bound) bytes of events waited for \(slowConsumerAfter.nanoseconds / 1_000_000_000) s; reconnect and subscribe again"
      ), at: wallClockNow())
    let channel = sub.channel
    channel.writeAndFlush(channel.allocator.buffer(bytes: w.take())).whenComplete { _ in
      channel.close(promise: nil)
    }
    // Close even if the error cannot be written (the socket is full).
    eventLoop.scheduleTask(in: .milliseconds(100)) { channel.close(promise: nil) }
  }

  /// The socket of `channel` can take more: hand it what waits.
  func writable(_ channel: Channel) {
    eventLoop.assertInEventLoop()
    guard let sub = subscribers[ObjectIdentifier(channel)], !sub.waiting.isEmpty,
      channel.isWritable
    else { return }
    var buffer = channel.allocator.buffer(capacity: sub.waitingBytes)
    for w in sub.waiting { buffer.writeBytes(w.bytes) }
    sub.waiting.removeAll()
    sub.waitingTick.removeAll()
    sub.waitingBytes = 0
    sub.overSince = nil
    channel.writeAndFlush(buffer, promise: nil)
  }
}

/// The wall clock in whole milliseconds, for the instants of messages that answer no command.
func wallClockNow() -> Instant {
  Instant(milliseconds: SystemWallClock().nanosecondsSinceEpoch() / 1_000_000)
}
