// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// Events as an `AsyncSequence`, through a bounded buffer.
///
/// Overflow policy: the buffer holds at most `capacity` events. A `tick` for an activity
/// whose previous tick is still waiting (with no lifecycle event of that activity after it)
/// replaces it in place, so a slow consumer sees each activity's latest value. When the buffer
/// is full, a tick with nothing to replace is dropped (counted in ``droppedTicks``); lifecycle
/// events (everything but `tick`) are never dropped and may exceed the bound.
///
/// One consumer at a time: a second task waiting in `next()` while another already waits is a
/// programming error and stops the process with a message saying so (two consumers would
/// each see an arbitrary half of the events). Iterating again after a first loop ended is
/// fine. A consumer whose task is cancelled gets `nil` from `next()` at once; events stay
/// buffered for the next consumer. The sequence ends when the loop shuts down.
public struct ActivityEventStream: AsyncSequence, Sendable {
  public typealias Element = ActivityEvent
  let buffer: EventStreamBuffer

  /// Ticks dropped because the buffer was full.
  public var droppedTicks: Int { buffer.state.withLock { $0.droppedTicks } }

  public struct AsyncIterator: AsyncIteratorProtocol {
    let buffer: EventStreamBuffer
    public mutating func next() async -> ActivityEvent? { await buffer.next() }
    public mutating func next(isolation actor: isolated (any Actor)?) async -> ActivityEvent? {
      await buffer.next()
    }
  }

  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(buffer: buffer) }
}

/// The shared state behind ``ActivityEventStream``.
final class EventStreamBuffer: Sendable {
  struct State {
    var events: [ActivityEvent] = []
    /// Index in `events` of the next event to hand out.
    var head = 0
    /// Absolute number of events removed from the front of `events`.
    var base = 0
    /// Absolute position of each activity's waiting tick.
    var pendingTick: [ActivityHandle: Int] = [:]
    /// The one consumer waiting in `next()`, with the token that tells its cancellation apart.
    var waiter: (token: UInt64, continuation: CheckedContinuation<ActivityEvent?, Never>)?
    var nextToken: UInt64 = 0
    var finished = false
    var droppedTicks = 0
  }

  let capacity: Int
  let state = Locked(State())

  init(capacity: Int) { self.capacity = capacity }

  /// Appends one wake's events under one lock (loop thread).
  func push(_ batch: [ActivityEvent]) {
    state.withLock { s in
      for e in batch {
        let waiting = s.events.count - s.head
        if e.kind == .tick {
          if let at = s.pendingTick[e.handle], at >= s.base + s.head {
            s.events[at - s.base] = e
            continue
          }
          if waiting >= capacity {
            s.droppedTicks += 1
            continue
          }
          s.pendingTick[e.handle] = s.base + s.events.count
        } else {
          s.pendingTick[e.handle] = nil
        }
        s.events.append(e)
      }
      if let w = s.waiter, s.head < s.events.count {
        s.waiter = nil
        w.continuation.resume(returning: Self.pop(&s))
      }
    }
  }

  private static func pop(_ s: inout State) -> ActivityEvent {
    let e = s.events[s.head]
    s.head += 1
    if s.head == s.events.count {
      s.base += s.events.count
      s.events.removeAll(keepingCapacity: true)
      s.head = 0
      s.pendingTick.removeAll(keepingCapacity: true)
    } else if s.head > 4096, s.head * 2 > s.events.count {
      s.events.removeFirst(s.head)
      s.base += s.head
      s.head = 0
    }
    return e
  }

  func finish() {
    state.withLock { s in
      s.finished = true
      if let w = s.waiter, s.head == s.events.count {
        s.waiter = nil
        w.continuation.resume(returning: nil)
      }
    }
  }

  func next() async -> ActivityEvent? {
    let token = state.withLock { s in
      s.nextToken &+= 1
      return s.nextToken
    }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { (c: CheckedContinuation<ActivityEvent?, Never>) in
        state.withLock { s in
          if s.head < s.events.count {
            c.resume(returning: Self.pop(&s))
          } else if s.finished || Task.isCancelled {
            // Checked under the lock: a cancellation that came before this registration
            // finds no waiter, so it is seen here instead.
            c.resume(returning: nil)
          } else {
            precondition(
              s.waiter == nil,
              "ActivityEventStream has one consumer: a second task called next() while another waits"
            )
            s.waiter = (token, c)
          }
        }
      }
    } onCancel: {
      state.withLock { s in
        if let w = s.waiter, w.token == token {
          s.waiter = nil
          w.continuation.resume(returning: nil)
        }
      }
    }
  }
}
