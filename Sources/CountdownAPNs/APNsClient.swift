import Countdown
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
  /// How long a request may wait for its answer before the connection is given up.
  public var requestTimeout: TimeAmount = .seconds(10)
  public var connectTimeout: TimeAmount = .seconds(5)

  public init(host: String, port: Int, caPEM: [UInt8]?, bundleID: String) {
    self.host = host
    self.port = port
    self.caPEM = caPEM
    self.topic = bundleID + ".push-type.liveactivity"
  }

  /// Apple's production or development gateway.
  public static func apple(production: Bool, bundleID: String) -> APNsEndpoint {
    APNsEndpoint(
      host: production ? "api.push.apple.com" : "api.sandbox.push.apple.com", port: 443,
      caPEM: nil, bundleID: bundleID)
  }

  /// `https://HOST[:PORT]` (another gateway: a staging or test stand-in).
  public static func parse(url: String, caPEM: [UInt8]?, bundleID: String)
    throws(APNsConfigurationError) -> APNsEndpoint
  {
    guard url.hasPrefix("https://") else {
      throw APNsConfigurationError(
        "--apns-url \(url) must be https://HOST[:PORT] (APNs is HTTP/2 over TLS)")
    }
    var rest = Substring(url.dropFirst("https://".count))
    if rest.hasSuffix("/") { rest = rest.dropLast() }
    guard !rest.isEmpty, !rest.contains("/") else {
      throw APNsConfigurationError("--apns-url \(url) must be https://HOST[:PORT], with no path")
    }
    var host = String(rest)
    var port = 443
    if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
      guard let p = Int(rest[rest.index(after: colon)...]), (1...65535).contains(p) else {
        throw APNsConfigurationError("--apns-url \(url) has a port that is not 1 to 65535")
      }
      port = p
      host = String(rest[..<colon])
    }
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    guard !host.isEmpty else { throw APNsConfigurationError("--apns-url \(url) has no host") }
    return APNsEndpoint(host: host, port: port, caPEM: caPEM, bundleID: bundleID)
  }

  /// Checks that the TLS settings can be made (the CA file is read now, not at the first push).
  public func check() throws(APNsConfigurationError) { _ = try tlsContext() }

  /// The TLS settings: ALPN `h2`, the system's roots and `caPEM`'s.
  func tlsContext() throws(APNsConfigurationError) -> NIOSSLContext {
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.applicationProtocols = ["h2"]
    if let caPEM {
      do {
        let extra = try NIOSSLCertificate.fromPEMBytes(caPEM)
        guard !extra.isEmpty else {
          throw APNsConfigurationError("--apns-ca holds no PEM certificate")
        }
        tls.additionalTrustRoots = [.certificates(extra)]
      } catch let e as APNsConfigurationError {
        throw e
      } catch {
        throw APNsConfigurationError("--apns-ca cannot be read as PEM certificates: \(error)")
      }
    }
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
}

/// One HTTP/2 connection over TLS to APNs, multiplexing requests up to the gateway's stream
/// limit (NIOHTTP2 holds back streams past it), made again when it is lost, refused or sent
/// GOAWAY. Confined to its event loop: call ``send(deviceToken:priority:payload:jwt:expiration:_:)``
/// there; answers come back there.
public final class APNsClient: @unchecked Sendable {
  // @unchecked Sendable: every field is touched on `eventLoop` only.
  public let eventLoop: EventLoop
  public let endpoint: APNsEndpoint
  private let tls: NIOSSLContext
  private var connection: Connection?
  /// Connections made (the first and each reconnection).
  public private(set) var connectionsMade = 0

  // @unchecked Sendable: touched on the client's event loop only.
  private final class Connection: @unchecked Sendable {
    var channel: Channel?
    var multiplexer: NIOHTTP2Handler.StreamMultiplexer?
    var waiting: [(NIOHTTP2Handler.StreamMultiplexer?, String?) -> Void] = []
    var usable = true
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
    _ answer: @escaping (Result<APNsResponse, APNsTransportError>) -> Void
  ) {
    eventLoop.preconditionInEventLoop()
    var headers = HPACKHeaders()
    headers.reserveCapacity(10)
    headers.add(name: ":method", value: "POST")
    headers.add(name: ":scheme", value: "https")
    headers.add(name: ":path", value: "/3/device/" + deviceToken)
    headers.add(name: ":authority", value: endpoint.host)
    headers.add(name: "authorization", value: "bearer " + jwt)
    headers.add(name: "apns-push-type", value: "liveactivity")
    headers.add(name: "apns-topic", value: endpoint.topic)
    headers.add(name: "apns-priority", value: String(priority))
    if let expiration { headers.add(name: "apns-expiration", value: String(expiration)) }
    headers.add(name: "content-type", value: "application/json")
    headers.add(name: "content-length", value: String(payload.count))
    let timeout = endpoint.requestTimeout
    withMultiplexer { [self] multiplexer, failure in
      guard let multiplexer else {
        answer(.failure(.connectionFailed(failure ?? "no connection")))
        return
      }
      let connection = self.connection
      let handler = PushStream(headers: headers, body: payload) { result in
        if case .failure(.timedOut) = result {
          // A gateway that does not answer in time is taken as gone: a new connection.
          self.drop(connection, reason: "a request timed out")
        }
        answer(result)
      }
      let promise = eventLoop.makePromise(of: Channel.self)
      promise.futureResult.whenFailure { error in handler.fail(.closed("\(error)")) }
      multiplexer.createStreamChannel(promise: promise) { stream in
        stream.eventLoop.makeCompletedFuture {
          try stream.pipeline.syncOperations.addHandler(handler)
          handler.armTimeout(on: stream, after: timeout)
        }
      }
    }
  }

  /// Closes the connection (shutdown).
  public func close() {
    eventLoop.preconditionInEventLoop()
    drop(connection, reason: "the sender stopped")
  }

  private func drop(_ c: Connection?, reason: String) {
    guard let c else { return }
    c.usable = false
    if connection === c { connection = nil }
    c.channel?.close(promise: nil)
    let waiting = c.waiting
    c.waiting = []
    for w in waiting { w(nil, reason) }
  }

  /// Calls `body` with the connection's multiplexer once connected (nil and why when the
  /// connection could not be made).
  private func withMultiplexer(
    _ body: @escaping (NIOHTTP2Handler.StreamMultiplexer?, String?) -> Void
  ) {
    if let c = connection, c.usable {
      if let m = c.multiplexer { body(m, nil) } else { c.waiting.append(body) }
      return
    }
    let c = Connection()
    c.waiting.append(body)
    connection = c
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
          _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()
          ) { stream in stream.close() }
          try channel.pipeline.syncOperations.addHandler(GoAwayWatch())
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
          let handler = try? channel.pipeline.syncOperations.handler(type: NIOHTTP2Handler.self)
          guard let multiplexer = try? handler?.syncMultiplexer() else {
            drop(c, reason: "no HTTP/2 handler")
            return
          }
          try? channel.pipeline.syncOperations.handler(type: GoAwayWatch.self).onGoAway = {
            [weak self] in
            // New requests take a new connection; this one ends when the gateway closes it, or
            // after the request timeout.
            guard let self else { return }
            c.usable = false
            if self.connection === c { self.connection = nil }
            channel.eventLoop.scheduleTask(in: endpoint.requestTimeout) {
              channel.close(promise: nil)
            }
          }
          channel.closeFuture.whenComplete { [weak self] _ in
            self?.drop(c, reason: "the connection closed")
          }
          c.multiplexer = multiplexer
          let waiting = c.waiting
          c.waiting = []
          for w in waiting { w(multiplexer, nil) }
        case .failure(let error):
          drop(c, reason: "cannot connect to \(endpoint.host):\(endpoint.port): \(error)")
        }
      }
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

/// Hears GOAWAY on the connection.
private final class GoAwayWatch: ChannelInboundHandler, @unchecked Sendable {
  // @unchecked Sendable: touched on its connection's event loop only.
  typealias InboundIn = HTTP2Frame
  var onGoAway: (() -> Void)?

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    if case .goAway = unwrapInboundIn(data).payload {
      onGoAway?()
      onGoAway = nil
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    context.close(promise: nil)
  }
}

/// One request on its own HTTP/2 stream: sends the headers and the body, reads the status
/// and the body of the answer.
private final class PushStream: ChannelInboundHandler, @unchecked Sendable {
  // @unchecked Sendable: touched on its stream's event loop only.
  typealias InboundIn = HTTP2Frame.FramePayload
  typealias OutboundOut = HTTP2Frame.FramePayload

  private let headers: HPACKHeaders
  private let body: [UInt8]
  private var answer: ((Result<APNsResponse, APNsTransportError>) -> Void)?
  private var response = APNsResponse(status: 0)
  private var responseBody: [UInt8] = []
  private var timeout: Scheduled<Void>?

  init(
    headers: HPACKHeaders, body: [UInt8],
    answer: @escaping (Result<APNsResponse, APNsTransportError>) -> Void
  ) {
    self.headers = headers
    self.body = body
    self.answer = answer
  }

  func armTimeout(on channel: Channel, after: TimeAmount) {
    timeout = channel.eventLoop.scheduleTask(in: after) { [self] in
      fail(.timedOut)
      channel.close(promise: nil)
    }
  }

  func handlerAdded(context: ChannelHandlerContext) {
    if context.channel.isActive { sendRequest(context) }
  }

  func channelActive(context: ChannelHandlerContext) {
    sendRequest(context)
    context.fireChannelActive()
  }

  private var sent = false
  private func sendRequest(_ context: ChannelHandlerContext) {
    guard !sent else { return }
    sent = true
    context.write(
      wrapOutboundOut(.headers(.init(headers: headers, endStream: false))), promise: nil)
    let buffer = context.channel.allocator.buffer(bytes: body)
    context.writeAndFlush(
      wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .headers(let h):
      if let s = h.headers.first(name: ":status"), let status = Int(s) {
        if response.status == 0 || (100..<200).contains(response.status) {
          response.status = status
        }
      }
      if let id = h.headers.first(name: "apns-id") { response.apnsID = id }
      if h.endStream { finish() }
    case .data(let d):
      if case .byteBuffer(let b) = d.data, responseBody.count < 4096 {
        responseBody += b.readableBytesView.prefix(4096 - responseBody.count)
      }
      if d.endStream { finish() }
    case .rstStream(let code):
      fail(.closed("the gateway reset the stream (\(code))"))
    default:
      break
    }
  }

  private func finish() {
    guard response.status >= 200 else {
      fail(.closed("the gateway's answer had no status"))
      return
    }
    response.reason = Self.reason(responseBody)
    timeout?.cancel()
    let a = answer
    answer = nil
    a?(.success(response))
  }

  func fail(_ error: APNsTransportError) {
    timeout?.cancel()
    let a = answer
    answer = nil
    a?(.failure(error))
  }

  func channelInactive(context: ChannelHandlerContext) {
    fail(.closed("the stream closed before an answer"))
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    fail(.closed("\(error)"))
    context.close(promise: nil)
  }

  /// `reason` of a JSON body `{"reason":"…"}`; nil for any other body.
  static func reason(_ body: [UInt8]) -> String? {
    guard !body.isEmpty, let text = String(validating: body, as: UTF8.self),
      case .object(let o)? = try? JSONParser.parse(text), case .string(let r)? = o["reason"]
    else { return nil }
    return r
  }
}
