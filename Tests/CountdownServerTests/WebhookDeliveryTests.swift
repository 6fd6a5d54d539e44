// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

@testable import CountdownServer
@testable import CountdownStore

/// Webhooks in this process (docs/webhooks.md), so that `make tsan` and `make asan` see the
/// sender's threads, its client's connections and the outbox's hand-offs: a server with a
/// state file posting to a receiver on SwiftNIO, in order per activity, signed, and a stop
/// with deliveries pending that the next server delivers. Tests/webhooks covers the rest
/// against the `countdown` binary.
@Suite("Webhook delivery", .serialized)
struct WebhookDeliveryTests {
  /// A receiver on loopback: HTTP/1.1 keep-alive, each request's headers and body kept,
  /// answered with `status()`.
  final class Receiver: @unchecked Sendable {
    // @unchecked Sendable: `requests` and `status` are locked; the rest is set at start.
    struct Request {
      var headers: HTTPHeaders
      var body: [UInt8]
      var status: Int
    }
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var channel: Channel?
    private(set) var port = 0
    private let state = NIOLockedValueBox<(requests: [Request], status: Int)>(([], 200))

    init() throws {
      let channel = try ServerBootstrap(group: group)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelInitializer { [self] channel in
          channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(Handler(receiver: self))
          }
        }
        .bind(host: "127.0.0.1", port: 0).wait()
      self.channel = channel
      port = channel.localAddress?.port ?? 0
    }

    var url: String { "http://127.0.0.1:\(port)/hook" }
    var status: Int {
      get { state.withLockedValue { $0.status } }
      set { state.withLockedValue { $0.status = newValue } }
    }
    var requests: [Request] { state.withLockedValue { $0.requests } }
    /// The bodies answered 2xx, parsed.
    var delivered: [[String: Any]] {
      requests.filter { $0.status == 200 }.compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any]
      }
    }

    func answer(_ headers: HTTPHeaders, _ body: [UInt8]) -> Int {
      state.withLockedValue { s in
        s.requests.append(Request(headers: headers, body: body, status: s.status))
        return s.status
      }
    }

    func wait(until done: () -> Bool, seconds: Double = 15) -> Bool {
      let deadline = Date().addingTimeInterval(seconds)
      while !done(), Date() < deadline { usleep(20_000) }
      return done()
    }

    func stop() {
      try? channel?.close().wait()
      try? group.syncShutdownGracefully()
    }

    final class Handler: ChannelInboundHandler, @unchecked Sendable {
      // @unchecked Sendable: used on its channel's event loop only.
      typealias InboundIn = HTTPServerRequestPart
      typealias OutboundOut = HTTPServerResponsePart
      let receiver: Receiver
      var head: HTTPRequestHead?
      var body: [UInt8] = []
      init(receiver: Receiver) { self.receiver = receiver }

      func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
          head = h
          body = []
        case .body(let b): body += b.readableBytesView
        case .end:
          let status = receiver.answer(head?.headers ?? [:], body)
          var headers = HTTPHeaders()
          headers.add(name: "Content-Length", value: "0")
          context.write(
            wrapOutboundOut(
              .head(
                HTTPResponseHead(
                  version: .http1_1, status: .init(statusCode: status), headers: headers))),
            promise: nil)
          context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
      }
    }
  }

  static func events(_ bodies: [[String: Any]], of id: String) -> [String] {
    bodies.compactMap { b in
      guard let e = b["event"] as? [String: Any], e["id"] as? String == id else { return nil }
      return e["event"] as? String
    }
  }

  @Test("Every lifecycle event is posted in order per activity, signed, with the activity after it")
  func inOrderSigned() async throws {
    try await onThread {
      let receiver = try Receiver()
      defer { receiver.stop() }
      let secret = Array("s3cret".utf8)
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let s = try RunningServer.reopening {
        $0.statePath = dir.appendingPathComponent("s.db").path
        $0.webhooks = WebhookOptions(urls: [receiver.url], secret: secret)
      }
      let c = try s.client()
      for a in ["a", "b", "c"] {
        _ = try c.request(#"{"op":"start","id":"\#(a)","kind":"elapsed","title":"\#(a)"}"#)
        _ = try c.request(#"{"op":"update","id":"\#(a)","title":"\#(a)1"}"#)
        _ = try c.request(#"{"op":"pause","id":"\#(a)"}"#)
      }
      _ = try c.request(#"{"op":"end","id":"b","dismissal":"immediate"}"#)
      #expect(receiver.wait { receiver.delivered.count == 11 }, "\(receiver.delivered.count)")
      let bodies = receiver.delivered
      #expect(Self.events(bodies, of: "a") == ["started", "updated", "paused"])
      #expect(
        Self.events(bodies, of: "b") == ["started", "updated", "paused", "ended", "dismissed"])
      for r in receiver.requests {
        let header = r.headers.first(name: "Countdown-Signature") ?? ""
        let t = header.split(separator: ",").first.map { String($0.dropFirst(2)) } ?? ""
        let expected = WebhookSignature.header(
          key: SymmetricKey(data: secret), unixSeconds: Int64(t) ?? -1, body: r.body)
        #expect(header == expected)
        #expect(r.headers.first(name: "Content-Type") == "application/json")
      }
      let paused = bodies.first {
        ($0["event"] as? [String: Any])?["event"] as? String == "paused"
      }
      #expect((paused?["activity"] as? [String: Any])?["phase"] as? String == "paused")
    }
  }

  @Test("Deliveries pending at a stop stay in the state file; the next server posts them")
  func pendingAcrossAStop() async throws {
    try await onThread {
      let receiver = try Receiver()
      defer { receiver.stop() }
      receiver.status = 503
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let path = dir.appendingPathComponent("s.db").path
      do {
        let s = try RunningServer.reopening {
          $0.statePath = path
          $0.webhooks = WebhookOptions(urls: [receiver.url])
        }
        let c = try s.client()
        _ = try c.request(#"{"op":"start","id":"p","kind":"elapsed","title":"P"}"#)
        _ = try c.request(#"{"op":"pause","id":"p"}"#)
        #expect(receiver.wait { receiver.requests.count >= 1 })
      }
      var opened: StateStore?
      for _ in 0..<500 where opened == nil {
        // The stopped server's lock may linger a moment in a child another test spawned.
        opened = try? StateStore(path: path, sync: .normal)
        if opened == nil { usleep(10_000) }
      }
      let store = try #require(opened)
      let pending = try store.loadWebhooks()
      store.close()
      #expect(pending.map(\.item.event) == [.started, .paused])
      receiver.status = 200
      let s = try RunningServer.reopening {
        $0.statePath = path
        $0.webhooks = WebhookOptions(urls: [receiver.url])
      }
      #expect(receiver.wait { Self.events(receiver.delivered, of: "p") == ["started", "paused"] })
      _ = s
    }
  }
}
