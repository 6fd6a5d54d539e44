import Countdown
import CountdownAPNs
import CountdownLoop
import CountdownNIO
import CountdownPush
import CountdownStore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Sends the outbox's Live Activity pushes to APNs (docs/pushes.md, "Delivery"), on a thread
/// of its own: the loop thread and the connections' threads never wait for it.
///
/// The store's writer hands it each commit's pushes (``committed(_:)``); ``PushQueue`` says
/// which to send when and what each answer does; the answered ones are deleted from the
/// outbox through the writer; a token APNs no longer takes is removed from its activity by an
/// update on the loop.
final class PushDelivery: @unchecked Sendable {
  // @unchecked Sendable: `queue`, `tokens`, `timer`, `stopped` and the rest that changes are
  // touched on `eventLoop` only; the rest is immutable.
  let eventLoop: EventLoop
  private let group: MultiThreadedEventLoopGroup
  private let client: APNsClient
  private var queue = PushQueue()
  private var tokens: ProviderTokens
  private let timer: DeadlineTimer
  /// Retries' spread and tokens' lifetimes: seeded once (the system generator is a system
  /// call a number on Linux, and this thread took one per push).
  private var rng = SplitMix64(state: UInt64.random(in: .min ... .max))
  private var stopped = false
  private var pumpScheduled = false
  /// Answered pushes, on their way to the writer.
  private let answered: AnsweredBatch
  private let loop: NIOLockedValueBox<CountdownLoop?>
  private let metrics: PushMetrics
  private let logger: Logger

  /// The settings read and checked: a message and no server when a piece is missing or bad.
  static func prepare(_ o: APNsOptions) throws(ServerStartError) -> (APNsEndpoint, ProviderToken) {
    let pem = try System.readSmallFile(o.keyPath).mapError {
      ServerStartError("--apns-key: \($0.message)")
    }.get()
    let token: ProviderToken
    do {
      token = try ProviderToken(
        pem: String(decoding: pem, as: UTF8.self), keyID: o.keyID, teamID: o.teamID)
    } catch {
      throw ServerStartError("--apns-key \(o.keyPath): \(error.message)")
    }
    let ca = try o.caPath.map { path throws(ServerStartError) in
      try System.readSmallFile(path).mapError { ServerStartError("--apns-ca: \($0.message)") }
        .get()
    }
    var endpoint: APNsEndpoint
    do {
      endpoint =
        try o.url.map { url throws(APNsConfigurationError) in
          try APNsEndpoint.parse(url: url, caPEM: ca, bundleID: o.bundleID)
        } ?? APNsEndpoint.apple(production: o.production, bundleID: o.bundleID)
      endpoint.caPEM = ca
      endpoint.requestTimeout = .milliseconds(o.requestTimeoutMilliseconds)
      try endpoint.check()
    } catch {
      throw ServerStartError(error.message)
    }
    return (endpoint, token)
  }

  init(
    endpoint: APNsEndpoint, token: ProviderToken, writer: StoreWriter,
    loop: NIOLockedValueBox<CountdownLoop?>, metrics: PushMetrics, logger: Logger
  ) throws(ServerStartError) {
    group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    eventLoop = group.next()
    timer = DeadlineTimer(on: eventLoop)
    eventLoop.nameThread("countdown-push")
    do {
      client = try APNsClient(endpoint: endpoint, eventLoop: eventLoop)
    } catch {
      try? group.syncShutdownGracefully()
      throw ServerStartError(error.message)
    }
    tokens = ProviderTokens(token)
    // The sender's thread gives way to the loop thread (ticks are due at their instants; a push
    // a millisecond later is not late).
    eventLoop.execute { System.yieldToOtherThreads(niceness: 5) }
    answered = AnsweredBatch(writer: writer, eventLoop: eventLoop)
    self.loop = loop
    self.metrics = metrics
    self.logger = logger
  }

  /// Pushes the outbox held at start (a restart sends what was pending), or a shard's that a
  /// cluster node took.
  func restore(_ pending: [(seq: Int64, item: PushItem)]) {
    eventLoop.execute { [self] in
      for p in pending { queue.add(seq: p.seq, p.item) }
      pump()
    }
  }

  /// The pushes one commit wrote (from the writer thread).
  func committed(_ pushes: [(seq: Int64, operation: PushOperation)]) {
    eventLoop.execute { [self] in
      for p in pushes {
        switch p.operation {
        case .add(let item): queue.add(seq: p.seq, item)
        // The store deleted the one it replaces in the same commit.
        case .replace(let item): _ = queue.replace(seq: p.seq, item)
        }
      }
      pump()
    }
  }

  /// Lets go of the pushes of the activities `drop` takes (a cluster node stopped serving
  /// their shard: its new owner sends them from the outbox).
  func drop(where drop: @escaping @Sendable (String) -> Bool) {
    eventLoop.execute { [self] in
      _ = queue.drop { drop($0.activity) }
      metrics.queue.record(queue.count)
    }
  }

  /// Sends what is due and sets the timer for what comes next.
  private func pump() {
    guard !stopped else { return }
    let now = SystemWallClock.now().milliseconds
    for entry in queue.take(now: now) { send(entry, now: now) }
    metrics.queue.record(queue.count)
    timer.arm(at: queue.nextDue, now: now) { [self] in pump() }
  }

  private func send(_ entry: PushQueue.Entry, now: Int64) {
    let jwt = tokens.jwt(now: now, random: Double.random(in: 0...1, using: &rng))
    client.send(
      deviceToken: entry.item.token, priority: entry.item.priority, payload: entry.item.payload,
      jwt: jwt, expiration: nil
    ) { [self] result in
      let outcome: DeliveryOutcome
      switch result {
      case .success(let r):
        outcome = DeliveryOutcome(status: r.status, reason: r.reason)
        if outcome != .delivered {
          logger.notice(
            "APNs answered \(r.status) \(r.reason ?? "") to a push of \(entry.item.activity): \(outcome.metricName)"
          )
        }
      case .failure(let e):
        outcome = .retry
        logger.notice("a push of \(entry.item.activity) got no answer: \(e); it will be retried")
      }
      if outcome == .renewProviderToken { tokens.expired(jwt) }
      let now = SystemWallClock.now().milliseconds
      let c = queue.answered(
        entry, outcome, now: now, random: Double.random(in: 0...1, using: &rng))
      metrics.answered(entry.item, outcome, latencyMs: now - entry.item.eventAt)
      answered.add(c.forget)
      if let key = c.removedToken { removeToken(key) }
      pumpSoon()
    }
  }

  /// One pump after the answers of this turn of the event loop: a burst of answers takes the
  /// queue once, and an answer given at once (a request that could not be sent) never calls
  /// back into the pump that sent it.
  private func pumpSoon() {
    guard !pumpScheduled else { return }
    pumpScheduled = true
    eventLoop.execute { [self] in
      pumpScheduled = false
      pump()
    }
  }

  /// Removes a token APNs no longer takes from its activity (an update on the loop, written
  /// like any other; an activity already gone has nothing to remove).
  private func removeToken(_ key: PushBudget.Key) {
    guard let loop = loop.withLockedValue({ $0 }) else { return }
    let patch = JSONValue.object([
      "pushTokens": .object([key.token: .null]), "startTokens": .object([key.token: .null]),
    ])
    let logger = self.logger
    loop.submit(
      { engine throws(CountdownError) in
        try engine.update(key.activity, ActivityUpdate(liveActivity: patch))
      },
      completion: { result in
        if case .failure(let e) = result, e.code != .notFound {
          logger.notice("cannot remove an unregistered token from \(key.activity): \(e.message)")
        }
      })
  }

  /// Stops sending (what is pending stays in the outbox for the next start).
  func stop() {
    try? eventLoop.submit { [self] in
      stopped = true
      timer.cancel()
      client.close()
      answered.flush()
    }.wait()
    try? group.syncShutdownGracefully()
  }
}
