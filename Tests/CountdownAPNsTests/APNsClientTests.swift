// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Testing

@testable import CountdownAPNs

/// The sender's connection in this process, against a gateway on loopback that speaks HTTP/2
/// over TLS (swift-nio-http2, swift-nio-ssl, a CA of the test's own) and answers by script:
/// many requests on one connection, statuses and reasons, a reset stream, GOAWAY, a request
/// never answered, a dropped connection. (`make pushes` runs the whole server against a
/// stand-in in Python; this one runs under the sanitizers.)
@Suite("APNs client on the wire", .serialized)
struct APNsClientTests {
  /// A connection to a new gateway, both torn down after `body`.
  func withClient(
    timeout: TimeAmount = .seconds(10), _ body: (APNsClient, ScriptedGateway) async throws -> Void
  ) async throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
      "apns-client-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    try makeCertificates(in: dir)
    let gateway = try ScriptedGateway(
      certificate: dir.appendingPathComponent("server.pem").path,
      key: dir.appendingPathComponent("server.key").path)
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    do {
      var endpoint = APNsEndpoint(
        host: "127.0.0.1", port: gateway.port,
        caPEM: Array(try Data(contentsOf: dir.appendingPathComponent("ca.pem"))),
        bundleID: "test.app")
      endpoint.requestTimeout = timeout
      let client = try APNsClient(endpoint: endpoint, eventLoop: group.next())
      try await body(client, gateway)
      try await client.eventLoop.submit { client.close() }.get()
    } catch {
      try? await group.shutdownGracefully()
      await gateway.stop()
      throw error
    }
    try await group.shutdownGracefully()
    await gateway.stop()
  }

  func send(_ client: APNsClient, _ token: String) async throws -> Result<
    APNsResponse, APNsTransportError
  > {
    try await client.eventLoop.flatSubmit {
      let answered = client.eventLoop.makePromise(of: Result<APNsResponse, APNsTransportError>.self)
      client.send(
        deviceToken: token, priority: 10, payload: Array(#"{"aps":{"timestamp":1}}"#.utf8),
        jwt: "header.claims.signature", expiration: nil
      ) { answered.succeed($0) }
      return answered.futureResult
    }.get()
  }

  func connections(_ client: APNsClient) async throws -> Int {
    try await client.eventLoop.submit { client.connectionsMade }.get()
  }

  @Test(
    "1,200 requests at once share one connection (200 wait for the gateway's limit of 1,000 streams), reach it in order, each answered on its own stream"
  )
  func manyOnOneConnection() async throws {
    // A generous request timeout: beside the whole suite in a debug build a request may wait
    // seconds, and a timed-out request gives the connection up (the `timeout` test's case).
    try await withClient(timeout: .seconds(120)) { client, gateway in
      let n = 1200
      let answers = try await withThrowingTaskGroup(
        of: (Int, Result<APNsResponse, APNsTransportError>).self
      ) {
        tasks in
        for k in 0..<n { tasks.addTask { (k, try await send(client, String(format: "%064x", k))) } }
        var all: [Int: Result<APNsResponse, APNsTransportError>] = [:]
        for try await (k, r) in tasks { all[k] = r }
        return all
      }
      #expect(answers.count == n)
      for (k, r) in answers {
        guard case .success(let response) = r else {
          Issue.record("request \(k): \(r)")
          continue
        }
        // The gateway answers with the request's token as its apns-id: no answer on the wrong
        // request.
        #expect(response.status == 200 && response.apnsID == String(format: "%064x", k))
      }
      #expect(try await connections(client) == 1)
      #expect(gateway.state.withLockedValue { $0.requests } == n)
      // The requests reach the gateway in the order they were made (stream ids rise), so its
      // answers close the oldest streams first.
      let ended = gateway.state.withLockedValue { $0.ended }
      #expect(ended == ended.sorted())
    }
  }

  @Test("APNs's statuses come back with their reasons")
  func statuses() async throws {
    try await withClient { client, gateway in
      gateway.script([
        .status(410, "Unregistered"), .status(400, "BadDeviceToken"), .status(429, nil),
      ])
      let a = try await send(client, "01")
      let b = try await send(client, "02")
      let c = try await send(client, "03")
      let d = try await send(client, "04")
      let (ra, rb, rc, rd) = (try a.get(), try b.get(), try c.get(), try d.get())
      #expect(ra.status == 410 && ra.reason == "Unregistered")
      #expect(rb.status == 400 && rb.reason == "BadDeviceToken")
      #expect(rc.status == 429 && rc.reason == nil)
      #expect(rd.status == 200)
      #expect(try await connections(client) == 1)
    }
  }

  /// A request the gateway does not answer with a status, and how many connections the client
  /// has made once the next request is answered.
  struct Fault: Sendable, CustomTestStringConvertible {
    var answer: ScriptedGateway.Answer
    var connections: Int
    var testDescription: String
  }

  @Test(
    "A request the gateway resets, refuses with GOAWAY, drops with its connection or answers without a status fails; the next is answered (on the same connection after a reset or a bad answer, a new one otherwise)",
    arguments: [
      Fault(answer: .reset, connections: 1, testDescription: "RST_STREAM"),
      Fault(answer: .goAway, connections: 2, testDescription: "GOAWAY"),
      Fault(answer: .close, connections: 2, testDescription: "connection closed"),
      Fault(
        answer: .headers([("apns-id", "x")]), connections: 1, testDescription: "no :status"),
      Fault(
        answer: .headers([(":status", "OK"), ("apns-id", "x")]), connections: 1,
        testDescription: ":status not a number"),
    ])
  func fault(_ fault: Fault) async throws {
    try await withClient { client, gateway in
      gateway.script([fault.answer])
      guard case .failure(.closed) = try await send(client, "01") else {
        Issue.record("a request the gateway did not answer must fail as closed")
        return
      }
      #expect(try await send(client, "02").get().status == 200)
      #expect(try await connections(client) == fault.connections)
    }
  }

  @Test("A request never answered times out and the connection is given up")
  func timeout() async throws {
    try await withClient(timeout: .milliseconds(300)) { client, gateway in
      gateway.script([.hang])
      let started = ContinuousClock.now
      let first = try await send(client, "01")
      let waited = ContinuousClock.now - started
      #expect(first == .failure(.timedOut))
      #expect(waited >= .milliseconds(290))
      let second = try await send(client, "02").get()
      #expect(second.status == 200)
      let made = try await connections(client)
      #expect(made == 2)
    }
  }
}

/// A gateway on loopback: HTTP/2 frames over TLS, answering each request with the next scripted
/// answer (200 when none is left).
final class ScriptedGateway: @unchecked Sendable {
  // @unchecked Sendable: `state` is locked; the rest is set in init.
  enum Answer: Sendable {
    case status(Int, String?)
    case reset
    case goAway
    case hang
    case close
    /// A header block of these headers alone, ending the stream (a gateway's garbage).
    case headers([(String, String)])
  }

  struct State {
    var script: [Answer] = []
    var requests = 0
    /// The stream ids of the requests in the order their last frame arrived.
    var ended: [Int] = []
  }

  let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
  let state = NIOLockedValueBox(State())
  private(set) var port = 0
  private var channel: Channel?

  init(certificate: String, key: String) throws {
    var tls = TLSConfiguration.makeServerConfiguration(
      certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
      privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
    tls.applicationProtocols = ["h2"]
    let context = try NIOSSLContext(configuration: tls)
    channel = try ServerBootstrap(group: group)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelInitializer { [self] channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
          try channel.pipeline.syncOperations.addHandler(
            NIOHTTP2Handler(
              mode: .server,
              initialSettings: [HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000)],
              // So that it can send the header blocks without a status a test asks for.
              headerBlockValidation: .disabled))
          try channel.pipeline.syncOperations.addHandler(Requests(gateway: self))
        }
      }
      .bind(host: "127.0.0.1", port: 0).wait()
    port = channel?.localAddress?.port ?? 0
  }

  func script(_ answers: [Answer]) { state.withLockedValue { $0.script += answers } }

  func stop() async {
    try? await channel?.close()
    try? await group.shutdownGracefully()
  }

  /// One connection's requests.
  final class Requests: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame
    let gateway: ScriptedGateway
    var unacknowledged = 0
    /// Each open stream's device token (from its `:path`).
    var tokens: [HTTP2StreamID: String] = [:]
    init(gateway: ScriptedGateway) { self.gateway = gateway }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      let frame = unwrapInboundIn(data)
      switch frame.payload {
      case .headers(let h):
        tokens[frame.streamID] = h.headers.first(name: ":path")?.split(separator: "/").last.map(
          String.init)
        if h.endStream { answer(context, frame.streamID) }
      case .data(let d):
        if case .byteBuffer(let b) = d.data { unacknowledged += b.readableBytes }
        if unacknowledged >= 16_384 {
          context.write(
            wrapOutboundOut(
              HTTP2Frame(
                streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledged))),
            promise: nil)
          unacknowledged = 0
        }
        if d.endStream { answer(context, frame.streamID) }
      default: break
      }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
      context.flush()
      context.fireChannelReadComplete()
    }

    private func answer(_ context: ChannelHandlerContext, _ stream: HTTP2StreamID) {
      let next = gateway.state.withLockedValue { s -> Answer? in
        s.requests += 1
        s.ended.append(Int(stream))
        return s.script.isEmpty ? nil : s.script.removeFirst()
      }
      let token = tokens.removeValue(forKey: stream) ?? "none"
      switch next ?? .status(200, nil) {
      case .status(let status, let reason):
        let headers: HPACKHeaders = [
          ":status": String(status), "apns-id": token,
        ]
        context.write(
          wrapOutboundOut(
            HTTP2Frame(
              streamID: stream, payload: .headers(.init(headers: headers, endStream: reason == nil))
            )),
          promise: nil)
        if let reason {
          let body = context.channel.allocator.buffer(string: #"{"reason":"\#(reason)"}"#)
          context.write(
            wrapOutboundOut(
              HTTP2Frame(
                streamID: stream, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
            promise: nil)
        }
      case .headers(let list):
        context.write(
          wrapOutboundOut(
            HTTP2Frame(
              streamID: stream,
              payload: .headers(.init(headers: HPACKHeaders(list), endStream: true)))),
          promise: nil)
      case .reset:
        context.write(
          wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .rstStream(.internalError))),
          promise: nil)
      case .goAway:
        // None of this connection's streams taken: the request is refused, then the
        // connection closes.
        let goAway = HTTP2Frame(
          streamID: .rootStream,
          payload: .goAway(lastStreamID: .rootStream, errorCode: .noError, opaqueData: nil))
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(goAway)).whenComplete { _ in
          channel.close(promise: nil)
        }
      case .hang:
        break
      case .close:
        context.close(promise: nil)
      }
    }
  }
}
