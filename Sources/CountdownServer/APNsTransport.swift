// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

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
  ///
  /// With `channels` (the channel management API's endpoint, `--apns-channels`), a second
  /// destination takes the channels' creations and deletions (docs/pushes.md, "Broadcast
  /// channels"); broadcasts go with the pushes, to the push gateway. With `reconcile`, that
  /// destination first deletes the app's channels that no activity holds (their ids).
  convenience init(
    endpoint: APNsEndpoint, channels: APNsEndpoint? = nil, reconcile: Set<String>? = nil,
    token: ProviderToken, writer: StoreWriter, loop: Locked<CountdownLoop?>,
    metrics: PushMetrics, logger: Logger, held: @escaping @Sendable (String?) -> Void = { _ in }
  ) throws(ServerStartError) {
    let manages = channels != nil
    try self.init(
      threadName: "countdown-push", writer: writer, queueGauge: metrics.queue, logger: logger,
      route: { item in item.target.isManagement ? (manages ? 1 : nil) : 0 },
      makeTransports: { eventLoop throws(ServerStartError) in
        do throws(APNsConfigurationError) {
          var transports = [
            APNsTransport(
              client: try APNsClient(endpoint: endpoint, eventLoop: eventLoop), token: token,
              loop: loop, metrics: metrics, logger: logger, held: held)
          ]
          if let channels {
            let manager = APNsTransport(
              client: try APNsClient(endpoint: channels, eventLoop: eventLoop), token: token,
              loop: loop, metrics: metrics, logger: logger, held: held)
            if let reconcile { eventLoop.execute { manager.reconcile(holding: reconcile) } }
            transports.append(manager)
          }
          return transports
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
  // @unchecked Sendable: `tokens`, `reconciling` and `deferred` change on the sender's event
  // loop only (every method of a transport is called there); the rest is immutable.
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
  /// While `--apns-channels-reconcile` lists and deletes: requests wait in `deferred`.
  private var reconciling = false
  private var deferred: [() -> Void] = []

  /// The channel management API's endpoint for `o` (`--apns-manage-url`, else Apple's for the
  /// environment), nil without `--apns-channels`.
  static func channelsEndpoint(_ o: APNsOptions, caPEM: [UInt8]?) throws(ServerStartError)
    -> APNsEndpoint?
  {
    guard o.channels else { return nil }
    do throws(APNsConfigurationError) {
      var endpoint =
        try o.manageURL.map { url throws(APNsConfigurationError) in
          try APNsEndpoint.parse(
            url: url, caPEM: caPEM, bundleID: o.bundleID, flag: "--apns-manage-url")
        } ?? APNsEndpoint.appleChannels(production: o.production, bundleID: o.bundleID)
      endpoint.caPEM = caPEM
      endpoint.requestTimeout = .milliseconds(o.requestTimeoutMilliseconds)
      try endpoint.check()
      return endpoint
    } catch {
      throw ServerStartError(error.message)
    }
  }

  /// The settings read and checked: a message and no server when a piece is missing or bad.
  static func prepare(_ o: APNsOptions) throws(ServerStartError) -> (
    APNsEndpoint, APNsEndpoint?, ProviderToken
  ) {
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
    return (endpoint, try channelsEndpoint(o, caPEM: ca), token)
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
    if reconciling {
      // The app's channels are being listed: a channel made now would be taken for one no
      // activity holds.
      deferred.append { [self] in send(entry, now: now, random: random, answer: answer) }
      return
    }
    let jwt = tokens.jwt(now: now, random: random)
    switch entry.item.target {
    case .device: break
    case .channel(let channel):
      broadcast(entry, on: channel, jwt: jwt, answer: answer)
      return
    case .createChannel, .deleteChannel:
      manage(entry, jwt: jwt, answer: answer)
      return
    }
    client.send(
      deviceToken: entry.item.token, priority: entry.item.priority, payload: entry.item.payload,
      jwt: jwt, expiration: entry.item.expiration, apnsID: entry.item.apnsID
    ) { [self] result in
      let outcome: DeliveryOutcome
      switch result {
      case .success(let r):
        outcome = DeliveryOutcome(status: r.status, reason: r.reason)
        if outcome == .hold {
          held(by: r, entry.item)
        } else if outcome != .delivered {
          logger.notice(
            "APNs answered \(r.status) \(r.reason ?? "") to push \(entry.item.apnsID) of \(entry.item.activity): \(outcome.metricName)"
          )
        }
      case .failure(let e):
        outcome = unanswered("push", entry.item, e)
      }
      conclude(outcome, jwt: jwt, answer)
    }
  }

  /// One push on a broadcast channel (docs/pushes.md, "Broadcast channels"). A channel APNs
  /// no longer has (`BadChannelId`, `ChannelNotRegistered`) is dropped from its activity.
  private func broadcast(
    _ entry: PushQueue.Entry, on channel: String, jwt: String,
    answer: @escaping @Sendable (DeliveryOutcome) -> Void
  ) {
    let item = entry.item
    client.broadcast(
      channelID: channel, priority: item.priority, payload: item.payload, jwt: jwt,
      expiration: item.expiration, requestID: item.apnsID
    ) { [self] result in
      var outcome: DeliveryOutcome
      switch result {
      case .success(let r):
        outcome = DeliveryOutcome(status: r.status, reason: r.reason)
        if r.reason == "BadChannelId" || r.reason == "ChannelNotRegistered"
          || outcome == .removeToken
        {
          outcome = .drop
          logger.notice(
            "APNs answered \(r.status) \(r.reason ?? "") to broadcast \(item.apnsID) of \(item.activity) on channel \(channel): the channel is gone; the activity's updates go to its tokens alone"
          )
          setChannel(of: item.activity, to: nil, made: channel)
        } else if outcome == .hold {
          held(by: r, item)
        } else if outcome != .delivered {
          logger.notice(
            "APNs answered \(r.status) \(r.reason ?? "") to broadcast \(item.apnsID) of \(item.activity) on channel \(channel): \(outcome.metricName)"
          )
        }
      case .failure(let e):
        outcome = unanswered("broadcast", item, e)
      }
      conclude(outcome, jwt: jwt, answer)
    }
  }

  /// A channel's creation or deletion on the channel management API. A creation's answer
  /// names the channel (`apns-channel-id`), which is set on its activity by an update on the
  /// loop (an `updated` event: the backend hands the id to the phones); an activity gone by
  /// then has its new channel deleted at once. A deletion APNs answers 404 for was already
  /// done.
  private func manage(
    _ entry: PushQueue.Entry, jwt: String, answer: @escaping @Sendable (DeliveryOutcome) -> Void
  ) {
    let item = entry.item
    if case .deleteChannel(let channel) = item.target {
      client.manage(
        "DELETE", "channels", channelID: channel, jwt: jwt, requestID: item.apnsID,
        done(item, "the deletion of channel \(channel)", creating: false, jwt: jwt, answer))
    } else {
      client.manage(
        "POST", "channels", body: item.payload, jwt: jwt, requestID: item.apnsID,
        done(item, "the creation of a channel", creating: true, jwt: jwt, answer))
    }
  }

  /// What a channel request's answer means (``manage(_:jwt:answer:)``).
  private func done(
    _ item: PushItem, _ what: String, creating: Bool, jwt: String,
    _ answer: @escaping @Sendable (DeliveryOutcome) -> Void
  ) -> (Result<APNsResponse, APNsTransportError>) -> Void {
    { [self] result in
      var outcome: DeliveryOutcome
      switch result {
      case .success(let r) where (200..<300).contains(r.status):
        outcome = .delivered
        if creating {
          if let channel = r.channelID, LiveActivity.isChannelID(channel) {
            logger.info("APNs made channel \(channel) for \(item.activity)")
            setChannel(of: item.activity, to: channel, made: channel)
          } else {
            outcome = .retry
            logger.notice(
              "APNs answered \(r.status) to \(what) for \(item.activity) (\(item.apnsID)) without a channel id in apns-channel-id; it will be asked again"
            )
          }
        }
      case .success(let r) where !creating && r.status == 404:
        outcome = .delivered
      case .success(let r):
        outcome = DeliveryOutcome(status: r.status, reason: r.reason)
        if outcome == .removeToken { outcome = .drop }
        if outcome == .hold {
          held(by: r, item)
        } else {
          logger.notice(
            "APNs answered \(r.status) \(r.reason ?? "") to \(what) for \(item.activity) (\(item.apnsID)): \(outcome.metricName)"
          )
        }
      case .failure(let e):
        outcome = unanswered(what, item, e)
      }
      conclude(outcome, jwt: jwt, answer)
    }
  }

  /// An answer that holds the sender: said once, when it holds (``holdChanged(_:waiting:)``).
  private func held(by r: APNsResponse, _ item: PushItem) {
    holdReason = "\(r.status) \(r.reason ?? "")"
    holdPush = item.apnsID
  }

  /// No answer (a lost connection, a timeout): logged, and `retry`.
  private func unanswered(_ what: String, _ item: PushItem, _ e: APNsTransportError)
    -> DeliveryOutcome
  {
    logger.notice(
      "\(what) \(item.apnsID) of \(item.activity) got no answer: \(e); it will be retried")
    return .retry
  }

  /// Hands the outcome to the sender, after a new provider token when APNs said it expired.
  private func conclude(
    _ outcome: DeliveryOutcome, jwt: String, _ answer: @Sendable (DeliveryOutcome) -> Void
  ) {
    if outcome == .renewProviderToken { tokens.expired(jwt) }
    answer(outcome)
  }

  /// Sets (or clears) the channel of `activity` by an update on the loop. When the activity
  /// is gone or ended (its Live Activity cannot use the channel any more), a channel APNs has
  /// just `made` for it is deleted at once instead: no outbox item of its own (a crash here
  /// leaves it to `--apns-channels-reconcile`).
  private func setChannel(of activity: String, to channel: String?, made: String) {
    guard let loop = loop.withLock({ $0 }) else { return }
    let logger = self.logger
    let update = {
      var u = ActivityUpdate()
      u.channelID = .some(channel)
      return u
    }()
    loop.submit(
      { engine throws(CountdownError) in try engine.update(activity, update) },
      completion: { [self] result in
        guard case .failure(let e) = result else { return }
        guard channel != nil else { return }
        logger.notice(
          "channel \(made) was made for \(activity), which \(e.code == .notFound ? "is gone" : "cannot take it") (\(e.message)): deleting it"
        )
        client.eventLoop.execute { [self] in
          let jwt = tokens.jwt(now: SystemWallClock.now().milliseconds, random: 0.5)
          client.manage("DELETE", "channels", channelID: made, jwt: jwt) { _ in }
        }
      })
  }

  /// `--apns-channels-reconcile` (docs/pushes.md, "Broadcast channels"): lists the app's
  /// channels and deletes those not in `holding` (the channel ids the activities hold at
  /// start), before this destination sends anything. A channel made by a creation whose
  /// answer was never committed (a crash between the two) is found this way. A list that
  /// fails is logged, and sending goes on.
  func reconcile(holding: Set<String>) {
    reconciling = true
    let jwt = tokens.jwt(now: SystemWallClock.now().milliseconds, random: 0.5)
    client.manage("GET", "all-channels", jwt: jwt) { [self] result in
      var gone: [String] = []
      switch result {
      case .success(let r) where r.status == 200:
        let listed = Self.channels(inList: r.body)
        gone = listed.filter { !holding.contains($0) }
        logger.notice(
          "--apns-channels-reconcile: APNs lists \(listed.count) channels, activities hold \(holding.count); deleting the \(gone.count) no activity holds"
        )
      case .success(let r):
        logger.error(
          "--apns-channels-reconcile: APNs answered \(r.status) \(r.reason ?? "") to the list of channels; none deleted"
        )
      case .failure(let e):
        logger.error("--apns-channels-reconcile: no list of channels (\(e)); none deleted")
      }
      var left = gone.count
      func finish() {
        reconciling = false
        let waiting = deferred
        deferred = []
        for send in waiting { send() }
      }
      if left == 0 { return finish() }
      for channel in gone {
        client.manage("DELETE", "channels", channelID: channel, jwt: jwt) { [self] result in
          if case .success(let r) = result, (200..<300).contains(r.status) || r.status == 404 {
          } else {
            logger.notice("--apns-channels-reconcile: channel \(channel) not deleted: \(result)")
          }
          left -= 1
          if left == 0 { finish() }
        }
      }
    }
  }

  /// The ids of a channel list's body (`{"channels":["…",…]}`); none when it is not one.
  static func channels(inList body: [UInt8]) -> [String] {
    guard let text = String(validating: body, as: UTF8.self),
      case .object(let o)? = try? JSONParser.parse(text), case .array(let list)? = o["channels"]
    else { return [] }
    return list.compactMap { if case .string(let id) = $0 { id } else { nil } }
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
