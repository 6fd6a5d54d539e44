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
    var handler: APNsConnection?
    /// Requests made before the connection was up.
    var waiting: [(headers: HPACKHeaders, body: [UInt8], answer: Answer)] = []
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
    if let c = connection, c.handler?.isClosed == true {
      // Closed, and its closeFuture's callback has not run yet: a new connection.
      drop(c, reason: "the connection closed")
    }
    if let c = connection, c.usable {
      if let h = c.handler {
        h.send(headers: headers, body: payload, answer)
        // A connection whose stream ids run out takes no more: the next request opens another.
        if h.isExhausted { retire(c) }
      } else {
        c.waiting.append((headers, payload, answer))
      }
      return
    }
    connect(first: (headers, payload, answer))
  }

  /// Closes the connection (shutdown).
  public func close() {
    eventLoop.preconditionInEventLoop()
    drop(connection, reason: "the sender stopped")
  }

  /// Fails what waits for the connection and closes it (its requests in flight fail as it
  /// closes).
  private func drop(_ c: Connection?, reason: String) {
    guard let c else { return }
    c.usable = false
    if connection === c { connection = nil }
    c.channel?.close(promise: nil)
    let waiting = c.waiting
    c.waiting = []
    for w in waiting { w.answer(.failure(.connectionFailed(reason))) }
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

  private func connect(first: (headers: HPACKHeaders, body: [UInt8], answer: Answer)) {
    let c = Connection()
    c.waiting.append(first)
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
          try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
          try channel.pipeline.syncOperations.addHandler(
            APNsConnection(requestTimeout: endpoint.requestTimeout))
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
          guard
            let handler = try? channel.pipeline.syncOperations.handler(type: APNsConnection.self)
          else {
            drop(c, reason: "no HTTP/2 handler")
            return
          }
          // The connection holds its handler: the handler's callbacks hold it weakly, so that
          // a closed connection is freed.
          handler.onGoAway = { [weak self, weak c] in
            guard let c else { return }
            self?.retire(c)
          }
          // A gateway that does not answer in time is taken as gone: a new connection.
          handler.onTimeout = { [weak self, weak c] in
            self?.drop(c, reason: "a request timed out")
          }
          channel.closeFuture.whenComplete { [weak self] _ in
            self?.drop(c, reason: "the connection closed")
          }
          c.handler = handler
          let waiting = c.waiting
          c.waiting = []
          for w in waiting { handler.send(headers: w.headers, body: w.body, w.answer) }
          if handler.isExhausted { retire(c) }
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

/// The requests of one HTTP/2 connection, as frames behind NIOHTTP2's connection handler
/// (which keeps the protocol's state: stream states, flow control, the gateway's limit of
/// concurrent streams, HPACK): each request is a HEADERS and a DATA frame on a new stream id;
/// its answer is the HEADERS (and DATA) that come back on that id. A stream that closes
/// without an answer (RST_STREAM, refused after GOAWAY, the connection lost) fails its request.
/// One timer watches the oldest request: unanswered after the timeout, the connection is given
/// up (``onTimeout``).
final class APNsConnection: ChannelInboundHandler, @unchecked Sendable {
  // @unchecked Sendable: touched on its connection's event loop only.
  typealias InboundIn = HTTP2Frame
  typealias OutboundOut = HTTP2Frame

  private struct Pending {
    var answer: APNsClient.Answer
    var response = APNsResponse(status: 0)
    var body: [UInt8] = []
  }

  private let requestTimeout: TimeAmount
  private var context: ChannelHandlerContext?
  /// Requests wait here until the connection is active for this handler: NIO completes a
  /// connect before it fires channelActive, and NIOHTTP2 sends its preface on channelActive.
  private var beforeActive: [(headers: HPACKHeaders, body: [UInt8], answer: APNsClient.Answer)] =
    []
  private var active = false
  private var closed = false
  private var nextStreamID: Int32 = 1
  private var pending: [HTTP2StreamID: Pending] = [:]
  /// Requests in the order sent, with their deadlines (answered ones are skipped when met).
  private var deadlines = CircularBuffer<(stream: HTTP2StreamID, deadline: NIODeadline)>()
  private var timer: Scheduled<Void>?
  private var flushScheduled = false
  /// Bytes of answers taken since the connection's window was last given back.
  private var unacknowledged = 0
  var onGoAway: (() -> Void)?
  var onTimeout: (() -> Void)?

  init(requestTimeout: TimeAmount) { self.requestTimeout = requestTimeout }

  /// No stream id left for another request (2^31 − 1 is the last).
  var isExhausted: Bool { nextStreamID > Int32.max - 2 }

  /// The connection has closed (or the handler left it).
  var isClosed: Bool { closed || context == nil }

  func handlerAdded(context: ChannelHandlerContext) { self.context = context }
  func handlerRemoved(context: ChannelHandlerContext) {
    self.context = nil
    failAll("the connection closed")
  }

  func send(headers: HPACKHeaders, body: [UInt8], _ answer: @escaping APNsClient.Answer) {
    guard let context, !closed, !isExhausted else {
      answer(.failure(.closed("the connection closed")))
      return
    }
    guard active else {
      beforeActive.append((headers, body, answer))
      return
    }
    let stream = HTTP2StreamID(nextStreamID)
    nextStreamID += 2
    pending[stream] = Pending(answer: answer)
    deadlines.append((stream, .now() + requestTimeout))
    context.write(
      wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers)))),
      promise: nil)
    let sent = context.eventLoop.makePromise(of: Void.self)
    sent.futureResult.whenFailure { [self] error in
      finish(stream, .failure(.closed("the request could not be sent: \(error)")))
    }
    let data = HTTP2Frame.FramePayload.Data(
      data: .byteBuffer(context.channel.allocator.buffer(bytes: body)), endStream: true)
    context.write(
      wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(data))), promise: sent)
    // One flush for the requests of one turn of the event loop.
    if !flushScheduled {
      flushScheduled = true
      context.eventLoop.execute { [self] in
        flushScheduled = false
        self.context?.flush()
      }
    }
    if timer == nil { arm() }
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
      pending[stream] = p
      if h.endStream { complete(stream) }
    case .data(let d):
      if case .byteBuffer(let b) = d.data {
        giveBack(b.readableBytes + (d.paddingBytes.map { $0 + 1 } ?? 0), context)
        if var p = pending[stream] {
          if p.body.count < 4096 { p.body += b.readableBytesView.prefix(4096 - p.body.count) }
          pending[stream] = p
        }
      }
      if d.endStream { complete(stream) }
    case .rstStream(let code):
      finish(stream, .failure(.closed("the gateway reset the stream (\(code))")))
    case .goAway:
      // NIOHTTP2 closes the streams the gateway will not answer (each fails below, as its
      // StreamClosedEvent comes); new requests go to a new connection.
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
    active = true
    context.fireChannelActive()
    let waiting = beforeActive
    beforeActive = []
    for w in waiting { send(headers: w.headers, body: w.body, w.answer) }
  }

  func channelInactive(context: ChannelHandlerContext) {
    closed = true
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
    finish(stream, .success(response))
  }

  private func finish(_ stream: HTTP2StreamID, _ result: Result<APNsResponse, APNsTransportError>) {
    guard let p = pending.removeValue(forKey: stream) else { return }
    p.answer(result)
  }

  private func failAll(_ reason: String) {
    timer?.cancel()
    timer = nil
    let all = pending
    pending = [:]
    deadlines.removeAll()
    let waiting = beforeActive
    beforeActive = []
    for (_, p) in all.sorted(by: { $0.key < $1.key }) { p.answer(.failure(.closed(reason))) }
    for w in waiting { w.answer(.failure(.closed(reason))) }
  }

  /// Sets the timer for the oldest unanswered request.
  private func arm() {
    while let first = deadlines.first, pending[first.stream] == nil { deadlines.removeFirst() }
    guard let first = deadlines.first, let context else {
      timer = nil
      return
    }
    timer = context.eventLoop.scheduleTask(deadline: first.deadline) { [self] in
      timer = nil
      while let f = deadlines.first, pending[f.stream] == nil { deadlines.removeFirst() }
      if let f = deadlines.first, f.deadline <= .now() {
        finish(f.stream, .failure(.timedOut))
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
