// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop
import CountdownProtocol
import NIOCore

/// A cluster node's side of a connection (docs/cluster.md): another node's forwarded HTTP
/// commands and snapshot parts, and the requests this node forwards, gathers or spans across
/// every node, resolved before the batch's replies are written in order.
extension ConnectionHandler {
  /// Another node's HTTP command (``PeerMessage/HTTPCommand``), decoded as HTTP decodes it;
  /// nil for any other line.
  static func peerHTTP(_ bytes: UnsafeBufferPointer<UInt8>) -> BatchItem? {
    guard let (method, id, body, groups) = PeerMessage.HTTPCommand.decode(bytes) else {
      return nil
    }
    var text = JSONValue.object(body).canonicalText
    return text.withUTF8 { b in
      BatchItem(
        rid: nil, request: ServerRequest.decode(op: method, id: id, body: b.isEmpty ? nil : b),
        keyGroups: groups)
    }
  }

  /// The positions of a batch whose subscriptions the hub does not register at once: another
  /// node's snapshots (never registered) and this node's subscriptions that span every node
  /// (registered before they ran, activated once the other nodes' snapshots are in).
  struct PeerItems {
    var snapshots: Set<Int> = []
    var gathers: Set<Int> = []
  }

  /// What came back from the other nodes for a batch: the replies of its forwarded requests,
  /// gathered lists and subscriptions, by position, and for each subscription where its
  /// snapshot stands in each other node's events (by incarnation).
  struct Resolved {
    var replies: [Int: Result<[UInt8], CountdownError>] = [:]
    var cuts: [Int: [UInt64: UInt64]] = [:]
  }

  /// The replies of `result`'s forwarded requests, gathered lists and subscriptions, once all
  /// have come back (a request its node did not answer gets `unavailable`); nil when it has
  /// none.
  func forwarded(
    _ result: Result<BatchResult, CountdownError>, _ items: [BatchItem], _ raw: [[UInt8]?],
    _ peerItems: PeerItems, _ eventLoop: any EventLoop
  ) -> EventLoopFuture<Resolved>? {
    guard case .success(let r) = result, let cluster = core.cluster, cluster.links != nil,
      !fromPeer
    else { return nil }
    var sent: [(Int, EventLoopFuture<[UInt8]>)] = []
    var lists: [(Int, EventLoopFuture<Result<[[UInt8]], CountdownError>>, Int?)] = []
    var subscriptions:
      [(Int, EventLoopFuture<Result<[ClusterNode.PeerSnapshot], CountdownError>>)] =
        []
    for (k, item) in r.items.enumerated() {
      if case .subscribed(_, _, let ids, _, let scope) = item.outcome, peerItems.gathers.contains(k)
      {
        // A subscription spans every node: the others' snapshots (held to its scope), and
        // where each stands.
        subscriptions.append(
          (k, cluster.gatherSnapshots(ids: ids, scope: scope, served: r.served, on: eventLoop)))
        continue
      }
      guard k < raw.count, var line = raw[k] else { continue }
      // The node that runs it holds it to the key's groups.
      if let groups = items[k].keyGroups {
        line = PeerMessage.ScopedCommand(groups: groups, line: line).wrapped
      }
      switch (item.outcome, items[k].request) {
      case (.forward(let node, _), _):
        sent.append((k, cluster.forward(line, to: node, on: eventLoop)))
      case (.activities, .success(.list(let query, _))):
        // A list spans every node: the others' own activities, gathered (docs/cluster.md).
        var soonest: Int?
        if case .soonest(let n) = query { soonest = n }
        lists.append((k, cluster.gatherList(line, served: r.served, on: eventLoop), soonest))
      default: continue
      }
    }
    guard !sent.isEmpty || !lists.isEmpty || !subscriptions.isEmpty else { return nil }
    let forwardedOnes = forwardedReplies(r, sent, eventLoop)
    let formatter = core.formatter
    let shardOf = core.shardOf
    let gathered = EventLoopFuture.whenAllSucceed(lists.map(\.1), on: eventLoop)
    let snapshots = EventLoopFuture.whenAllSucceed(subscriptions.map(\.1), on: eventLoop)
    let listed = lists.map { (position: $0.0, soonest: $0.2) }
    let subscribed = subscriptions.map(\.0)
    /// This node's own reply to request `k`, without its newline.
    let local = { @Sendable (k: Int) -> [UInt8] in
      var w = ReplyWriter(formatter: formatter, shardOf: shardOf)
      w.onlyShards = r.served.map(Set.init)
      w.reply(r.items[k].rid, r.items[k].outcome, at: r.at)
      var line = w.take()
      if line.last == 0x0A { line.removeLast() }
      return line
    }
    return forwardedOnes.and(gathered).and(snapshots).map { both, peerSnapshots in
      let (replies, peers) = both
      var out = Resolved(replies: replies)
      for ((k, soonest), result) in zip(listed, peers) {
        out.replies[k] = result.map { peerReplies in
          GatheredList.merge(local(k), peers: peerReplies, soonest: soonest)
        }
      }
      for (k, result) in zip(subscribed, peerSnapshots) {
        switch result {
        case .success(let parts):
          let (merged, cuts) = ClusterNode.PeerSnapshot.merge(local(k), key: "snapshot", parts)
          out.replies[k] = .success(merged)
          out.cuts[k] = cuts
        case .failure(let e): out.replies[k] = .failure(e)
        }
      }
      return out
    }
  }

  /// The replies of the forwarded requests `sent`, by position.
  private func forwardedReplies(
    _ r: BatchResult, _ sent: [(Int, EventLoopFuture<[UInt8]>)], _ eventLoop: any EventLoop
  ) -> EventLoopFuture<[Int: Result<[UInt8], CountdownError>]> {
    guard !sent.isEmpty else { return eventLoop.makeSucceededFuture([:]) }
    core.metrics.forwarded(sent.count)
    let positions = sent.map(\.0)
    return EventLoopFuture.whenAllComplete(sent.map(\.1), on: eventLoop).map { results in
      var out: [Int: Result<[UInt8], CountdownError>] = [:]
      for (k, result) in zip(positions, results) {
        guard case .forward(let node, let otherwise) = r.items[k].outcome else { continue }
        out[k] = result.mapError { ClusterNode.forwardingFailed(otherwise, to: node, $0) }
      }
      return out
    }
  }

  /// Another node's part of a subscription's snapshot (docs/cluster.md): this node's
  /// incarnation, the sequence number of its first event after the snapshot, the activities.
  func writeSnapshot(_ snapshot: Listing, from: UInt64, at: Instant) {
    writer.out.raw("{\"rid\":null,\"ok\":true,\"at\":")
    writer.out.write(int: at.milliseconds)
    writer.out.raw(",\"incarnation\":\"")
    writer.out.bytes.append(contentsOf: String(core.cluster?.incarnation ?? 0, radix: 16).utf8)
    writer.out.raw("\",\"from\":")
    writer.out.write(int: Int64(from))
    if let shards = writer.announcedShards { writer.servedShards(shards) }
    writer.out.raw(",\"activities\":")
    writer.activities(snapshot.states())
    writer.out.raw("}\n")
    core.metrics.answered(.ok)
  }
}
