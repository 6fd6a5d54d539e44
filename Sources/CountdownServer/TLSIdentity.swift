// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import HummingbirdCore
import Logging
import NIOCore
import NIOSSL

/// The server's certificate chain and key (`--tls-cert`, `--tls-key`, PEM), as a TLS context
/// that each new connection of HTTP and `--listen` takes when it is accepted. ``reload()``
/// (SIGHUP) reads both files again: connections made after it present the new certificate,
/// those already open keep theirs, and a pair that does not load leaves the old one in place.
final class TLSIdentity: Sendable {
  let certificatePath: String
  let keyPath: String
  private let current: Locked<NIOSSLContext>

  /// Loads the pair; a missing, unreadable or mismatched file is an error that names it.
  init(certificatePath: String, keyPath: String) throws(ServerStartError) {
    self.certificatePath = certificatePath
    self.keyPath = keyPath
    current = Locked(try Self.load(certificatePath, keyPath))
  }

  /// The context for a connection accepted now.
  var context: NIOSSLContext { current.withLock { $0 } }

  /// Reads the files again and uses them for new connections.
  func reload() throws(ServerStartError) {
    let fresh = try Self.load(certificatePath, keyPath)
    current.withLock { $0 = fresh }
  }

  /// A TLS server handler for a new connection.
  func handler() -> NIOSSLServerHandler { NIOSSLServerHandler(context: context) }

  private static func load(_ certificatePath: String, _ keyPath: String) throws(ServerStartError)
    -> NIOSSLContext
  {
    let chain: [NIOSSLCertificate]
    do {
      chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
    } catch {
      throw ServerStartError(
        "cannot read the certificate chain --tls-cert \(certificatePath) (PEM): \(error)")
    }
    guard !chain.isEmpty else {
      throw ServerStartError("--tls-cert \(certificatePath) holds no PEM certificate")
    }
    let key: NIOSSLPrivateKey
    do {
      key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
    } catch {
      throw ServerStartError("cannot read the private key --tls-key \(keyPath) (PEM): \(error)")
    }
    let configuration = TLSConfiguration.makeServerConfiguration(
      certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
    do {
      return try NIOSSLContext(configuration: configuration)
    } catch {
      throw ServerStartError(
        "--tls-cert \(certificatePath) and --tls-key \(keyPath) do not make a TLS identity (is the key the certificate's?): \(error)"
      )
    }
  }
}

/// Hummingbird's HTTP/1 channel behind TLS whose context is taken from ``TLSIdentity`` at each
/// connection (HummingbirdTLS's `TLSChannel` fixes its context when the server starts, so a
/// reloaded certificate would not be used).
struct ReloadingTLSChannel<Base: ServerChildChannel>: ServerChildChannel {
  typealias Value = Base.Value
  let base: Base
  let identity: TLSIdentity

  func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
    channel.eventLoop.makeCompletedFuture {
      try channel.pipeline.syncOperations.addHandler(identity.handler())
    }.flatMap {
      base.setup(channel: channel, logger: logger)
    }
  }

  func handle(value: Value, logger: Logger) async {
    await base.handle(value: value, logger: logger)
  }
}
