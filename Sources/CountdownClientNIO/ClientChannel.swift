// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownNIO
import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL

/// The one place the client connects: a connection, a subscription's and the descriptor
/// bridge's all come from ``make(to:group:timeout:framed:handlers:)``.
enum ClientChannel {
  /// A channel to `endpoint`, its lines framed (unless not `framed`), TLS added for a TCP
  /// address that asks for it, and `handlers` after them (what they return is handed out
  /// with the channel: the channel may be closed, and its handlers gone, by the time the
  /// connect returns). Over TLS it succeeds once the handshake has, so that a certificate
  /// that is not trusted fails the connect, naming why.
  static func make<Output: Sendable>(
    to endpoint: CountdownEndpoint, group: any EventLoopGroup,
    timeout: TimeAmount = .seconds(10), framed: Bool = true,
    handlers: @escaping @Sendable (any Channel) throws -> Output
  ) -> EventLoopFuture<(any Channel, Output)> {
    let loop = group.next()
    let bootstrap = ClientBootstrap(group: loop)
      .connectTimeout(timeout)
      .channelOption(.socketOption(.so_keepalive), value: 1)
    let made: EventLoopFuture<(any Channel, Output)>
    var handshake: EventLoopPromise<Void>?
    switch endpoint {
    case .unix(let path):
      made = bootstrap.channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          if framed {
            try channel.pipeline.syncOperations.addHandler(
              ByteToMessageHandler(LineBasedFrameDecoder()))
          }
        }
      }.connect(unixDomainSocketPath: path).flatMapThrowing { channel in
        (channel, try handlers(channel))
      }
    case .tcp(let host, let port, let tls):
      let context: NIOSSLContext?
      do {
        context = try tls.map { tls in try Self.tlsContext(tls) }
      } catch {
        return loop.makeFailedFuture(error)
      }
      // SNI names a host, never an address: for an address, NIOSSL checks the certificate
      // against the peer's address itself.
      let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
      let serverName = tls?.serverName ?? (isAddress ? nil : host)
      let shaken = context == nil ? nil : loop.makePromise(of: Void.self)
      handshake = shaken
      if let shaken {
        // A server that takes the connection and never finishes the handshake.
        let late = loop.scheduleTask(in: timeout) {
          shaken.fail(
            CountdownError(
              .connectionClosed,
              "cannot connect to \(endpoint): the TLS handshake did not finish within \(timeout.nanoseconds / 1_000_000_000) s"
            ))
        }
        shaken.futureResult.whenComplete { _ in late.cancel() }
      }
      made = bootstrap.channelOption(.tcpOption(.tcp_nodelay), value: 1)
        .channelInitializer { channel in
          channel.eventLoop.makeCompletedFuture {
            if let context, let shaken {
              try channel.pipeline.syncOperations.addHandler(
                NIOSSLClientHandler(context: context, serverHostname: serverName))
              try channel.pipeline.syncOperations.addHandler(HandshakeWaiter(shaken))
            }
            if framed {
              try channel.pipeline.syncOperations.addHandler(
                ByteToMessageHandler(LineBasedFrameDecoder()))
            }
          }
        }.connect(host: host, port: port).flatMapThrowing { channel in
          (channel, try handlers(channel))
        }
    }
    let tlsUp = handshake
    let ready = made.flatMap { made in
      (tlsUp?.futureResult ?? loop.makeSucceededVoidFuture()).map { made }
        .flatMapErrorThrowing { error in
          made.0.close(promise: nil)
          throw error
        }
    }.flatMapError { error in
      // A handshake that failed can close the channel before the connect's own callback adds
      // the handlers, which then fail on the closed channel: the handshake's error says why.
      // (Failing the promise here does nothing to one that has already failed.)
      guard let tlsUp else { return loop.makeFailedFuture(error) }
      tlsUp.fail(error)
      return tlsUp.futureResult.flatMapThrowing { throw error }
    }
    return ready.flatMapErrorThrowing { error in
      if let error = error as? CountdownError { throw error }
      if error is NIOSSLError || error is BoringSSLError {
        throw CountdownError(
          .connectionClosed,
          "cannot connect to \(endpoint): TLS failed: \(error) (is the server's certificate signed by a CA you trust? --tls-ca names one)"
        )
      }
      throw CountdownError(
        .connectionClosed,
        "cannot connect to \(endpoint): \(error); is countdown serve running there?")
    }
  }

  /// The system's trusted certificates and the CA file's (``ClientTLS``, as the server's own
  /// clients read theirs).
  static func tlsContext(_ tls: CountdownTLS) throws -> NIOSSLContext {
    var configuration = TLSConfiguration.makeClientConfiguration()
    if let file = tls.caFile {
      do {
        configuration = try ClientTLS.configuration(alsoTrustingFile: file)
      } catch {
        throw CountdownError(.invalidPayload, "the CA file \(file) \(error.message)")
      }
    }
    return try NIOSSLContext(configuration: configuration)
  }
}
