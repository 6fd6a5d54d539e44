// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Testing

@testable import CountdownPush

/// The push budget on a virtual clock (plain milliseconds): docs/pushes.md, "Budget".
@Suite("PushBudget")
struct PushBudgetTests {
  /// 2026-11-21T08:00:00Z.
  let s: Int64 = 1_795_248_000_000
  let gate = PushBudget.Key(activity: "gate", token: "ab12")

  @Test("A shard let go: its activities' keys are forgotten, the others' kept")
  func forgetWhere() {
    var b = PushBudget()
    let other = PushBudget.Key(activity: "dose", token: "cd34")
    _ = b.admit(gate, at: s + 100, now: s + 100)
    _ = b.admit(other, at: s + 100, now: s + 100)
    b.forget { $0 == "gate" }
    #expect(b.lastTimestamp(gate) == nil && b.lastTimestamp(other) == s / 1000 && b.count == 1)
    // Taken back: restored from the stored row, it goes on from there.
    b.restore(gate, timestamp: s / 1000, notBefore: s + 100)
    #expect(
      b.admit(gate, at: s + 400, now: s + 400)
        == .new(timestamp: s / 1000 + 1, notBefore: s + 1_000))
  }

  @Test("The first push of a second goes at once; the rest of that second once, at the next")
  func oneASecond() {
    var b = PushBudget()
    #expect(
      b.admit(gate, at: s + 100, now: s + 101) == .new(timestamp: s / 1000, notBefore: s + 100))
    // Later in the same second: one push, at the next second, with that second's timestamp.
    let next = s / 1000 + 1
    #expect(b.admit(gate, at: s + 500, now: s + 501) == .new(timestamp: next, notBefore: s + 1_000))
    // More before then replace it (the latest state goes).
    #expect(
      b.admit(gate, at: s + 700, now: s + 701) == .replace(timestamp: next, notBefore: s + 1_000))
    #expect(
      b.admit(gate, at: s + 999, now: s + 999) == .replace(timestamp: next, notBefore: s + 1_000))
    // Once it has gone, a push in its second waits for the one after.
    #expect(
      b.admit(gate, at: s + 1_200, now: s + 1_200)
        == .new(timestamp: next + 1, notBefore: s + 2_000))
    // A quiet second later: at once again.
    #expect(
      b.admit(gate, at: s + 5_300, now: s + 5_300)
        == .new(timestamp: next + 4, notBefore: s + 5_300))
    #expect(b.lastTimestamp(gate) == next + 4)
  }

  @Test("Timestamps rise strictly per key, whatever the instants; keys are independent")
  func strictlyRising() {
    var b = PushBudget()
    var g = SplitMix64(state: 7)
    var now = s
    var lastGiven: [PushBudget.Key: Int64] = [:]
    let keys = [
      gate, .init(activity: "gate", token: "cd34"), .init(activity: "walk", token: "ab12"),
    ]
    for _ in 0..<5_000 {
      now += Int64(g.next() % 700)
      let key = keys[Int(g.next() % 3)]
      // An event's instant is at or before now (a clock stepped back: up to 3 s before).
      let at = now - Int64(g.next() % (g.next() % 10 == 0 ? 3_000 : 50))
      switch b.admit(key, at: at, now: now) {
      case .new(let t, let notBefore):
        #expect(t > lastGiven[key] ?? .min, "timestamp \(t) after \(lastGiven[key] ?? 0)")
        #expect(notBefore >= at && notBefore <= max(at, t * 1000))
        lastGiven[key] = t
      case .replace(let t, let notBefore):
        #expect(t == lastGiven[key] && notBefore > now)
      }
    }
  }

  @Test("Forgetting an activity or a token starts it afresh; a restore goes on from the store")
  func forgetAndRestore() {
    var b = PushBudget()
    _ = b.admit(gate, at: s, now: s)
    _ = b.admit(.init(activity: "walk", token: "ab12"), at: s, now: s)
    b.forget(activity: "gate")
    #expect(b.count == 1 && b.lastTimestamp(gate) == nil)
    #expect(b.admit(gate, at: s + 10, now: s + 10) == .new(timestamp: s / 1000, notBefore: s + 10))
    var restarted = PushBudget()
    restarted.restore(gate, timestamp: s / 1000 + 5, notBefore: s + 5_000)
    // An event before the stored timestamp (the clock went back meanwhile): after it.
    #expect(
      restarted.admit(gate, at: s + 2_000, now: s + 6_000)
        == .new(timestamp: s / 1000 + 6, notBefore: s + 6_000))
  }
}

@Suite("DeliveryOutcome and RetrySchedule")
struct DeliveryOutcomeTests {
  @Test(
    "Apple's statuses and reasons: delivered, token removed, JWT renewed, retried, held, dropped")
  func statuses() {
    #expect(DeliveryOutcome(status: 200, reason: nil) == .delivered)
    #expect(DeliveryOutcome(status: 400, reason: "BadDeviceToken") == .removeToken)
    #expect(DeliveryOutcome(status: 400, reason: "DeviceTokenNotForTopic") == .removeToken)
    #expect(DeliveryOutcome(status: 410, reason: "Unregistered") == .removeToken)
    #expect(DeliveryOutcome(status: 403, reason: "ExpiredProviderToken") == .renewProviderToken)
    #expect(DeliveryOutcome(status: 429, reason: "TooManyRequests") == .retry)
    #expect(DeliveryOutcome(status: 503, reason: "ServiceUnavailable") == .retry)
    #expect(DeliveryOutcome(status: 500, reason: nil) == .retry)
    // The server's settings, not the push: held (docs/pushes.md, "Configuration faults hold").
    #expect(DeliveryOutcome(status: 400, reason: "BadTopic") == .hold)
    #expect(DeliveryOutcome(status: 403, reason: "InvalidProviderToken") == .hold)
    #expect(DeliveryOutcome(status: 413, reason: "PayloadTooLarge") == .drop)
    #expect(DeliveryOutcome(status: 400, reason: "BadPriority") == .drop)
  }

  @Test(
    "A webhook receiver's statuses (docs/webhooks.md): 2xx delivered; 408, 429, 5xx retried; the rest dropped"
  )
  func webhookStatuses() {
    for status in [200, 201, 202, 204, 299] {
      #expect(DeliveryOutcome(webhookStatus: status) == .delivered)
    }
    for status in [408, 429, 500, 502, 503, 504, 599] {
      #expect(DeliveryOutcome(webhookStatus: status) == .retry)
    }
    for status in [100, 301, 302, 304, 400, 401, 403, 404, 410, 413, 422, 600, 0] {
      #expect(DeliveryOutcome(webhookStatus: status) == .drop, "\(status)")
    }
  }

  @Test("Backoff from 1 s doubling to 60 s, jittered within its upper half")
  func backoff() {
    let r = RetrySchedule()
    #expect(
      r.delay(afterAttempts: 1, random: 0) == 500 && r.delay(afterAttempts: 1, random: 1) == 1_000)
    #expect(
      r.delay(afterAttempts: 2, random: 1) == 2_000
        && r.delay(afterAttempts: 3, random: 0.5) == 3_000)
    #expect(
      r.delay(afterAttempts: 7, random: 1) == 60_000
        && r.delay(afterAttempts: 40, random: 0) == 30_000)
  }
}
