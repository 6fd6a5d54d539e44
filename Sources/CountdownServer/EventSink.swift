// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Where a subscriber's output goes. Used on the hub's event loop only.
protocol EventSink: AnyObject {
  var key: ObjectIdentifier { get }
  var framing: EventFraming { get }
  /// Whether more may be written now; when it becomes true again, the owner calls
  /// ``Hub/writable(_:)``.
  var isWritable: Bool { get }
  var allocator: ByteBufferAllocator { get }
  func write(_ buffer: ByteBuffer)
  /// Writes `last` (if any, and if it can) and closes.
  func close(after last: ByteBuffer?)
  /// Bytes written to the connection and not yet taken by its socket (the channel's
  /// `bufferedWritableBytes`), for the output budget (``Hub``).
  func unwrittenBytes() -> EventLoopFuture<Int>
}

/// A socket connection's subscription (docs/protocol.md, `subscribe`).
final class ChannelSink: EventSink {
  let channel: Channel
  init(_ channel: Channel) { self.channel = channel }
  var key: ObjectIdentifier { ObjectIdentifier(channel) }
  var framing: EventFraming { .lines }
  var isWritable: Bool { channel.isWritable }
  var allocator: ByteBufferAllocator { channel.allocator }
  func write(_ buffer: ByteBuffer) { channel.writeAndFlush(buffer, promise: nil) }
  func unwrittenBytes() -> EventLoopFuture<Int> { channel.getOption(.bufferedWritableBytes) }

  func close(after last: ByteBuffer?) {
    let channel = self.channel
    if let last {
      channel.writeAndFlush(last).whenComplete { _ in channel.close(promise: nil) }
    }
    // Close even if the last bytes cannot be written (the socket is full).
    channel.eventLoop.scheduleTask(in: .milliseconds(100)) { channel.close(promise: nil) }
  }
}

/// An HTTP event stream's end of the hub: the hub writes each wake's SSE frames straight to
/// the connection as HTTP body parts, on the connection's event loop, as it writes a socket
/// subscriber's lines; the response body's task only waits for the stream to end. (Handing
/// each wake to that task and on through Hummingbird's body writer cost two thread hops per
/// wake and client.) The connection's own outbound buffer is the backpressure: while it is
/// over NIO's high-water mark the sink is not writable and the hub keeps (and coalesces) the
/// events itself, exactly as for a socket subscriber.
final class StreamSink: EventSink, Sendable {
  private let hub: Hub
  private let channel: any Channel
  private let closed = Atomic<Bool>(false)
  /// The body task's wait for the end of the stream, and whether it has ended.
  private let end = Locked<(waiter: CheckedContinuation<Void, Never>?, ended: Bool)>(
    (nil, false))

  init(hub: Hub, channel: any Channel) {
    self.hub = hub
    self.channel = channel
    let key = ObjectIdentifier(self)
    // Tell the hub when the connection can take more again.
    channel.eventLoop.execute {
      try? channel.pipeline.syncOperations.addHandler(
        WritabilityRelay(hub: hub, key: key), position: .first)
    }
    channel.closeFuture.whenComplete { [weak self] _ in self?.ended() }
  }

  var key: ObjectIdentifier { ObjectIdentifier(self) }
  var framing: EventFraming { .serverSentEvents }
  var isWritable: Bool { channel.isWritable }
  var isClosed: Bool { closed.load(ordering: .relaxed) }
  var allocator: ByteBufferAllocator { channel.allocator }

  func write(_ buffer: ByteBuffer) {
    channel.writeAndFlush(HTTPResponsePart.body(buffer), promise: nil)
  }

  func unwrittenBytes() -> EventLoopFuture<Int> { channel.getOption(.bufferedWritableBytes) }

  /// Ends the stream after `last`; the connection is closed 100 ms later (a client that does
  /// not read would keep the response from finishing).
  func close(after last: ByteBuffer?) {
    if let last { write(last) }
    closed.store(true, ordering: .relaxed)
    ended()
    let channel = self.channel
    channel.eventLoop.scheduleTask(in: .milliseconds(100)) { channel.close(promise: nil) }
  }

  /// Runs `start`, then waits until the stream is closed or the connection is gone.
  func run(_ start: () -> Void) async {
    start()
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
      let done = end.withLock { e in
        if e.ended { return true }
        e.waiter = c
        return false
      }
      if done { c.resume() }
    }
  }

  private func ended() {
    let waiter = end.withLock { e in
      e.ended = true
      defer { e.waiter = nil }
      return e.waiter
    }
    waiter?.resume()
  }
}

/// Sits first in an event stream's pipeline and tells the hub when the connection becomes
/// writable again, so that what the hub kept meanwhile goes out.
private final class WritabilityRelay: ChannelInboundHandler, Sendable {
  typealias InboundIn = NIOAny
  let hub: Hub
  let key: ObjectIdentifier

  init(hub: Hub, key: ObjectIdentifier) {
    self.hub = hub
    self.key = key
  }

  func channelWritabilityChanged(context: ChannelHandlerContext) {
    if context.channel.isWritable {
      let hub = self.hub
      let key = self.key
      hub.eventLoop.execute { hub.writable(key) }
    }
    context.fireChannelWritabilityChanged()
  }
}
