// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

extension CountdownEndpoint {
  /// A blocking stream socket that speaks the protocol with the server at this endpoint, for
  /// tools that read and write a descriptor (`countdown send`, `countdown board`): a Unix
  /// socket connected to the server's; for a TCP address, one end of a socket pair whose other
  /// end SwiftNIO relays, over TLS when asked, to the server. Closing the descriptor closes
  /// the connection; the server closing it is the end of the descriptor's input.
  ///
  /// Blocks until the connection (and a TLS handshake) is made or fails; not to be called on
  /// an event loop.
  /// - Throws: `CountdownError`: `connectionClosed` naming the endpoint and why (no server
  ///   there, a certificate not trusted, …), `invalidPayload` for a CA file that is not PEM.
  public func connectedDescriptor(
    group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    timeout: TimeAmount = .seconds(10)
  ) throws -> Int32 {
    switch self {
    case .unix(let path):
      do {
        return try UnixSocket.connect(path)
      } catch {
        throw CountdownError(
          .connectionClosed, "\(error.message); is countdown serve running there?")
      }
    case .tcp:
      let mine: Int32
      let theirs: Int32
      do {
        (mine, theirs) = try System.socketPair()
      } catch {
        throw CountdownError(.systemError, error.message)
      }
      let loop = group.next()
      do {
        // Both ends' relays are made here and handed to their channels, so that pairing them
        // needs no lookup in a pipeline the peer may already have closed.
        let (near, far) = try loop.submit {
          (
            NIOLoopBound(RelayHandler(), eventLoop: loop),
            NIOLoopBound(RelayHandler(), eventLoop: loop)
          )
        }.wait()
        // `theirs` is the channel's from here, closed with it.
        let local = try ClientBootstrap(group: loop)
          .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
              try channel.pipeline.syncOperations.addHandler(near.value)
            }
          }
          .withConnectedSocket(theirs).wait()
        do {
          _ = try ClientChannel.make(to: self, group: loop, timeout: timeout, framed: false) {
            channel in try channel.pipeline.syncOperations.addHandler(far.value)
          }.wait()
        } catch {
          local.close(promise: nil)
          throw error
        }
        try loop.submit { near.value.pair(with: far.value) }.wait()
        return mine
      } catch {
        System.close(mine)
        if let error = error as? CountdownError { throw error }
        throw CountdownError(.connectionClosed, "cannot connect to \(self): \(error)")
      }
    }
  }
}

/// Relays the bytes of one channel to another on the same event loop, reading only while the
/// other can take them (the reads `autoRead` asks for are held while it cannot, as NIO's
/// examples' glue handler does); when either closes, both do.
final class RelayHandler: ChannelDuplexHandler {
  typealias InboundIn = ByteBuffer
  typealias OutboundIn = ByteBuffer
  typealias OutboundOut = ByteBuffer

  private var partner: RelayHandler?
  private var context: ChannelHandlerContext?
  private var readWaiting = false
  /// What was read before the two were joined (the requests a tool wrote at once), handed on
  /// when they are.
  private var held: [NIOAny] = []

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    self.context = nil
    partner = nil
  }

  /// Joins the two (on their event loop); the reads held until then go on.
  func pair(with other: RelayHandler) {
    // One side closed before they were joined (a server that hung up at once): the other
    // closes too, as it would have had they been joined.
    guard context != nil, other.context != nil else {
      context?.close(promise: nil)
      other.context?.close(promise: nil)
      return
    }
    partner = other
    other.partner = self
    handOnHeld()
    other.handOnHeld()
  }

  private func handOnHeld() {
    guard let partner else { return }
    for data in held { partner.context?.write(data, promise: nil) }
    if !held.isEmpty { partner.context?.flush() }
    held = []
    resumeReading()
  }

  private func resumeReading() {
    guard readWaiting else { return }
    readWaiting = false
    context?.read()
  }

  private var writable: Bool { context?.channel.isWritable ?? false }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    if let partner {
      partner.context?.write(data, promise: nil)
    } else {
      held.append(data)
    }
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    partner?.context?.flush()
  }

  func channelWritabilityChanged(context: ChannelHandlerContext) {
    if context.channel.isWritable { partner?.resumeReading() }
    context.fireChannelWritabilityChanged()
  }

  func read(context: ChannelHandlerContext) {
    // Unjoined, reads go on (a TLS handshake needs them; what comes is held): only a partner
    // that cannot take more holds them.
    if let partner, !partner.writable {
      readWaiting = true
    } else {
      context.read()
    }
  }

  func channelInactive(context: ChannelHandlerContext) {
    partner?.context?.close(promise: nil)
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    context.close(promise: nil)
  }
}

/// Succeeds its promise once TLS is up (fails it when the handshake fails or the connection
/// closes first), so that a connect reports a certificate that is not trusted.
final class HandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler {
  typealias InboundIn = NIOAny
  private let done: EventLoopPromise<Void>

  init(_ done: EventLoopPromise<Void>) {
    self.done = done
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if case TLSUserEvent.handshakeCompleted = event {
      done.succeed()
      context.pipeline.syncOperations.removeHandler(self, promise: nil)
    }
    context.fireUserInboundEventTriggered(event)
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    done.fail(error)
    context.fireErrorCaught(error)
  }

  func channelInactive(context: ChannelHandlerContext) {
    done.fail(ChannelError.ioOnClosedChannel)
    context.fireChannelInactive()
  }
}
