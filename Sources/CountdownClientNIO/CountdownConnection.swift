// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL
import Synchronization

/// A connection to a running `countdown serve`, for a Swift service: typed requests, sent
/// pipelined on one connection, each answered by its own reply (docs/protocol.md).
///
/// ```swift
/// let countdown = try await CountdownConnection.connect(to: .unix("/run/kiosk/countdown.sock"))
/// let id = try await countdown.start(.countdown(id: "gate-b12", to: boarding, title: "Gate B12"))
/// let gate = try await countdown.get(id)          // an ActivityObject
/// try await countdown.end(id)
/// await countdown.close()
/// ```
///
/// Calls may be made from many tasks at once: each is written as it comes and the server
/// answers in request order, so replies are matched without ids. A call whose task is
/// cancelled throws `CancellationError` at once (its request may already have been carried
/// out: it was sent). A request the server refuses throws ``CountdownError`` with the
/// server's code (`notFound`, `duplicateID`, …) and message; a connection that closes fails
/// every waiting call with ``CountdownError/Code/connectionClosed``. The connection does not
/// reconnect by itself (a call that failed so may or may not have been carried out);
/// ``subscribe(ids:ticks:group:)`` does.
public final class CountdownConnection: Sendable {
  /// Where it is connected.
  public let endpoint: CountdownEndpoint
  /// The key it authenticated with (docs/security.md, "Roles").
  let key: String?
  let channel: any Channel
  private let handler: NIOLoopBound<ReplyHandler>
  private let nextCall = Atomic<UInt64>(0)
  let group: any EventLoopGroup

  private init(
    endpoint: CountdownEndpoint, key: String?, channel: any Channel,
    handler: NIOLoopBound<ReplyHandler>, group: any EventLoopGroup
  ) {
    self.endpoint = endpoint
    self.key = key
    self.channel = channel
    self.handler = handler
    self.group = group
  }

  /// Connects to `endpoint`; with `key`, authenticates first (the connection then has the
  /// key's role; a server with `--token` takes its token here).
  /// - Throws: ``CountdownError``: `connectionClosed` when the server cannot be reached (the
  ///   message names the endpoint and the system's error), `unauthorized` for a wrong key.
  public static func connect(
    to endpoint: CountdownEndpoint, key: String? = nil,
    eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
  ) async throws -> CountdownConnection {
    let (channel, handler) = try await Self.channel(to: endpoint, group: eventLoopGroup) {
      channel in
      let handler = ReplyHandler(endpoint: endpoint)
      try channel.pipeline.syncOperations.addHandler(handler)
      return NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }.get()
    let connection = CountdownConnection(
      endpoint: endpoint, key: key, channel: channel, handler: handler, group: eventLoopGroup)
    if let key {
      do {
        _ = try await connection.request(RequestEncoding.auth(key))
      } catch {
        await connection.close()
        throw error
      }
    }
    return connection
  }

  /// A channel to `endpoint`, its lines framed (unless not `framed`), TLS added for a TCP
  /// address that asks for it, and `handlers` after them (what they return is handed out
  /// with the channel: the channel may be closed, and its handlers gone, by the time the
  /// connect returns). Over TLS it succeeds once the handshake has, so that a certificate
  /// that is not trusted fails the connect, naming why.
  static func channel<Output: Sendable>(
    to endpoint: CountdownEndpoint, group: any EventLoopGroup,
    timeout: TimeAmount = .seconds(10), framed: Bool = true,
    handlers: @escaping @Sendable (any Channel) throws -> Output
  ) -> EventLoopFuture<(any Channel, Output)> {
    let loop = group.next()
    let bootstrap = ClientBootstrap(group: loop)
      .connectTimeout(timeout)
      .channelOption(.socketOption(.so_keepalive), value: 1)
    let made: EventLoopFuture<(any Channel, Output)>
    var handshake: EventLoopFuture<Void>?
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
      handshake = shaken?.futureResult
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
      (tlsUp ?? loop.makeSucceededVoidFuture()).map { made }.flatMapErrorThrowing { error in
        made.0.close(promise: nil)
        throw error
      }
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

  /// The system's trusted certificates and the CA file's.
  static func tlsContext(_ tls: CountdownTLS) throws -> NIOSSLContext {
    var configuration = TLSConfiguration.makeClientConfiguration()
    if let file = tls.caFile {
      let certificates: [NIOSSLCertificate]
      do {
        certificates = try NIOSSLCertificate.fromPEMFile(file)
      } catch {
        throw CountdownError(
          .invalidPayload, "the CA file \(file) cannot be read as PEM certificates: \(error)")
      }
      guard !certificates.isEmpty else {
        throw CountdownError(.invalidPayload, "the CA file \(file) holds no PEM certificate")
      }
      configuration.additionalTrustRoots = [.certificates(certificates)]
    }
    return try NIOSSLContext(configuration: configuration)
  }

  /// Closes the connection: waiting calls fail with `connectionClosed`.
  public func close() async {
    let handler = self.handler
    channel.eventLoop.execute {
      handler.value.close(
        CountdownError(.connectionClosed, "the connection was closed by its owner"))
    }
    try? await channel.closeFuture.get()
  }

  // MARK: - Requests

  /// Sends one request object (without `rid`: replies are matched by their order) and
  /// returns its reply, `ok` or not: the way to an op or a member this type has no method
  /// for.
  /// - Throws: ``CountdownError`` when the connection fails, `CancellationError`.
  public func send(_ request: [String: JSONValue]) async throws -> ServiceReply {
    try Task.checkCancellation()
    var buffer = channel.allocator.buffer(capacity: 256)
    buffer.writeString(JSONValue.object(request).canonicalText)
    buffer.writeInteger(UInt8(ascii: "\n"))
    let line = buffer
    let id = nextCall.add(1, ordering: .relaxed).newValue
    let handler = self.handler
    let eventLoop = channel.eventLoop
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (call: ReplyHandler.Call) in
        eventLoop.execute { handler.value.send(line, id: id, call) }
      }
    } onCancel: {
      eventLoop.execute { handler.value.cancel(id: id) }
    }
  }

  /// ``send(_:)``, throwing the server's error when the reply is not `ok`.
  @discardableResult
  func request(_ request: [String: JSONValue]) async throws -> ServiceReply {
    let reply = try await send(request)
    if let failure = reply.failure {
      throw CountdownError(CountdownError.Code(rawValue: failure.code), failure.message)
    }
    return reply
  }

  /// Starts an activity; its id (generated by the server when the request has none).
  @discardableResult
  public func start(_ activity: ActivityRequest) async throws -> String {
    let reply = try await request(RequestEncoding.start(activity))
    guard let id = reply.id else {
      throw CountdownError(.unexpectedReply, "\(endpoint) answered a start without an id")
    }
    return id
  }

  /// Changes a running activity (content as a merge patch).
  public func update(_ id: String, _ change: ActivityUpdate) async throws {
    try await request(RequestEncoding.update(id, change))
  }

  public func pause(_ id: String, timestamp: Instant? = nil) async throws {
    try await request(RequestEncoding.named("pause", id, timestamp: timestamp))
  }

  public func resume(_ id: String, timestamp: Instant? = nil) async throws {
    try await request(RequestEncoding.named("resume", id, timestamp: timestamp))
  }

  /// Ends an activity (by default it stays, ended, for four hours before its dismissal).
  public func end(_ id: String, _ ending: ActivityEnding = ActivityEnding()) async throws {
    try await request(RequestEncoding.end(id, ending))
  }

  /// The activity as it stands.
  /// - Throws: `notFound` when no activity has that id (or the key's groups do not show it).
  public func get(_ id: String) async throws -> ActivityObject {
    let reply = try await request(RequestEncoding.named("get", id))
    guard let activity = reply.activity else {
      throw CountdownError(.unexpectedReply, "\(endpoint) answered a get without an activity")
    }
    return activity
  }

  /// Which activities ``list(_:group:)`` returns.
  public enum Selection: Sendable, Hashable {
    /// Every activity, in start order.
    case all
    /// The `k` countdowns ending soonest.
    case soonest(Int)
    /// The activities that ended within the last so many milliseconds.
    case endedWithin(milliseconds: Int64)
  }

  /// Activities, every node's on a cluster node; `group` narrows them to one group.
  public func list(_ selection: Selection = .all, group: String? = nil) async throws
    -> [ActivityObject]
  {
    let reply = try await request(RequestEncoding.list(selection, group: group))
    return reply.activities ?? []
  }

  /// Changes the engine-wide settings (docs/protocol.md, `configure`).
  public func configure(
    enabled: Bool? = nil, maxActivities: Change<Int> = .keep,
    maxActiveDurationMs: Change<Int64> = .keep
  ) async throws {
    try await request(
      RequestEncoding.configure(
        enabled: enabled, maxActivities: maxActivities, maxActiveDurationMs: maxActiveDurationMs))
  }

  /// The cluster as the node last read it (a single server: no node, no nodes, no shards).
  public func cluster() async throws -> ClusterState {
    let reply = try await request(["op": .string("cluster")])
    return reply.cluster ?? ClusterState(node: nil, nodes: [], shards: [])
  }

  /// The server's clock (ms since 1970) when it answered.
  public func ping() async throws -> Instant {
    Instant(milliseconds: try await request(["op": .string("ping")]).at)
  }
}
