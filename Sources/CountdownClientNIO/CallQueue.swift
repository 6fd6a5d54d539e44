// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// The calls of one connection waiting for their replies, as a pure state machine: the server
/// answers every request once and in request order (docs/protocol.md), so the first reply
/// that comes is the first waiting call's. Each step returns what the caller must do; nothing
/// here touches a socket or resumes a task, so every order of sends, replies, cancellations
/// and closes is a unit test.
///
/// A call cancelled while it waits keeps its place (its reply is still coming, and must not
/// be taken for the next call's): it is answered at once with the cancellation and its reply
/// is dropped when it arrives.
struct CallQueue<Call> {
  /// What to do with a call handed to ``enqueue(_:id:)``.
  enum Enqueued {
    /// Write its request: it waits in the queue.
    case send
    /// The connection is closed: fail the call with this error; nothing is written.
    case fail(Call, CountdownError)
  }

  /// What to do with a reply that came.
  enum Replied {
    /// Answer this call with the reply.
    case answer(Call)
    /// The call it answers was cancelled: drop the reply.
    case drop
    /// No call waits: the server broke the protocol. Close the connection with this error
    /// (``close(_:)`` then fails the rest).
    case unexpected(CountdownError)
  }

  private var waiting: [(id: UInt64, call: Call?)] = []
  /// Index of the first entry still waiting (the array is compacted now and then, not on
  /// every reply).
  private var head = 0
  private(set) var closedWith: CountdownError?

  /// Calls waiting for a reply (cancelled ones included: their replies are still to come).
  var count: Int { waiting.count - head }

  /// A call whose request is about to be written.
  mutating func enqueue(_ call: Call, id: UInt64) -> Enqueued {
    if let closedWith { return .fail(call, closedWith) }
    waiting.append((id, call))
    return .send
  }

  /// The reply to the first waiting call came.
  mutating func reply() -> Replied {
    guard head < waiting.count else {
      return .unexpected(
        CountdownError(
          .unexpectedReply,
          "the server sent a reply when no request was waiting for one; the connection is closed"))
    }
    let call = waiting[head].call
    waiting[head].call = nil
    head += 1
    if head == waiting.count {
      waiting.removeAll(keepingCapacity: true)
      head = 0
    } else if head >= 1024 && head * 2 >= waiting.count {
      waiting.removeFirst(head)
      head = 0
    }
    return call.map(Replied.answer) ?? .drop
  }

  /// The task of call `id` was cancelled: the call to answer with the cancellation, or nil if
  /// it was answered already.
  mutating func cancel(id: UInt64) -> Call? {
    // Rare (a cancelled task), so a scan: ids are taken before their calls are staged, so
    // two calls made at once may wait in either order.
    guard let lo = waiting[head...].firstIndex(where: { $0.id == id }),
      let call = waiting[lo].call
    else { return nil }
    waiting[lo].call = nil
    return call
  }

  /// The connection closed (or is being closed) with `error`: every call still waiting, to
  /// fail with it. Later calls fail at once.
  mutating func close(_ error: CountdownError) -> [Call] {
    if closedWith == nil { closedWith = error }
    let calls = waiting[head...].compactMap(\.call)
    waiting.removeAll()
    head = 0
    return calls
  }
}
