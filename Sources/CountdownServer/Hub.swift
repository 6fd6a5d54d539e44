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
    let sink: any EventSink
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
    /// While the subscription waits for its snapshot (an HTTP event stream registers before
    /// its `subscribe` runs): the events it wants so far, framed, with their sequence numbers.
    var pending: [(sequence: UInt64, bytes: [UInt8])]?
    /// An event stream's frames gathered since its last write (see ``Hub/streamPacing``), and
    /// when that write was. Only while nothing waits in `waiting`.
    var batch: ByteBuffer?
    var lastWrite = NIODeadline.uptimeNanoseconds(0)

    init(sink: any EventSink, ids: [String]?, ticks: Bool, fromSequence: UInt64) {
      self.sink = sink
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
  /// Set by ``closeStreams()``: no event stream subscribes after it.
  private var streamsClosed = false
  /// The least time between two writes to one HTTP event stream: frames due sooner are
  /// gathered and go out together when it has passed. Each write to a connection is a system
  /// call (about 5 µs on loopback TCP); a stream with ticks of 10k activities has events every
  /// millisecond, and 100 such streams would otherwise cost 100,000 writes a second. Browsers
  /// draw at most every 16 ms, so 3 ms cannot be seen; a stream whose last write is older
  /// than this is written at once.
  static let streamPacing = TimeAmount.milliseconds(3)
  /// Counters for `/metrics`.
  let metrics: ServerMetrics
  private var writer: WireEventWriter
  private var offsets: [Int] = []

  init(
    eventLoop: EventLoop, formatter: TimerFormatter, bound: Int, slowConsumerAfter: TimeAmount,
    metrics: ServerMetrics
  ) {
    self.metrics = metrics
    self.eventLoop = eventLoop
    self.formatter = formatter
    self.bound = bound
    self.slowConsumerAfter = slowConsumerAfter
    writer = WireEventWriter(formatter: formatter, writesTicks: true)
  }

  /// Registers (or replaces) the subscription of `sink`.
  func subscribe(_ sink: any EventSink, ids: [String]?, ticks: Bool, fromSequence: UInt64) {
    eventLoop.assertInEventLoop()
    subscribers[sink.key] = Subscriber(
      sink: sink, ids: ids, ticks: ticks, fromSequence: fromSequence)
    metrics.subscribers.record(subscribers.count)
  }

  /// Registers `sink` before its `subscribe` request runs: the events published from now on
  /// are kept for it, framed, until ``activate(_:first:fromSequence:)`` knows where its
  /// snapshot stands. Nothing published after the request is missed. False, and nothing
  /// registered, once ``closeStreams()`` has run: the server is stopping, and a stream
  /// registered then would never be ended (the HTTP server would wait for it, then give up).
  func subscribePending(_ sink: any EventSink, ids: [String]?, ticks: Bool) -> Bool {
    eventLoop.assertInEventLoop()
    guard !streamsClosed else { return false }
    let sub = Subscriber(sink: sink, ids: ids, ticks: ticks, fromSequence: 0)
    sub.pending = []
    subscribers[sink.key] = sub
    metrics.subscribers.record(subscribers.count)
    return true
  }

  /// Writes `first` (the snapshot) to the pending subscription `key`, then the events kept for
  /// it numbered from `fromSequence` on (those before are in the snapshot), and delivers to it
  /// as to any subscriber from then on.
  func activate(_ key: ObjectIdentifier, first: [UInt8], fromSequence: UInt64) {
    eventLoop.assertInEventLoop()
    guard let sub = subscribers[key], let pending = sub.pending else { return }
    sub.pending = nil
    sub.waitingBytes = 0
    sub.fromSequence = fromSequence
    var bytes = first
    for p in pending where p.sequence >= fromSequence { bytes += p.bytes }
    sub.sink.write(sub.sink.allocator.buffer(bytes: bytes))
  }

  func unsubscribe(_ key: ObjectIdentifier) {
    eventLoop.assertInEventLoop()
    guard subscribers.removeValue(forKey: key) != nil else { return }
    metrics.subscribers.record(subscribers.count)
  }

  /// Ends every subscription whose sink is an HTTP event stream, and refuses those that come
  /// after (the server is stopping: the streams must end for the HTTP server to finish).
  func closeStreams() {
    eventLoop.assertInEventLoop()
    streamsClosed = true
    for (key, sub) in subscribers where sub.sink.framing == .serverSentEvents {
      subscribers[key] = nil
      sub.sink.close(after: sub.batch)
    }
    metrics.subscribers.record(subscribers.count)
  }

  /// One wake's events, the first numbered `first`, delivered now.
  func publish(first: UInt64, _ events: [ActivityEvent]) {
    eventLoop.assertInEventLoop()
    metrics.published(events)
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
    metrics.published(events)
    // The usual wake while a commit is pending: ticks of activities with nothing held, which
    // go out at once, without the bookkeeping below.
    if token == nil,
      !events.contains(where: { $0.kind != .tick || heldPerActivity[$0.handle] != nil })
    {
      if !subscribers.isEmpty { deliver(events) { first + UInt64($0) } }
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
    let hasTicks = events.contains { $0.kind == .tick }
    // Most wakes are ticks alone: a subscriber without ticks has nothing to look at then.
    let onlyTicks = hasTicks && !events.contains { $0.kind != .tick }
    let firstSequence = events.isEmpty ? 0 : sequence(0)
    // The whole wake framed as lines and as SSE, each made once, when a subscriber wants it.
    var whole: (lines: ByteBuffer?, sse: ByteBuffer?) = (nil, nil)
    writer.out.bytes.withUnsafeBufferPointer { encoded in
      for sub in subscribers.values where sub.ticks || !onlyTicks {
        // A subscriber that takes every event of the wake (no id filter; ticks wanted or none
        // there) shares one framed copy of it with the others like it.
        guard sub.ids == nil, sub.pending == nil, firstSequence >= sub.fromSequence,
          sub.ticks || !hasTicks, sub.waiting.isEmpty, sub.sink.isWritable
        else {
          deliver(events, sequence: sequence, encoded, to: sub)
          continue
        }
        let framing = sub.sink.framing
        var buffer = framing == .lines ? whole.lines : whole.sse
        if buffer == nil {
          var b = sub.sink.allocator.buffer(
            capacity: encoded.count + (framing == .serverSentEvents ? 24 * events.count : 0))
          for (k, e) in events.enumerated() {
            frame(k, e, encoded, framing) { b.writeBytes(UnsafeRawBufferPointer($0)) }
          }
          if framing == .lines { whole.lines = b } else { whole.sse = b }
          buffer = b
        }
        if let buffer, buffer.readableBytes > 0 { deliver(framed: buffer, to: sub) }
      }
    }
  }

  /// The bytes of event `k` as `framing` frames it: the JSON line, or an SSE message (`event:`
  /// its name, `data:` the JSON, a blank line).
  private func frame(
    _ k: Int, _ e: ActivityEvent, _ encoded: UnsafeBufferPointer<UInt8>, _ framing: EventFraming,
    into append: (UnsafeBufferPointer<UInt8>) -> Void
  ) {
    let line = UnsafeBufferPointer(rebasing: encoded[offsets[k]..<offsets[k + 1]])
    guard framing == .serverSentEvents else {
      append(line)
      return
    }
    Self.sseNames[e.kind]!.withUnsafeBufferPointer(append)
    append(UnsafeBufferPointer(rebasing: line.dropLast()))
    Self.sseEnd.withUnsafeBufferPointer(append)
  }

  private static let sseNames: [ActivityEvent.Kind: [UInt8]] = {
    var names: [ActivityEvent.Kind: [UInt8]] = [:]
    for kind in [
      ActivityEvent.Kind.started, .updated, .tick, .milestone, .stale, .expired, .paused, .resumed,
      .ended, .dismissed,
    ] {
      names[kind] = Array("event: \(kind.rawValue)\ndata: ".utf8)
    }
    return names
  }()
  private static let sseEnd: [UInt8] = [0x0A, 0x0A]

  /// `json` (one line, with its newline) as an SSE message named `name`.
  static func sse(_ name: String, _ json: [UInt8]) -> [UInt8] {
    var bytes = Array("event: \(name)\ndata: ".utf8)
    bytes += json.last == 0x0A ? json.dropLast() : json[...]
    bytes += sseEnd
    return bytes
  }

  private func deliver(
    _ events: [ActivityEvent], sequence: (Int) -> UInt64, _ encoded: UnsafeBufferPointer<UInt8>,
    to sub: Subscriber
  ) {
    let framing = sub.sink.framing
    if sub.pending != nil {
      for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k)) {
        var bytes: [UInt8] = []
        frame(k, e, encoded, framing) { bytes.append(contentsOf: $0) }
        sub.waitingBytes += bytes.count
        sub.pending!.append((sequence(k), bytes))
      }
      // A stream whose snapshot never comes (its request stuck) may not gather without end;
      // nothing is written to it (its response has not begun).
      if sub.waitingBytes > bound {
        unsubscribe(sub.sink.key)
        sub.sink.close(after: nil)
      }
      return
    }
    if sub.waiting.isEmpty && sub.sink.isWritable {
      var size = 0
      for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k)) {
        size += offsets[k + 1] - offsets[k] + (framing == .serverSentEvents ? 24 : 0)
      }
      guard size > 0 else { return }
      var buffer = sub.sink.allocator.buffer(capacity: size)
      for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k)) {
        frame(k, e, encoded, framing) { buffer.writeBytes(UnsafeRawBufferPointer($0)) }
      }
      deliver(framed: buffer, to: sub)
      return
    }
    // Gathered frames are older than what follows: they wait first.
    if let batch = sub.batch {
      sub.batch = nil
      sub.waiting.append((nil, Array(batch.readableBytesView)))
      sub.waitingBytes += batch.readableBytes
    }
    for (k, e) in events.enumerated() where sub.wants(e, sequence: sequence(k)) {
      var bytes: [UInt8] = []
      frame(k, e, encoded, framing) { bytes.append(contentsOf: $0) }
      if e.kind == .tick, sub.waitingBytes >= bound, let at = sub.waitingTick[e.handle] {
        sub.waitingBytes += bytes.count - sub.waiting[at].bytes.count
        sub.waiting[at].bytes = bytes
        metrics.coalescedTicks.increment()
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

  /// Hands `buffer` (framed events `sub` wants) to `sub`, whose connection can take it and
  /// who has nothing waiting: to the connection now or, for an event stream written less than
  /// ``streamPacing`` ago, to its batch.
  private func deliver(framed buffer: ByteBuffer, to sub: Subscriber) {
    guard sub.sink.framing == .serverSentEvents else {
      sub.sink.write(buffer)
      return
    }
    let now = NIODeadline.now()
    if var batch = sub.batch {
      sub.batch = nil  // so that `batch` is the buffer's only owner: appended in place
      var more = buffer
      batch.writeBuffer(&more)
      sub.batch = batch
    } else if now - sub.lastWrite >= Self.streamPacing {
      sub.lastWrite = now
      sub.sink.write(buffer)
    } else {
      scheduleBatch(sub, at: sub.lastWrite + Self.streamPacing)
      sub.batch = buffer
    }
  }

  /// Subscribers with gathered frames, and when each batch is due.
  private var batched: [(key: ObjectIdentifier, due: NIODeadline)] = []
  /// When the one timer that writes due batches fires (nil: not armed). Wakes write them too.
  private var flushAt: NIODeadline?

  /// Writes `sub`'s gathered frames at `deadline`: at the first wake or timer after it.
  private func scheduleBatch(_ sub: Subscriber, at deadline: NIODeadline) {
    batched.append((sub.sink.key, deadline))
    armFlush(at: deadline)
  }

  /// Arms the batch timer for `deadline` unless it fires sooner already.
  private func armFlush(at deadline: NIODeadline) {
    if let at = flushAt, at <= deadline { return }
    flushAt = deadline
    eventLoop.scheduleTask(deadline: deadline) { [weak self] in
      guard let self, self.flushAt == deadline else { return }
      self.flushAt = nil
      self.writeDueBatches()
    }
  }

  /// Writes the batches that are due (or hands them to `waiting` when their connection cannot
  /// take them), and arms the timer for the next one.
  private func writeDueBatches() {
    guard !batched.isEmpty else { return }
    let now = NIODeadline.now()
    var next: NIODeadline?
    var kept = 0
    for k in batched.indices {
      let (key, due) = batched[k]
      guard due <= now else {
        batched[kept] = batched[k]
        kept += 1
        next = min(next ?? due, due)
        continue
      }
      guard let sub = subscribers[key], let batch = sub.batch else { continue }
      sub.batch = nil
      if sub.sink.isWritable {
        sub.lastWrite = now
        sub.sink.write(batch)
      } else {
        sub.waiting.append((nil, Array(batch.readableBytesView)))
        sub.waitingBytes += batch.readableBytes
        checkBound(sub)
      }
    }
    batched.removeLast(batched.count - kept)
    if let next { armFlush(at: next) }
  }

  private func checkBound(_ sub: Subscriber) {
    if sub.waitingBytes <= bound {
      sub.overSince = nil
      return
    }
    guard sub.overSince == nil else { return }
    let since = NIODeadline.now()
    sub.overSince = since
    let key = sub.sink.key
    eventLoop.scheduleTask(in: slowConsumerAfter) { [weak self] in
      guard let self, let sub = self.subscribers[key], sub.overSince == since else { return }
      self.cutOff(sub)
    }
  }

  /// Disconnects a subscriber that stayed over its bound.
  private func cutOff(_ sub: Subscriber) {
    unsubscribe(sub.sink.key)
    var w = ReplyWriter(formatter: formatter)
    w.eventError(
      CountdownError(
        .slowConsumer,
        "the subscriber read too slowly: over \(bound) bytes of events waited for \(slowConsumerAfter.nanoseconds / 1_000_000_000) s; reconnect and subscribe again"
      ), at: wallClockNow())
    let line = w.take()
    let bytes = sub.sink.framing == .serverSentEvents ? Self.sse("error", line) : line
    sub.sink.close(after: sub.sink.allocator.buffer(bytes: bytes))
  }

  /// The sink `key` can take more: hand it what waits.
  func writable(_ key: ObjectIdentifier) {
    eventLoop.assertInEventLoop()
    guard let sub = subscribers[key], !sub.waiting.isEmpty, sub.sink.isWritable else { return }
    var buffer = sub.sink.allocator.buffer(capacity: sub.waitingBytes)
    for w in sub.waiting { buffer.writeBytes(w.bytes) }
    sub.waiting.removeAll()
    sub.waitingTick.removeAll()
    sub.waitingBytes = 0
    sub.overSince = nil
    sub.lastWrite = NIODeadline.now()  // paced like any other write of an event stream
    sub.sink.write(buffer)
  }
}

/// How a subscriber's events are framed.
enum EventFraming {
  /// JSON Lines (the socket protocol, SPEC §6).
  case lines
  /// Server-sent events (`GET /v1/events`, SPEC §7).
  case serverSentEvents
}

/// Where a subscriber's output goes. Used on the hub's event loop only.
protocol EventSink: AnyObject {
  var key: ObjectIdentifier { get }
  var framing: EventFraming { get }
  /// Whether more may be written now; when it becomes true again, the owner calls
  /// ``Hub/writable(_:)``.
  var isWritable: Bool { get }
  var allocator: ByteBufferAllocator { get }
  func write(_ buffer: ByteBuffer)
  /// Writes `last` (if any, and if it can) and closes.
  func close(after last: ByteBuffer?)
}

/// A socket connection's subscription (SPEC §6).
final class ChannelSink: EventSink {
  let channel: Channel
  init(_ channel: Channel) { self.channel = channel }
  var key: ObjectIdentifier { ObjectIdentifier(channel) }
  var framing: EventFraming { .lines }
  var isWritable: Bool { channel.isWritable }
  var allocator: ByteBufferAllocator { channel.allocator }
  func write(_ buffer: ByteBuffer) { channel.writeAndFlush(buffer, promise: nil) }

  func close(after last: ByteBuffer?) {
    let channel = self.channel
    if let last {
      channel.writeAndFlush(last).whenComplete { _ in channel.close(promise: nil) }
    }
    // Close even if the last bytes cannot be written (the socket is full).
    channel.eventLoop.scheduleTask(in: .milliseconds(100)) { channel.close(promise: nil) }
  }
}

/// The wall clock in whole milliseconds, for the instants of messages that answer no command.
func wallClockNow() -> Instant {
  Instant(milliseconds: SystemWallClock().nanosecondsSinceEpoch() / 1_000_000)
}
