// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import NIOCore
import Testing

@testable import CountdownServer

/// The hub's decisions alone, on a virtual clock (NIODeadlines made from plain numbers): no
/// event loop, no socket.
private func at(_ ms: Int64) -> NIODeadline { .uptimeNanoseconds(UInt64(ms) * 1_000_000) }

private func event(_ kind: ActivityEvent.Kind, _ slot: UInt32, value: Int64 = 0) -> ActivityEvent {
  ActivityEvent(
    at: Instant(milliseconds: 0), kind: kind, id: "a\(slot)",
    handle: ActivityHandle(slot: slot, generation: 0), activityKind: .countdown, value: value)
}

private func handle(_ slot: UInt32) -> ActivityHandle { ActivityHandle(slot: slot, generation: 0) }

private func bytes(_ b: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: b) }

@Suite("CommitGate")
struct CommitGateTests {
  @Test("With nothing pending, every event of a wake without a commit goes out")
  func nothingPending() {
    var gate = CommitGate()
    guard case .all = gate.admit(first: 1, [event(.tick, 1), event(.ended, 2)], token: nil) else {
      Issue.record("held events with nothing pending")
      return
    }
    #expect(gate.isEmpty)
  }

  @Test("A committing wake's lifecycle events wait for the commit; its other ticks do not")
  func holdsUntilCommit() {
    var gate = CommitGate()
    let wake = [event(.tick, 1, value: 9), event(.paused, 2), event(.tick, 2, value: 8)]
    guard case .some(let now, let sequences) = gate.admit(first: 10, wake, token: 1) else {
      Issue.record("nothing held")
      return
    }
    #expect(now == [wake[0]] && sequences == [10])
    // A later wake without a commit: the tick of activity 2 waits behind its pause, the tick
    // of activity 1 goes at once.
    guard
      case .some(let later, let laterSequences) = gate.admit(
        first: 13, [event(.tick, 1, value: 8), event(.tick, 2, value: 7)], token: nil)
    else {
      Issue.record("nothing held")
      return
    }
    #expect(later.map(\.handle) == [handle(1)] && laterSequences == [13])
    var released: [[UInt64]] = []
    gate.finish(token: 1, committed: true) { released.append($0.map(\.sequence)) }
    #expect(released == [[11, 12, 14]])
    #expect(gate.isEmpty)
    guard case .all = gate.admit(first: 15, [event(.tick, 2)], token: nil) else {
      Issue.record("a tick waited after its activity's commit")
      return
    }
  }

  @Test("A failed commit drops its events; finishing a later token releases earlier ones")
  func failureAndOrder() {
    var gate = CommitGate()
    _ = gate.admit(first: 1, [event(.started, 1)], token: 1)
    _ = gate.admit(first: 2, [event(.ended, 1)], token: 2)
    _ = gate.admit(first: 3, [event(.started, 3)], token: 3)
    var released: [[UInt64]] = []
    var dropped: [[UInt64]] = []
    gate.finish(
      token: 2, committed: false, dropped: { dropped.append($0.map(\.sequence)) },
      deliver: { released.append($0.map(\.sequence)) })
    #expect(released.isEmpty)
    // The dropped ones are handed over (a cluster node keeps them: the commit may have landed).
    #expect(dropped == [[1], [2]])
    gate.finish(token: 3, committed: true) { released.append($0.map(\.sequence)) }
    #expect(released == [[3]])
    #expect(gate.isEmpty)
  }
}

@Suite("UndecidedEvents: a failed commit's events, kept in case it landed")
struct UndecidedEventsTests {
  @Test("Lifecycle events kept by sequence, each taken once; ticks never kept")
  func keepAndTake() {
    var u = UndecidedEvents()
    u.keep([(4, event(.started, 1)), (5, event(.tick, 1)), (6, event(.paused, 1))])
    #expect(u.count == 2)
    #expect(u.take(5) == nil, "a tick is never committed")
    #expect(u.take(4)?.kind == .started)
    #expect(u.take(4) == nil, "taken once")
    #expect(u.take(6)?.kind == .paused)
    #expect(u.count == 0)
  }

  @Test("Bounded: past the capacity the oldest go first; the order's storage is reclaimed")
  func bounded() {
    var u = UndecidedEvents(capacity: 3)
    for q in UInt64(1)...5 { u.keep([(q, event(.started, UInt32(q)))]) }
    #expect(u.count == 3)
    #expect(u.take(1) == nil && u.take(2) == nil)
    #expect(u.take(3) != nil && u.take(5) != nil)
    // Many more than the bound: still within it, and the newest kept.
    for q in UInt64(10)..<5_000 { u.keep([(q, event(.ended, 1))]) }
    #expect(u.count == 3)
    #expect(u.take(4_999) != nil && u.take(4_996) == nil)
  }
}

@Suite("SubscriberOutput")
struct SubscriberOutputTests {
  @Test("Under the bound every event waits in order; at it a tick replaces its activity's tick")
  func coalescing() {
    var out = SubscriberOutput(bound: 10, cutOffAfter: .seconds(3))
    let r1 = out.append(bytes([1, 1, 1, 1]), of: handle(1), isTick: true)
    #expect(!r1)
    let r2 = out.append(bytes([2, 2, 2, 2]), of: handle(2), isTick: true)
    #expect(!r2)
    let r3 = out.append(bytes([1, 1, 1, 1, 1]), of: handle(1), isTick: true)
    #expect(!r3)  // 8 bytes < 10: kept
    #expect(out.byteCount == 13)
    // Over the bound: activity 1's newest tick (the third entry) is replaced.
    let r4 = out.append(bytes([7, 7]), of: handle(1), isTick: true)
    #expect(r4)
    #expect(out.byteCount == 10)
    // A lifecycle event of activity 2 ends its replacement: its next tick is appended.
    let r5 = out.append(bytes([9]), of: handle(2), isTick: false)
    #expect(!r5)
    let r6 = out.append(bytes([3, 3]), of: handle(2), isTick: true)
    #expect(!r6)
    var drained: [[UInt8]] = []
    out.drain { drained.append(Array($0.readableBytesView)) }
    #expect(drained == [[1, 1, 1, 1], [2, 2, 2, 2], [7, 7], [9], [3, 3]])
    #expect(out.isEmpty && out.byteCount == 0 && out.overSince == nil)
  }

  @Test("Under the bound a wake waits as one run; no tick before a run is replaced after it")
  func runs() {
    var out = SubscriberOutput(bound: 8, cutOffAfter: .seconds(3))
    out.append(bytes([1, 1]), of: handle(1), isTick: true)
    #expect(out.takesRuns)
    // A wake holding a lifecycle event of activity 1 and a tick of 2, as one run.
    out.append(run: bytes([5, 5, 2, 2]))
    #expect(out.byteCount == 6)
    out.append(bytes([2, 2, 2]), of: handle(2), isTick: true)
    #expect(!out.takesRuns)  // 9 bytes: over the bound, events come alone now
    // Activity 1's tick before the run is not replaced (it would overtake the run's event);
    // activity 2's tick after the run is.
    let r1 = out.append(bytes([1, 1, 1]), of: handle(1), isTick: true)
    #expect(!r1)
    let r2 = out.append(bytes([2]), of: handle(2), isTick: true)
    #expect(r2)
    var drained: [[UInt8]] = []
    out.drain { drained.append(Array($0.readableBytesView)) }
    #expect(drained == [[1, 1], [5, 5, 2, 2], [2], [1, 1, 1]])
    #expect(out.isEmpty && out.takesRuns)
  }

  @Test("Over the bound for cutOffAfter: cut off; back under it meanwhile: not")
  func cutOff() {
    var out = SubscriberOutput(bound: 4, cutOffAfter: .seconds(3))
    out.append(bytes([0, 0, 0]), of: handle(1), isTick: false)
    let r7 = out.measure(now: at(0))
    #expect(r7 == nil)
    out.append(bytes([0, 0, 0]), of: handle(1), isTick: false)
    let check = out.measure(now: at(100))
    #expect(check == SubscriberOutput.CutOffCheck(since: at(100), at: at(3100)))
    // Still over later: no second check; at the check it has stayed over.
    out.append(bytes([0]), of: handle(2), isTick: false)
    let r8 = out.measure(now: at(2000))
    #expect(r8 == nil)
    #expect(out.staysOver(since: at(100)))
    // It drained and went over again: the first check finds a newer episode.
    out.drain { _ in }
    out.append(bytes([0, 0, 0, 0, 0]), of: handle(1), isTick: false)
    let second = out.measure(now: at(3000))
    #expect(second?.since == at(3000))
    #expect(!out.staysOver(since: at(100)))
    #expect(out.staysOver(since: at(3000)))
  }

  @Test("A pending subscriber keeps its events; its snapshot takes those from its sequence on")
  func pending() {
    var out = SubscriberOutput(bound: 6, cutOffAfter: .seconds(3), pending: true)
    #expect(out.isPending)
    let r9 = out.keep(sequence: 4, bytes([4, 4]))
    #expect(r9)
    let r10 = out.keep(sequence: 5, bytes([5, 5]))
    #expect(r10)
    let r11 = out.keep(sequence: 6, bytes([6, 6]))
    #expect(r11)
    var first = bytes([0])
    out.activate(from: 5, after: &first)
    #expect(Array(first.readableBytesView) == [0, 5, 5, 6, 6])
    #expect(!out.isPending && out.byteCount == 0)
    // Another node's events: from its cut on, by incarnation; all of a node without one.
    var relayed = SubscriberOutput(bound: 100, cutOffAfter: .seconds(3), pending: true)
    for (source, sequence, byte) in [
      (nil, 1, 1), (UInt64(7), 40, 2), (nil, 2, 3), (UInt64(7), 41, 4), (UInt64(8), 3, 5),
      (UInt64(7), 39, 6),
    ] as [(UInt64?, UInt64, UInt8)] {
      let within = relayed.keep(sequence: sequence, from: source, bytes([byte]))
      #expect(within)
    }
    var head = bytes([0])
    relayed.activate(from: 2, cuts: [7: 41], after: &head)
    #expect(Array(head.readableBytesView) == [0, 3, 4, 5])
    var stuck = SubscriberOutput(bound: 3, cutOffAfter: .seconds(3), pending: true)
    let r12 = stuck.keep(sequence: 1, bytes([1, 1]))
    #expect(r12)
    let kept = stuck.keep(sequence: 2, bytes([2, 2]))
    #expect(!kept, "kept past its bound")
  }
}

@Suite("StreamPacer")
struct StreamPacerTests {
  @Test("Writes at once after the interval; gathers what comes sooner, due one interval on")
  func pacing() {
    var pacer = StreamPacer()
    let allocator = ByteBufferAllocator()
    let r13 = pacer.offer(allocator.buffer(bytes: [1]), now: at(10))
    #expect(r13 == .write)
    let r14 = pacer.offer(allocator.buffer(bytes: [2]), now: at(11))
    #expect(r14 == .gather(due: at(13)))
    let r15 = pacer.offer(allocator.buffer(bytes: [3]), now: at(12))
    #expect(r15 == .gathered)
    #expect(pacer.takeBatch().map { Array($0.readableBytesView) } == [2, 3])
    #expect(pacer.batch == nil)
    pacer.wrote(at: at(13))
    let r16 = pacer.offer(allocator.buffer(bytes: [4]), now: at(15))
    #expect(r16 == .gather(due: at(16)))
    _ = pacer.takeBatch()
    let r17 = pacer.offer(allocator.buffer(bytes: [5]), now: at(16))
    #expect(r17 == .write)
  }
}

@Suite("PacingSchedule")
struct PacingScheduleTests {
  @Test("One timer: armed for the earliest batch, re-armed for the next after it fires")
  func oneTimer() {
    var schedule = PacingSchedule<Int>()
    let r18 = schedule.schedule(1, at: at(5))
    #expect(r18 == at(5))
    let r19 = schedule.schedule(2, at: at(7))
    #expect(r19 == nil)  // the timer at 5 fires sooner
    let r20 = schedule.schedule(3, at: at(4))
    #expect(r20 == at(4))  // sooner: armed again
    let r21 = schedule.fired(at(5))
    #expect(!r21, "a replaced timer still counted")
    let r22 = schedule.fired(at(4))
    #expect(r22)
    var taken: [Int] = []
    let r23 = schedule.takeDue(now: at(5)) { taken.append($0) }
    #expect(r23 == at(7))
    #expect(taken == [1, 3])
    let r24 = schedule.takeDue(now: at(6)) { taken.append($0) }
    #expect(r24 == nil)  // armed for 7 already
    let r25 = schedule.fired(at(7))
    #expect(r25)
    let r26 = schedule.takeDue(now: at(7)) { taken.append($0) }
    #expect(r26 == nil)
    #expect(taken == [1, 3, 2] && schedule.due.isEmpty)
  }
}

@Suite("EventFraming")
struct EventFramingTests {
  @Test("Lines pass through; SSE frames are named by the kind, for every kind")
  func frames() {
    let line = Array(#"{"type":"tick"}"#.utf8) + [0x0A]
    for kind in ActivityEvent.Kind.allCases {
      var lines: [UInt8] = []
      var sse: [UInt8] = []
      line.withUnsafeBufferPointer { l in
        EventFraming.lines.frame(l, kind: kind) { lines += $0 }
        EventFraming.serverSentEvents.frame(l, kind: kind) { sse += $0 }
      }
      #expect(lines == line)
      let text = String(decoding: sse, as: UTF8.self)
      #expect(text == "event: \(kind.rawValue)\ndata: {\"type\":\"tick\"}\n\n")
      #expect(sse.count - line.count <= EventFraming.serverSentEvents.overhead)
    }
    #expect(
      String(decoding: EventFraming.sse("snapshot", Array("{}\n".utf8)), as: UTF8.self)
        == "event: snapshot\ndata: {}\n\n")
  }
}
