// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// One webhook delivery the outbox holds (docs/webhooks.md): one lifecycle event of one
/// activity, to one URL, with its whole body.
public struct WebhookItem: OutboxItem, Hashable {
  public var activity: String
  /// The receiver's URL (one of `--webhook`).
  public var url: String
  public var event: ActivityEvent.Kind
  /// The event's instant (ms since 1970), for the latency from event to answer.
  public var eventAt: Int64
  /// The JSON body: `{"event": …, "activity": …}`.
  public var body: [UInt8]

  public init(
    activity: String, url: String, event: ActivityEvent.Kind, eventAt: Int64, body: [UInt8]
  ) {
    self.activity = activity
    self.url = url
    self.event = event
    self.eventAt = eventAt
    self.body = body
  }

  /// A URL's deliveries of one activity go in order, one at a time (each URL has a queue of
  /// its own).
  public var lane: String { activity }
  /// Due at once: webhooks have no budget.
  public var notBefore: Int64 { 0 }
}

extension DeliveryOutcome {
  /// What a webhook receiver's answer means (docs/webhooks.md): 2xx delivered; 408, 429 and 5xx sent
  /// again after a backoff; any other status (3xx, the other 4xx, 1xx) dropped and counted.
  /// No answer at all (a timeout, a refused or lost connection, a reply that is not HTTP) is
  /// ``retry``, decided by the sender.
  public init(webhookStatus status: Int) {
    switch status {
    case 200...299: self = .delivered
    case 408, 429, 500...599: self = .retry
    default: self = .drop
    }
  }
}
