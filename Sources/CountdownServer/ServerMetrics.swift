// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CoreMetrics
import Countdown
import CountdownLoop
import CountdownProtocol
import CountdownPush
import Metrics
import Prometheus

/// The service's metrics (`GET /metrics`, docs/http.md), kept through swift-metrics in a
/// Prometheus registry of this server's own (so two servers in one process do not mix).
///
/// Nothing here runs on the loop thread: ticks and their lateness are counted once per wake
/// on the hub's event loop, commands and errors where replies are written, and activities by
/// phase and wake-ups are read from the loop when `/metrics` is asked for.
final class ServerMetrics: Sendable {
  let registry = PrometheusCollectorRegistry()
  /// Ticks the loop published.
  let ticks: CoreMetrics.Counter
  /// Lateness of each wake's ticks when the hub had them: now − their `at`.
  let lateness: Metrics.Timer
  let subscribers: CoreMetrics.Gauge
  /// A cluster node's (docs/cluster.md, "Subscriptions across nodes"): other nodes relaying
  /// this one's events now; lifecycle events relayed in from other nodes; relays that asked
  /// for events no longer kept (a gap); lifecycle events another node committed and never
  /// relayed, passed on by this node from a shard it took ("A node killed between a commit
  /// and its relay").
  let relays: CoreMetrics.Gauge
  let relayedIn: CoreMetrics.Counter
  let relayGaps: CoreMetrics.Counter
  let recovered: CoreMetrics.Counter
  /// Ticks replaced in a slow subscriber's waiting output (docs/protocol.md, "Backpressure").
  let coalescedTicks: CoreMetrics.Counter
  /// Bytes the resident set shrank by when the server gave freed memory back to the system
  /// (docs/protocol.md, "Memory").
  let memoryReturned: CoreMetrics.Counter
  /// Subscribers cut off because all of them together held more unwritten output than the
  /// output budget (docs/security.md).
  let budgetCutOffs: CoreMetrics.Counter
  let commands: CoreMetrics.Counter
  /// Connections closed because their client was too slow to send (docs/security.md).
  private let timeouts: CoreMetrics.Counter
  /// Requests a cluster node forwarded to the node serving their shard (docs/cluster.md).
  private let forwards: CoreMetrics.Counter
  /// A cluster node's leases (docs/cluster.md): shards served now, acquisitions, and renewals
  /// by result (ok, failed: no answer or an error, lost: another node holds the shard).
  private let shardsServed: CoreMetrics.Gauge
  /// Shards a node holds whose rows cannot be restored (docs/cluster.md, "Serving shards").
  private let shardsUnrestorable: CoreMetrics.Gauge
  private let leaseCounters: [String: CoreMetrics.Counter]
  private let errors: [CountdownError.Code: CoreMetrics.Counter]
  private let phases: [CoreMetrics.Gauge]
  private let wakeups: CoreMetrics.Counter
  /// Running totals read from elsewhere (the loop's wake-ups, the lease driver's counts), by
  /// name: each one's last reading, so that its counter grows by the difference. NIO's lock,
  /// as everywhere in the server: a pthread mutex, which ThreadSanitizer sees
  /// (`Synchronization.Mutex` waits on a raw futex it cannot; see CountdownLoop's `Locked`).
  private let totalsSeen = Locked([String: Int64]())
  /// Live Activity pushes (docs/pushes.md).
  let pushes: PushMetrics
  /// Webhook deliveries (docs/webhooks.md).
  let webhooks: WebhookMetrics

  init() {
    var factory = PrometheusMetricsFactory(registry: registry)
    factory.durationHistogramBuckets["countdown_tick_lateness_seconds"] = [
      .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
      .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
      .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
    ]
    factory.durationHistogramBuckets["countdown_push_latency_seconds"] = [
      .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
      .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2),
      .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(300),
    ]
    factory.durationHistogramBuckets["countdown_webhook_latency_seconds"] =
      factory.durationHistogramBuckets["countdown_push_latency_seconds"]
    pushes = PushMetrics(factory: factory)
    webhooks = WebhookMetrics(factory: factory)
    ticks = CoreMetrics.Counter(label: "countdown_ticks_total", factory: factory)
    lateness = Metrics.Timer(label: "countdown_tick_lateness_seconds", factory: factory)
    subscribers = CoreMetrics.Gauge(label: "countdown_subscribers", factory: factory)
    relays = CoreMetrics.Gauge(label: "countdown_cluster_relays", factory: factory)
    relayedIn = CoreMetrics.Counter(
      label: "countdown_cluster_events_relayed_in_total", factory: factory)
    relayGaps = CoreMetrics.Counter(label: "countdown_cluster_relay_gaps_total", factory: factory)
    recovered = CoreMetrics.Counter(
      label: "countdown_cluster_events_recovered_total", factory: factory)
    coalescedTicks = CoreMetrics.Counter(label: "countdown_ticks_coalesced_total", factory: factory)
    memoryReturned = CoreMetrics.Counter(
      label: "countdown_memory_returned_bytes_total", factory: factory)
    budgetCutOffs = CoreMetrics.Counter(
      label: "countdown_subscribers_over_output_budget_total", factory: factory)
    commands = CoreMetrics.Counter(label: "countdown_commands_total", factory: factory)
    wakeups = CoreMetrics.Counter(label: "countdown_wakeups_total", factory: factory)
    timeouts = CoreMetrics.Counter(
      label: "countdown_connections_timed_out_total", factory: factory)
    forwards = CoreMetrics.Counter(label: "countdown_forwarded_total", factory: factory)
    shardsServed = CoreMetrics.Gauge(label: "countdown_cluster_shards_served", factory: factory)
    shardsUnrestorable = CoreMetrics.Gauge(
      label: "countdown_cluster_shards_unrestorable", factory: factory)
    var lease: [String: CoreMetrics.Counter] = [
      "acquired": CoreMetrics.Counter(
        label: "countdown_cluster_lease_acquisitions_total", factory: factory)
    ]
    for result in ["ok", "failed", "lost"] {
      lease[result] = CoreMetrics.Counter(
        label: "countdown_cluster_lease_renewals_total", dimensions: [("result", result)],
        factory: factory)
    }
    leaseCounters = lease
    var errors: [CountdownError.Code: CoreMetrics.Counter] = [:]
    for code in CountdownError.Code.allCases {
      errors[code] = CoreMetrics.Counter(
        label: "countdown_errors_total", dimensions: [("code", code.rawValue)], factory: factory)
    }
    self.errors = errors
    phases = ["active", "paused", "ended", "stale"].map {
      CoreMetrics.Gauge(
        label: "countdown_activities", dimensions: [("phase", $0)], factory: factory)
    }
    subscribers.record(0)
  }

  /// One wake's events, as the hub receives them.
  func published(_ events: [ActivityEvent]) {
    var n = 0
    var firstTick: Instant?
    for e in events where e.kind == .tick {
      n += 1
      if firstTick == nil { firstTick = e.at }
    }
    guard n > 0, let at = firstTick else { return }
    ticks.increment(by: n)
    let now = SystemWallClock().nanosecondsSinceEpoch()
    lateness.recordNanoseconds(max(0, now - at.milliseconds * 1_000_000))
  }

  /// One request answered.
  func answered(_ outcome: Outcome) {
    commands.increment()
    if case .failed(let e) = outcome { errors[e.code]?.increment() }
  }

  /// Requests forwarded to the node that serves their shard (a cluster node).
  func forwarded(_ n: Int) { forwards.increment(by: Int64(n)) }

  /// A request refused before it reached the engine (HTTP: body too large, unauthorized…).
  func refused(_ code: CountdownError.Code) {
    commands.increment()
    errors[code]?.increment()
  }

  /// A connection closed because its client took too long to send a request or a line.
  func timedOut() { timeouts.increment() }

  /// Grows each counter by what its running total (`name`'s) grew by since it was last read.
  private func count(_ totals: [(name: String, total: Int64, counter: CoreMetrics.Counter?)]) {
    let deltas = totalsSeen.withLock { seen in
      totals.map { t -> Int64 in
        let before = seen[t.name, default: 0]
        seen[t.name] = max(before, t.total)
        return max(0, t.total - before)
      }
    }
    for (t, d) in zip(totals, deltas) where d > 0 { t.counter?.increment(by: d) }
  }

  /// The Prometheus text, with the activities by phase and the wake-ups read from `loop` now,
  /// and a cluster node's leases from `cluster`.
  func render(loop: CountdownLoop, cluster: ClusterNode? = nil) async -> [UInt8] {
    if let cluster {
      let (served, counts) = cluster.leaseFigures
      shardsServed.record(served)
      shardsUnrestorable.record(cluster.unrestorableShards.count)
      count([
        ("acquired", Int64(counts.acquired), leaseCounters["acquired"]),
        ("ok", Int64(counts.renewed), leaseCounters["ok"]),
        ("failed", Int64(counts.renewalsFailed), leaseCounters["failed"]),
        ("lost", Int64(counts.renewalsLost), leaseCounters["lost"]),
      ])
    }
    if let counts = try? await loop.submit({ engine in engine.phaseCounts() }) {
      phases[0].record(counts.active)
      phases[1].record(counts.paused)
      phases[2].record(counts.ended)
      phases[3].record(counts.stale)
    }
    if let stats = try? await loop.statistics() {
      count([("wakeups", Int64(truncatingIfNeeded: stats.wakeups), wakeups)])
    }
    var out: [UInt8] = []
    registry.emit(into: &out)
    return out
  }
}

/// `countdown_pushes_total{event,result}`, `countdown_push_queue` (pushes held, in flight
/// included) and `countdown_push_latency_seconds` (from the event's instant to APNs's
/// answer, for each answer).
final class PushMetrics: Sendable {
  let queue: CoreMetrics.Gauge
  private let heldGauges: [String: CoreMetrics.Gauge]
  private let latency: Metrics.Timer
  private let answers: [String: CoreMetrics.Counter]

  init(factory: PrometheusMetricsFactory) {
    queue = CoreMetrics.Gauge(label: "countdown_push_queue", factory: factory)
    latency = Metrics.Timer(label: "countdown_push_latency_seconds", factory: factory)
    var answers: [String: CoreMetrics.Counter] = [:]
    let outcomes: [DeliveryOutcome] = [
      .delivered, .removeToken, .renewProviderToken, .retry, .hold, .drop,
    ]
    for event in LiveActivityPush.Event.allCases {
      for outcome in outcomes {
        answers[event.rawValue + "/" + outcome.metricName] = CoreMetrics.Counter(
          label: "countdown_pushes_total",
          dimensions: [("event", event.rawValue), ("result", outcome.metricName)],
          factory: factory)
      }
    }
    self.answers = answers
    var held: [String: CoreMetrics.Gauge] = [:]
    for reason in Self.holdReasons {
      let gauge = CoreMetrics.Gauge(
        label: "countdown_push_sender_held", dimensions: [("reason", reason)], factory: factory)
      gauge.record(0)
      held[reason] = gauge
    }
    self.heldGauges = held
    queue.record(0)
  }

  /// The reasons an APNs answer holds the sender for (``DeliveryOutcome/hold``).
  static let holdReasons = [
    "InvalidProviderToken", "MissingProviderToken", "BadEnvironmentKeyInToken",
    "TopicDisallowed", "BadTopic", "MissingTopic", "BadPath", "TooManyProviderTokenUpdates",
  ]

  /// `countdown_push_sender_held{reason}`: 1 for the reason the sender holds for (the answer
  /// `STATUS REASON`), 0 for the rest; all 0 for nil.
  func held(_ answer: String?) {
    for (reason, gauge) in heldGauges {
      gauge.record(answer?.hasSuffix(" " + reason) == true ? 1 : 0)
    }
  }

  /// One answer (or failure to answer) to `item`.
  func answered(_ item: PushItem, _ outcome: DeliveryOutcome, latencyMs: Int64) {
    answers[item.event.rawValue + "/" + outcome.metricName]?.increment()
    latency.recordNanoseconds(max(0, latencyMs) * 1_000_000)
  }
}

/// `countdown_webhooks_total{result}` (delivered, retried, dropped), `countdown_webhook_queue`
/// (deliveries held, in flight included, every URL) and `countdown_webhook_latency_seconds`
/// (from the event's instant to each answer).
final class WebhookMetrics: Sendable {
  let queue: CoreMetrics.Gauge
  private let latency: Metrics.Timer
  private let answers: [String: CoreMetrics.Counter]

  init(factory: PrometheusMetricsFactory) {
    queue = CoreMetrics.Gauge(label: "countdown_webhook_queue", factory: factory)
    latency = Metrics.Timer(label: "countdown_webhook_latency_seconds", factory: factory)
    var answers: [String: CoreMetrics.Counter] = [:]
    for outcome in [DeliveryOutcome.delivered, .retry, .drop] {
      answers[outcome.metricName] = CoreMetrics.Counter(
        label: "countdown_webhooks_total", dimensions: [("result", outcome.metricName)],
        factory: factory)
    }
    self.answers = answers
    queue.record(0)
  }

  /// One answer (or failure to answer) to a delivery.
  func answered(_ outcome: DeliveryOutcome, latencyMs: Int64) {
    answers[outcome.metricName]?.increment()
    latency.recordNanoseconds(max(0, latencyMs) * 1_000_000)
  }
}
