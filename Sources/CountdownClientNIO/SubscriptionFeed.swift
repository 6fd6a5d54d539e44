// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import NIOCore

/// One connection of a ``CountdownSubscription``: the lines it reads, decoded, as an
/// asynchronous sequence that reads from the socket only while its consumer keeps up (NIO's
/// `NIOThrowingAsyncSequenceProducer`, with a high and a low watermark).
struct SubscriptionFeed: Sendable {
  typealias Strategy = NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark
  typealias Messages = NIOThrowingAsyncSequenceProducer<
    ServiceMessage, any Error, Strategy, Delegate
  >

  let channel: any Channel
  let messages: Messages

  /// Asks the handler for more, and closes the connection once the consumer is gone.
  struct Delegate: NIOAsyncSequenceProducerDelegate {
    let handler: NIOLoopBound<FeedHandler>
    let channel: any Channel

    func produceMore() {
      let handler = self.handler
      handler.eventLoop.execute { handler.value.produceMore() }
    }

    func didTerminate() {
      channel.close(promise: nil)
    }
  }

  static func open(to endpoint: CountdownEndpoint, group: any EventLoopGroup) async throws
    -> SubscriptionFeed
  {
    let (channel, messages) = try await ClientChannel.make(to: endpoint, group: group) {
      channel in
      let handler = FeedHandler(endpoint: endpoint)
      let produced = Messages.makeSequence(
        backPressureStrategy: Strategy(lowWatermark: 256, highWatermark: 1024),
        finishOnDeinit: true,
        delegate: Delegate(
          handler: NIOLoopBound(handler, eventLoop: channel.eventLoop), channel: channel))
      handler.source = produced.source
      try channel.syncOptions?.setOption(.autoRead, value: false)
      try channel.pipeline.syncOperations.addHandler(handler)
      return produced.sequence
    }.get()
    return SubscriptionFeed(channel: channel, messages: messages)
  }

  /// Writes request lines (each with its newline) and flushes them.
  func send(_ lines: [UInt8]) async throws {
    try await channel.writeAndFlush(channel.allocator.buffer(bytes: lines))
  }
}

/// Reads a subscription's lines into its ``SubscriptionFeed``, a read at a time while the
/// consumer keeps up (the channel's `autoRead` is off).
final class FeedHandler: ChannelInboundHandler {
  typealias InboundIn = ByteBuffer

  var source: SubscriptionFeed.Messages.Source?
  private var context: ChannelHandlerContext?
  private var pending: [ServiceMessage] = []
  /// Whether the consumer wants more (the last yield did not say stop).
  private var wanted = true
  private let endpoint: CountdownEndpoint

  init(endpoint: CountdownEndpoint) {
    self.endpoint = endpoint
  }

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
    // Added once the connection is up: the first read is asked for here.
    if context.channel.isActive { context.read() }
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    self.context = nil
    source?.finish()
  }

  func channelActive(context: ChannelHandlerContext) {
    context.read()
    context.fireChannelActive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    do {
      pending.append(try ServiceMessage(unwrapInboundIn(data), from: endpoint))
    } catch {
      // What came before the bad line is handed on first.
      if !pending.isEmpty {
        _ = source?.yield(contentsOf: pending)
        pending.removeAll()
      }
      source?.finish(error)
      context.close(promise: nil)
    }
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    if !pending.isEmpty, let source {
      let result = source.yield(contentsOf: pending)
      pending.removeAll(keepingCapacity: true)
      switch result {
      case .produceMore: wanted = true
      case .stopProducing: wanted = false
      case .dropped:
        context.close(promise: nil)
        return
      }
    }
    if wanted { context.read() }
    context.fireChannelReadComplete()
  }

  /// The consumer took enough: read again.
  func produceMore() {
    guard !wanted else { return }
    wanted = true
    context?.read()
  }

  func channelInactive(context: ChannelHandlerContext) {
    source?.finish()
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    source?.finish(
      CountdownError(.connectionClosed, "the connection to \(endpoint) failed: \(error)"))
    context.close(promise: nil)
  }
}
