// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport
import Testing

@testable import CountdownPush

/// The sender's queue on a virtual clock: lanes in order with one request each, the budget's
/// instants, retries, token removal, replacement, and a random run checked against a model.
@Suite("PushQueue")
struct PushQueueTests {
  func item(
    _ activity: String, _ token: String, ts: Int64, notBefore: Int64 = 0,
    event: LiveActivityPush.Event = .update, priority: Int = 5
  ) -> PushItem {
    PushItem(
      activity: activity, token: token, event: event, priority: priority, timestamp: ts,
      notBefore: notBefore, eventAt: notBefore, payload: Array("\(activity)/\(ts)".utf8))
  }

  @Test("One request per lane at a time, in order; lanes side by side")
  func lanes() {
    var q = PushQueue()
    q.add(seq: 1, item("a", "t1", ts: 1))
    q.add(seq: 2, item("a", "t1", ts: 2))
    q.add(seq: 3, item("a", "t2", ts: 1))
    q.add(seq: 4, item("b", "t1", ts: 1))
    let first = q.take(now: 0)
    #expect(first.map(\.seq).sorted() == [1, 3, 4])
    #expect(q.take(now: 0).isEmpty, "seq 2 waits for seq 1's answer")
    let a = first.first { $0.seq == 1 }!
    let c = q.answered(a, .delivered, now: 5, random: 0)
    #expect(c.forget == [1] && c.removedToken == nil)
    #expect(q.take(now: 5).map(\.seq) == [2])
    #expect(q.count == 3 && q.inFlight == 3)
  }

  @Test("A shard let go: its lanes leave, in flight or waiting; an answer to one changes nothing")
  func drop() {
    var q = PushQueue()
    q.add(seq: 1, item("a", "t1", ts: 1))
    q.add(seq: 2, item("a", "t1", ts: 2))
    q.add(seq: 3, item("b", "t1", ts: 1))
    q.add(seq: 4, item("c", "t1", ts: 1, notBefore: 5000))
    let sent = q.take(now: 0)
    #expect(sent.map(\.seq).sorted() == [1, 3] && q.inFlight == 2)
    #expect(q.drop { $0.activity == "a" || $0.activity == "c" } == 3)
    q.checkInvariants()
    #expect(q.count == 1 && q.inFlight == 1 && q.laneCount == 1)
    // The answer to a's request in flight: nothing to forget, nothing counted twice.
    let late = q.answered(sent.first { $0.seq == 1 }!, .delivered, now: 10, random: 0)
    #expect(late.forget.isEmpty && q.inFlight == 1)
    q.checkInvariants()
    // Taken again: a's rows come back from the outbox and go as new.
    q.add(seq: 1, item("a", "t1", ts: 1))
    #expect(q.take(now: 10000).map(\.seq) == [1])
    q.checkInvariants()
    #expect(q.count == 2 && q.inFlight == 2)
  }

  @Test("Not before the budget's instant; nextDue says when")
  func notBefore() {
    var q = PushQueue()
    q.add(seq: 1, item("a", "t", ts: 2, notBefore: 2000))
    #expect(q.take(now: 1999).isEmpty)
    #expect(q.nextDue == 2000)
    #expect(q.take(now: 2000).map(\.seq) == [1])
  }

  @Test("A retry waits 0.5–1 s, then 1–2 s, … up to 60 s; the lane keeps its order")
  func retries() {
    var q = PushQueue()
    q.add(seq: 1, item("a", "t", ts: 1))
    q.add(seq: 2, item("a", "t", ts: 2))
    var now: Int64 = 0
    var e = q.take(now: now)[0]
    for attempt in 1...8 {
      let c = q.answered(e, .retry, now: now, random: 1)
      #expect(c.forget.isEmpty)
      let wait = min(60_000, Int64(1000) << (attempt - 1))
      #expect(q.take(now: now + wait - 1).isEmpty)
      now += wait
      let next = q.take(now: now)
      #expect(next.map(\.seq) == [1], "attempt \(attempt)")
      e = next[0]
      #expect(e.attempts == attempt)
    }
    _ = q.answered(e, .delivered, now: now, random: 0)
    #expect(q.take(now: now).map(\.seq) == [2])
    // The lower half of the step with random 0.
    var r = PushQueue()
    r.add(seq: 9, item("x", "t", ts: 1))
    _ = r.answered(r.take(now: 0)[0], .retry, now: 0, random: 0)
    #expect(r.take(now: 499).isEmpty && r.take(now: 500).count == 1)
  }

  @Test("A token APNs refuses: every push of its lane is forgotten and the token named")
  func removeToken() {
    var q = PushQueue()
    q.add(seq: 1, item("a", "t", ts: 1))
    q.add(seq: 2, item("a", "t", ts: 2))
    q.add(seq: 3, item("a", "u", ts: 1))
    let sent = q.take(now: 0)
    let c = q.answered(sent.first { $0.seq == 1 }!, .removeToken, now: 0, random: 0)
    #expect(c.forget == [1, 2])
    #expect(c.removedToken == PushBudget.Key(activity: "a", token: "t"))
    #expect(q.count == 1 && q.laneCount == 1)
  }

  @Test("ExpiredProviderToken: again at once with a new token, then with a backoff")
  func providerToken() {
    var q = PushQueue()
    q.add(seq: 1, item("a", "t", ts: 1))
    var c = q.answered(q.take(now: 0)[0], .renewProviderToken, now: 10, random: 0)
    #expect(c.renewProviderToken)
    let again = q.take(now: 10)
    #expect(again.map(\.seq) == [1])
    c = q.answered(again[0], .renewProviderToken, now: 10, random: 0)
    #expect(c.renewProviderToken && q.take(now: 10).isEmpty && q.take(now: 510).count == 1)
  }

  @Test(
    "A configuration fault holds: nothing forgotten, no token removed, one push tried again after 1 s, 2 s, …; a 200 sends the rest in order"
  )
  func hold() {
    var q = PushQueue()
    q.add(seq: 1, item("a", "t", ts: 1))
    q.add(seq: 2, item("a", "t", ts: 2))
    q.add(seq: 3, item("b", "t", ts: 1))
    q.add(seq: 4, item("c", "t", ts: 1))
    let sent = q.take(now: 0)
    #expect(sent.map(\.seq).sorted() == [1, 3, 4])
    var c = q.answered(sent.first { $0.seq == 1 }!, .hold, now: 100, random: 1)
    #expect(c.forget.isEmpty && c.removedToken == nil && q.isHeld)
    // The answers to the other requests already out do not lengthen the hold.
    for e in sent where e.seq != 1 { _ = q.answered(e, .hold, now: 150, random: 1) }
    #expect(q.count == 4 && q.inFlight == 0)
    q.checkInvariants()
    // One probe after the first backoff (1 s with random 1), none before it.
    #expect(q.nextDue == 1_100)
    #expect(q.take(now: 1_099).isEmpty)
    let probe = q.take(now: 1_100)
    #expect(probe.count == 1 && q.nextDue == nil)
    #expect(q.take(now: 1_100).isEmpty, "a second push went out while held")
    c = q.answered(probe[0], .hold, now: 1_200, random: 1)
    #expect(c.forget.isEmpty && q.isHeld && q.nextDue == 3_200)
    // No answer to the next probe (a lost connection): the hold stands, the same backoff.
    let second = q.take(now: 3_200)
    #expect(second.count == 1)
    _ = q.answered(second[0], .retry, now: 3_300, random: 1)
    #expect(q.isHeld && q.nextDue == 5_300)
    // The key is fixed: the probe is delivered, and the rest go at once, in lane order.
    let third = q.take(now: 5_300)
    c = q.answered(third[0], .delivered, now: 5_400, random: 1)
    #expect(!q.isHeld && c.forget == [third[0].seq])
    var delivered = [third[0].seq]
    var now: Int64 = 5_400
    while q.count > 0 {
      let batch = q.take(now: now)
      #expect(!batch.isEmpty, "held items never sent")
      if batch.isEmpty { break }
      for e in batch {
        _ = q.answered(e, .delivered, now: now, random: 0)
        delivered.append(e.seq)
      }
      now += 1
    }
    #expect(delivered.sorted() == [1, 2, 3, 4])
    #expect(delivered.firstIndex(of: 1)! < delivered.firstIndex(of: 2)!, "lane a out of order")
    q.checkInvariants()
  }

  @Test("Which answers hold: the server's settings, not the push")
  func holdOutcomes() {
    for (status, reason) in [
      (403, "InvalidProviderToken"), (403, "MissingProviderToken"),
      (403, "BadEnvironmentKeyInToken"), (400, "TopicDisallowed"), (400, "BadTopic"),
      (400, "MissingTopic"), (404, "BadPath"), (429, "TooManyProviderTokenUpdates"),
    ] {
      #expect(DeliveryOutcome(status: status, reason: reason) == .hold, "\(status) \(reason)")
    }
    #expect(DeliveryOutcome(status: 429, reason: "TooManyRequests") == .retry)
    #expect(DeliveryOutcome(status: 400, reason: "PayloadTooLarge") == .drop)
    #expect(DeliveryOutcome(status: 403, reason: "ExpiredProviderToken") == .renewProviderToken)
    #expect(DeliveryOutcome.hold.metricName == "config_error")
  }

  @Test(
    "Coalescing: a waiting update gives way to a later one, an end to every waiting update; the one in flight and a start are kept"
  )
  func coalescing() {
    var q = PushQueue()
    #expect(q.addCoalescing(seq: 1, item("a", "t", ts: 1)).isEmpty)
    let first = q.take(now: 0)
    #expect(first.map(\.seq) == [1])
    // Refused for now: it waits with a backoff, and is not in flight any more.
    _ = q.answered(first[0], .retry, now: 0, random: 1)
    // A pause (urgent) and a content update behind it: the update takes the pause's place,
    // with its priority and the backoff the first push got.
    #expect(q.addCoalescing(seq: 2, item("a", "t", ts: 2, priority: 10)) == [1])
    #expect(q.addCoalescing(seq: 3, item("a", "t", ts: 3)) == [2])
    #expect(q.count == 1)
    #expect(q.take(now: 999).isEmpty, "the merged push went before the backoff")
    let merged = q.take(now: 1_000)
    #expect(merged.map(\.seq) == [3] && merged[0].item.priority == 10 && merged[0].attempts == 1)
    // In flight: never replaced; what comes behind it waits as it is.
    #expect(q.addCoalescing(seq: 4, item("a", "t", ts: 4)).isEmpty)
    #expect(q.addCoalescing(seq: 5, item("a", "t", ts: 5)) == [4])
    // An end takes the place of every waiting update.
    #expect(q.addCoalescing(seq: 6, item("a", "t", ts: 6, event: .end)) == [5])
    _ = q.answered(merged[0], .delivered, now: 1_000, random: 0)
    #expect(q.take(now: 6_000).map(\.seq) == [6])
    q.checkInvariants()
    // A start is kept, and an end behind it only takes the updates.
    var r = PushQueue()
    _ = r.addCoalescing(seq: 10, item("b", "s", ts: 1, event: .start))
    _ = r.addCoalescing(seq: 11, item("b", "s", ts: 2))
    #expect(r.addCoalescing(seq: 12, item("b", "s", ts: 3, event: .end)) == [11])
    var sent: [Int64] = []
    for now: Int64 in [0, 1, 2] {
      for e in r.take(now: now * 1000 + 3000) {
        sent.append(e.seq)
        _ = r.answered(e, .delivered, now: now, random: 0)
      }
    }
    #expect(sent == [10, 12] && r.count == 0)
    r.checkInvariants()
  }

  @Test("A replacement takes the waiting push's place; one already sent is followed instead")
  func replace() {
    var q = PushQueue()
    q.add(seq: 1, item("a", "t", ts: 1))
    q.add(seq: 2, item("a", "t", ts: 2, notBefore: 2000))
    #expect(q.replace(seq: 3, item("a", "t", ts: 2, notBefore: 2000)) == 2)
    let sent = q.take(now: 0)
    #expect(sent.map(\.seq) == [1])
    // Seq 1 (timestamp 1) is in flight: a replacement of it goes after it.
    #expect(q.replace(seq: 4, item("a", "t", ts: 1)) == nil)
    _ = q.answered(sent[0], .delivered, now: 2000, random: 0)
    let next = q.take(now: 2000)
    #expect(next.map(\.seq) == [3])
    _ = q.answered(next[0], .delivered, now: 2000, random: 0)
    #expect(q.take(now: 2000).map(\.seq) == [4])
    #expect(q.count == 1)
  }

  @Test("No more than maxInFlight requests at once")
  func inFlightCap() {
    var q = PushQueue(maxInFlight: 3)
    for i in 0..<10 { q.add(seq: Int64(i), item("a\(i)", "t", ts: 1)) }
    let first = q.take(now: 0)
    #expect(first.count == 3 && q.take(now: 0).isEmpty)
    #expect(q.nextDue == nil, "nothing can go before an answer: no instant to wake at")
    _ = q.answered(first[0], .delivered, now: 0, random: 0)
    #expect(q.nextDue == 0)
    #expect(q.take(now: 0).count == 1)
  }

  @Test("Random adds, answers and replacements: every push ends once, each lane in timestamp order")
  func randomRun() {
    var rng = SplitMix64(state: testSeed())
    var q = PushQueue(maxInFlight: 7)
    var seq: Int64 = 0
    var now: Int64 = 0
    var live: [Int64: PushItem] = [:]  // seqs held (the model)
    var ended: Set<Int64> = []
    var lastSent: [PushBudget.Key: Int64] = [:]  // timestamps sent per lane
    var lastTimestamp: [PushBudget.Key: Int64] = [:]
    var inFlight: [PushQueue.Entry] = []
    for _ in 0..<5000 {
      switch rng.next() % 4 {
      case 0, 1:
        seq += 1
        let key = PushBudget.Key(activity: "a\(rng.next() % 5)", token: "t\(rng.next() % 3)")
        // As the budget gives them: timestamps per lane never fall, and a replacement is of
        // the lane's latest second.
        let replacing = rng.next() % 4 == 0 && lastTimestamp[key] != nil
        let ts =
          replacing
          ? lastTimestamp[key]! : max(lastTimestamp[key] ?? 0, now / 1000 + Int64(rng.next() % 3))
        lastTimestamp[key] = ts
        let it = item(key.activity, key.token, ts: ts, notBefore: ts * 1000)
        if replacing {
          if let old = q.replace(seq: seq, it) {
            #expect(live[old] != nil)
            live[old] = nil
            ended.insert(old)
          }
        } else if rng.next() % 2 == 0 {
          for old in q.addCoalescing(seq: seq, it) {
            #expect(live[old] != nil, "seq \(old) merged away twice")
            live[old] = nil
            ended.insert(old)
          }
        } else {
          q.add(seq: seq, it)
        }
        live[seq] = it
      case 2:
        for e in q.take(now: now) {
          let k = PushBudget.Key(activity: e.item.activity, token: e.item.token)
          #expect(!inFlight.contains { $0.item.activity == k.activity && $0.item.token == k.token })
          if let previous = lastSent[k] { #expect(previous <= e.item.timestamp, "lane order") }
          lastSent[k] = e.item.timestamp
          inFlight.append(e)
          #expect(e.due <= now)
        }
      default:
        guard !inFlight.isEmpty else { break }
        let e = inFlight.remove(at: Int(rng.next() % UInt64(inFlight.count)))
        let outcomes: [DeliveryOutcome] = [
          .delivered, .delivered, .retry, .drop, .removeToken, .hold,
        ]
        let c = q.answered(
          e, outcomes[Int(rng.next() % 6)], now: now, random: Double(rng.next() % 100) / 100)
        if q.isHeld { #expect(q.inFlight <= max(1, inFlight.count), "held, and more went out") }
        for s in c.forget {
          #expect(!ended.contains(s), "seq \(s) ended twice")
          ended.insert(s)
          live[s] = nil
        }
      }
      now += Int64(rng.next() % 400)
      #expect(q.count == live.count)
      #expect(q.inFlight == inFlight.count)
      q.checkInvariants()
    }
  }

  @Test("The same queue for one webhook URL: a lane per activity, in order under retries")
  func webhookLanes() {
    func hook(_ activity: String, _ n: Int) -> WebhookItem {
      WebhookItem(
        activity: activity, url: "http://h/", event: .updated, eventAt: 0,
        body: Array("\(activity)\(n)".utf8))
    }
    var q = DeliveryQueue<WebhookItem>(maxInFlight: 8)
    q.add(seq: 1, hook("a", 1))
    q.add(seq: 2, hook("b", 1))
    q.add(seq: 3, hook("a", 2))
    let first = q.take(now: 0)
    #expect(first.map(\.seq).sorted() == [1, 2], "a's second waits for its first")
    let a1 = first.first { $0.seq == 1 }!
    // a's first is refused: it is tried again after the backoff, still before a's second.
    #expect(q.answered(a1, .retry, now: 10, random: 0).forget.isEmpty)
    #expect(q.take(now: 10).isEmpty)
    #expect(q.nextDue == 510)
    let again = q.take(now: 510)
    #expect(again.map(\.seq) == [1] && again[0].attempts == 1)
    #expect(q.answered(again[0], .delivered, now: 520, random: 0).forget == [1])
    #expect(q.take(now: 520).map(\.seq) == [3])
  }
}
