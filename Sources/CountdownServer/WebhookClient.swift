// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// One webhook URL's HTTP/1.1 client (docs/webhooks.md, "Delivery"): up to
/// ``maxConnections`` keep-alive connections, one request at a time on each, the request
/// written in one flush. SwiftNIO's HTTP/1 codec and swift-nio-ssl do the protocol; this type
/// only keeps the connections. (async-http-client does more, and was measured first: its two
/// flushes and bookkeeping per request cost ~180 µs of CPU, 5,000 deliveries/s on the sender's
/// one thread; BENCHMARKS.md.)
///
/// Used on `eventLoop` only.
final class WebhookClient: @unchecked Sendable {
  // @unchecked Sendable: every mutable property is touched on `eventLoop` only.

  /// Why a request got no answer.
  enum Failure: Error, CustomStringConvertible {
    case timedOut(Int64)
    case closed
    case connect(any Error)
    case connection(any Error)
    case tls(any Error)
    case protocolError(any Error)

    var description: String {
      switch self {
      case .timedOut(let ms): "no answer within \(ms) ms"
      case .closed: "the connection closed before the answer"
      case .connect(let e): "cannot connect: \(e)"
      case .connection(let e): "the connection failed: \(e)"
      case .tls(let e): "TLS failed: \(e)"
      case .protocolError(let e): "the answer is not HTTP/1.1: \(e)"
      }
    }
  }

  /// Gets the answer's status, or why there was none.
  typealias Completion = @Sendable (Result<Int, Failure>) -> Void

  let target: WebhookURL
  let eventLoop: EventLoop
  let maxConnections: Int
  private let timeout: TimeAmount
  private let tls: NIOSSLContext?
  /// Connections answered and ready for the next request.
  private var idle: [Channel] = []
  /// Connections open or opening, idle ones included.
  private var open = 0
  /// Requests waiting for a connection (only when more are asked for than
  /// ``maxConnections``).
  private var waiting: [(HTTPHeaders, [UInt8], Completion)] = []
  private var closed = false

  init(
    url: String, eventLoop: EventLoop, maxConnections: Int, timeoutMilliseconds: Int64,
    tls: NIOSSLContext?
  ) throws(ServerStartError) {
    switch WebhookURL.parse(url) {
    case .success(let target): self.target = target
    case .failure(let p): throw ServerStartError("--webhook \(url) \(p.message)")
    }
    self.eventLoop = eventLoop
    self.maxConnections = max(1, maxConnections)
    self.timeout = .milliseconds(timeoutMilliseconds)
    self.tls = target.tls ? tls : nil
    if target.tls && tls == nil {
      throw ServerStartError("--webhook \(url): TLS is not available to this server")
    }
  }

  /// Posts `body` with `headers` (the target's `Host`, `Content-Length` and `Connection` are
  /// added); `completion` gets the answer's status, or why there was none. On `eventLoop`.
  func post(
    headers: HTTPHeaders, body: [UInt8], completion: @escaping Completion
  ) {
    eventLoop.preconditionInEventLoop()
    guard !closed else { return completion(.failure(.closed)) }
    while let channel = idle.popLast() {
      if channel.isActive { return send(on: channel, headers, body, completion) }
      open -= 1  // closed by the receiver while idle
    }
    guard open < maxConnections else {
      waiting.append((headers, body, completion))
      return
    }
    open += 1
    connect().whenComplete { [self] result in
      switch result {
      case .success(let channel): send(on: channel, headers, body, completion)
      case .failure(let error):
        open -= 1
        completion(.failure(.connect(error)))
        next()
      }
    }
  }

  private func connect() -> EventLoopFuture<Channel> {
    let tls = self.tls
    let host = target.host
    return ClientBootstrap(group: eventLoop)
      .connectTimeout(timeout)
      .channelOption(.socketOption(.tcp_nodelay), value: 1)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          if let tls {
            // SNI and the certificate's name check for a name; an address is checked
            // against the certificate's addresses, without SNI.
            let name: String? = if case .name = System.hostKind(host) { host } else { nil }
            try channel.pipeline.syncOperations.addHandler(
              try NIOSSLClientHandler(context: tls, serverHostname: name))
          }
          try channel.pipeline.syncOperations.addHTTPClientHandlers()
          try channel.pipeline.syncOperations.addHandler(Exchange())
        }
      }
      .connect(host: target.host, port: target.port)
  }

  private func send(
    on channel: Channel, _ headers: HTTPHeaders, _ body: [UInt8],
    _ completion: @escaping Completion
  ) {
    guard let exchange = try? channel.pipeline.syncOperations.handler(type: Exchange.self) else {
      open -= 1
      channel.close(promise: nil)
      return completion(.failure(.closed))
    }
    var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: target.path)
    head.headers = headers
    head.headers.replaceOrAdd(name: "Host", value: target.hostHeader)
    head.headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
    let timeoutMs = timeout.nanoseconds / 1_000_000
    let timer = eventLoop.scheduleTask(in: timeout) { [exchange] in
      exchange.fail(.timedOut(timeoutMs), channel: channel)
    }
    exchange.answer = { [self] result in
      timer.cancel()
      switch result {
      case .success(let (status, keepAlive)):
        if keepAlive && channel.isActive && !closed {
          idle.append(channel)
        } else {
          open -= 1
          channel.close(promise: nil)
        }
        completion(.success(status))
      case .failure(let failure):
        open -= 1
        channel.close(promise: nil)
        completion(.failure(failure))
      }
      next()
    }
    var buffer = channel.allocator.buffer(capacity: body.count)
    buffer.writeBytes(body)
    channel.write(HTTPClientRequestPart.head(head), promise: nil)
    channel.write(HTTPClientRequestPart.body(.byteBuffer(buffer)), promise: nil)
    channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
  }

  /// A request that waited for a connection gets one that came free (or a new one).
  private func next() {
    guard !waiting.isEmpty, !closed else { return }
    let (headers, body, completion) = waiting.removeFirst()
    post(headers: headers, body: body, completion: completion)
  }

  /// Closes every connection; requests in flight fail as closed.
  func close() {
    eventLoop.preconditionInEventLoop()
    closed = true
    for channel in idle { channel.close(promise: nil) }
    idle = []
    let waiting = self.waiting
    self.waiting = []
    for w in waiting { w.2(.failure(.closed)) }
  }
}

/// One connection's exchange: the answer's status and whether the connection stays open,
/// handed to ``answer`` once, at the answer's end (its body is not kept), or the failure.
private final class Exchange: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
  // @unchecked Sendable: used on its channel's event loop only.
  typealias InboundIn = HTTPClientResponsePart

  var answer: ((Result<(Int, Bool), WebhookClient.Failure>) -> Void)?
  private var status = 0
  private var keepAlive = true

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let head):
      status = Int(head.status.code)
      keepAlive = head.isKeepAlive
    case .body:
      break
    case .end:
      // 1xx answers (100 Continue) are informational: the final one follows.
      guard status >= 200 else { return }
      let a = answer
      answer = nil
      a?(.success((status, keepAlive)))
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    let failure: WebhookClient.Failure =
      switch error {
      case is IOError: .connection(error)
      case is NIOSSLError, is BoringSSLError: .tls(error)
      default: .protocolError(error)
      }
    fail(failure, channel: context.channel)
  }

  func channelInactive(context: ChannelHandlerContext) {
    fail(.closed, channel: context.channel)
    context.fireChannelInactive()
  }

  func fail(_ failure: WebhookClient.Failure, channel: Channel) {
    let a = answer
    answer = nil
    a?(.failure(failure))
    channel.close(promise: nil)
  }
}
