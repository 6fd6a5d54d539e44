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
import NIOConcurrencyHelpers
import NIOCore

/// A cluster node's side of SPEC §9 (docs/cluster.md, "Serving shards"): carries out what the
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
  private let store: PostgresStore
  private let writer: StoreWriter
  private let loop: NIOLockedValueBox<CountdownLoop?>
  private let journal: Journal
  private let logger: Logger
  /// NIO's lock, as everywhere in the server (ThreadSanitizer sees a pthread mutex).
  private let state = NIOLockedValueBox(State())
  /// The lease driver, once it has joined (it calls back into this node from its start).
  let driver = NIOLockedValueBox<LeaseDriver?>(nil)
  /// The connections to the other nodes, with `--cluster-token`; nil: nothing is forwarded.
  let links: PeerLinks?
  /// The server's network threads (forwarded HTTP commands wait on one).
  private let group: any EventLoopGroup
  /// The senders of the outbox (`--apns-*`, `--webhook`): a shard's pending pushes and
  /// deliveries go to them when the node takes it, and leave them when it stops serving it.
  private let delivery: PushDelivery?
  private let webhooks: WebhookDelivery?
  /// This process's incarnation as a node: the space its events' sequence and delivery
  /// numbers belong to (another node relaying them tells a restart by it).
  let incarnation = UInt64.random(in: 1 ... .max)
  /// The other nodes' lifecycle events, relayed to this node's subscribers (with the cluster
  /// token; docs/cluster.md, "Subscriptions across nodes").
  let relayLinks: RelayLinks?
  /// What this node committed and has perhaps not relayed yet (with the cluster token).
  private let unsettled: UnsettledEvents?

  private struct State {
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
  }

  init(
    options: ClusterOptions, store: PostgresStore, writer: StoreWriter,
    loop: NIOLockedValueBox<CountdownLoop?>, journal: Journal, logger: Logger,
    group: any EventLoopGroup, hub: Hub, delivery: PushDelivery? = nil,
    webhooks: WebhookDelivery? = nil
  ) {
    self.options = options
    self.group = group
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
        let (open, lease, peer) = state.withLockedValue { s in
          (s.open[shard] != nil, s.leases[shard], s.leases[shard]?.owner.flatMap { s.nodes[$0] })
        }
        if open { return .local }
        let refusal = Self.unavailable(shard, lease, self: options.node)
        if links != nil, let lease, !lease.expired, let peer, peer.name != options.node,
          peer.alive, peer.advertise != nil
        {
          return .forward(node: peer.name, otherwise: refusal)
        }
        throw refusal
      },
      makeID: { [self] in
        state.withLockedValue { s in
          guard !s.open.isEmpty else { return nil }
          while true {
            let id = s.ids.uuid()
            if s.open[shard(of: id)] != nil { return id }
          }
        }
      },
      view: { [self] in view })
  }

  /// The cluster as this node last read it: the nodes by name, each shard with its owner
  /// (nil while no live lease holds it) and epoch.
  var view: ClusterView {
    state.withLockedValue { s in
      ClusterView(
        node: options.node,
        nodes: s.nodes.values.sorted { $0.name < $1.name }.map {
          .init(name: $0.name, advertise: $0.advertise, alive: $0.alive)
        },
        shards: s.leases.values.sorted { $0.shard < $1.shard }.map {
          .init(shard: $0.shard, owner: $0.expired ? nil : $0.owner, epoch: $0.epoch)
        })
    }
  }

  /// `unavailable` for `shard`, naming the node that serves it as last seen.
  static func unavailable(_ shard: Int, _ lease: LeaseDriver.Lease?, self node: String)
    -> CountdownError
  {
    let holder: String
    if let lease, let owner = lease.owner, !lease.expired, owner != node {
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
    let driver = self.driver.withLockedValue { d in
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
      state.withLockedValue { $0.wanted[shard] = epoch }
      writer.perform { [self] in take(shard, epoch: epoch) }
    case .stop(let shard, let reason):
      state.withLockedValue {
        $0.wanted[shard] = nil
        $0.open[shard] = nil
      }
      logger.notice("stopped serving shard \(shard) (\(reason))")
      writer.perform { [self] in drop(shard) }
    }
  }

  /// Shards served now and what the lease driver has done, for `/metrics`.
  var leaseFigures: (served: Int, counts: LeaseDriver.Counts) {
    state.withLockedValue { ($0.open.count, $0.counts) }
  }

  /// The other live nodes with an address, by name: where a list is gathered from.
  var livePeers: [String] {
    state.withLockedValue { s in
      s.nodes.values.filter { $0.alive && $0.advertise != nil && $0.name != options.node }
        .map(\.name).sorted()
    }
  }

  /// Sends a `list` line to every other live node; each one's reply line, in node order, or
  /// `unavailable` naming the first that did not answer.
  func gatherList(_ line: [UInt8], on eventLoop: any EventLoop)
    -> EventLoopFuture<Result<[[UInt8]], CountdownError>>
  {
    gather(line, "list", on: eventLoop)
  }

  /// The op a node sends another for its part of a subscription's snapshot (docs/cluster.md,
  /// "Subscriptions across nodes"): `{"op":"peerSnapshot","ids":[…]}`, answered with that
  /// node's incarnation, the sequence number its first event after the snapshot has, and its
  /// activities. Taken only from a peer.
  static let peerSnapshot = "peerSnapshot"

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
  func gatherSnapshots(ids: [String]?, on eventLoop: any EventLoop)
    -> EventLoopFuture<Result<[PeerSnapshot], CountdownError>>
  {
    var line = JSONWriter()
    line.raw("{\"op\":")
    line.write(string: Self.peerSnapshot)
    if let ids {
      line.raw(",\"ids\":[")
      for (k, id) in ids.enumerated() {
        if k > 0 { line.raw(",") }
        line.write(string: id)
      }
      line.raw("]")
    }
    line.raw("}")
    return gather(line.bytes, "subscription", on: eventLoop).map { result in
      result.flatMap { replies in
        var parts: [PeerSnapshot] = []
        for reply in replies {
          guard let head = GatheredList.snapshotHead(of: reply) else {
            if case .failure(let e) = Self.activity(in: reply) { return .failure(e) }
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
  /// `unavailable` naming the first that did not answer (`what` spans every node).
  private func gather(_ line: [UInt8], _ what: String, on eventLoop: any EventLoop)
    -> EventLoopFuture<Result<[[UInt8]], CountdownError>>
  {
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
      return .success(replies)
    }
  }

  /// The lease table, the nodes and the driver's counts as of its last observation.
  func observed(
    _ table: [LeaseDriver.Lease], _ nodes: [LeaseDriver.Node], _ counts: LeaseDriver.Counts
  ) {
    let peers = state.withLockedValue { s in
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

  /// The op a node sends another for an HTTP command (docs/cluster.md, "Forwarding"): the
  /// command's `method`, `id` and `body` as they came, run there with HTTP's rules; its reply
  /// carries the `activity` object. Taken only from a peer (the cluster token).
  static let peerHTTP = "peerHTTP"

  /// Sends an HTTP command to `node` and gives back the activity object it answered with,
  /// or the error (its own, or `unavailable` when the node could not be reached).
  func forwardHTTP(
    op: String, id: String?, body: [UInt8], to node: String, otherwise: CountdownError
  ) -> EventLoopFuture<Result<[UInt8], CountdownError>> {
    var line = JSONWriter()
    line.raw("{\"op\":")
    line.write(string: Self.peerHTTP)
    line.raw(",\"method\":")
    line.write(string: op)
    line.raw(",\"id\":")
    if let id { line.write(string: id) } else { line.raw("null") }
    line.raw(",\"body\":")
    let trimmed = body.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
    if trimmed.isEmpty { line.raw("{}") } else { line.bytes.append(contentsOf: body) }
    line.raw("}")
    return forward(line.bytes, to: node, on: group.next()).map { reply in
      Self.activity(in: reply)
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

  /// The `activity` object of a peer's reply to ``peerHTTP``, or its error.
  static func activity(in reply: [UInt8]) -> Result<[UInt8], CountdownError> {
    let marker = Array(#","activity":"#.utf8)
    if let r = reply.firstRange(of: marker), reply.last == UInt8(ascii: "}") {
      return .success(Array(reply[r.upperBound..<(reply.count - 1)]))
    }
    let o = (try? JSONSerialization.jsonObject(with: Data(reply))) as? [String: Any]
    guard let code = o?["code"] as? String, let message = o?["message"] as? String else {
      return .failure(
        CountdownError(
          .unavailable,
          "the node serving the activity answered what is not a reply: \(String(decoding: reply.prefix(200), as: UTF8.self))"
        ))
    }
    return .failure(CountdownError(CountdownError.Code(rawValue: code), message))
  }

  /// Sends a request line to `node` (its `--advertise`) and gives its reply line back; fails
  /// (a ``PeerError``) when the node cannot be reached or has no address.
  func forward(_ line: [UInt8], to node: String, on eventLoop: any EventLoop)
    -> EventLoopFuture<[UInt8]>
  {
    guard let links, let address = state.withLockedValue({ $0.nodes[node]?.advertise }) else {
      return eventLoop.makeFailedFuture(PeerError("where it is reached is not known"))
    }
    return links.send(line, to: node, at: address).hop(to: eventLoop)
  }

  // MARK: - On the writer's thread

  /// Starts writing `shard` and assembles its rows into the engine; lets its commands in once
  /// they are there. A load that fails is tried again a second later while the shard is wanted.
  private func take(_ shard: Int, epoch: Int64) {
    guard state.withLockedValue({ $0.wanted[shard] == epoch }) else { return }
    store.serve(shard, epoch: epoch)
    let rows: EngineSnapshot?
    var pushes: (pending: [(seq: Int64, item: PushItem)], budget: [PushBudgetRow])?
    var deliveries: [(seq: Int64, item: WebhookItem)] = []
    var unsettledRow: (incarnation: UInt64, lines: [(sequence: UInt64, json: ArraySlice<UInt8>)])?
    do {
      rows = try store.load(shard: shard)
      if relayLinks != nil { unsettledRow = try store.loadUnsettled(shard: shard) }
      if delivery != nil { pushes = try store.loadPushes(shard: shard) }
      if webhooks != nil { deliveries = try store.loadWebhooks(shard: shard) }
    } catch {
      logger.error("cannot load shard \(shard): \(error.message); trying again in a second")
      DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [self] in
        writer.perform { [self] in take(shard, epoch: epoch) }
      }
      return
    }
    // The shard's outbox goes to the senders before anything the step fires is committed
    // (docs/cluster.md, "Pushes and webhooks from a node").
    if let pushes {
      writer.plannerTakes(rows: rows?.activities ?? [], budget: pushes.budget)
      delivery?.restore(pushes.pending)
    }
    if !deliveries.isEmpty { webhooks?.restore(deliveries) }
    // What the shard's last writer committed and perhaps never relayed (it died between the
    // two): passed on before anything the step fires (docs/cluster.md, "A node killed between
    // a commit and its relay").
    if let u = unsettledRow, u.incarnation != incarnation, !u.lines.isEmpty {
      relayLinks?.recover(from: u.incarnation, u.lines)
    }
    guard let loop = loop.withLockedValue({ $0 }) else { return }
    let taken = rows.map { [$0] } ?? []
    loop.rebuildEngine(
      { current throws(CountdownError) in
        let a = try ShardAssembly.assemble(current, keeping: { _ in true }, taking: taken)
        return (a.snapshot, a.events)
      },
      completion: { [self] result in
        switch result {
        case .success:
          let opened = state.withLockedValue { s in
            guard s.wanted[shard] == epoch else { return false }
            s.open[shard] = epoch
            return true
          }
          if opened {
            logger.notice(
              "serving shard \(shard) (epoch \(epoch), \(taken.first?.activities.count ?? 0) activities taken)"
            )
          }
        case .failure(let e):
          logger.critical("cannot serve shard \(shard): its rows cannot be restored: \(e)")
        }
      })
  }

  /// Stops writing `shard` and drops its activities from the engine.
  private func drop(_ shard: Int) {
    store.stop(shard)
    let shards = options.shards
    let inShard: @Sendable (String) -> Bool = {
      ShardOfID.shard(of: $0, shards: shards) == shard
    }
    writer.plannerForgets(where: inShard)
    delivery?.drop(where: inShard)
    webhooks?.drop(where: inShard)
    guard let loop = loop.withLockedValue({ $0 }) else { return }
    loop.rebuildEngine(
      { [self] current throws(CountdownError) in
        let a = try ShardAssembly.assemble(
          current, keeping: { self.shard(of: $0.id) != shard }, taking: [])
        return (a.snapshot, a.events)
      },
      completion: { [self] result in
        if case .failure(let e) = result {
          logger.critical("cannot drop shard \(shard) from the engine: \(e)")
        }
      })
  }

  /// After a failed commit: rebuilds the engine from the last commit of every shard still
  /// served, each stepped to now; its wakes then carry `epoch`. Tries the reads again every
  /// second until they work (no commit can be made meanwhile: the wakes are of an old epoch).
  func reload(epoch: UInt64) {
    var shards: [EngineSnapshot] = []
    while true {
      do {
        shards = []
        for shard in store.served.keys.sorted() {
          let rows = try store.load(shard: shard)
          if let rows { shards.append(rows) }
          // The writer's push planner was made afresh: it learns each shard again.
          if delivery != nil {
            writer.plannerTakes(
              rows: rows?.activities ?? [], budget: try store.loadPushes(shard: shard).budget)
          }
        }
        break
      } catch {
        logger.error("cannot read the shards back: \(error.message); trying again in a second")
        Thread.sleep(forTimeInterval: 1)
      }
    }
    guard let loop = loop.withLockedValue({ $0 }) else { return }
    let journal = self.journal
    let logger = self.logger
    loop.rebuildEngine(
      { [shards] current throws(CountdownError) in
        let a = try ShardAssembly.assemble(current, keeping: { _ in false }, taking: shards)
        return (a.snapshot, a.events)
      },
      completion: { result in
        switch result {
        case .success:
          journal.epoch = epoch
          logger.notice("the engine was rebuilt from the shards' last commits; writing again")
        case .failure(let e):
          logger.critical(
            "the shards' last commits cannot be restored (\(e)); changes keep failing with storageFailed"
          )
        }
      })
  }
}

/// A push budget's stored row: an activity and token, its last timestamp and when that push
/// goes.
typealias PushBudgetRow = (key: PushBudget.Key, timestamp: Int64, notBefore: Int64)
