// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import NIOCore
import NIOPosix

/// A cluster node's connections to the other nodes, reached over their `--listen` protocol
/// (docs/cluster.md, "Forwarding"): one TCP connection per peer, opened when first needed,
/// that authenticates with the cluster token and then carries forwarded request lines,
/// pipelined; each reply line comes back in order.
///
/// A connection that fails or closes fails what waits on it, and so does one that leaves a
/// request unanswered for `answerTimeout` (it is taken for dead and closed); the next request
/// opens another.
final class PeerLinks: Sendable {
  /// Another node's `--advertise` as host and port (a bracketed IPv6 host unwrapped); nil
  /// when it is not `HOST:PORT`.
  static func hostAndPort(_ address: String) -> (host: String, port: Int)? {
    try? CountdownServer.parseHostPort(address, option: "--advertise")
  }

  /// What a node sends first on another's `--listen`: the cluster token, without the newline.
  static func authLine(_ token: String) -> [UInt8] {
    var auth = JSONWriter()
    auth.raw("{\"op\":\"auth\",\"token\":")
    auth.write(string: token)
    auth.raw("}")
    return auth.bytes
  }

  /// Why a peer's reply to the cluster token ends the link, nil when it took the token. Only
  /// `unauthorized` is a refusal of the token; any other error is the peer's own (its limit
  /// of connections reached, a line it could not read) and is passed on as it said it, so
  /// that what waited on the link fails with the peer's reason, not a wrong one.
  static func authFailure(_ reply: [UInt8], from address: String) -> String? {
    if PeerMessage.isOK(reply) == true { return nil }
    switch PeerMessage.activity(in: reply) {
    case .failure(let e) where e.code == .unauthorized:
      return "node at \(address) refused the cluster token (\(e.message))"
    case .failure(let e) where PeerMessage.isOK(reply) == false:
      return "node at \(address) answered the cluster token with \(e.code.rawValue): \(e.message)"
    default:
      return
        "node at \(address) answered the cluster token with what is not a reply: \(String(decoding: reply.prefix(200), as: UTF8.self))"
    }
  }

  private let group: any EventLoopGroup
  private let token: String
  /// How long a forwarded request may wait for its reply.
  private let answerTimeout: TimeAmount
  private let links = Locked([String: Link]())

  init(group: any EventLoopGroup, token: String, answerTimeout: TimeAmount) {
    self.group = group
    self.token = token
    self.answerTimeout = answerTimeout
  }

  /// Sends `line` (one request, without its newline) to `node` at `address` (HOST:PORT);
  /// its reply line (without the newline) back.
  func send(_ line: [UInt8], to node: String, at address: String) -> EventLoopFuture<[UInt8]> {
    let link = links.withLock { links in
      if let l = links[node], l.address == address, !l.isClosed { return l }
      let l = Link(address: address, eventLoop: group.next(), answerTimeout: answerTimeout)
      links[node] = l
      l.connect(token: token)
      return l
    }
    return link.send(line)
  }

  /// Closes every connection.
  func close() {
    let all = links.withLock { links in
      defer { links = [:] }
      return Array(links.values)
    }
    for l in all { l.close() }
  }

  /// One peer's connection: the requests written and not answered yet, in order.
  final class Link: @unchecked Sendable {
    // @unchecked Sendable: `channel`, `pending`, `queued` and `closed` change on `eventLoop`.
    let address: String
    let eventLoop: any EventLoop
    let answerTimeout: TimeAmount
    private var channel: (any Channel)?
    private var pending: [EventLoopPromise<[UInt8]>] = []
    /// Lines sent before the connection was up.
    private var queued: [[UInt8]] = []
    private let closedFlag = Locked(false)

    var isClosed: Bool { closedFlag.withLock { $0 } }

    init(address: String, eventLoop: any EventLoop, answerTimeout: TimeAmount) {
      self.address = address
      self.eventLoop = eventLoop
      self.answerTimeout = answerTimeout
    }

    func connect(token: String) {
      guard let (host, port) = PeerLinks.hostAndPort(address) else {
        eventLoop.execute { self.fail("--advertise \(self.address) is not HOST:PORT") }
        return
      }
      // The token's reply is the first to come back: it answers nothing forwarded.
      let authLine = PeerLinks.authLine(token)
      eventLoop.execute {
        let first = self.eventLoop.makePromise(of: [UInt8].self)
        self.pending.insert(first, at: 0)
        self.queued.insert(authLine, at: 0)
        first.futureResult.whenSuccess { reply in
          if let why = PeerLinks.authFailure(reply, from: self.address) { self.fail(why) }
        }
      }
      ClientBootstrap(group: eventLoop)
        .connectTimeout(.seconds(2))
        .channelOption(.socketOption(.tcp_nodelay), value: 1)
        .channelInitializer { channel in
          channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(Replies(link: self))
          }
        }
        .connect(host: host, port: port)
        .whenComplete { result in
          switch result {
          case .success(let channel):
            self.channel = channel
            var buffer = channel.allocator.buffer(capacity: 256)
            for line in self.queued {
              buffer.writeBytes(line)
              buffer.writeInteger(UInt8(0x0A))
            }
            self.queued = []
            channel.writeAndFlush(buffer, promise: nil)
          case .failure(let error):
            self.fail("cannot reach it at \(self.address): \(error)")
          }
        }
    }

    func send(_ line: [UInt8]) -> EventLoopFuture<[UInt8]> {
      eventLoop.flatSubmit {
        let promise = self.eventLoop.makePromise(of: [UInt8].self)
        guard !self.isClosed else {
          promise.fail(PeerError("the connection to it at \(self.address) is closed"))
          return promise.futureResult
        }
        self.pending.append(promise)
        // Replies come in order: one that does not come in time means the peer is gone or
        // stuck, and everything after it would wait too.
        let timeout = self.eventLoop.scheduleTask(in: self.answerTimeout) {
          self.fail(
            "no answer from it at \(self.address) within \(self.answerTimeout.nanoseconds / 1_000_000) ms"
          )
        }
        promise.futureResult.whenComplete { _ in timeout.cancel() }
        if let channel = self.channel {
          var buffer = channel.allocator.buffer(capacity: line.count + 1)
          buffer.writeBytes(line)
          buffer.writeInteger(UInt8(0x0A))
          channel.writeAndFlush(buffer, promise: nil)
        } else {
          self.queued.append(line)
        }
        return promise.futureResult
      }
    }

    /// One reply line: it answers the oldest request.
    fileprivate func answered(_ line: [UInt8]) {
      guard !pending.isEmpty else { return }
      pending.removeFirst().succeed(line)
    }

    /// Fails what waits and closes; the next request makes a new link.
    fileprivate func fail(_ why: String) {
      closedFlag.withLock { $0 = true }
      let waiting = pending
      pending = []
      queued = []
      for p in waiting { p.fail(PeerError(why)) }
      channel?.close(promise: nil)
      channel = nil
    }

    func close() {
      eventLoop.execute { self.fail("the node is stopping") }
    }
  }

  /// Splits a peer's bytes into reply lines.
  final class Replies: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let link: Link
    private var lines = PeerMessage.LineSplitter()

    init(link: Link) { self.link = link }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      lines.split(unwrapInboundIn(data)) { link.answered(Array($0.dropLast())) }
    }

    func channelInactive(context: ChannelHandlerContext) {
      link.fail("the connection to it at \(link.address) closed")
      context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
      link.fail("the connection to it at \(link.address) failed: \(error)")
      context.close(promise: nil)
    }
  }
}

/// Why a forwarded request got no answer from its node.
struct PeerError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}
