import Countdown
import CountdownLoop
import CountdownProtocol
import NIOCore

#if canImport(Glibc)
  import Glibc
#endif

/// One client connection: frames lines, decodes requests, sends each read's requests to the
/// loop as one batch, and writes the replies in request order.
///
/// Reading stops while the socket is not writable (a client that does not read its replies
/// is not read from either), so nothing a client does makes the server buffer without bound.
final class ConnectionHandler: ChannelDuplexHandler {
  typealias InboundIn = ByteBuffer
  typealias OutboundIn = ByteBuffer
  typealias OutboundOut = ByteBuffer

  let core: ServerCore
  /// Whether the first request must be `auth` with the server's token.
  private var needsAuth: Bool
  private var partial: [UInt8] = []
  /// Set after a line went over the limit, until its newline.
  private var skipping = false
  private var batch: [BatchItem] = []
  /// Batches sent to the loop and not answered yet.
  private var inFlight = 0
  /// Set after `unauthorized`: the connection closes once the replies are out.
  private var closing = false
  private var readPending = false
  private var writer: ReplyWriter

  init(core: ServerCore, needsAuth: Bool) {
    self.core = core
    self.needsAuth = needsAuth
    writer = ReplyWriter(formatter: core.formatter)
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard !closing else { return }
    let buffer = unwrapInboundIn(data)
    let limit = core.options.maxLineBytes
    buffer.withUnsafeReadableBytes { raw in
      let bytes = raw.bindMemory(to: UInt8.self)
      var start = 0
      var i = 0
      while i < bytes.count {
        if bytes[i] == 0x0A {
          let piece = UnsafeBufferPointer(rebasing: bytes[start..<i])
          if skipping {
            skipping = false
          } else if partial.isEmpty {
            line(piece)
          } else if partial.count + piece.count > limit {
            tooLong()
            partial.removeAll(keepingCapacity: true)
          } else {
            partial.append(contentsOf: piece)
            partial.withUnsafeBufferPointer { line($0) }
            partial.removeAll(keepingCapacity: true)
          }
          start = i + 1
          if closing { return }
        }
        i += 1
      }
      // The rest waits for its newline, unless it is already too long.
      if !skipping, start < bytes.count {
        if partial.count + bytes.count - start > limit {
          tooLong()
          partial.removeAll(keepingCapacity: true)
          skipping = true
        } else {
          partial.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
      }
    }
  }

  private func tooLong() {
    batch.append(
      BatchItem(
        rid: nil,
        request: .failure(
          CountdownError(
            .lineTooLong,
            "a request line is over \(core.options.maxLineBytes) bytes; it was skipped up to its newline"
          ))))
  }

  /// One request line (no newline).
  private func line(_ raw: UnsafeBufferPointer<UInt8>) {
    var bytes = raw
    if let last = bytes.last, last == 0x0D {
      bytes = UnsafeBufferPointer(rebasing: bytes.dropLast())
    }
    if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }  // blank: not a request
    let decoded = ServerRequest.decode(bytes)
    if needsAuth {
      if case .success(.auth(let token)) = decoded.request, token == core.options.token {
        needsAuth = false
      } else {
        closing = true
        batch.append(
          BatchItem(
            rid: decoded.rid,
            request: .failure(
              CountdownError(
                .unauthorized,
                "this connection must first send {\"op\":\"auth\",\"token\":…} with the server's token"
              ))))
        return
      }
    }
    batch.append(BatchItem(rid: decoded.rid, request: decoded.request))
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    guard !batch.isEmpty else { return }
    let items = batch
    batch = []
    inFlight += 1
    let channel = context.channel
    let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
    let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
    let hub = core.hub
    let core = self.core
    core.loop.submit(
      { engine in engine.run(items) },
      completion: { result in
        // On the loop thread: the replies go to this connection's event loop first, then the
        // subscriptions to the hub, so that they are in place before this wake's events. With
        // a state file, both wait for the wake's commit.
        core.release(result) { result in
          Self.release(result, items, handler, bound, hub: hub, channel: channel)
        }
      })
  }

  /// Hands a batch's replies to the connection and its subscription changes to the hub.
  private static func release(
    _ result: Result<BatchResult, CountdownError>, _ items: [BatchItem],
    _ handler: NIOLoopBound<ConnectionHandler>, _ bound: NIOLoopBound<ChannelHandlerContext>,
    hub: Hub, channel: Channel
  ) {
    channel.eventLoop.execute { handler.value.answer(result, items, bound.value) }
    guard case .success(let r) = result else { return }
    for item in r.items {
      switch item.outcome {
      case .subscribed(_, let from, let ids, let ticks):
        hub.eventLoop.execute {
          hub.subscribe(ChannelSink(channel), ids: ids, ticks: ticks, fromSequence: from)
        }
      case .unsubscribed:
        hub.eventLoop.execute { hub.unsubscribe(ObjectIdentifier(channel)) }
      default: break
      }
    }
  }

  private func answer(
    _ result: Result<BatchResult, CountdownError>, _ items: [BatchItem],
    _ context: ChannelHandlerContext
  ) {
    inFlight -= 1
    switch result {
    case .success(let r):
      for item in r.items {
        writer.reply(item.rid, item.outcome, at: r.at)
        core.metrics.answered(item.outcome)
      }
    case .failure(let e):
      let now = wallClockNow()
      for item in items { writer.failure(item.rid, e, at: now) }
    }
    let channel = context.channel
    context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(bytes: writer.take())))
      .whenComplete { [closing, inFlight] _ in
        if closing && inFlight == 0 { channel.close(promise: nil) }
      }
  }

  // MARK: - Backpressure

  func read(context: ChannelHandlerContext) {
    if context.channel.isWritable {
      context.read()
    } else {
      readPending = true
    }
  }

  func channelWritabilityChanged(context: ChannelHandlerContext) {
    if context.channel.isWritable {
      let channel = context.channel
      let hub = core.hub
      hub.eventLoop.execute { hub.writable(ObjectIdentifier(channel)) }
      if readPending {
        readPending = false
        context.read()
      }
    }
    context.fireChannelWritabilityChanged()
  }

  func channelInactive(context: ChannelHandlerContext) {
    let channel = context.channel
    let hub = core.hub
    hub.eventLoop.execute { hub.unsubscribe(ObjectIdentifier(channel)) }
    core.connectionClosed(channel)
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    // One line per connection error, not one per request. A client that closes with replies
    // or events still unread resets the connection: that is how clients leave, not a fault.
    if let io = error as? IOError, io.errnoCode == ECONNRESET || io.errnoCode == EPIPE {
      core.logger.debug("connection reset by the client")
    } else {
      core.logger.warning("connection closed after an error: \(error)")
    }
    context.close(promise: nil)
  }
}

/// Answers a connection past `maxConnections` with `limitReached` and closes it.
final class RefusingHandler: ChannelInboundHandler {
  typealias InboundIn = ByteBuffer
  typealias OutboundOut = ByteBuffer
  let message: [UInt8]

  init(message: [UInt8]) { self.message = message }

  func channelActive(context: ChannelHandlerContext) {
    let channel = context.channel
    context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(bytes: message)))
      .whenComplete { _ in channel.close(promise: nil) }
  }
}
