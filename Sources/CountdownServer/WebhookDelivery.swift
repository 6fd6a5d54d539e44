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

/// Posts the outbox's webhook deliveries (docs/webhooks.md) on a thread of its own: the loop
/// thread and the connections' threads never wait for it.
///
/// Each URL has its own queue (``DeliveryQueue``: one lane per activity, in order, one
/// request at a time) and its own client (``WebhookClient``) with its own keep-alive
/// connections, so that a receiver that hangs or is slow delays no other. The store's writer hands it each commit's
/// deliveries (``committed(_:)``); answered ones are deleted from the outbox through the writer.
final class WebhookDelivery: @unchecked Sendable {
  // @unchecked Sendable: the receivers' queues and timers and `stopped` are
  // touched on `eventLoop` only; the rest is immutable.

  /// One URL: its queue, client and timer.
  private final class Receiver: @unchecked Sendable {
    // @unchecked Sendable: touched on the sender's event loop only.
    let url: String
    let client: WebhookClient
    var queue = DeliveryQueue<WebhookItem>(maxInFlight: WebhookDelivery.connectionsPerURL)
    let timer: DeadlineTimer
    var pumpScheduled = false

    init(url: String, client: WebhookClient, eventLoop: any EventLoop) {
      self.url = url
      self.client = client
      timer = DeadlineTimer(on: eventLoop)
    }
  }

  /// Requests at once to one URL (lanes of different activities side by side), each on a
  /// keep-alive connection of its own.
  static let connectionsPerURL = 16

  let eventLoop: EventLoop
  private let group: MultiThreadedEventLoopGroup
  private let receivers: [String: Receiver]
  private let secret: SymmetricKey?
  private var stopped = false
  /// Retries' spread: seeded once (the system generator is a system call a number on Linux).
  private var rng = SplitMix64(state: UInt64.random(in: .min ... .max))
  /// Answered deliveries, on their way to the writer.
  private let answered: AnsweredBatch
  private let metrics: WebhookMetrics
  private let logger: Logger

  init(
    options: WebhookOptions, writer: StoreWriter, metrics: WebhookMetrics, logger: Logger
  ) throws(ServerStartError) {
    group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    eventLoop = group.next()
    eventLoop.nameThread("countdown-hook")
    var tls: NIOSSLContext?
    if options.caPath != nil
      || options.urls.contains(where: { $0.lowercased().hasPrefix("https://") })
    {
      do throws(ServerStartError) {
        tls = try Self.tls(caPath: options.caPath)
      } catch {
        try? group.syncShutdownGracefully()
        throw error
      }
    }
    var receivers: [String: Receiver] = [:]
    do throws(ServerStartError) {
      for url in options.urls {
        receivers[url] = Receiver(
          url: url,
          client: try WebhookClient(
            url: url, eventLoop: eventLoop, maxConnections: Self.connectionsPerURL,
            timeoutMilliseconds: options.requestTimeoutMilliseconds, tls: tls),
          eventLoop: eventLoop)
      }
    } catch {
      try? group.syncShutdownGracefully()
      throw error
    }
    self.receivers = receivers
    secret = options.secret.map { SymmetricKey(data: $0) }
    // The sender's thread gives way to the loop thread, as the push sender's does (nice 19
    // was measured too: half the deliveries a second, and ticks no steadier; BENCHMARKS.md).
    eventLoop.execute { System.yieldToOtherThreads(niceness: 5) }
    answered = AnsweredBatch(writer: writer, eventLoop: eventLoop)
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

  /// The deliveries the outbox held at start (a restart sends what was pending). Those for a
  /// URL not given now stay in the state file, untouched, until it is given again.
  func restore(_ pending: [(seq: Int64, item: WebhookItem)]) {
    var elsewhere: [String: Int] = [:]
    for p in pending where receivers[p.item.url] == nil { elsewhere[p.item.url, default: 0] += 1 }
    for (url, n) in elsewhere.sorted(by: { $0.key < $1.key }) {
      logger.notice(
        "the state file holds \(n) webhook deliveries for \(url), which is not a --webhook now; they stay there until it is given again"
      )
    }
    committed(pending)
  }

  /// The deliveries one commit wrote (from the writer thread).
  func committed(_ deliveries: [(seq: Int64, item: WebhookItem)]) {
    eventLoop.execute { [self] in
      // Every receiver that got one is pumped (one waiting on a retry's timer too: the new
      // delivery may be of another activity, due now).
      var touched: [String] = []
      for d in deliveries {
        guard let r = receivers[d.item.url] else { continue }
        if !touched.contains(d.item.url) { touched.append(d.item.url) }
        r.queue.add(seq: d.seq, d.item)
      }
      for url in touched { pump(receivers[url]!) }
      recordQueue()
    }
  }

  /// Lets go of the deliveries of the activities `drop` takes (a cluster node stopped serving
  /// their shard: its new owner delivers them from the outbox).
  func drop(where drop: @escaping @Sendable (String) -> Bool) {
    eventLoop.execute { [self] in
      for r in receivers.values { _ = r.queue.drop { drop($0.activity) } }
      recordQueue()
    }
  }

  /// `countdown_webhook_queue`: the deliveries every URL holds.
  private func recordQueue() {
    metrics.queue.record(receivers.values.reduce(0) { $0 + $1.queue.count })
  }

  /// Sends what is due to `r` and sets its timer for what comes next.
  private func pump(_ r: Receiver) {
    guard !stopped else { return }
    let now = SystemWallClock.now().milliseconds
    for entry in r.queue.take(now: now) { send(entry, to: r, now: now) }
    r.timer.arm(at: r.queue.nextDue, now: now) { [self] in pump(r) }
  }

  private func send(_ entry: DeliveryQueue<WebhookItem>.Entry, to r: Receiver, now: Int64) {
    var headers = HTTPHeaders()
    headers.add(name: "Content-Type", value: "application/json")
    headers.add(name: "User-Agent", value: "countdown")
    headers.add(name: "Countdown-Event-Id", value: String(entry.seq))
    if let secret {
      headers.add(
        name: "Countdown-Signature",
        value: WebhookSignature.header(key: secret, unixSeconds: now / 1000, body: entry.item.body))
    }
    r.client.post(headers: headers, body: entry.item.body) { [self] result in
      let outcome: DeliveryOutcome
      switch result {
      case .success(let status):
        outcome = DeliveryOutcome(webhookStatus: status)
        if outcome != .delivered {
          logger.notice(
            "webhook \(r.url) answered \(status) to a delivery of \(entry.item.activity) (\(entry.item.event)): \(outcome.metricName)"
          )
        }
      case .failure(let e):
        outcome = .retry
        logger.notice(
          "webhook \(r.url) gave no answer to a delivery of \(entry.item.activity): \(e); it will be retried"
        )
      }
      answer(entry, outcome, from: r)
    }
  }

  private func answer(
    _ entry: DeliveryQueue<WebhookItem>.Entry, _ outcome: DeliveryOutcome, from r: Receiver
  ) {
    let now = SystemWallClock.now().milliseconds
    let c = r.queue.answered(
      entry, outcome, now: now, random: Double.random(in: 0...1, using: &rng))
    metrics.answered(outcome, latencyMs: now - entry.item.eventAt)
    answered.add(c.forget)
    // One pump after this turn of the event loop: a burst of answers takes the queue once.
    guard !r.pumpScheduled else { return }
    r.pumpScheduled = true
    eventLoop.execute { [self] in
      r.pumpScheduled = false
      pump(r)
      recordQueue()
    }
  }

  /// Stops sending (what is pending stays in the outbox for the next start).
  func stop() {
    try? eventLoop.submit { [self] in
      stopped = true
      for r in receivers.values {
        r.timer.cancel()
        r.client.close()
      }
      answered.flush()
    }.wait()
    try? group.syncShutdownGracefully()
  }
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
