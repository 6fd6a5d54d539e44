import Countdown
import CountdownAPNs
import CountdownLoop
import CountdownNIO
import CountdownPush
import CountdownStore
import Logging
import NIOCore
import NIOPosix

/// The outbox's sender of Live Activity pushes (docs/pushes.md, "Delivery"): the one
/// ``OutboxSender`` over APNs, one destination.
typealias PushDelivery = OutboxSender<APNsTransport>

extension OutboxSender where Transport == APNsTransport {
  /// A sender to `endpoint` with `token`, on a thread of its own; a token APNs no longer takes
  /// is removed from its activity by an update on `loop`; `held` hears why the sender holds,
  /// and nil when it sends again (the systemd `STATUS=` line).
  convenience init(
    endpoint: APNsEndpoint, token: ProviderToken, writer: StoreWriter,
    loop: Locked<CountdownLoop?>, metrics: PushMetrics, logger: Logger,
    held: @escaping @Sendable (String?) -> Void = { _ in }
  ) throws(ServerStartError) {
    try self.init(
      threadName: "countdown-push", writer: writer, queueGauge: metrics.queue, logger: logger,
      route: { _ in 0 },
      makeTransports: { eventLoop throws(ServerStartError) in
        do throws(APNsConfigurationError) {
          return [
            APNsTransport(
              client: try APNsClient(endpoint: endpoint, eventLoop: eventLoop), token: token,
              loop: loop, metrics: metrics, logger: logger, held: held)
          ]
        } catch {
          throw ServerStartError(error.message)
        }
      })
  }

  /// The pushes the outbox held at start, or a shard's that a cluster node took: merged as
  /// they are added (docs/pushes.md, "Coalescing"), so that what waited through an outage
  /// goes once.
  func restore(_ pending: [(seq: Int64, item: PushItem)]) {
    change { queues in
      for p in pending {
        if let merged = queues.withQueue(of: p.item, { $0.addCoalescing(seq: p.seq, p.item) }) {
          queues.forget(merged)
        }
      }
    }
  }

  /// The pushes one commit wrote (from the writer thread): new ones, merged with what waits
  /// for their token (docs/pushes.md, "Coalescing"), and those that take the place of an
  /// unsent push of the same second (the store deleted it in the same commit).
  func committed(_ pushes: [(seq: Int64, operation: PushOperation)]) {
    change { queues in
      for p in pushes {
        switch p.operation {
        case .add(let item):
          if let merged = queues.withQueue(of: item, { $0.addCoalescing(seq: p.seq, item) }) {
            queues.forget(merged)
          }
        case .replace(let item): _ = queues.withQueue(of: item) { $0.replace(seq: p.seq, item) }
        }
      }
    }
  }
}

/// APNs as the outbox sender's destination: each push a request on ``APNsClient``'s HTTP/2
/// connection with a provider token (renewed when APNs says it expired); a token APNs no longer
/// takes is removed from its activity by an update on the loop.
final class APNsTransport: OutboxTransport, @unchecked Sendable {
  // @unchecked Sendable: `tokens` changes, on the sender's event loop only (every method of a
  // transport is called there); the rest is immutable.
  private let client: APNsClient
  private var tokens: ProviderTokens
  private let loop: Locked<CountdownLoop?>
  private let metrics: PushMetrics
  private let logger: Logger
  /// The reason of the last answer that held the sender (``DeliveryOutcome/hold``).
  private var holdReason = ""
  /// The `apns-id` of the push whose answer held the sender (for the log line).
  private var holdPush = ""
  /// Told why the sender holds, and nil when it sends again.
  private let held: @Sendable (String?) -> Void

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
    client: APNsClient, token: ProviderToken, loop: Locked<CountdownLoop?>,
    metrics: PushMetrics, logger: Logger, held: @escaping @Sendable (String?) -> Void
  ) {
    self.held = held
    self.client = client
    tokens = ProviderTokens(token)
    self.loop = loop
    self.metrics = metrics
    self.logger = logger
  }

  /// As many as the queue's default: APNs multiplexes them on one connection.
  var maxInFlight: Int { PushQueue.defaultMaxInFlight }

  func send(
    _ entry: PushQueue.Entry, now: Int64, random: Double,
    answer: @escaping @Sendable (DeliveryOutcome) -> Void
  ) {
    let jwt = tokens.jwt(now: now, random: random)
    client.send(
      deviceToken: entry.item.token, priority: entry.item.priority, payload: entry.item.payload,
      jwt: jwt, expiration: entry.item.expiration, apnsID: entry.item.apnsID
    ) { [self] result in
      let outcome: DeliveryOutcome
      switch result {
      case .success(let r):
        outcome = DeliveryOutcome(status: r.status, reason: r.reason)
        if outcome == .hold {
          // Said once, when the sender holds (``holdChanged(_:waiting:)``).
          holdReason = "\(r.status) \(r.reason ?? "")"
          holdPush = entry.item.apnsID
        } else if outcome != .delivered {
          logger.notice(
            "APNs answered \(r.status) \(r.reason ?? "") to push \(entry.item.apnsID) of \(entry.item.activity): \(outcome.metricName)"
          )
        }
      case .failure(let e):
        outcome = .retry
        logger.notice(
          "push \(entry.item.apnsID) of \(entry.item.activity) got no answer: \(e); it will be retried"
        )
      }
      if outcome == .renewProviderToken { tokens.expired(jwt) }
      answer(outcome)
    }
  }

  func answered(
    _ entry: PushQueue.Entry, _ outcome: DeliveryOutcome, _ consequence: PushQueue.Consequence,
    now: Int64
  ) {
    metrics.answered(entry.item, outcome, latencyMs: now - entry.item.eventAt)
    if let key = consequence.removedToken { removeToken(key) }
  }

  /// Removes a token APNs no longer takes from its activity (an update on the loop, written
  /// like any other; an activity already gone has nothing to remove).
  private func removeToken(_ key: PushBudget.Key) {
    guard let loop = loop.withLock({ $0 }) else { return }
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

  func holdChanged(_ held: Bool, waiting: Int) {
    metrics.held(held ? holdReason : nil)
    self.held(held ? "APNs answered \(holdReason); check \(Self.flagToCheck(holdReason))" : nil)
    if held {
      logger.error(
        "APNs answered \(holdReason) to push \(holdPush): the server's APNs settings are wrong, not the pushes; check \(Self.flagToCheck(holdReason)). The \(waiting) pushes waiting are kept and no token is removed; one is tried again after 1 s, 2 s, … up to a minute, and all go once APNs takes one"
      )
    } else {
      logger.notice("APNs takes pushes again: sending the \(waiting) that were held")
    }
  }

  /// The flag a held answer's reason points to (docs/pushes.md, "Configuration faults hold").
  static func flagToCheck(_ reason: String) -> String {
    if reason.hasSuffix("TooManyProviderTokenUpdates") {
      return "that no other server renews a token with the same key (--apns-key-id)"
    }
    if reason.hasSuffix("BadEnvironmentKeyInToken") {
      return "--apns-production (the key's environment) and --apns-key"
    }
    if reason.contains("ProviderToken") {
      return "--apns-key, --apns-key-id and --apns-team-id (a revoked or mistyped key)"
    }
    if reason.contains("Topic") { return "--apns-topic (the app's bundle id)" }
    if reason.hasSuffix("BadPath") { return "--apns-url" }
    return "the --apns-* settings"
  }

  func close() { client.close() }
}
