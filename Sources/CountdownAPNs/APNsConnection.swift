// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import NIOCore
import NIOHPACK
import NIOHTTP2

/// The requests of one HTTP/2 connection, as frames behind NIOHTTP2's connection handler
/// (which keeps the protocol's state: stream states, flow control, HPACK): each request is a
/// HEADERS and a DATA frame on a new stream id; its answer is the HEADERS (and DATA) that come
/// back on that id. A stream that closes without an answer (RST_STREAM, refused after GOAWAY,
/// the connection lost) fails its request.
///
/// Requests wait in one queue, in order, until the connection is up and while the gateway's
/// limit of concurrent streams is reached (its SETTINGS; 100 until they come, as NIOHTTP2
/// assumes): a stream id is taken only when the request goes out, so ids rise in the order the
/// requests were made and the gateway's answers close the oldest streams first. One timer
/// watches the oldest request: unanswered (or not sent) after the timeout, the connection is
/// given up (``onTimeout``).
final class APNsConnection: ChannelInboundHandler, @unchecked Sendable {
  // @unchecked Sendable: made on the client's event loop, then touched on its connection's
  // event loop (the same) only.
  typealias InboundIn = HTTP2Frame
  typealias OutboundOut = HTTP2Frame

  private struct Request {
    var headers: HPACKHeaders
    var body: [UInt8]
    var bodyLimit: Int
    var answer: APNsClient.Answer
    var deadline: NIODeadline
  }

  private struct Pending {
    var answer: APNsClient.Answer
    var bodyLimit: Int
    var response = APNsResponse(status: 0)
    var body: [UInt8] = []
  }

  private enum Phase {
    /// Not connected yet (the handler is made before its channel).
    case connecting
    case active
    /// GOAWAY came: what is in flight is answered, nothing new is sent.
    case goingAway
    case closed
  }

  private let requestTimeout: TimeAmount
  private var context: ChannelHandlerContext?
  private var phase = Phase.connecting
  /// Requests not yet on a stream, oldest first.
  private var queued = CircularBuffer<Request>()
  /// The gateway's limit of concurrent streams.
  private var maxStreams = 100
  private var nextStreamID: Int32 = 1
  private var pending: [HTTP2StreamID: Pending] = [:]
  /// Requests on streams in the order sent, with their deadlines (answered ones are skipped
  /// when met).
  private var deadlines = CircularBuffer<(stream: HTTP2StreamID, deadline: NIODeadline)>()
  private var timer: Scheduled<Void>?
  /// Bytes of answers taken since the connection's window was last given back.
  private var unacknowledged = 0
  var onGoAway: (() -> Void)?
  var onTimeout: (() -> Void)?

  private let eventLoop: EventLoop

  init(requestTimeout: TimeAmount, eventLoop: EventLoop) {
    self.requestTimeout = requestTimeout
    self.eventLoop = eventLoop
  }

  /// No stream id left for another request beside those queued (2^31 − 1 is the last).
  var isExhausted: Bool { Int(nextStreamID) + 2 * queued.count > Int(Int32.max) - 2 }

  /// The connection has closed (or the handler left it).
  var isClosed: Bool { phase == .closed }

  func handlerAdded(context: ChannelHandlerContext) { self.context = context }
  func handlerRemoved(context: ChannelHandlerContext) {
    self.context = nil
    failAll("the connection closed")
  }

  func send(
    headers: HPACKHeaders, body: [UInt8], bodyLimit: Int = 4096,
    _ answer: @escaping APNsClient.Answer
  ) {
    switch phase {
    case .closed, .goingAway:
      answer(.failure(.closed("the connection closed")))
      return
    case .connecting, .active:
      guard !isExhausted else {
        answer(.failure(.closed("the connection has no stream id left")))
        return
      }
    }
    queued.append(
      Request(
        headers: headers, body: body, bodyLimit: bodyLimit, answer: answer,
        deadline: .now() + requestTimeout))
    sendQueued()
    if timer == nil { arm() }
  }

  /// Puts queued requests on streams while the gateway's limit allows.
  private func sendQueued() {
    guard phase == .active, let context else { return }
    while pending.count < maxStreams, let r = queued.popFirst() {
      write(r, context)
    }
  }

  private func write(_ r: Request, _ context: ChannelHandlerContext) {
    let stream = HTTP2StreamID(nextStreamID)
    nextStreamID += 2
    pending[stream] = Pending(answer: r.answer, bodyLimit: r.bodyLimit)
    deadlines.append((stream, r.deadline))
    context.write(
      wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: r.headers)))),
      promise: nil)
    let sent = context.eventLoop.makePromise(of: Void.self)
    sent.futureResult.whenFailure { [self] error in
      finish(stream, .failure(.closed("the request could not be sent: \(error)")))
    }
    let data = HTTP2Frame.FramePayload.Data(
      data: .byteBuffer(context.channel.allocator.buffer(bytes: r.body)), endStream: true)
    context.write(
      wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(data))), promise: sent)
    // Each request flushed on its own (in order); `FlushPerTurn` below gives TLS one flush a turn.
    context.flush()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let frame = unwrapInboundIn(data)
    let stream = frame.streamID
    switch frame.payload {
    case .headers(let h):
      guard var p = pending[stream] else { break }
      if let s = h.headers.first(name: ":status"), let status = Int(s),
        p.response.status == 0 || (100..<200).contains(p.response.status)
      {
        p.response.status = status
      }
      if let id = h.headers.first(name: "apns-id") { p.response.apnsID = id }
      if let id = h.headers.first(name: "apns-channel-id") { p.response.channelID = id }
      pending[stream] = p
      if h.endStream { complete(stream) }
    case .data(let d):
      if case .byteBuffer(let b) = d.data {
        giveBack(b.readableBytes + (d.paddingBytes.map { $0 + 1 } ?? 0), context)
        if var p = pending[stream] {
          if p.body.count < p.bodyLimit {
            p.body += b.readableBytesView.prefix(p.bodyLimit - p.body.count)
          }
          pending[stream] = p
        }
      }
      if d.endStream { complete(stream) }
    case .rstStream(let code):
      finish(stream, .failure(.closed("the gateway reset the stream (\(code))")))
    case .settings(.settings(let settings)):
      for setting in settings where setting.parameter == .maxConcurrentStreams {
        maxStreams = setting.value
      }
      sendQueued()
    case .goAway:
      // NIOHTTP2 closes the streams the gateway will not answer (each fails below, as its
      // StreamClosedEvent comes); what was not sent fails now; new requests go to a new
      // connection.
      if phase == .active { phase = .goingAway }
      let refused = queued
      queued.removeAll()
      for r in refused { r.answer(.failure(.closed("the gateway sent GOAWAY"))) }
      onGoAway?()
      onGoAway = nil
    default:
      break
    }
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if let closed = event as? StreamClosedEvent {
      finish(
        closed.streamID,
        .failure(
          .closed(
            "the stream closed before an answer (\(closed.reason.map { "\($0)" } ?? "no error"))")
        ))
    }
    context.fireUserInboundEventTriggered(event)
  }

  func channelActive(context: ChannelHandlerContext) {
    if phase == .connecting { phase = .active }
    context.fireChannelActive()
    sendQueued()
  }

  func channelInactive(context: ChannelHandlerContext) {
    failAll("the connection closed")
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    if let e = error as? NIOHTTP2Errors.StreamError {
      finish(e.streamID, .failure(.closed("\(e.baseError)")))
      return
    }
    failAll("\(error)")
    context.close(promise: nil)
  }

  /// Gives the connection's window back to the gateway once 32 KiB of answers are read
  /// (without a channel per stream, the connection's window is this handler's to manage; each
  /// stream's own window is far larger than an answer).
  private func giveBack(_ bytes: Int, _ context: ChannelHandlerContext) {
    unacknowledged += bytes
    guard unacknowledged >= 32_768 else { return }
    let update = HTTP2Frame(
      streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledged))
    unacknowledged = 0
    context.writeAndFlush(wrapOutboundOut(update), promise: nil)
  }

  private func complete(_ stream: HTTP2StreamID) {
    guard let p = pending[stream] else { return }
    guard p.response.status >= 200 else {
      finish(stream, .failure(.closed("the gateway's answer had no status")))
      return
    }
    var response = p.response
    response.reason = Self.reason(p.body)
    response.body = p.body
    finish(stream, .success(response))
  }

  private func finish(_ stream: HTTP2StreamID, _ result: Result<APNsResponse, APNsTransportError>) {
    guard let p = pending.removeValue(forKey: stream) else { return }
    p.answer(result)
    sendQueued()
  }

  /// Fails every request, in the order made, and takes no more: those in flight as closed,
  /// those never sent as `reason` (a connection that never came up: why).
  func failAll(_ reason: String) {
    let neverUp = phase == .connecting
    phase = .closed
    timer?.cancel()
    timer = nil
    let all = pending
    pending = [:]
    deadlines.removeAll()
    let waiting = queued
    queued.removeAll()
    for (_, p) in all.sorted(by: { $0.key < $1.key }) { p.answer(.failure(.closed(reason))) }
    for r in waiting {
      r.answer(.failure(neverUp ? .connectionFailed(reason) : .closed(reason)))
    }
  }

  /// Sets the timer for the oldest request: the oldest on a stream or, if older, the first
  /// still queued.
  private func arm() {
    while let first = deadlines.first, pending[first.stream] == nil { deadlines.removeFirst() }
    let oldest: NIODeadline
    switch (deadlines.first?.deadline, queued.first?.deadline) {
    case (let a?, let b?): oldest = min(a, b)
    case (let a?, nil), (nil, let a?): oldest = a
    case (nil, nil):
      timer = nil
      return
    }
    timer = eventLoop.scheduleTask(deadline: oldest) { [self] in
      timer = nil
      while let f = deadlines.first, pending[f.stream] == nil { deadlines.removeFirst() }
      let now = NIODeadline.now()
      if let f = deadlines.first, f.deadline <= now {
        finish(f.stream, .failure(.timedOut))
        onTimeout?()
        return
      }
      if let q = queued.first, q.deadline <= now {
        queued.removeFirst().answer(.failure(.timedOut))
        onTimeout?()
        return
      }
      arm()
    }
  }

  /// `reason` of a JSON body `{"reason":"…"}`; nil for any other body.
  static func reason(_ body: [UInt8]) -> String? {
    guard !body.isEmpty, let text = String(validating: body, as: UTF8.self),
      case .object(let o)? = try? JSONParser.parse(text), case .string(let r)? = o["reason"]
    else { return nil }
    return r
  }
}
