// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownNIO
import CountdownPush
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// Where and how to reach APNs (docs/pushes.md, "Configuration").
public struct APNsEndpoint: Sendable {
  public var host: String
  public var port: Int
  /// Extra trusted CA certificates (PEM), beside the system's: a test stand-in's own CA.
  public var caPEM: [UInt8]?
  /// `apns-topic`: the app's bundle id followed by `.push-type.liveactivity`.
  public var topic: String
  /// The app's bundle id: broadcasts and channel requests name it in their paths.
  public var bundleID: String
  /// How long a request may wait for its answer before the connection is given up.
  public var requestTimeout: TimeAmount = .seconds(10)
  public var connectTimeout: TimeAmount = .seconds(5)

  public init(host: String, port: Int, caPEM: [UInt8]?, bundleID: String) {
    self.host = host
    self.port = port
    self.caPEM = caPEM
    self.topic = bundleID + ".push-type.liveactivity"
    self.bundleID = bundleID
  }

  /// Apple's channel management API (docs/pushes.md, "Broadcast channels"): port 2196 in
  /// production, 2195 in development.
  public static func appleChannels(production: Bool, bundleID: String) -> APNsEndpoint {
    APNsEndpoint(
      host: production
        ? "api-manage-broadcast.push.apple.com" : "api-manage-broadcast.sandbox.push.apple.com",
      port: production ? 2196 : 2195, caPEM: nil, bundleID: bundleID)
  }

  /// Apple's production or development gateway.
  public static func apple(production: Bool, bundleID: String) -> APNsEndpoint {
    APNsEndpoint(
      host: production ? "api.push.apple.com" : "api.sandbox.push.apple.com", port: 443,
      caPEM: nil, bundleID: bundleID)
  }

  /// `https://HOST[:PORT]` (another gateway: a staging or test stand-in); `flag` names the
  /// setting in errors.
  public static func parse(
    url: String, caPEM: [UInt8]?, bundleID: String, flag: String = "--apns-url"
  ) throws(APNsConfigurationError) -> APNsEndpoint {
    guard url.hasPrefix("https://") else {
      throw APNsConfigurationError(
        "\(flag) \(url) must be https://HOST[:PORT] (APNs is HTTP/2 over TLS)")
    }
    var rest = Substring(url.dropFirst("https://".count))
    if rest.hasSuffix("/") { rest = rest.dropLast() }
    guard !rest.isEmpty, !rest.contains("/") else {
      throw APNsConfigurationError("\(flag) \(url) must be https://HOST[:PORT], with no path")
    }
    var host = String(rest)
    var port = 443
    if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
      guard let p = Int(rest[rest.index(after: colon)...]), (1...65535).contains(p) else {
        throw APNsConfigurationError("\(flag) \(url) has a port that is not 1 to 65535")
      }
      port = p
      host = String(rest[..<colon])
    }
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    guard !host.isEmpty else { throw APNsConfigurationError("\(flag) \(url) has no host") }
    return APNsEndpoint(host: host, port: port, caPEM: caPEM, bundleID: bundleID)
  }

  /// Checks that the TLS settings can be made (the CA file is read now, not at the first push).
  public func check() throws(APNsConfigurationError) { _ = try tlsContext() }

  /// The TLS settings: ALPN `h2`, the system's roots and `caPEM`'s.
  func tlsContext() throws(APNsConfigurationError) -> NIOSSLContext {
    var tls: TLSConfiguration
    do {
      tls = try ClientTLS.configuration(alsoTrusting: caPEM)
    } catch {
      throw APNsConfigurationError("--apns-ca \(error.message)")
    }
    tls.applicationProtocols = ["h2"]
    do {
      return try NIOSSLContext(configuration: tls)
    } catch {
      throw APNsConfigurationError("cannot set up TLS for APNs: \(error)")
    }
  }
}

/// Why a request got no HTTP answer.
public enum APNsTransportError: Error, Sendable, Equatable {
  /// No connection: refused, unreachable, a failed TLS handshake, no HTTP/2.
  case connectionFailed(String)
  /// The connection or stream closed before the answer (GOAWAY, a reset, a lost connection).
  case closed(String)
  /// No answer within the request timeout.
  case timedOut
}

/// An HTTP answer of APNs.
public struct APNsResponse: Sendable, Equatable {
  public var status: Int
  /// `reason` of the JSON error body (`{"reason":"BadDeviceToken"}`), nil when none.
  public var reason: String?
  /// `apns-id`.
  public var apnsID: String?
  /// `apns-channel-id`: the channel a creation made (docs/pushes.md, "Broadcast channels").
  public var channelID: String?
  /// The body, up to the request's limit (a channel list's JSON; an error's `{"reason":…}`).
  public var body: [UInt8] = []
}

/// One HTTP/2 connection over TLS to APNs, multiplexing requests up to the gateway's stream
/// limit (NIOHTTP2 holds back streams past it), made again when it is lost, refused or sent
/// GOAWAY. Confined to its event loop: call ``send(deviceToken:priority:payload:jwt:expiration:apnsID:_:)``
/// there; answers come back there.
///
/// Requests are HTTP/2 frames written on the connection (``APNsConnection``), not a channel per
/// stream: a push costs a HEADERS and a DATA frame and an entry in a table, which is what lets
/// one connection carry tens of thousands of pushes a second.
public final class APNsClient: @unchecked Sendable {
  // @unchecked Sendable: every field is touched on `eventLoop` only.
  public let eventLoop: EventLoop
  public let endpoint: APNsEndpoint
  private let tls: NIOSSLContext
  private var connection: Connection?
  /// Connections made (the first and each reconnection).
  public private(set) var connectionsMade = 0

  typealias Answer = (Result<APNsResponse, APNsTransportError>) -> Void

  // @unchecked Sendable: touched on the client's event loop only.
  private final class Connection: @unchecked Sendable {
    var channel: Channel?
    /// Made before the connection, so that requests wait in its one queue from the start.
    let handler: APNsConnection
    var usable = true
    init(handler: APNsConnection) { self.handler = handler }
  }

  /// - Throws: ``APNsConfigurationError`` when the CA file cannot be read.
  public init(endpoint: APNsEndpoint, eventLoop: EventLoop) throws(APNsConfigurationError) {
    self.endpoint = endpoint
    self.eventLoop = eventLoop
    self.tls = try endpoint.tlsContext()
  }

  /// Sends one Live Activity push; `answer` gets APNs's answer or why there was none.
  public func send(
    deviceToken: String, priority: Int, payload: [UInt8], jwt: String, expiration: Int64?,
    apnsID: String = "", _ answer: @escaping (Result<APNsResponse, APNsTransportError>) -> Void
  ) {
    eventLoop.preconditionInEventLoop()
    var headers = request("POST", "/3/device/" + deviceToken, jwt: jwt)
    headers.add(name: "apns-push-type", value: "liveactivity")
    headers.add(name: "apns-topic", value: endpoint.topic)
    headers.add(name: "apns-priority", value: String(priority))
    if let expiration { headers.add(name: "apns-expiration", value: String(expiration)) }
    if !apnsID.isEmpty { headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable) }
    headers.add(name: "content-type", value: "application/json")
    headers.add(name: "content-length", value: String(payload.count), indexing: .nonIndexable)
    enqueue(headers, payload, bodyLimit: 4096, answer)
  }

  /// Sends one broadcast push on the channel `channelID` (docs/pushes.md, "Broadcast
  /// channels": `POST /4/broadcasts/apps/{bundleId}`, on the push gateway, no `apns-topic`);
  /// `requestID` is `apns-request-id`.
  public func broadcast(
    channelID: String, priority: Int, payload: [UInt8], jwt: String, expiration: Int64?,
    requestID: String = "", _ answer: @escaping (Result<APNsResponse, APNsTransportError>) -> Void
  ) {
    eventLoop.preconditionInEventLoop()
    var headers = request("POST", "/4/broadcasts/apps/" + endpoint.bundleID, jwt: jwt)
    headers.add(name: "apns-channel-id", value: channelID, indexing: .nonIndexable)
    headers.add(name: "apns-push-type", value: "liveactivity")
    headers.add(name: "apns-priority", value: String(priority))
    if let expiration { headers.add(name: "apns-expiration", value: String(expiration)) }
    if !requestID.isEmpty {
      headers.add(name: "apns-request-id", value: requestID, indexing: .nonIndexable)
    }
    headers.add(name: "content-type", value: "application/json")
    headers.add(name: "content-length", value: String(payload.count), indexing: .nonIndexable)
    enqueue(headers, payload, bodyLimit: 4096, answer)
  }

  /// One request to APNs's channel management API (docs/pushes.md, "Broadcast channels"):
  /// `method` on `/1/apps/{bundleId}/` + `resource` (`channels`, `all-channels`), naming
  /// `channelID` in `apns-channel-id` when given. The answer keeps up to 1 MiB of body (a list
  /// of 10,000 channels).
  public func manage(
    _ method: String, _ resource: String, channelID: String? = nil, body: [UInt8] = [],
    jwt: String, requestID: String = "",
    _ answer: @escaping (Result<APNsResponse, APNsTransportError>) -> Void
  ) {
    eventLoop.preconditionInEventLoop()
    var headers = request(method, "/1/apps/\(endpoint.bundleID)/\(resource)", jwt: jwt)
    if let channelID {
      headers.add(name: "apns-channel-id", value: channelID, indexing: .nonIndexable)
    }
    if !requestID.isEmpty {
      headers.add(name: "apns-request-id", value: requestID, indexing: .nonIndexable)
    }
    if !body.isEmpty {
      headers.add(name: "content-type", value: "application/json")
      headers.add(name: "content-length", value: String(body.count), indexing: .nonIndexable)
    }
    enqueue(headers, body, bodyLimit: 1 << 20, answer)
  }

  /// The headers every request starts with. A path per device token or channel and a length
  /// per payload are not indexed, so that HPACK's dynamic table keeps the headers every
  /// request repeats (the JWT, the topic) and its search stays short.
  private func request(_ method: String, _ path: String, jwt: String) -> HPACKHeaders {
    var headers = HPACKHeaders()
    headers.reserveCapacity(10)
    headers.add(name: ":method", value: method)
    headers.add(name: ":scheme", value: "https")
    headers.add(name: ":path", value: path, indexing: .nonIndexable)
    headers.add(name: ":authority", value: endpoint.host)
    headers.add(name: "authorization", value: "bearer " + jwt)
    return headers
  }

  /// Puts a request on the connection (made first when there is none).
  private func enqueue(
    _ headers: HPACKHeaders, _ body: [UInt8], bodyLimit: Int, _ answer: @escaping Answer
  ) {
    if let c = connection, c.handler.isClosed {
      // Closed, and its closeFuture's callback has not run yet: a new connection.
      drop(c, reason: "the connection closed")
    }
    let c = connection ?? connect()
    c.handler.send(headers: headers, body: body, bodyLimit: bodyLimit, answer)
    // A connection whose stream ids run out takes no more: the next request opens another.
    if c.handler.isExhausted { retire(c) }
  }

  /// Closes the connection (shutdown).
  public func close() {
    eventLoop.preconditionInEventLoop()
    drop(connection, reason: "the sender stopped")
  }

  /// Closes the connection and fails its requests (those still waiting for it with `reason`).
  private func drop(_ c: Connection?, reason: String) {
    guard let c else { return }
    c.usable = false
    if connection === c { connection = nil }
    c.channel?.close(promise: nil)
    c.handler.failAll(reason)
  }

  /// New requests take a new connection; this one ends when the gateway closes it, or after
  /// the request timeout (its requests in flight are answered or fail by then).
  private func retire(_ c: Connection) {
    guard c.usable else { return }
    c.usable = false
    if connection === c { connection = nil }
    guard let channel = c.channel else { return }
    channel.eventLoop.scheduleTask(in: endpoint.requestTimeout) { channel.close(promise: nil) }
  }

  private func connect() -> Connection {
    let handler = APNsConnection(requestTimeout: endpoint.requestTimeout, eventLoop: eventLoop)
    let c = Connection(handler: handler)
    connection = c
    // The connection holds its handler: the handler's callbacks hold it weakly, so that a
    // closed connection is freed.
    handler.onGoAway = { [weak self, weak c] in
      guard let c else { return }
      self?.retire(c)
    }
    // A gateway that does not answer in time is taken as gone: a new connection.
    handler.onTimeout = { [weak self, weak c] in
      self?.drop(c, reason: "a request timed out")
    }
    connectionsMade += 1
    let endpoint = self.endpoint
    let tls = self.tls
    ClientBootstrap(group: eventLoop)
      .connectTimeout(endpoint.connectTimeout)
      .channelOption(.socketOption(.tcp_nodelay), value: 1)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          let ssl = try NIOSSLClientHandler(
            context: tls, serverHostname: Self.isAddress(endpoint.host) ? nil : endpoint.host)
          try channel.pipeline.syncOperations.addHandler(ssl)
          try channel.pipeline.syncOperations.addHandler(ALPNCheck())
          try channel.pipeline.syncOperations.addHandler(FlushPerTurn())
          // Header blocks are not validated (RFC 9113 §8.2 checks of names and values): the
          // requests' are built here from checked parts (a hex token, the configured topic),
          // and of an answer only `:status` and `apns-id` are read, each checked where read.
          // The checks took ~8% of the sender's thread.
          try channel.pipeline.syncOperations.addHandler(
            NIOHTTP2Handler(mode: .client, headerBlockValidation: .disabled))
          try channel.pipeline.syncOperations.addHandler(handler)
        }
      }
      .connect(host: endpoint.host, port: endpoint.port)
      .whenComplete { [self] result in
        switch result {
        case .success(let channel):
          guard c.usable else {
            channel.close(promise: nil)
            return
          }
          c.channel = channel
          channel.closeFuture.whenComplete { [weak self] _ in
            self?.drop(c, reason: "the connection closed")
          }
        case .failure(let error):
          drop(c, reason: "cannot connect to \(endpoint.host):\(endpoint.port): \(error)")
        }
      }
    return c
  }

  static func isAddress(_ host: String) -> Bool {
    (try? SocketAddress(ipAddress: host, port: 0)) != nil
  }
}

/// Closes a connection whose TLS handshake did not agree on HTTP/2 (a gateway that speaks
/// HTTP/1.1 only).
private final class ALPNCheck: ChannelInboundHandler, RemovableChannelHandler {
  typealias InboundIn = ByteBuffer

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if case TLSUserEvent.handshakeCompleted(let proto) = event, proto != "h2" {
      context.fireErrorCaught(
        APNsTransportError.connectionFailed(
          "the gateway did not agree on HTTP/2 (ALPN: \(proto ?? "none"))"))
      context.close(promise: nil)
      return
    }
    context.fireUserInboundEventTriggered(event)
  }
}

/// Passes on one flush per turn of the event loop, however many come from above: each request
/// flushes NIOHTTP2's handler on its own (so that its DATA frame leaves in the order it was
/// written; a flush of many streams' DATA sends them in a `Set`'s order, the gateway answers
/// them out of order, and each answer then costs NIOHTTP2 a shift of its sorted table of open
/// streams), while TLS and the socket still see one write for all the requests of a turn.
private final class FlushPerTurn: ChannelOutboundHandler, RemovableChannelHandler {
  typealias OutboundIn = ByteBuffer
  private var scheduled = false

  func flush(context: ChannelHandlerContext) {
    guard !scheduled else { return }
    scheduled = true
    context.eventLoop.assumeIsolated().execute { [self] in
      scheduled = false
      context.flush()
    }
  }
}
