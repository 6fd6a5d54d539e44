// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownProtocol
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTPTypes

/// When an HTTP connection has waited too long for its client: the decisions alone, on a clock
/// given to each call (nanoseconds), returning what to do; tested on a virtual clock.
///
/// - A request head must be complete within `headTimeout` of the connection's start or of the
///   previous response's end (a head sent a byte at a time, slowloris, and an idle keep-alive
///   connection both end there).
/// - A request's body must be complete within `bodyTimeout` of its head (an unterminated
///   chunked body, a body shorter than its `Content-Length`).
/// - While a response is being written (an event stream for hours), nothing is timed: its own
///   backpressure and the hub's cut-off govern it.
struct HTTPConnectionTimer: Equatable {
  let headTimeout: Int64
  let bodyTimeout: Int64
  /// Heads read whose responses have not ended.
  private(set) var pending = 0
  /// Whether a request's body is being read.
  private(set) var readingBody = false
  /// When the connection is closed unless the awaited part comes first; nil when nothing is
  /// awaited from the client.
  private(set) var deadline: Int64?

  init(headTimeout: Int64, bodyTimeout: Int64) {
    self.headTimeout = headTimeout
    self.bodyTimeout = bodyTimeout
  }

  enum Action: Equatable {
    /// Make sure a timer fires at this instant (one already set for it may stay).
    case arm(Int64)
    /// No timer is needed.
    case disarm
    /// Close the connection: the client took too long for `what`.
    case close(what: String)
    case none
  }

  /// The connection is open.
  mutating func opened(now: Int64) -> Action {
    deadline = now + headTimeout
    return .arm(deadline!)
  }

  /// A request head was read.
  mutating func readHead(now: Int64) -> Action {
    pending += 1
    readingBody = true
    deadline = now + bodyTimeout
    return .arm(deadline!)
  }

  /// A request's end was read.
  mutating func readEnd(now: Int64) -> Action {
    readingBody = false
    deadline = nil
    return .disarm
  }

  /// A response's end was written.
  mutating func wroteEnd(now: Int64) -> Action {
    pending = max(0, pending - 1)
    guard pending == 0, !readingBody else { return .none }
    deadline = now + headTimeout
    return .arm(deadline!)
  }

  /// A timer fired.
  mutating func fired(now: Int64) -> Action {
    guard let d = deadline else { return .disarm }
    guard now >= d else { return .arm(d) }
    deadline = nil
    return .close(what: readingBody ? "a request body" : "a request head")
  }
}

/// Sits after HTTP decoding on each HTTP connection: counts the connection against
/// `--max-connections` (with the socket's and TCP's), refuses one over the limit and a body
/// whose `Content-Length` is over the limit from the head alone, and closes a connection
/// whose client is too slow (``HTTPConnectionTimer``).
final class HTTPConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
  typealias InboundIn = HTTPRequestPart
  typealias InboundOut = HTTPRequestPart
  typealias OutboundIn = HTTPResponsePart
  typealias OutboundOut = HTTPResponsePart

  private let core: ServerCore
  private var timer: HTTPConnectionTimer
  private var scheduled: Scheduled<Void>?
  private var scheduledAt: Int64?
  private var counted = false
  /// Set when this connection is refused: the rest of what it sends is dropped.
  private var refusing = false
  /// An uncounted connection (over the limit) waiting for its head, to answer it 429.
  private var waitingRefusal = false

  init(core: ServerCore) {
    self.core = core
    timer = HTTPConnectionTimer(
      headTimeout: core.options.headerTimeoutMilliseconds * 1_000_000,
      bodyTimeout: core.options.bodyTimeoutMilliseconds * 1_000_000)
  }

  private static func now() -> Int64 { Int64(NIODeadline.now().uptimeNanoseconds) }

  func handlerAdded(context: ChannelHandlerContext) {
    counted = core.connectionOpened(context.channel)
    if !counted {
      // Over the limit: a few wait (a second at most) to be answered 429; the rest are
      // closed at once, so that idle connections cannot take every descriptor.
      guard core.refusedMayWait() else {
        refusing = true
        core.metrics.refused(.limitReached)
        context.close(promise: nil)
        return
      }
      waitingRefusal = true
      let channel = context.channel
      scheduled = context.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
      return
    }
    perform(timer.opened(now: Self.now()), context)
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    scheduled?.cancel()
    scheduled = nil
    if counted { core.connectionClosed(context.channel) }
    counted = false
    if waitingRefusal { core.refusedDone() }
    waitingRefusal = false
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    if refusing { return }
    let part = unwrapInboundIn(data)
    switch part {
    case .head(let head):
      if !counted {
        refuse(
          context, status: .tooManyRequests,
          CountdownError(
            .limitReached,
            "the server has \(core.connectionLimit) connections, its limit (--max-connections); close one or try again later"
          ))
        return
      }
      if let length = head.headerFields[.contentLength].flatMap({ Int($0) }),
        length > HTTPRoutes.maxBodyBytes
      {
        refuse(
          context, status: .contentTooLarge,
          CountdownError(
            .attributesTooLarge,
            "the request body would be \(length) bytes (Content-Length), over the limit of \(HTTPRoutes.maxBodyBytes) (64 KiB)"
          ))
        return
      }
      perform(timer.readHead(now: Self.now()), context)
    case .body: break
    case .end: perform(timer.readEnd(now: Self.now()), context)
    }
    context.fireChannelRead(data)
  }

  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    if case .end = unwrapOutboundIn(data) {
      perform(timer.wroteEnd(now: Self.now()), context)
    }
    context.write(data, promise: promise)
  }

  /// Answers `error` with `status` and closes, reading nothing more.
  private func refuse(
    _ context: ChannelHandlerContext, status: HTTPResponse.Status, _ error: CountdownError
  ) {
    refusing = true
    scheduled?.cancel()
    scheduled = nil
    core.metrics.refused(error.code)
    let body = HTTPRoutes.errorBody(error)
    var head = HTTPResponse(status: status)
    head.headerFields[.contentType] = "application/json"
    head.headerFields[.contentLength] = String(body.count)
    head.headerFields[.connection] = "close"
    context.write(wrapOutboundOut(.head(head)), promise: nil)
    context.write(
      wrapOutboundOut(.body(context.channel.allocator.buffer(bytes: body))), promise: nil)
    let channel = context.channel
    context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
      channel.close(promise: nil)
    }
  }

  private func perform(_ action: HTTPConnectionTimer.Action, _ context: ChannelHandlerContext) {
    switch action {
    case .arm(let at):
      if scheduledAt == at, scheduled != nil { return }
      scheduled?.cancel()
      scheduledAt = at
      let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
      scheduled = context.eventLoop.scheduleTask(
        deadline: NIODeadline.uptimeNanoseconds(UInt64(max(0, at)))
      ) {
        let (handler, context) = bound.value
        handler.scheduled = nil
        handler.scheduledAt = nil
        handler.perform(handler.timer.fired(now: Self.now()), context)
      }
    case .disarm:
      scheduled?.cancel()
      scheduled = nil
      scheduledAt = nil
    case .close(let what):
      core.logger.debug("HTTP connection closed: the client took too long to send \(what)")
      core.metrics.timedOut()
      context.close(promise: nil)
    case .none: break
    }
  }
}
