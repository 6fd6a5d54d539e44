// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownCluster
import CountdownLoop
import CountdownPostgres
import CountdownProtocol
import CountdownPush
import CountdownStore
import Dispatch
import Foundation
import Logging
import NIOCore

/// A cluster node's side of the cluster (docs/cluster.md, "Serving shards"): carries out what the
/// lease driver decides, and is the gate every command passes.
///
/// - A shard to serve: on the writer's thread, between two commits, the store starts writing
///   it (fenced by its epoch) and reads its rows as its last commit left them; the loop's
///   engine is rebuilt with them stepped to now (``ShardAssembly``: what passed while nobody
///   served the shard fires once, at its own instant); then its commands are let in.
/// - A shard to stop: its commands are refused at once (`unavailable`); on the writer's thread
///   the store stops writing it (a wake of it not yet committed fails, and the engine is rebuilt
///   from the last commits) and the engine drops its activities without a word.
/// - After a failed commit (a fence another node's epoch refused, PostgreSQL gone): the engine
///   is rebuilt from the last commits of the shards still served.
final class ClusterNode: @unchecked Sendable {
  // @unchecked Sendable: `state` is locked; `store` is used on the writer's thread only;
  // the rest is immutable or a locked box.
  let options: ClusterOptions
  let store: PostgresStore
  let writer: StoreWriter
  let loop: Locked<CountdownLoop?>
  let journal: Journal
  let logger: Logger
  /// NIO's lock, as everywhere in the server (ThreadSanitizer sees a pthread mutex).
  let state = Locked(State())
  /// The lease driver, once it has joined (it calls back into this node from its start).
  let driver = Locked<LeaseDriver?>(nil)
  /// The connections to the other nodes, with `--cluster-token`; nil: nothing is forwarded.
  let links: PeerLinks?
  /// The server's network threads (forwarded HTTP commands wait on one).
  private let group: any EventLoopGroup
  /// The senders of the outbox (`--apns-*`, `--webhook`): a shard's pending pushes and
  /// deliveries go to them when the node takes it, and leave them when it stops serving it.
  let delivery: PushDelivery?
  let webhooks: WebhookDelivery?
  /// This process's incarnation as a node: the space its events' sequence and delivery
  /// numbers belong to (another node relaying them tells a restart by it).
  let incarnation = UInt64.random(in: 1 ... .max)
  /// The other nodes' lifecycle events, relayed to this node's subscribers (with the cluster
  /// token; docs/cluster.md, "Subscriptions across nodes").
  let relayLinks: RelayLinks?
  /// What this node committed and has perhaps not relayed yet (with the cluster token).
  private let unsettled: UnsettledEvents?

  struct State {
    /// The shards the driver said to serve, with their epochs (set at once; a stop clears).
    var wanted: [Int: Int64] = [:]
    /// The shards whose commands are let in: loaded into the engine with the epoch wanted.
    var open: [Int: Int64] = [:]
    /// The lease table as last observed, by shard.
    var leases: [Int: LeaseDriver.Lease] = [:]
    /// The nodes as last observed, by name.
    var nodes: [String: LeaseDriver.Node] = [:]
    /// What the lease driver had done at its last observation.
    var counts = LeaseDriver.Counts()
    /// Made ids for starts without one.
    var ids = SplitMix64(state: UInt64.random(in: .min ... .max))
    /// Shards held whose rows cannot be restored, with why: reported (`/v1/cluster`,
    /// `countdown_cluster_shards_unrestorable`) and tried again while held.
    var unrestorable: [Int: String] = [:]
    /// The epoch of the last engine reload asked for (a retry of an older one gives way).
    var reloading: UInt64 = 0
  }

  /// How long an unrestorable shard waits before its rows are read and tried again.
  static let restoreRetry: Double = 5

  /// The subscribers' side: told the groups of the activities of each shard taken.
  let hub: Hub

  init(
    options: ClusterOptions, store: PostgresStore, writer: StoreWriter,
    loop: Locked<CountdownLoop?>, journal: Journal, logger: Logger,
    group: any EventLoopGroup, hub: Hub, delivery: PushDelivery? = nil,
    webhooks: WebhookDelivery? = nil
  ) {
    self.options = options
    self.group = group
    self.hub = hub
    self.delivery = delivery
    self.webhooks = webhooks
    // A peer that leaves a request unanswered for two leases has lost its shards by then.
    let timeout = TimeAmount.milliseconds(max(2_000, 2 * options.leaseMs))
    links = options.token.map { PeerLinks(group: group, token: $0, answerTimeout: timeout) }
    relayLinks = options.token.map { RelayLinks(hub: hub, token: $0, logger: logger) }
    // The events this node commits, kept beside their rows until its hub has relayed them:
    // the node that takes a shard after this one died passes on what it never did.
    unsettled =
      options.relaysEvents
      ? UnsettledEvents(incarnation: incarnation, formatter: hub.formatter) : nil
    if let relayLinks, let unsettled {
      let incarnation = self.incarnation
      let stall = options.stallAfterCommitOf
      hub.eventLoop.execute {
        hub.unsettled = unsettled
        hub.stallAfterCommitOf = stall
        hub.enableRelays(incarnation: incarnation)
        // Weak: the links hold the hub (they would keep each other past the server).
        hub.onTicksWanted = { [weak relayLinks] in relayLinks?.setTicks($0) }
      }
    }
    self.store = store
    self.writer = writer
    self.loop = loop
    self.journal = journal
    self.logger = logger
    if let unsettled {
      writer.perform { [self] in self.store.unsettled = unsettled }
    }
  }

  /// The shard of `id` in this cluster.
  func shard(of id: String) -> Int { ShardOfID.shard(of: id, shards: options.shards) }

  /// The gate every command passes (on the loop thread): this node's shards run here; another
  /// live node's are forwarded to it when this node has the cluster token and knows where that
  /// node is; the rest are `unavailable`.
  var gate: ShardGate {
    ShardGate(
      admission: { [self] id throws(CountdownError) in
        let shard = shard(of: id)
        let (open, lease, peer, broken) = state.withLock { s in
          (
            s.open[shard] != nil, s.leases[shard],
            s.leases[shard]?.owner.flatMap { s.nodes[$0] }, s.unrestorable[shard]
          )
        }
        if open { return .local }
        let refusal = Self.unavailable(shard, lease, self: options.node, unrestorable: broken)
        if links != nil, let lease, !lease.expired, let peer, peer.name != options.node,
          peer.alive, peer.advertise != nil
        {
          return .forward(node: peer.name, otherwise: refusal)
        }
        throw refusal
      },
      makeID: { [self] in
        state.withLock { s in
          guard !s.open.isEmpty else { return nil }
          while true {
            let id = s.ids.uuid()
            if s.open[shard(of: id)] != nil { return id }
          }
        }
      },
      view: { [self] in view },
      served: { [self] in openShards })
  }

  /// The shards whose commands are let in, in order: their activities are all in the engine.
  var openShards: [Int] { state.withLock { $0.open.keys.sorted() } }

  /// Whether a list or snapshot made of this node's part (`served`: its shards when it ran)
  /// and the other nodes' `replies` (each saying its shards in `servedShards`) is whole: nil
  /// when every shard wanted (those of `ids`, or all) is exactly one node's part; otherwise
  /// `unavailable` naming the shards nobody served, or that two nodes gave (a shard that
  /// changed hands while it was gathered). A list is never silently short (docs/cluster.md,
  /// "A list while a shard has no owner").
  func wholeness(served: [Int]?, replies: [[UInt8]], ids: [String]?, what: String)
    -> CountdownError?
  {
    var claims = [Int](repeating: 0, count: options.shards)
    for s in served ?? [] where s >= 0 && s < claims.count { claims[s] += 1 }
    for reply in replies {
      for s in PeerMessage.servedShards(in: reply) ?? [] where s >= 0 && s < claims.count {
        claims[s] += 1
      }
    }
    let wanted = ids.map { Set($0.map(shard(of:))).sorted() } ?? Array(claims.indices)
    let missing = wanted.filter { claims[$0] == 0 }
    let twice = wanted.filter { claims[$0] > 1 }
    if missing.isEmpty && twice.isEmpty { return nil }
    func named(_ shards: [Int]) -> String {
      (shards.count == 1 ? "shard " : "shards ") + shards.map(String.init).joined(separator: ", ")
    }
    let why: String
    if !missing.isEmpty {
      let broken = state.withLock { s in missing.filter { s.unrestorable[$0] != nil } }
      why =
        "no node serves \(named(missing)) now"
        + (broken.isEmpty
          ? " (a node is taking \(missing.count == 1 ? "it" : "them") over)"
          : " (\(named(broken)): held, but \(broken.count == 1 ? "its" : "their") rows cannot be restored: GET /v1/cluster says why)")
    } else {
      why = "\(named(twice)) changed hands while it was gathered"
    }
    return CountdownError(
      .unavailable, "the \(what) spans every shard, and \(why); nothing is lost, try again")
  }

  /// The cluster as this node last read it: the nodes by name, each shard with its owner
  /// (nil while no live lease holds it) and epoch.
  var view: ClusterView {
    state.withLock { s in
      ClusterView(
        node: options.node,
        nodes: s.nodes.values.sorted { $0.name < $1.name }.map {
          .init(name: $0.name, advertise: $0.advertise, alive: $0.alive)
        },
        shards: s.leases.values.sorted { $0.shard < $1.shard }.map {
          .init(
            shard: $0.shard, owner: $0.expired ? nil : $0.owner, epoch: $0.epoch,
            unrestorable: s.unrestorable[$0.shard])
        })
    }
  }

  /// `unavailable` for `shard`, naming the node that serves it as last seen.
  static func unavailable(
    _ shard: Int, _ lease: LeaseDriver.Lease?, self node: String, unrestorable: String? = nil
  ) -> CountdownError {
    let holder: String
    if let unrestorable {
      holder =
        "this node holds it, and its rows in PostgreSQL cannot be restored (\(unrestorable)); it tries again every \(Int(restoreRetry)) s"
    } else if let lease, let owner = lease.owner, !lease.expired, owner != node {
      holder = "node \(owner) serves it"
    } else if let lease, lease.owner == node, !lease.expired {
      holder = "this node is taking it over or giving it up"
    } else {
      holder = "no node serves it now (its last owner's lease has not been taken over yet)"
    }
    return CountdownError(
      .unavailable,
      "the activity is in shard \(shard), which this node (\(node)) does not serve: \(holder); nothing changed, try again"
    )
  }

  /// The node stops: it hands its shards over (the others take them at their next look),
  /// closes its connections to the other nodes and lets go of its lease driver, which holds
  /// this node's callbacks (kept, the two would keep each other alive past the server).
  func leave() {
    let driver = self.driver.withLock { d in
      defer { d = nil }
      return d
    }
    driver?.leave()
    links?.close()
    relayLinks?.close()
  }

  // MARK: - The driver's decisions (on its thread, in order)

  /// What the lease driver decided.
  func changed(_ change: LeaseDriver.Change) {
    switch change {
    case .serve(let shard, let epoch):
      state.withLock { $0.wanted[shard] = epoch }
      writer.perform { [self] in take(shard, epoch: epoch) }
    case .stop(let shard, let reason):
      state.withLock {
        $0.wanted[shard] = nil
        $0.open[shard] = nil
        $0.unrestorable[shard] = nil
      }
      logger.notice("stopped serving shard \(shard) (\(reason))")
      // Out of the engine at once, not behind the writer: a shard's ticks are handed on
      // without a commit, and the writer may be waiting on PostgreSQL for as long as the
      // commit bound while the lease runs out, after which another node ticks the shard too.
      drop(shard)
      writer.perform { [self] in letGo(shard) }
    }
  }

  /// Shards served now and what the lease driver has done, for `/metrics`.
  var leaseFigures: (served: Int, counts: LeaseDriver.Counts) {
    state.withLock { ($0.open.count, $0.counts) }
  }

  /// The other live nodes with an address, by name: where a list is gathered from.
  var livePeers: [String] {
    state.withLock { s in
      s.nodes.values.filter { $0.alive && $0.advertise != nil && $0.name != options.node }
        .map(\.name).sorted()
    }
  }

  /// Sends a `list` line to every other live node; each one's reply line, in node order, or
  /// `unavailable` naming the first that did not answer, or the shards no node's part holds
  /// (`served`: this node's, when its own part was made).
  func gatherList(_ line: [UInt8], served: [Int]?, on eventLoop: any EventLoop)
    -> EventLoopFuture<Result<[[UInt8]], CountdownError>>
  {
    gather(line, "list", served: served, ids: nil, on: eventLoop)
  }

  /// One other node's part of a subscription's snapshot.
  struct PeerSnapshot: Sendable {
    var incarnation: UInt64
    var from: UInt64
    /// Its reply line: the activities under `activities`.
    var reply: [UInt8]

    /// `local` (this node's reply, its activities under `key`) with every part's activities
    /// spliced in, and where the snapshot stands in each part's node's events, by incarnation.
    static func merge(_ local: [UInt8], key: String = "activities", _ parts: [PeerSnapshot])
      -> (merged: [UInt8], cuts: [UInt64: UInt64])
    {
      (
        GatheredList.merge(local, key: key, peers: parts.map(\.reply), soonest: nil),
        Dictionary(parts.map { ($0.incarnation, $0.from) }) { a, _ in a }
      )
    }
  }

  /// Every other live node's part of a subscription's snapshot, in node order, or
  /// `unavailable` naming the first that did not answer.
  func gatherSnapshots(
    ids: [String]?, scope: GroupScope = .everything, served: [Int]?, on eventLoop: any EventLoop
  ) -> EventLoopFuture<Result<[PeerSnapshot], CountdownError>> {
    let line = PeerMessage.SnapshotRequest(
      ids: ids, groups: scope.keyGroups, group: scope.narrowed
    ).line
    return gather(line, "subscription", served: served, ids: ids, on: eventLoop).map {
      result in
      result.flatMap { replies in
        var parts: [PeerSnapshot] = []
        for reply in replies {
          guard let head = PeerMessage.SnapshotHead.decode(reply) else {
            if case .failure(let e) = PeerMessage.activity(in: reply) { return .failure(e) }
            return .failure(
              CountdownError(.unavailable, "a node answered a snapshot without its place"))
          }
          parts.append(PeerSnapshot(incarnation: head.incarnation, from: head.from, reply: reply))
        }
        return .success(parts)
      }
    }
  }

  /// Sends `line` to every other live node; each one's reply line, in node order, or
  /// `unavailable` naming the first that did not answer (`what` spans every node), or the
  /// shards (of `ids`, or all) that no node's part holds (``wholeness(served:replies:ids:what:)``).
  private func gather(
    _ line: [UInt8], _ what: String, served: [Int]?, ids: [String]?, on eventLoop: any EventLoop
  ) -> EventLoopFuture<Result<[[UInt8]], CountdownError>> {
    let peers = livePeers
    let sent = peers.map { forward(line, to: $0, on: eventLoop) }
    return EventLoopFuture.whenAllComplete(sent, on: eventLoop).map { results in
      var replies: [[UInt8]] = []
      for (node, result) in zip(peers, results) {
        switch result {
        case .success(let reply): replies.append(reply)
        case .failure(let error):
          return .failure(
            CountdownError(
              .unavailable,
              "the \(what) spans every node, and node \(node) did not answer: \(error); try again"
            ))
        }
      }
      if let e = self.wholeness(served: served, replies: replies, ids: ids, what: what) {
        return .failure(e)
      }
      return .success(replies)
    }
  }

  /// The lease table, the nodes and the driver's counts as of its last observation.
  func observed(
    _ table: [LeaseDriver.Lease], _ nodes: [LeaseDriver.Node], _ counts: LeaseDriver.Counts
  ) {
    let peers = state.withLock { s in
      s.counts = counts
      for lease in table { s.leases[lease.shard] = lease }
      s.nodes = Dictionary(nodes.map { ($0.name, $0) }) { a, _ in a }
      var peers: [String: String] = [:]
      for n in nodes where n.alive && n.name != options.node {
        if let address = n.advertise { peers[n.name] = address }
      }
      return peers
    }
    relayLinks?.update(peers: peers)
  }

  // MARK: - Forwarding

  /// Sends an HTTP command to `node` and gives back the activity object it answered with,
  /// or the error (its own, or `unavailable` when the node could not be reached).
  func forwardHTTP(
    op: String, id: String?, body: [UInt8], groups: Set<String>? = nil, to node: String,
    otherwise: CountdownError
  ) -> EventLoopFuture<Result<[UInt8], CountdownError>> {
    let line = PeerMessage.HTTPCommand(method: op, id: id, body: body, groups: groups).line
    return forward(line, to: node, on: group.next()).map { reply in
      PeerMessage.activity(in: reply)
    }.flatMapErrorThrowing { error in
      .failure(Self.forwardingFailed(otherwise, to: node, error))
    }
  }

  /// `unavailable` for a request its node did not answer: `otherwise`'s first part (which
  /// shard, not served here), then why, and that it may have been carried out all the same.
  static func forwardingFailed(_ otherwise: CountdownError, to node: String, _ error: any Error)
    -> CountdownError
  {
    CountdownError(
      .unavailable,
      "\(otherwise.message.prefix { $0 != ":" }): forwarding it to node \(node) failed: \(error); if the request reached that node, it may have been carried out there (a get shows which); try again"
    )
  }

  /// Sends a request line to `node` (its `--advertise`) and gives its reply line back; fails
  /// (a ``PeerError``) when the node cannot be reached or has no address.
  func forward(_ line: [UInt8], to node: String, on eventLoop: any EventLoop)
    -> EventLoopFuture<[UInt8]>
  {
    guard let links, let address = state.withLock({ $0.nodes[node]?.advertise }) else {
      return eventLoop.makeFailedFuture(PeerError("where it is reached is not known"))
    }
    return links.send(line, to: node, at: address).hop(to: eventLoop)
  }
}

/// A push budget's stored row: an activity and token, its last timestamp and when that push
/// goes.
typealias PushBudgetRow = (key: PushBudget.Key, timestamp: Int64, notBefore: Int64)
