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
  typealias Call = CheckedContinuation<ServiceReply, any Error>

  private var calls = CallQueue<Call>()
  private var context: ChannelHandlerContext?
  /// Whether a flush is due at the end of this turn of the loop: calls made together go out
  /// in one write to the socket.
  private var flushDue = false
  private let endpoint: CountdownEndpoint

  init(endpoint: CountdownEndpoint) {
    self.endpoint = endpoint
  }

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    self.context = nil
    fail(CountdownError(.connectionClosed, "the connection to \(endpoint) was closed"))
  }

  /// Sends `line` (a request and its newline) for `call`, numbered `id`.
  func send(_ line: ByteBuffer, id: UInt64, _ call: Call) {
    guard let context else {
      call.resume(
        throwing: calls.closedWith
          ?? CountdownError(.connectionClosed, "the connection to \(endpoint) was closed"))
      return
    }
    switch calls.enqueue(call, id: id) {
    case .fail(let call, let error):
      call.resume(throwing: error)
    case .send:
      context.write(wrapOutboundOut(line), promise: nil)
      if !flushDue {
        flushDue = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute { bound.value.flushNow() }
      }
    }
  }

  private func flushNow() {
    flushDue = false
    context?.flush()
  }

  /// The task of call `id` was cancelled.
  func cancel(id: UInt64) {
    calls.cancel(id: id)?.resume(throwing: CancellationError())
  }

  /// Closes the connection; waiting calls fail with `error`.
  func close(_ error: CountdownError) {
    fail(error)
    context?.close(promise: nil)
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let line = unwrapInboundIn(data)
    let message: ServiceMessage
    do {
      message = try line.withUnsafeReadableBytes { raw throws(ServiceMessageError) in
        try ServiceMessage(line: raw.bindMemory(to: UInt8.self))
      }
    } catch {
      close(
        CountdownError(
          .unexpectedReply,
          "\(endpoint) sent a line that is not a reply or an event (\(error.message)); the connection is closed"
        ))
      return
    }
    switch message {
    case .reply(let reply):
      switch calls.reply() {
      case .answer(let call): call.resume(returning: reply)
      case .drop: break
      case .unexpected(let error): close(error)
      }
    case .event(let event):
      // A connection error that answers no request (`unauthorized`, `slowConsumer`): the
      // server closes the connection after it, and it is what the waiting calls hear.
      if let failure = event.failure {
        close(CountdownError(CountdownError.Code(rawValue: failure.code), failure.message))
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
    for call in calls.close(error) { call.resume(throwing: error) }
  }
}
