// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownAPNs
import CountdownLoop
import CountdownNIO
import CountdownPush
import CountdownStore
import Crypto
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The outbox's sender of webhook deliveries (docs/webhooks.md): the one ``OutboxSender``,
/// one destination for each `--webhook` URL, each with its own queue and client, so that a
/// receiver that hangs or is slow delays no other.
typealias WebhookDelivery = OutboxSender<WebhookTransport>

extension OutboxSender where Transport == WebhookTransport {
  /// A sender to each of `options.urls`, on a thread of its own.
  convenience init(
    options: WebhookOptions, writer: StoreWriter, metrics: WebhookMetrics, logger: Logger
  ) throws(ServerStartError) {
    let urls = options.urls
    var index: [String: Int] = [:]
    for (i, url) in urls.enumerated() where index[url] == nil { index[url] = i }
    let route = index
    try self.init(
      threadName: "countdown-hook", writer: writer, queueGauge: metrics.queue, logger: logger,
      route: { route[$0.url] },
      makeTransports: { eventLoop throws(ServerStartError) in
        var tls: NIOSSLContext?
        if options.caPath != nil || urls.contains(where: { $0.lowercased().hasPrefix("https://") })
        {
          tls = try WebhookTransport.tls(caPath: options.caPath)
        }
        let secret = options.secret.map { SymmetricKey(data: $0) }
        return try urls.map { url throws(ServerStartError) in
          WebhookTransport(
            url: url,
            client: try WebhookClient(
              url: url, eventLoop: eventLoop, maxConnections: WebhookTransport.connectionsPerURL,
              timeoutMilliseconds: options.requestTimeoutMilliseconds, tls: tls),
            secret: secret, metrics: metrics, logger: logger)
        }
      })
  }

  /// The deliveries the outbox held at start (a restart sends what was pending). Those for a
  /// URL not given now stay in the state file, untouched, until it is given again.
  func restore(_ pending: [(seq: Int64, item: WebhookItem)]) {
    var elsewhere: [String: Int] = [:]
    for p in pending where !routes(p.item) { elsewhere[p.item.url, default: 0] += 1 }
    for (url, n) in elsewhere.sorted(by: { $0.key < $1.key }) {
      logger.notice(
        "the state file holds \(n) webhook deliveries for \(url), which is not a --webhook now; they stay there until it is given again"
      )
    }
    committed(pending)
  }
}

/// One webhook URL as the outbox sender's destination: each delivery a POST on
/// ``WebhookClient``'s keep-alive connections, signed when there is a secret.
final class WebhookTransport: OutboxTransport {
  // Sendable: every stored property is immutable and Sendable.
  /// Requests at once to one URL (lanes of different activities side by side), each on a
  /// keep-alive connection of its own.
  static let connectionsPerURL = 16

  let url: String
  private let client: WebhookClient
  private let secret: SymmetricKey?
  private let metrics: WebhookMetrics
  private let logger: Logger

  init(
    url: String, client: WebhookClient, secret: SymmetricKey?, metrics: WebhookMetrics,
    logger: Logger
  ) {
    self.url = url
    self.client = client
    self.secret = secret
    self.metrics = metrics
    self.logger = logger
  }

  /// The client side of TLS: the system's trusted certificates and `caPath`'s, each
  /// receiver's name checked.
  static func tls(caPath: String?) throws(ServerStartError) -> NIOSSLContext {
    let pem = try caPath.map { path throws(ServerStartError) in
      try System.readSmallFile(path).mapError { ServerStartError("--webhook-ca: \($0.message)") }
        .get()
    }
    let configuration: TLSConfiguration
    do {
      configuration = try ClientTLS.configuration(alsoTrusting: pem)
    } catch {
      throw ServerStartError("--webhook-ca \(caPath ?? "") \(error.message)")
    }
    do {
      return try NIOSSLContext(configuration: configuration)
    } catch {
      throw ServerStartError("cannot set up TLS for the webhooks: \(error)")
    }
  }

  var maxInFlight: Int { Self.connectionsPerURL }

  func send(
    _ entry: DeliveryQueue<WebhookItem>.Entry, now: Int64, random: Double,
    answer: @escaping @Sendable (DeliveryOutcome) -> Void
  ) {
    var headers = HTTPHeaders()
    headers.add(name: "Content-Type", value: "application/json")
    headers.add(name: "User-Agent", value: "countdown")
    headers.add(name: "Countdown-Event-Id", value: String(entry.seq))
    if let secret {
      headers.add(
        name: "Countdown-Signature",
        value: WebhookSignature.header(key: secret, unixSeconds: now / 1000, body: entry.item.body))
    }
    client.post(headers: headers, body: entry.item.body) { [self] result in
      let outcome: DeliveryOutcome
      switch result {
      case .success(let status):
        outcome = DeliveryOutcome(webhookStatus: status)
        if outcome != .delivered {
          logger.notice(
            "webhook \(url) answered \(status) to a delivery of \(entry.item.activity) (\(entry.item.event)): \(outcome.metricName)"
          )
        }
      case .failure(let e):
        outcome = .retry
        logger.notice(
          "webhook \(url) gave no answer to a delivery of \(entry.item.activity): \(e); it will be retried"
        )
      }
      answer(outcome)
    }
  }

  func answered(
    _ entry: DeliveryQueue<WebhookItem>.Entry, _ outcome: DeliveryOutcome,
    _ consequence: DeliveryQueue<WebhookItem>.Consequence, now: Int64
  ) {
    metrics.answered(outcome, latencyMs: now - entry.item.eventAt)
  }

  func close() { client.close() }
}

/// `Countdown-Signature` (docs/webhooks.md): `t=<unix seconds>,v1=<hex HMAC-SHA256 of
/// "t.body" with the secret>`.
enum WebhookSignature {
  private static let hexDigits = Array("0123456789abcdef".utf8)

  static func header(key: SymmetricKey, unixSeconds: Int64, body: [UInt8]) -> String {
    let t = String(unixSeconds)
    var mac = HMAC<SHA256>(key: key)
    mac.update(data: Array(t.utf8))
    mac.update(data: [UInt8(ascii: ".")])
    mac.update(data: body)
    var hex: [UInt8] = []
    hex.reserveCapacity(2 * SHA256.byteCount)
    for byte in mac.finalize() {
      hex.append(hexDigits[Int(byte >> 4)])
      hex.append(hexDigits[Int(byte & 15)])
    }
    return "t=\(t),v1=\(String(decoding: hex, as: UTF8.self))"
  }
}
