// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import NIOCore

/// The request connection's handler, on its event loop: writes each call's line, hands each
/// reply line to the call ``CallQueue`` says it answers, and fails every waiting call when
/// the connection goes. Lines come framed (NIOExtras' `LineBasedFrameDecoder` before it).
final class ReplyHandler: ChannelInboundHandler, RemovableChannelHandler {
  typealias InboundIn = ByteBuffer
  typealias OutboundOut = ByteBuffer
  private var calls = CallQueue<PendingCall>()
  private var context: ChannelHandlerContext?
  private let endpoint: CountdownEndpoint

  init(endpoint: CountdownEndpoint) {
    self.endpoint = endpoint
  }

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    self.context = nil
    fail(closedError())
  }

  /// Writes the requests of `staged` (each line with its newline) in one buffer, flushed
  /// once, each call waiting for its reply (a batch, for each of its own) in turn.
  func send(_ staged: [StagedCalls.Item]) {
    guard let context else {
      let error = closedError()
      for item in staged { item.waiter.fail(error) }
      return
    }
    var out = context.channel.allocator.buffer(
      capacity: staged.reduce(0) { $0 + $1.bytes.count })
    for item in staged {
      if let error = calls.closedWith {
        item.waiter.fail(error)
        continue
      }
      // Open: each enqueue is a `.send`.
      switch item.waiter {
      case .one(let c): _ = calls.enqueue(.one(c), id: item.id)
      case .many(let c):
        let batch = BatchReplies(count: item.count, c)
        for k in 0..<item.count { _ = calls.enqueue(.part(batch, k), id: item.id + UInt64(k)) }
      }
      out.writeBytes(item.bytes)
    }
    if out.readableBytes > 0 { context.writeAndFlush(wrapOutboundOut(out), promise: nil) }
  }

  private func closedError() -> CountdownError {
    calls.closedWith
      ?? CountdownError(.connectionClosed, "the connection to \(endpoint) was closed")
  }

  /// The task of the call numbered `id` (a batch: `id` to `id + count - 1`) was cancelled.
  func cancel(id: UInt64, count: Int = 1) {
    for k in 0..<count {
      calls.cancel(id: id + UInt64(k))?.fail(CancellationError())
    }
  }

  /// Closes the connection; waiting calls fail with `error`.
  func close(_ error: CountdownError) {
    fail(error)
    context?.close(promise: nil)
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let message: ServiceMessage
    do {
      message = try ServiceMessage(unwrapInboundIn(data), from: endpoint)
    } catch {
      close(error)
      return
    }
    switch message {
    case .reply(let reply):
      switch calls.reply() {
      case .answer(let call): call.answer(reply)
      case .drop: break
      case .unexpected(let error): close(error)
      }
    case .event(let event):
      // A connection error that answers no request (`unauthorized`, `slowConsumer`): the
      // server closes the connection after it, and it is what the waiting calls hear.
      if let failure = event.failure {
        close(failure.error)
      }
    // Events of a subscription made with `request` are not this connection's to keep:
    // ``CountdownConnection/subscribe(ids:ticks:group:)`` has its own connection.
    }
  }

  func channelInactive(context: ChannelHandlerContext) {
    fail(CountdownError(.connectionClosed, "\(endpoint) closed the connection"))
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    close(CountdownError(.connectionClosed, "the connection to \(endpoint) failed: \(error)"))
  }

  private func fail(_ error: CountdownError) {
    for call in calls.close(error) { call.fail(error) }
  }
}

/// A call waiting in ``CallQueue``: a single request's, or one reply of a batch.
enum PendingCall {
  case one(CheckedContinuation<ServiceReply, any Error>)
  case part(BatchReplies, Int)

  func answer(_ reply: ServiceReply) {
    switch self {
    case .one(let c): c.resume(returning: reply)
    case .part(let batch, let k): batch.answer(k, reply)
    }
  }

  func fail(_ error: any Error) {
    switch self {
    case .one(let c): c.resume(throwing: error)
    case .part(let batch, _): batch.fail(error)
    }
  }
}

/// The replies of a batch sent together, gathered on the event loop until the last; the
/// batch's task is resumed once, with all of them or with the first failure.
final class BatchReplies {
  private var replies: [ServiceReply] = []
  private let count: Int
  private var continuation: CheckedContinuation<[ServiceReply], any Error>?

  init(count: Int, _ continuation: CheckedContinuation<[ServiceReply], any Error>) {
    self.count = count
    replies.reserveCapacity(count)
    self.continuation = continuation
  }

  /// Reply `k`: they come in order (``CallQueue`` hands them out so).
  func answer(_ k: Int, _ reply: ServiceReply) {
    guard continuation != nil, k == replies.count else { return }
    replies.append(reply)
    if replies.count == count, let c = continuation {
      continuation = nil
      c.resume(returning: replies)
      replies = []
    }
  }

  func fail(_ error: any Error) {
    guard let c = continuation else { return }
    continuation = nil
    replies = []
    c.resume(throwing: error)
  }
}
