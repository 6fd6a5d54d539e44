// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Logging
import NIOCore
import NIOPosix

/// A cluster node's connections to the other nodes for their lifecycle events (docs/cluster.md,
/// "Subscriptions across nodes"): one per live peer, on the hub's event loop, authenticated
/// with the cluster token, asking `{"op":"relay","incarnation":…,"after":…}`. Each event line
/// (`SEQUENCE DELIVERY JSON`) goes to the hub as an event of this node's
/// (``Hub/relayed(from:sequence:id:kind:line:)``), once: a delivery number already passed on
/// (a replay after a reconnection) is skipped.
///
/// The peers come from the lease driver's observations (``update(peers:)``): a new one is
/// connected at once, one that is gone is let go, one whose connection broke is connected
/// again at the next observation and asks for the events after the last it passed on (the
/// peer keeps its recent ones; a peer met for the first time, or restarted, gives all it
/// keeps).
final class RelayLinks: @unchecked Sendable {
  // @unchecked Sendable: everything but the constants is touched on `hub.eventLoop` only.
  private let hub: Hub
  private let token: String
  private let logger: Logger
  private var links: [String: Link] = [:]
  /// By peer: the incarnation last met and the last delivery number passed on from it.
  private var seen: [String: (incarnation: UInt64, delivery: UInt64)] = [:]
  private var stopped = false
  /// Whether this node's subscribers want ticks: the peers then relay theirs too.
  private var wantsTicks = false
  /// The lifecycle events passed on, by the incarnation that made them.
  private var sources = RelayedSources()

  init(hub: Hub, token: String, logger: Logger) {
    self.hub = hub
    self.token = token
    self.logger = logger
  }

  /// The live peers by name, with their addresses, as last observed.
  func update(peers: [String: String]) {
    hub.eventLoop.execute { self.apply(peers) }
  }

  /// Asks every peer for its ticks too, or no longer (on the hub's event loop: the hub says
  /// when its subscribers start or stop wanting them).
  func setTicks(_ wanted: Bool) {
    guard wanted != wantsTicks else { return }
    wantsTicks = wanted
    for link in links.values {
      guard let channel = link.channel, !link.closed else { continue }
      channel.writeAndFlush(
        channel.allocator.buffer(bytes: relayRequest(for: link.name).line), promise: nil)
    }
  }

  /// What this node has passed on from `name` so far, and whether it takes ticks.
  private func relayRequest(for name: String) -> PeerMessage.RelayRequest {
    PeerMessage.RelayRequest(
      incarnation: seen[name]?.incarnation, after: seen[name]?.delivery ?? 0, ticks: wantsTicks)
  }

  /// Lets every connection go; no new one is made.
  func close() {
    hub.eventLoop.execute {
      self.stopped = true
      for link in self.links.values { link.channel?.close(promise: nil) }
      self.links = [:]
    }
  }

  private func apply(_ peers: [String: String]) {
    guard !stopped else { return }
    for (name, link) in links where link.closed || peers[name] != link.address {
      link.channel?.close(promise: nil)
      links[name] = nil
    }
    for (name, address) in peers where links[name] == nil {
      let link = Link(name: name, address: address)
      links[name] = link
      connect(link)
    }
  }

  /// One peer's relay connection.
  final class Link: @unchecked Sendable {
    // @unchecked Sendable: used on the hub's event loop only.
    let name: String
    let address: String
    var channel: (any Channel)?
    var closed = false
    /// The peer's incarnation, once its answer came.
    var incarnation: UInt64?
    init(name: String, address: String) {
      self.name = name
      self.address = address
    }
  }

  private func connect(_ link: Link) {
    guard let (host, port) = PeerLinks.hostAndPort(link.address) else {
      link.closed = true
      return
    }
    let bytes = PeerLinks.authLine(token) + [0x0A] + relayRequest(for: link.name).line
    let eventLoop = hub.eventLoop
    ClientBootstrap(group: eventLoop)
      .connectTimeout(.seconds(2))
      .channelOption(.socketOption(.tcp_nodelay), value: 1)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandler(
            Lines(links: self, link: NIOLoopBound(link, eventLoop: eventLoop)))
        }
      }
      .connect(host: host, port: port)
      .whenComplete { result in
        switch result {
        case .success(let channel):
          guard !link.closed, !self.stopped else {
            channel.close(promise: nil)
            return
          }
          link.channel = channel
          channel.writeAndFlush(channel.allocator.buffer(bytes: bytes), promise: nil)
        case .failure(let error):
          link.closed = true
          self.logger.debug("cannot reach node \(link.name) for its events: \(error)")
        }
      }
  }

  /// Events `source` (an incarnation of another node) committed and perhaps never relayed,
  /// found beside a shard's rows by this node when it took the shard (`lines`: sequence and
  /// JSON with its newline): those not passed on yet go to this node's subscribers and to
  /// every node relaying this one's events. From any thread.
  func recover(from source: UInt64, _ lines: [(sequence: UInt64, json: ArraySlice<UInt8>)]) {
    hub.eventLoop.execute { [self] in
      guard source != hub.incarnation else {
        // This node's own: those whose commit it took for failed landed after all.
        let n = hub.landed(lines.map(\.sequence))
        if n > 0 {
          logger.notice(
            "\(n) event(s) of this node whose commit it took for failed had landed: delivered now")
        }
        return
      }
      var events: [(sequence: UInt64, id: String, kind: ActivityEvent.Kind, line: ByteBuffer)] = []
      for (sequence, json) in lines {
        let parsed = json.withUnsafeBytes { Self.kindAndID($0) }
        guard let (kind, id) = parsed, kind != .tick,
          sources.recovered(sequence, from: source)
        else { continue }
        events.append((sequence, id, kind, ByteBuffer(bytes: json)))
      }
      guard !events.isEmpty else { return }
      logger.notice(
        "passing on \(events.count) event(s) that node incarnation \(String(source, radix: 16)) committed and never relayed"
      )
      hub.metrics.relayedIn.increment(by: Int64(events.count))
      hub.metrics.recovered.increment(by: Int64(events.count))
      hub.relayRecovered(from: source, events)
    }
  }

  /// One line from `link`'s peer, with its newline.
  fileprivate func line(_ bytes: UnsafeRawBufferPointer, from link: Link) {
    guard let first = bytes.first else { return }
    if first == UInt8(ascii: "{") {
      answer(Array(bytes.dropLast()), from: link)
      return
    }
    // [~SOURCE ]SEQUENCE DELIVERY JSON: an event, `~SOURCE` when another node (SOURCE)
    // committed it and the peer recovered it (``recover(from:_:)``).
    guard let incarnation = link.incarnation,
      let (head, jsonStart) = PeerMessage.RelayLine.decode(bytes)
    else { return }
    let source = head.source
    let (sequence, delivery) = (head.sequence, head.delivery)
    // Delivery number 0: a tick (not numbered, not replayed).
    if delivery > 0 {
      if let known = seen[link.name], known.incarnation == incarnation,
        delivery <= known.delivery
      {
        return  // passed on already (a replay after a reconnection)
      }
      seen[link.name] = (incarnation, delivery)
      // Once, whichever way it came (its node's relay, or another's recovery).
      let new =
        if let source {
          source != hub.incarnation && sources.recovered(sequence, from: source)
        } else {
          sources.streamed(sequence, from: incarnation)
        }
      guard new else {
        // This node's own event, recovered by the peer from a shard's row: it landed, though
        // this node took its commit for failed (then it is delivered here now).
        if source == hub.incarnation, hub.landed([sequence]) > 0 {
          logger.notice(
            "an event of this node whose commit it took for failed had landed: delivered now")
        }
        return
      }
    }
    let json = UnsafeRawBufferPointer(rebasing: bytes[jsonStart...])
    guard let (kind, id) = Self.kindAndID(json) else { return }
    var line = ByteBufferAllocator().buffer(capacity: json.count)
    line.writeBytes(json)
    if kind != .tick { hub.metrics.relayedIn.increment() }
    hub.relayed(
      from: source ?? incarnation, sequence: sequence, id: id, kind: kind, group: head.group,
      line: line, recovered: source != nil)
  }

  /// The peer's answer to the token (ignored when it agrees) or to `relay`.
  private func answer(_ reply: [UInt8], from link: Link) {
    switch PeerMessage.RelayAnswer.decode(reply) {
    case .refused(let code, let message)?:
      logger.warning("node \(link.name) refused to relay its events: \(code.rawValue): \(message)")
      link.closed = true
      link.channel?.close(promise: nil)
    case .accepted(let incarnation, let gap)?:
      link.incarnation = incarnation
      if seen[link.name]?.incarnation != incarnation { seen[link.name] = (incarnation, 0) }
      if gap {
        hub.metrics.relayGaps.increment()
        logger.warning(
          "node \(link.name) no longer keeps some of its events this node missed: its subscribers here miss them"
        )
      }
    case nil:
      // The token's answer (`{"rid":…,"ok":true}`), or a line that is not an answer.
      if PeerMessage.isOK(reply) == false {
        logger.warning(
          "node \(link.name) refused this node: \(String(decoding: reply.prefix(300), as: UTF8.self))"
        )
        link.closed = true
        link.channel?.close(promise: nil)
      }
    }
  }

  /// An event object's kind and activity id: read straight from its head
  /// (`{"at":…,"event":"KIND","id":"ID"`, as every node writes it), else parsed.
  static func kindAndID(_ json: UnsafeRawBufferPointer) -> (ActivityEvent.Kind, String)? {
    if let e = find(eventKey, in: json, from: 0),
      let i = find(idKey, in: json, from: e),
      let kind = ActivityEvent.Kind(
        rawValue: String(decoding: json[e..<(i - idKey.count)], as: UTF8.self)),
      let end = json[i...].firstIndex(of: UInt8(ascii: "\"")),
      !json[i..<end].contains(UInt8(ascii: "\\"))
    {
      return (kind, String(decoding: json[i..<end], as: UTF8.self))
    }
    guard
      case .object(let o)? = try? JSONParser.parseTopLevel(
        bytes: UnsafeBufferPointer(
          start: json.baseAddress?.assumingMemoryBound(to: UInt8.self), count: json.count)),
      case .string(let name)? = o["event"], let kind = ActivityEvent.Kind(rawValue: name),
      case .string(let id)? = o["id"]
    else { return nil }
    return (kind, id)
  }

  private static let eventKey = Array(#","event":""#.utf8)
  private static let idKey = Array(#"","id":""#.utf8)

  /// Where `needle` ends in `bytes` at or after `from` (the index after it), or nil.
  static func find(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
    guard needle.count <= bytes.count else { return nil }
    var i = from
    while i + needle.count <= bytes.count {
      var k = 0
      while k < needle.count, bytes[i + k] == needle[k] { k += 1 }
      if k == needle.count { return i + k }
      i += 1
    }
    return nil
  }

  /// The lines of a relay connection, and its end.
  final class Lines: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let links: RelayLinks
    let link: NIOLoopBound<Link>
    private var lines = PeerMessage.LineSplitter()

    init(links: RelayLinks, link: NIOLoopBound<Link>) {
      self.links = links
      self.link = link
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      lines.split(unwrapInboundIn(data)) { links.line($0, from: link.value) }
    }

    func channelInactive(context: ChannelHandlerContext) {
      link.value.closed = true
      context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
      link.value.closed = true
      context.close(promise: nil)
    }
  }
}
