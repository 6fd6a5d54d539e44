// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop
import CountdownProtocol
import NIOCore

/// One client connection: frames lines, decodes requests, sends each read's requests to the
/// loop as one batch, and writes the replies in request order.
///
/// Nothing a client does makes the server buffer without bound:
/// - Reading stops while the socket is not writable (a client that does not read its replies
///   is not read from either).
/// - Replies are estimated before they are built (``ReplyBudget``): while the replies of this
///   connection that are not yet written to its socket would exceed the budget, the lines
///   already read wait unparsed and nothing more is read. So memory is bounded by connections
///   × (budget + one reply), whatever is pipelined.
/// - A line that is begun must end within `lineTimeoutMilliseconds`, and a TCP client that
///   needs the token must send it within that time; else the connection is closed.
final class ConnectionHandler: ChannelDuplexHandler {
  typealias InboundIn = ByteBuffer
  typealias OutboundIn = ByteBuffer
  typealias OutboundOut = ByteBuffer

  let core: ServerCore
  /// The connection's decisions: the reply budget, admission, reading, closing.
  var state: ConnectionState
  private var partial: [UInt8] = []
  /// Set after a line went over the limit, until its newline.
  private var skipping = false
  private var batch: [BatchItem] = []
  /// The key this connection gave (`auth`), and the server's ``ServerCore/accessGeneration``
  /// when its role was last looked up.
  private var key: [UInt8] = []
  private var keysRead = 0
  /// The groups of the key the connection gave (docs/security.md, "Groups"); nil for a key
  /// without groups and a connection that gave none.
  private var keyGroups: Set<String>?
  var writer: ReplyWriter
  /// Bytes read and not parsed yet, waiting for `owed` to come down.
  private var backlog: [UInt8] = []
  /// Where the unparsed bytes of `backlog` start (parsed ones are dropped in bulk, not one
  /// batch's worth at a time, which would copy the rest each time).
  private var backlogHead = 0
  /// The close of a client that takes too long to finish its line or send its token.
  private var lineTimer: Scheduled<Void>?
  /// A cluster node that forwards (docs/cluster.md): each request line of `batch` as read
  /// (nil for a line answered here without running), to send to the node that serves it.
  private let keepsLines: Bool
  private var lines: [[UInt8]?] = []
  /// Positions in `batch` of another node's forwarded HTTP commands, run with HTTP's rules.
  private var httpItems: Set<Int> = []
  /// Positions in `batch` of another node's `peerSnapshot`s: a subscription's snapshot, with
  /// where it stands in this node's events, and nothing registered (docs/cluster.md).
  private var snapshotItems: Set<Int> = []
  /// The connection (for a relay, which the hub writes to).
  private var channel: (any Channel)?
  /// Batches whose forwarded requests are still out: later batches' replies wait for them
  /// (the replies of a connection go in request order).
  var resolving = 0
  var lastAnswer: EventLoopFuture<Void>?
  /// Whether another node's requests come on this connection.
  var fromPeer: Bool { state.fromPeer }

  init(core: ServerCore, needsAuth: Bool) {
    self.core = core
    state = ConnectionState(replyBudget: core.options.replyBufferBytes, needsAuth: needsAuth)
    writer = ReplyWriter(formatter: core.formatter, shardOf: core.shardOf)
    keepsLines = core.cluster?.links != nil
  }

  private var paused: Bool { backlogHead < backlog.count }

  func channelActive(context: ChannelHandlerContext) {
    watchLine(context)
    context.fireChannelActive()
  }

  func handlerAdded(context: ChannelHandlerContext) {
    channel = context.channel
    if context.channel.isActive { watchLine(context) }
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard !state.closing else { return }
    let buffer = unwrapInboundIn(data)
    if paused {
      backlog.append(contentsOf: buffer.readableBytesView)
      return
    }
    buffer.withUnsafeReadableBytes { raw in
      let bytes = raw.bindMemory(to: UInt8.self)
      let used = consume(bytes)
      if used < bytes.count {
        backlog.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[used...]))
      }
    }
  }

  /// Parses the lines of `bytes` into the batch until the reply budget is spent; returns how
  /// many bytes it used (the rest waits in the backlog).
  private func consume(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
    let limit = core.options.maxLineBytes
    var start = 0
    var i = 0
    while i < bytes.count {
      if bytes[i] == 0x0A {
        let piece = UnsafeBufferPointer(rebasing: bytes[start..<i])
        if skipping {
          skipping = false
        } else if partial.isEmpty {
          if !line(piece) { return start }
        } else if partial.count + piece.count > limit {
          tooLong()
          partial.removeAll(keepingCapacity: true)
        } else {
          partial.append(contentsOf: piece)
          let taken = partial.withUnsafeBufferPointer { line($0) }
          if !taken {
            // The line's start goes back in front of the rest, to be parsed again.
            let head = partial.count - piece.count
            backlog.append(contentsOf: partial[..<head])
            partial.removeAll(keepingCapacity: true)
            return start
          }
          partial.removeAll(keepingCapacity: true)
        }
        start = i + 1
        if state.closing { return bytes.count }
      }
      i += 1
    }
    // The rest waits for its newline, unless it is already too long.
    if !skipping, start < bytes.count {
      if partial.count + bytes.count - start > limit {
        tooLong()
        partial.removeAll(keepingCapacity: true)
        skipping = true
      } else {
        partial.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
      }
    }
    return bytes.count
  }

  private func affords(_ cost: Int) -> Bool { state.affords(cost) }

  private func tooLong() {
    state.charge(ReplyBudget.error)
    if keepsLines { lines.append(nil) }
    batch.append(
      BatchItem(
        rid: nil,
        request: .failure(
          CountdownError(
            .lineTooLong,
            "a request line is over \(core.options.maxLineBytes) bytes; it was skipped up to its newline"
          ))))
  }

  /// One request line (no newline); false, with nothing taken, when its reply does not fit
  /// the budget now.
  private func line(_ raw: UnsafeBufferPointer<UInt8>) -> Bool {
    var bytes = raw
    if let last = bytes.last, last == 0x0D {
      bytes = UnsafeBufferPointer(rebasing: bytes.dropLast())
    }
    if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return true }  // blank: not a request
    if fromPeer, let scoped = PeerMessage.ScopedCommand.decode(bytes) {
      // Another node's command, list or subscription for a key with groups: run with them.
      var item = scoped.line.withUnsafeBufferPointer { ServerRequest.decode($0) }
      item.keyGroups = scoped.groups
      guard affords(ReplyBudget.estimate(item.request, activities: core.activityCount)) else {
        return false
      }
      if keepsLines { lines.append(nil) }
      batch.append(item)
      return true
    }
    if fromPeer, let http = Self.peerHTTP(bytes) {
      guard affords(ReplyBudget.acknowledgement + ReplyBudget.perActivity) else { return false }
      httpItems.insert(batch.count)
      if keepsLines { lines.append(nil) }
      batch.append(http)
      return true
    }
    if fromPeer, let request = PeerMessage.RelayRequest.decode(bytes), let channel {
      // Another node relays this node's events from now on (docs/cluster.md).
      let hub = core.hub
      hub.eventLoop.execute {
        hub.relay(
          ChannelSink(channel), after: request.after, known: request.incarnation,
          ticks: request.ticks)
      }
      return true
    }
    if fromPeer, let request = PeerMessage.SnapshotRequest.decode(bytes) {
      let snapshot = BatchItem(
        rid: nil,
        request: .success(.subscribe(ids: request.ids, ticks: false, group: request.group)),
        keyGroups: request.groups)
      let cost = ReplyBudget.estimate(snapshot.request, activities: core.activityCount)
      guard affords(cost) else { return false }
      snapshotItems.insert(batch.count)
      if keepsLines { lines.append(nil) }
      batch.append(snapshot)
      return true
    }
    let decoded = ServerRequest.decode(bytes)
    guard affords(ReplyBudget.estimate(decoded.request, activities: core.activityCount)) else {
      return false
    }
    var clusterToken = false
    var auth: AccessRole?? = nil
    if case .success(.auth(let token)) = decoded.request {
      // Another node of the cluster: what it sends was forwarded once already.
      clusterToken = core.options.cluster?.token.map { TokenCheck.matches(token.utf8, $0) } ?? false
      // A server without keys takes any (the connection is open to all anyway).
      let grant = core.needsKeys ? core.grant(ofKey: token.utf8) : .admin
      auth = .some(grant?.role)
      if let grant, core.needsKeys, !clusterToken {
        key = Array(token.utf8)
        keyGroups = grant.groups
        if let channel { core.keyGiven(key, on: channel) }
      }
    } else if state.keyed, core.accessGeneration != keysRead {
      // The keys were read again (SIGHUP): this connection's key may have another role and
      // other groups now.
      let grant = core.grant(ofKey: key)
      state.rekeyed(grant?.role)
      keyGroups = grant?.groups
    }
    keysRead = core.accessGeneration
    // An admin connection (every one on a server without keys) may send anything: its
    // requests are not looked at for the role they need.
    var needs = AccessRole.view
    if state.role != .admin, case .success(let request) = decoded.request {
      needs = AccessRole.needed(request)
    }
    let refusal: CountdownError?
    switch state.admit(clusterToken: clusterToken, auth: auth, needs: needs) {
    case .run: refusal = nil
    case .refuse:
      refusal = CountdownError(
        .unauthorized,
        "this connection must first send {\"op\":\"auth\",\"token\":…} with a key of this server (--token, or one of --access's)"
      )
    case .rejectKey:
      refusal = CountdownError(
        .unauthorized,
        "this server has no such key (--token, or one of --access's); the connection keeps the role it had"
      )
    case .forbid(let role):
      refusal = CountdownError(
        .forbidden,
        "this connection's key has the role \(state.role?.name ?? "none"); this request needs \(role.name) (docs/security.md, \"Roles\")"
      )
    }
    if let refusal {
      if keepsLines { lines.append(nil) }
      batch.append(BatchItem(rid: decoded.rid, request: .failure(refusal)))
      return true
    }
    if keepsLines { lines.append(Array(bytes)) }
    batch.append(BatchItem(rid: decoded.rid, request: decoded.request, keyGroups: keyGroups))
    return true
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    watchLine(context)
    submit(context)
  }

  /// Sends the batch parsed so far to the loop.
  private func submit(_ context: ChannelHandlerContext) {
    guard !batch.isEmpty else { return }
    let items = batch
    let cost = state.submitted()
    let raw = lines
    let http = httpItems
    let snapshots = snapshotItems
    batch = []
    lines = []
    httpItems = []
    snapshotItems = []
    let channel = context.channel
    let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
    let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
    let hub = core.hub
    let core = self.core
    let forwarding = core.cluster?.links != nil && !fromPeer
    // A forwarding node's subscriptions span every node: each is registered before it runs,
    // its events kept until the other nodes' snapshots are in (docs/cluster.md).
    var gathers: Set<Int> = []
    if forwarding {
      for (k, item) in items.enumerated() {
        guard case .success(.subscribe(let ids, let ticks, let group)) = item.request else {
          continue
        }
        gathers.insert(k)
        let scope = GroupScope(keyGroups: item.keyGroups, narrowed: group)
        hub.eventLoop.execute {
          _ = hub.subscribePending(ChannelSink(channel), ids: ids, ticks: ticks, scope: scope)
        }
      }
    }
    let peerItems = PeerItems(snapshots: snapshots, gathers: gathers)
    core.loop.submit(
      { engine in
        var result: BatchResult
        if http.isEmpty {
          result = engine.run(items, gate: core.gate, forwarding: forwarding)
        } else {
          // Another node's HTTP commands among them: each on its own, in order.
          result = BatchResult(at: engine.now, items: [])
          for (k, item) in items.enumerated() {
            let one =
              http.contains(k)
              ? engine.runForHTTP(item.request, keyGroups: item.keyGroups, gate: core.gate)
              : engine.run([item], gate: core.gate, forwarding: forwarding)
            result.items.append((item.rid, one.items[0].outcome))
            if let served = one.served { result.served = served }
          }
          result.at = engine.now
        }
        core.activityCount = engine.count
        return result
      },
      completion: { result in
        // On the loop thread: the replies go to this connection's event loop first, then the
        // subscriptions to the hub, so that they are in place before this wake's events. With
        // a state file, both wait for the wake's commit.
        core.release(result) { result in
          Self.release(
            result, items, raw, cost, peerItems, handler, bound, hub: hub, channel: channel)
        }
      })
  }

  /// Hands a batch's replies to the connection and its subscription changes to the hub.
  private static func release(
    _ result: Result<BatchResult, CountdownError>, _ items: [BatchItem], _ raw: [[UInt8]?],
    _ cost: Int, _ peerItems: PeerItems, _ handler: NIOLoopBound<ConnectionHandler>,
    _ bound: NIOLoopBound<ChannelHandlerContext>, hub: Hub, channel: Channel
  ) {
    channel.eventLoop.execute {
      handler.value.answer(result, items, raw, cost, peerItems, bound.value)
    }
    guard case .success(let r) = result else { return }
    for (k, item) in r.items.enumerated()
    where !peerItems.snapshots.contains(k) && !peerItems.gathers.contains(k) {
      switch item.outcome {
      case .subscribed(_, let from, let ids, let ticks, let scope):
        hub.eventLoop.execute {
          hub.subscribe(
            ChannelSink(channel), ids: ids, ticks: ticks, scope: scope, fromSequence: from)
        }
      case .unsubscribed:
        hub.eventLoop.execute { hub.unsubscribe(ObjectIdentifier(channel)) }
      default: break
      }
    }
  }

  private func answer(
    _ result: Result<BatchResult, CountdownError>, _ items: [BatchItem], _ raw: [[UInt8]?],
    _ cost: Int, _ peerItems: PeerItems, _ context: ChannelHandlerContext
  ) {
    let forwards = forwarded(result, items, raw, peerItems, context.eventLoop)
    guard forwards != nil || resolving > 0 else {
      write(result, items, Resolved(), cost, peerItems, context)
      return
    }
    // This batch's replies go after the batches still resolving, and after its own
    // forwarded requests' replies have come back.
    resolving += 1
    let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
    let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
    let eventLoop = context.eventLoop
    let before = lastAnswer ?? eventLoop.makeSucceededVoidFuture()
    let done = before.flatMap { forwards ?? eventLoop.makeSucceededFuture(Resolved()) }.map {
      resolved in
      handler.value.resolving -= 1
      handler.value.write(result, items, resolved, cost, peerItems, bound.value)
    }
    lastAnswer = done
  }

  /// Writes a batch's replies, in order: each forwarded request's as its node gave it; then
  /// starts (or drops) the subscriptions that span every node, whose events follow their
  /// replies.
  private func write(
    _ result: Result<BatchResult, CountdownError>, _ items: [BatchItem], _ resolved: Resolved,
    _ cost: Int, _ peerItems: PeerItems, _ context: ChannelHandlerContext
  ) {
    let after = state.replying()
    var activations: [(from: UInt64, cuts: [UInt64: UInt64])?] = []
    switch result {
    case .success(let r):
      // A cluster node's lists and snapshots hold the shards it held in full as they ran;
      // for another node, or from a node that gathers nothing (no cluster token), they say
      // which.
      writer.onlyShards = r.served.map(Set.init)
      writer.announcedShards = fromPeer || core.cluster?.links == nil ? r.served : nil
      defer {
        writer.onlyShards = nil
        writer.announcedShards = nil
      }
      for (k, item) in r.items.enumerated() {
        if peerItems.gathers.contains(k) {
          if case .subscribed(_, let from, _, _, _) = item.outcome,
            case .success? = resolved.replies[k]
          {
            activations.append((from, resolved.cuts[k] ?? [:]))
          } else {
            activations.append(nil)
          }
        }
        if peerItems.snapshots.contains(k),
          case .subscribed(let snapshot, let from, _, _, _) =
            item.outcome
        {
          writeSnapshot(snapshot, from: from, at: r.at)
          continue
        }
        switch resolved.replies[k] {
        case .success(let line)?:
          writer.out.bytes.append(contentsOf: line)
          writer.out.raw("\n")
        case .failure(let e)?:
          writer.failure(item.rid, e, at: SystemWallClock.now())
          core.metrics.answered(.failed(e))
        case nil:
          writer.reply(item.rid, item.outcome, at: r.at)
          core.metrics.answered(item.outcome)
        }
      }
    case .failure(let e):
      let now = SystemWallClock.now()
      for item in items { writer.failure(item.rid, e, at: now) }
      activations = peerItems.gathers.map { _ in nil }
    }
    let channel = context.channel
    let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
    let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
    context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(bytes: writer.take())))
      .whenComplete { _ in
        if after == .closeWhenWritten { channel.close(promise: nil) }
        handler.value.written(cost, bound.value)
      }
    // The replies are in the connection's queue: the hub's writes come after them. (Several
    // subscriptions in one batch: the last one stands, as without a cluster.)
    if let last = activations.last {
      let hub = core.hub
      let key = ObjectIdentifier(channel)
      hub.eventLoop.execute {
        if let last {
          hub.activate(key, first: ByteBuffer(), fromSequence: last.from, cuts: last.cuts)
        } else {
          hub.unsubscribe(key)
        }
      }
    }
  }

  /// A batch's replies are on the socket: what they were estimated at is no longer owed, and
  /// the lines that waited for it are parsed.
  private func written(_ cost: Int, _ context: ChannelHandlerContext) {
    guard
      state.written(cost, paused: paused, active: context.channel.isActive) == .parseBacklog
    else { return }
    // The backlog is parsed from where it stopped. (While paused, `partial` is empty: a line
    // that did not fit went back whole, so `consume` adds nothing to the backlog here.)
    let waiting = backlog
    let head = backlogHead
    backlog = []
    backlogHead = 0
    let used = waiting.withUnsafeBufferPointer {
      consume(UnsafeBufferPointer(rebasing: $0[head...]))
    }
    if head + used < waiting.count {
      assert(backlog.isEmpty, "a paused connection's consume added to the backlog")
      backlog = waiting
      backlogHead = head + used
      if backlogHead > 1 << 20 {
        backlog.removeSubrange(..<backlogHead)
        backlogHead = 0
      }
    }
    submit(context)
    if !paused {
      watchLine(context)
      if state.resumesReading(writable: context.channel.isWritable, paused: paused) {
        context.read()
      }
    }
  }

  /// Arms the line timer while the client owes the rest of a line (or its token), disarms it
  /// otherwise.
  private func watchLine(_ context: ChannelHandlerContext) {
    if !state.awaitsLine(paused: paused, partial: !partial.isEmpty, skipping: skipping) {
      lineTimer?.cancel()
      lineTimer = nil
      return
    }
    guard lineTimer == nil else { return }
    let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
    lineTimer = context.eventLoop.scheduleTask(
      in: .milliseconds(core.options.lineTimeoutMilliseconds)
    ) {
      let (handler, context) = bound.value
      handler.lineTimer = nil
      handler.core.metrics.timedOut()
      handler.core.logger.debug(
        "connection closed: the client took too long to finish a line or send its token")
      context.close(promise: nil)
    }
  }

  // MARK: - Backpressure

  func read(context: ChannelHandlerContext) {
    if state.read(writable: context.channel.isWritable, paused: paused) { context.read() }
  }

  func channelWritabilityChanged(context: ChannelHandlerContext) {
    if context.channel.isWritable {
      let channel = context.channel
      let hub = core.hub
      hub.eventLoop.execute { hub.writable(ObjectIdentifier(channel)) }
      if state.resumesReading(writable: true, paused: paused) { context.read() }
    }
    context.fireChannelWritabilityChanged()
  }

  func channelInactive(context: ChannelHandlerContext) {
    lineTimer?.cancel()
    lineTimer = nil
    let channel = context.channel
    let hub = core.hub
    hub.eventLoop.execute { hub.unsubscribe(ObjectIdentifier(channel)) }
    core.connectionClosed(channel)
    core.keyGone(from: channel)
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    // One line per connection error, not one per request. A client that closes with replies
    // or events still unread resets the connection: that is how clients leave, not a fault.
    if let io = error as? IOError, System.isPeerGone(io.errnoCode) {
      core.logger.debug("connection reset by the client")
    } else {
      core.logger.warning("connection closed after an error: \(error)")
    }
    context.close(promise: nil)
  }
}

/// Answers a connection past `maxConnections` with `limitReached` and closes it.
final class RefusingHandler: ChannelInboundHandler {
  typealias InboundIn = ByteBuffer
  typealias OutboundOut = ByteBuffer
  let message: [UInt8]

  init(message: [UInt8]) { self.message = message }

  func channelActive(context: ChannelHandlerContext) {
    let channel = context.channel
    context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(bytes: message)))
      .whenComplete { _ in channel.close(promise: nil) }
  }
}

/// What a request's reply is estimated to cost before it is built, so that a connection stops
/// being read before its replies grow past its budget (docs/protocol.md, "Backpressure"). Each estimate
/// is at or above what the reply takes: an acknowledgement is about 60 bytes, an error's
/// message at most about 300, an activity object 250–400 (more with a large content).
enum ReplyBudget {
  /// An activity object with room for its content.
  static let perActivity = 512
  /// An acknowledgement (`ok`, `at`, a `rid`, a started `id`).
  static let acknowledgement = 128
  /// An error with its message (a line over the limit, a bad request).
  static let error = 384

  /// Bytes the reply to `request` may take when the engine holds `activities`.
  static func estimate(_ request: Result<ServerRequest, CountdownError>, activities: Int) -> Int {
    guard case .success(let r) = request else { return error }
    switch r {
    case .list(.soonest(let k), _): return acknowledgement + min(k, activities) * perActivity
    case .list, .subscribe: return acknowledgement + activities * perActivity
    case .command(.get, _): return acknowledgement + perActivity
    default: return acknowledgement
    }
  }
}
