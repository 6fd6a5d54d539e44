// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// When each Live Activity push may go, per activity and token (docs/pushes.md, "Budget"): at
/// most one push per second of `aps.timestamp`, and timestamps strictly rising, because a
/// device ignores an update whose timestamp is not newer than the last one it took.
///
/// The first push of a second goes at once with that second as its timestamp. What changes
/// later in the same second is sent once, at the start of the next second, with that second
/// as its timestamp and the latest state: until then each newer push replaces it.
///
/// A pure state machine on instants in milliseconds: the planner asks it at each push and
/// writes the answer to the outbox; nothing here reads a clock.
public struct PushBudget: Sendable {
  /// One activity's pushes to one token.
  public struct Key: Hashable, Sendable {
    public var activity: String
    public var token: String
    public init(activity: String, token: String) {
      self.activity = activity
      self.token = token
    }
  }

  /// What to do with a push.
  public enum Decision: Equatable, Sendable {
    /// A new push with this timestamp (whole seconds), to be sent at `notBefore` (ms).
    case new(timestamp: Int64, notBefore: Int64)
    /// The push waiting for `notBefore` with this timestamp has not gone yet: replace it with
    /// this one (the latest state), keeping its timestamp and its instant.
    case replace(timestamp: Int64, notBefore: Int64)
  }

  /// Per key: the last timestamp given, and when the push that has it goes.
  private var last: [Key: (timestamp: Int64, notBefore: Int64)] = [:]

  public init() {}

  /// A push of `key` for an event at `at`, decided at `now` (both ms since 1970).
  public mutating func admit(_ key: Key, at: Int64, now: Int64) -> Decision {
    let second = LiveActivityPush.floorSeconds(at)
    guard let previous = last[key] else {
      last[key] = (second, at)
      return .new(timestamp: second, notBefore: at)
    }
    if second > previous.timestamp {
      last[key] = (second, at)
      return .new(timestamp: second, notBefore: at)
    }
    // Not a newer second: the push waiting for the next one takes this state, or, when it has
    // gone (its instant has passed), a new one waits for the second after it.
    if previous.notBefore > now {
      return .replace(timestamp: previous.timestamp, notBefore: previous.notBefore)
    }
    let next = previous.timestamp + 1
    last[key] = (next, next * 1000)
    return .new(timestamp: next, notBefore: next * 1000)
  }

  /// The last timestamp given to `key` (nil: none). Kept durably by the store, so that a
  /// restart goes on from it (``restore(_:timestamp:)``).
  public func lastTimestamp(_ key: Key) -> Int64? { last[key]?.timestamp }

  /// After a restart: `key` last had `timestamp` (its push gone or waiting in the outbox).
  public mutating func restore(_ key: Key, timestamp: Int64, notBefore: Int64) {
    last[key] = (timestamp, notBefore)
  }

  /// Forgets an activity (dismissed) or one of its tokens (removed, or unregistered by APNs).
  public mutating func forget(activity: String, token: String? = nil) {
    if let token {
      last[Key(activity: activity, token: token)] = nil
    } else {
      last = last.filter { $0.key.activity != activity }
    }
  }

  /// Forgets every activity `forget` takes (a cluster node stopped serving their shard).
  public mutating func forget(where forget: (String) -> Bool) {
    last = last.filter { !forget($0.key.activity) }
  }

  /// How many keys are kept.
  public var count: Int { last.count }
}
