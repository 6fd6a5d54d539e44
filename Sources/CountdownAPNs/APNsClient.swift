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
    var headers = HPACKHeaders()
    headers.reserveCapacity(10)
    headers.add(name: ":method", value: "POST")
    headers.add(name: ":scheme", value: "https")
    // A path per device token and a length per payload: not indexed, so that HPACK's
    // dynamic table keeps the headers every request repeats (the JWT, the topic) and its
    // search stays short.
    headers.add(name: ":path", value: "/3/device/" + deviceToken, indexing: .nonIndexable)
    headers.add(name: ":authority", value: endpoint.host)
    headers.add(name: "authorization", value: "bearer " + jwt)
    headers.add(name: "apns-push-type", value: "liveactivity")
    headers.add(name: "apns-topic", value: endpoint.topic)
    headers.add(name: "apns-priority", value: String(priority))
    if let expiration { headers.add(name: "apns-expiration", value: String(expiration)) }
    if !apnsID.isEmpty { headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable) }
    headers.add(name: "content-type", value: "application/json")
    headers.add(name: "content-length", value: String(payload.count), indexing: .nonIndexable)
    if let c = connection, c.handler.isClosed {
      // Closed, and its closeFuture's callback has not run yet: a new connection.
      drop(c, reason: "the connection closed")
    }
    let c = connection ?? connect()
    c.handler.send(headers: headers, body: payload, answer)
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

/// The requests of one HTTP/2 connection, as frames behind NIOHTTP2's connection handler
/// (which keeps the protocol's state: stream states, flow control, HPACK): each request is a
/// HEADERS and a DATA frame on a new stream id; its answer is the HEADERS (and DATA) that come
/// back on that id. A stream that closes without an answer (RST_STREAM, refused after GOAWAY,
/// the connection lost) fails its request.
///
/// Requests wait in one queue, in order, until the connection is up and while the gateway's
/// limit of concurrent streams is reached (its SETTINGS; 100 until they come, as NIOHTTP2
/// assumes): a stream id is taken only when the request goes out, so ids rise in the order the
/// requests were made and the gateway's answers close the oldest streams first. One timer
/// watches the oldest request: unanswered (or not sent) after the timeout, the connection is
/// given up (``onTimeout``).
final class APNsConnection: ChannelInboundHandler, @unchecked Sendable {
  // @unchecked Sendable: made on the client's event loop, then touched on its connection's
  // event loop (the same) only.
  typealias InboundIn = HTTP2Frame
  typealias OutboundOut = HTTP2Frame

  private struct Request {
    var headers: HPACKHeaders
    var body: [UInt8]
    var answer: APNsClient.Answer
    var deadline: NIODeadline
  }

  private struct Pending {
    var answer: APNsClient.Answer
    var response = APNsResponse(status: 0)
    var body: [UInt8] = []
  }

  private enum Phase {
    /// Not connected yet (the handler is made before its channel).
    case connecting
    case active
    /// GOAWAY came: what is in flight is answered, nothing new is sent.
    case goingAway
    case closed
  }

  private let requestTimeout: TimeAmount
  private var context: ChannelHandlerContext?
  private var phase = Phase.connecting
  /// Requests not yet on a stream, oldest first.
  private var queued = CircularBuffer<Request>()
  /// The gateway's limit of concurrent streams.
  private var maxStreams = 100
  private var nextStreamID: Int32 = 1
  private var pending: [HTTP2StreamID: Pending] = [:]
  /// Requests on streams in the order sent, with their deadlines (answered ones are skipped
  /// when met).
  private var deadlines = CircularBuffer<(stream: HTTP2StreamID, deadline: NIODeadline)>()
  private var timer: Scheduled<Void>?
  /// Bytes of answers taken since the connection's window was last given back.
  private var unacknowledged = 0
  var onGoAway: (() -> Void)?
  var onTimeout: (() -> Void)?

  private let eventLoop: EventLoop

  init(requestTimeout: TimeAmount, eventLoop: EventLoop) {
    self.requestTimeout = requestTimeout
    self.eventLoop = eventLoop
  }

  /// No stream id left for another request beside those queued (2^31 − 1 is the last).
  var isExhausted: Bool { Int(nextStreamID) + 2 * queued.count > Int(Int32.max) - 2 }

  /// The connection has closed (or the handler left it).
  var isClosed: Bool { phase == .closed }

  func handlerAdded(context: ChannelHandlerContext) { self.context = context }
  func handlerRemoved(context: ChannelHandlerContext) {
    self.context = nil
    failAll("the connection closed")
  }

  func send(headers: HPACKHeaders, body: [UInt8], _ answer: @escaping APNsClient.Answer) {
    switch phase {
    case .closed, .goingAway:
      answer(.failure(.closed("the connection closed")))
      return
    case .connecting, .active:
      guard !isExhausted else {
        answer(.failure(.closed("the connection has no stream id left")))
        return
      }
    }
    queued.append(
      Request(headers: headers, body: body, answer: answer, deadline: .now() + requestTimeout))
    sendQueued()
    if timer == nil { arm() }
  }

  /// Puts queued requests on streams while the gateway's limit allows.
  private func sendQueued() {
    guard phase == .active, let context else { return }
    while pending.count < maxStreams, let r = queued.popFirst() {
      write(r, context)
    }
  }

  private func write(_ r: Request, _ context: ChannelHandlerContext) {
    let stream = HTTP2StreamID(nextStreamID)
    nextStreamID += 2
    pending[stream] = Pending(answer: r.answer)
    deadlines.append((stream, r.deadline))
    context.write(
      wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: r.headers)))),
      promise: nil)
    let sent = context.eventLoop.makePromise(of: Void.self)
    sent.futureResult.whenFailure { [self] error in
      finish(stream, .failure(.closed("the request could not be sent: \(error)")))
    }
    let data = HTTP2Frame.FramePayload.Data(
      data: .byteBuffer(context.channel.allocator.buffer(bytes: r.body)), endStream: true)
    context.write(
      wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(data))), promise: sent)
    // Each request flushed on its own (in order); `FlushPerTurn` below gives TLS one flush a turn.
    context.flush()
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
    case .settings(.settings(let settings)):
      for setting in settings where setting.parameter == .maxConcurrentStreams {
        maxStreams = setting.value
      }
      sendQueued()
    case .goAway:
      // NIOHTTP2 closes the streams the gateway will not answer (each fails below, as its
      // StreamClosedEvent comes); what was not sent fails now; new requests go to a new
      // connection.
      if phase == .active { phase = .goingAway }
      let refused = queued
      queued.removeAll()
      for r in refused { r.answer(.failure(.closed("the gateway sent GOAWAY"))) }
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
    if phase == .connecting { phase = .active }
    context.fireChannelActive()
    sendQueued()
  }

  func channelInactive(context: ChannelHandlerContext) {
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
    sendQueued()
  }

  /// Fails every request, in the order made, and takes no more: those in flight as closed,
  /// those never sent as `reason` (a connection that never came up: why).
  func failAll(_ reason: String) {
    let neverUp = phase == .connecting
    phase = .closed
    timer?.cancel()
    timer = nil
    let all = pending
    pending = [:]
    deadlines.removeAll()
    let waiting = queued
    queued.removeAll()
    for (_, p) in all.sorted(by: { $0.key < $1.key }) { p.answer(.failure(.closed(reason))) }
    for r in waiting {
      r.answer(.failure(neverUp ? .connectionFailed(reason) : .closed(reason)))
    }
  }

  /// Sets the timer for the oldest request: the oldest on a stream or, if older, the first
  /// still queued.
  private func arm() {
    while let first = deadlines.first, pending[first.stream] == nil { deadlines.removeFirst() }
    let oldest: NIODeadline
    switch (deadlines.first?.deadline, queued.first?.deadline) {
    case (let a?, let b?): oldest = min(a, b)
    case (let a?, nil), (nil, let a?): oldest = a
    case (nil, nil):
      timer = nil
      return
    }
    timer = eventLoop.scheduleTask(deadline: oldest) { [self] in
      timer = nil
      while let f = deadlines.first, pending[f.stream] == nil { deadlines.removeFirst() }
      let now = NIODeadline.now()
      if let f = deadlines.first, f.deadline <= now {
        finish(f.stream, .failure(.timedOut))
        onTimeout?()
        return
      }
      if let q = queued.first, q.deadline <= now {
        queued.removeFirst().answer(.failure(.timedOut))
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
