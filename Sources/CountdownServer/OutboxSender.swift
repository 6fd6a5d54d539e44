// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CoreMetrics
import CountdownLoop
import CountdownNIO
import CountdownPush
import CountdownStore
import Logging
import NIOCore
import NIOPosix

/// How the outbox's sender reaches one destination: APNs over HTTP/2 (``APNsTransport``), one
/// webhook URL over HTTP/1.1 (``WebhookTransport``). A transport sends one entry and says what
/// the answer means; the sender owns everything else (the queue, the timer, retries, the
/// answered rows, stopping). A new kind of destination is a new transport, not a new sender.
///
/// Every method is called on the sender's event loop, and `answer` must be called there, once.
protocol OutboxTransport: AnyObject, Sendable {
  associatedtype Item: OutboxItem

  /// Requests at once to this destination (lanes of different activities side by side).
  var maxInFlight: Int { get }

  /// Sends `entry` (`now` in ms since 1970; `random` in 0...1, for whatever the transport
  /// spreads) and calls `answer` with what the destination's answer, or its silence, means.
  func send(
    _ entry: DeliveryQueue<Item>.Entry, now: Int64, random: Double,
    answer: @escaping @Sendable (DeliveryOutcome) -> Void)

  /// What follows an answer once the queue has taken it: metrics, a token to remove.
  func answered(
    _ entry: DeliveryQueue<Item>.Entry, _ outcome: DeliveryOutcome,
    _ consequence: DeliveryQueue<Item>.Consequence, now: Int64)

  /// The destination's queue became held (its answers say the sender's settings are wrong,
  /// ``DeliveryOutcome/hold``) or let go (an item was delivered); `waiting` items are kept.
  func holdChanged(_ held: Bool, waiting: Int)

  /// Closes the transport's connections; nothing is sent after.
  func close()
}

extension OutboxTransport {
  /// A destination that never holds (a webhook URL) has nothing to say.
  func holdChanged(_ held: Bool, waiting: Int) {}
}

/// The outbox's one sender (docs/pushes.md, "Delivery"; docs/webhooks.md), on a thread of its
/// own: the loop thread and the connections' threads never wait for it.
///
/// Each destination has its transport, its ``DeliveryQueue`` (one lane per activity or token,
/// in order, one request at a time) and its timer, so that a destination that hangs or is slow
/// delays no other. The store's writer hands it each commit's items (``committed(_:)``);
/// answered ones are deleted from the outbox through the writer (``AnsweredBatch``). What is
/// pending at ``stop()`` stays in the outbox for the next start.
final class OutboxSender<Transport: OutboxTransport>: @unchecked Sendable {
  // @unchecked Sendable: the destinations' queues and timers, `rng` and `stopped` are touched
  // on `eventLoop` only; the rest is immutable.
  typealias Item = Transport.Item
  typealias Entry = DeliveryQueue<Item>.Entry

  /// One destination: its transport, queue and timer.
  private final class Destination: @unchecked Sendable {
    // @unchecked Sendable: touched on the sender's event loop only.
    let transport: Transport
    var queue: DeliveryQueue<Item>
    let timer: DeadlineTimer
    var pumpScheduled = false

    init(_ transport: Transport, eventLoop: any EventLoop) {
      self.transport = transport
      queue = DeliveryQueue(maxInFlight: transport.maxInFlight)
      timer = DeadlineTimer(on: eventLoop)
    }
  }

  let eventLoop: any EventLoop
  private let group: MultiThreadedEventLoopGroup
  private let destinations: [Destination]
  /// Which destination an item goes to; nil for one not given now (it stays in the outbox).
  private let route: @Sendable (Item) -> Int?
  private var stopped = false
  /// Retries' spread and whatever a transport spreads: seeded once (the system generator is a
  /// system call a number on Linux, and this thread took one per request).
  private var rng = SplitMix64(state: UInt64.random(in: .min ... .max))
  /// Answered items, on their way to the writer.
  private let answered: AnsweredBatch
  /// The items every destination holds, in flight included.
  private let queueGauge: CoreMetrics.Gauge
  let logger: Logger

  /// A sender on a thread named `threadName`, with the transports `makeTransports` makes on
  /// its event loop (in the order `route` numbers them); nothing is left running if that
  /// throws.
  init(
    threadName: String, writer: StoreWriter, queueGauge: CoreMetrics.Gauge, logger: Logger,
    route: @escaping @Sendable (Item) -> Int?,
    makeTransports: (any EventLoop) throws(ServerStartError) -> [Transport]
  ) throws(ServerStartError) {
    group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    eventLoop = group.next()
    eventLoop.nameThread(threadName)
    let transports: [Transport]
    do throws(ServerStartError) {
      transports = try makeTransports(eventLoop)
    } catch {
      try? group.syncShutdownGracefully()
      throw error
    }
    let loop = eventLoop
    destinations = transports.map { Destination($0, eventLoop: loop) }
    self.route = route
    // The sender's thread gives way to the loop thread: ticks are due at their instants; a
    // push or a delivery a millisecond later is not late (nice 19 was measured too: half the
    // deliveries a second, and ticks no steadier; BENCHMARKS.md).
    eventLoop.execute { System.yieldToOtherThreads(niceness: 5) }
    answered = AnsweredBatch(writer: writer, eventLoop: eventLoop)
    self.queueGauge = queueGauge
    self.logger = logger
  }

  /// Whether items like `item` have a destination now.
  func routes(_ item: Item) -> Bool { route(item) != nil }

  /// The items one commit wrote (from the writer thread), or the outbox held at start or for a
  /// shard a cluster node took. Those without a destination now are left in the outbox.
  func committed(_ items: [(seq: Int64, item: Item)]) {
    change { sender in
      for i in items { sender.add(seq: i.seq, i.item) }
    }
  }

  /// Changes the queues on the sender's thread (through `Queues`), then sends what is due to
  /// every destination changed.
  func change(_ body: @escaping @Sendable (inout Queues) -> Void) {
    eventLoop.execute { [self] in
      var queues = Queues(sender: self)
      body(&queues)
      answered.add(queues.forgotten)
      for index in queues.touched { pump(destinations[index]) }
      recordQueue()
    }
  }

  /// The queues as ``change(_:)`` hands them: items routed to their destination.
  struct Queues {
    fileprivate let sender: OutboxSender
    fileprivate var touched: [Int] = []
    fileprivate var forgotten: [Int64] = []

    /// Outbox rows merged away (to delete with the writer's next commit).
    mutating func forget(_ seqs: [Int64]) { forgotten += seqs }

    /// Adds `item`, outbox row `seq`, to its destination's queue.
    mutating func add(seq: Int64, _ item: Item) {
      guard let index = sender.route(item) else { return }
      if !touched.contains(index) { touched.append(index) }
      sender.destinations[index].queue.add(seq: seq, item)
    }

    /// Runs `body` on `item`'s destination's queue.
    mutating func withQueue<R>(
      of item: Item, _ body: (inout DeliveryQueue<Item>) -> R
    ) -> R? {
      guard let index = sender.route(item) else { return nil }
      if !touched.contains(index) { touched.append(index) }
      return body(&sender.destinations[index].queue)
    }
  }

  /// Lets go of the items of the activities `drop` takes (a cluster node stopped serving
  /// their shard: its new owner sends them from the outbox).
  func drop(where drop: @escaping @Sendable (String) -> Bool) {
    eventLoop.execute { [self] in
      for d in destinations { _ = d.queue.drop { drop($0.activity) } }
      recordQueue()
    }
  }

  private func recordQueue() {
    queueGauge.record(destinations.reduce(0) { $0 + $1.queue.count })
  }

  /// Sends what is due to `d` and sets its timer for what comes next.
  private func pump(_ d: Destination) {
    guard !stopped else { return }
    let now = SystemWallClock.now().milliseconds
    for entry in d.queue.take(now: now) {
      d.transport.send(entry, now: now, random: Double.random(in: 0...1, using: &rng)) {
        [self] outcome in
        answer(entry, outcome, from: d)
      }
    }
    d.timer.arm(at: d.queue.nextDue, now: now) { [self] in pump(d) }
  }

  private func answer(_ entry: Entry, _ outcome: DeliveryOutcome, from d: Destination) {
    let now = SystemWallClock.now().milliseconds
    let wasHeld = d.queue.isHeld
    let c = d.queue.answered(
      entry, outcome, now: now, random: Double.random(in: 0...1, using: &rng))
    answered.add(c.forget)
    d.transport.answered(entry, outcome, c, now: now)
    if d.queue.isHeld != wasHeld { d.transport.holdChanged(d.queue.isHeld, waiting: d.queue.count) }
    // One pump after the answers of this turn of the event loop: a burst of answers takes the
    // queue once, and an answer given at once (a request that could not be sent) never calls
    // back into the pump that sent it.
    guard !d.pumpScheduled else { return }
    d.pumpScheduled = true
    eventLoop.execute { [self] in
      d.pumpScheduled = false
      pump(d)
      recordQueue()
    }
  }

  /// Stops sending (what is pending stays in the outbox for the next start).
  func stop() {
    try? eventLoop.submit { [self] in
      stopped = true
      for d in destinations {
        d.timer.cancel()
        d.transport.close()
      }
      answered.flush()
    }.wait()
    try? group.syncShutdownGracefully()
  }
}
