// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Testing

@testable import CountdownClientNIO

@Suite("CallQueue: replies matched to calls in order")
struct CallQueueTests {
  func answered(_ r: CallQueue<String>.Replied) -> String? {
    if case .answer(let call) = r { return call }
    return nil
  }

  @Test("Replies answer the calls in the order they were sent")
  func inOrder() {
    var q = CallQueue<String>()
    for (k, call) in ["a", "b", "c"].enumerated() {
      guard case .send = q.enqueue(call, id: UInt64(k)) else {
        Issue.record("\(call) was not sent")
        return
      }
    }
    #expect(q.count == 3)
    #expect(answered(q.reply()) == "a")
    #expect(answered(q.reply()) == "b")
    #expect(answered(q.reply()) == "c")
    #expect(q.count == 0)
  }

  @Test("A cancelled call keeps its place: its reply is dropped, the next call gets the next")
  func cancelled() {
    var q = CallQueue<String>()
    for (k, call) in ["a", "b", "c"].enumerated() { _ = q.enqueue(call, id: UInt64(k + 1)) }
    #expect(q.cancel(id: 2) == "b")
    #expect(q.cancel(id: 2) == nil)
    #expect(q.cancel(id: 9) == nil)
    #expect(answered(q.reply()) == "a")
    guard case .drop = q.reply() else {
      Issue.record("b's reply was not dropped")
      return
    }
    #expect(answered(q.reply()) == "c")
    // A call answered already is not cancelled again.
    #expect(q.cancel(id: 1) == nil)
  }

  @Test(
    "A reply with no call waiting is the server's error; closing fails the rest and later calls")
  func unexpectedAndClosed() {
    var q = CallQueue<String>()
    guard case .unexpected(let error) = q.reply() else {
      Issue.record("a reply for no call was taken")
      return
    }
    #expect(error.code == .unexpectedReply)
    for (k, call) in ["a", "b", "c"].enumerated() { _ = q.enqueue(call, id: UInt64(k)) }
    _ = q.cancel(id: 1)
    let closed = CountdownError(.connectionClosed, "gone")
    #expect(q.close(closed) == ["a", "c"])
    guard case .fail(let call, let e) = q.enqueue("d", id: 3) else {
      Issue.record("a call after the close was sent")
      return
    }
    #expect(call == "d" && e == closed)
    // The first error is the one kept.
    #expect(q.close(CountdownError(.connectionClosed, "again")) == [])
    #expect(q.closedWith == closed)
  }

  @Test("Thousands of calls, replies and cancellations in random orders keep the order")
  func randomOrders() {
    var rng = SystemRandomNumberGenerator()
    var q = CallQueue<UInt64>()
    var expected: [UInt64] = []  // the calls in send order, cancelled ones marked
    var cancelled = Set<UInt64>()
    var next: UInt64 = 0
    var head = 0
    for _ in 0..<20_000 {
      switch Int.random(in: 0..<10, using: &rng) {
      case 0..<5:
        _ = q.enqueue(next, id: next)
        expected.append(next)
        next += 1
      case 5..<8 where head < expected.count:
        let want = expected[head]
        head += 1
        switch q.reply() {
        case .answer(let call): #expect(call == want && !cancelled.contains(want))
        case .drop: #expect(cancelled.contains(want))
        case .unexpected: Issue.record("reply \(want) unexpected")
        }
      case 8 where head < expected.count:
        let victim = expected[Int.random(in: head..<expected.count, using: &rng)]
        let got = q.cancel(id: victim)
        #expect(got == (cancelled.contains(victim) ? nil : victim))
        cancelled.insert(victim)
      default: break
      }
      #expect(q.count == expected.count - head)
    }
  }
}
