// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// What one attempt to deliver an outbox item means for it: for a push, what an answer of the
/// Apple Push Notification service (or its failure to answer) means (docs/pushes.md,
/// "Delivery": Apple's documented statuses and reasons); for a webhook,
/// ``init(webhookStatus:)``.
public enum DeliveryOutcome: Equatable, Sendable {
  /// 200: delivered; forget the push.
  case delivered
  /// The token is no longer good for this app (`400 BadDeviceToken`, `400
  /// DeviceTokenNotForTopic`, `410 Unregistered`): remove it from the activity, forget the push.
  case removeToken
  /// `403 ExpiredProviderToken`: make a new JWT and send the push again.
  case renewProviderToken
  /// `429`, `5xx`, a timeout, a lost connection or GOAWAY: send again after a backoff.
  case retry
  /// The answer says the sender, not the push, is wrong (a revoked or mistyped key, the wrong
  /// environment or topic, a bad path: docs/pushes.md, "Configuration faults hold"): keep
  /// this push and every one behind it, remove no token, and try one push again after a
  /// backoff until one is delivered.
  case hold
  /// Any other error (a payload the gateway refuses, a push too large): permanent for this
  /// push; forget it and count it.
  case drop

  /// The outcome of an APNs answer with `status` and, for an error, the `reason` of its JSON
  /// body (`{"reason":"BadDeviceToken"}`; nil when the body had none or was not JSON).
  public init(status: Int, reason: String?) {
    switch (status, reason) {
    case (200, _): self = .delivered
    case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"): self = .removeToken
    case (403, "ExpiredProviderToken"): self = .renewProviderToken
    case (403, "InvalidProviderToken"), (403, "MissingProviderToken"),
      (403, "BadEnvironmentKeyInToken"), (400, "TopicDisallowed"), (400, "BadTopic"),
      (400, "MissingTopic"), (404, "BadPath"), (429, "TooManyProviderTokenUpdates"):
      self = .hold
    case (429, _), (500...599, _): self = .retry
    default: self = .drop
    }
  }

  /// The name `countdown_pushes_total{result}` counts it under.
  public var metricName: String {
    switch self {
    case .delivered: "delivered"
    case .removeToken: "token_removed"
    case .renewProviderToken: "provider_token_expired"
    case .retry: "retried"
    case .hold: "config_error"
    case .drop: "dropped"
    }
  }
}

/// When to try a push again: exponential backoff from 1 s, doubling to 60 s, with jitter so
/// that pushes refused together do not come back together (docs/pushes.md).
public struct RetrySchedule: Sendable {
  public var first: Int64 = 1_000
  public var longest: Int64 = 60_000

  public init() {}

  /// The delay (ms) before attempt `attempt + 1`, after `attempt` failed attempts (≥ 1):
  /// half the backoff for that attempt, plus `random` (0…1) times the other half.
  public func delay(afterAttempts attempt: Int, random: Double) -> Int64 {
    let doublings = max(0, min(attempt - 1, 16))
    let backoff = min(longest, first << doublings)
    let r = min(max(random, 0), 1)
    return backoff / 2 + Int64(Double(backoff / 2) * r)
  }
}
