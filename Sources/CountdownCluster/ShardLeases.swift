// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// One node's decisions about the shards of a cluster (docs/cluster.md): which shards
/// to acquire, when to renew each lease, when to stop serving a shard whose lease could lapse,
/// and which to hand over when more nodes are alive.
///
/// A pure state machine on the node's **monotonic** clock (milliseconds; never the wall
/// clock): no I/O and no clock of its own. Its driver feeds it the lease table as PostgreSQL
/// showed it (``observe(_:aliveNodes:now:)``), the answers to the requests it asked for, and
/// the passing of time (``tick(now:)``), and carries out the ``Action``s it returns. PostgreSQL
/// decides who owns a shard (a conditional update of the lease row that raises its fencing
/// epoch); this machine decides only what this node asks for and what it serves.
///
/// The safety rule: a lease granted (or renewed) by a request sent at monotonic instant `t`
/// cannot expire in PostgreSQL before `t + leaseMs` of this node's clock, since the database
/// started its `leaseMs` after it received the request. The node stops serving the shard at
/// `t + leaseMs - guardMs` unless a later renewal has moved that instant, so it has stopped
/// before another node can acquire the shard; `guardMs` covers the clocks' rates and the time
/// the stop takes.
package struct ShardLeases: Sendable {
  /// The lease timings (`--lease-ms`).
  package struct Timing: Sendable, Equatable {
    /// How long a lease lasts from its grant or renewal.
    package var leaseMs: Int64
    /// How often an owned lease is renewed: a fifth of the lease.
    package var renewEveryMs: Int64 { leaseMs / 5 }
    /// How long before the lease could lapse the node stops serving: a fifth of the lease,
    /// so that two renewals may fail and a third still lands in time.
    package var guardMs: Int64 { leaseMs / 5 }

    package init(leaseMs: Int64 = 5000) { self.leaseMs = leaseMs }
  }

  /// One shard's lease as PostgreSQL showed it.
  package struct LeaseView: Sendable, Equatable {
    package var shard: Int
    /// The owning node's name; nil when the shard was never owned.
    package var owner: String?
    /// Whether the lease had expired by the database's clock when it was read.
    package var expired: Bool

    package init(shard: Int, owner: String?, expired: Bool) {
      self.shard = shard
      self.owner = owner
      self.expired = expired
    }
  }

  /// Why a shard stops being served.
  package enum StopReason: Sendable, Equatable {
    /// No renewal landed in time: the lease could lapse soon.
    case leaseLapsing
    /// PostgreSQL holds another epoch: another node has the shard.
    case lost
    /// Handed over so that the shards spread over the nodes alive.
    case handingOver
  }

  /// What the driver does.
  package enum Action: Sendable, Equatable {
    /// Ask PostgreSQL for the shard's lease (raising its epoch); answer with
    /// ``acquired(_:epoch:sentAt:now:)`` or ``acquireRefused(_:)``.
    case acquire(shard: Int)
    /// Renew the lease held with `epoch`; answer with ``renewed(_:epoch:sentAt:)``,
    /// ``renewLost(_:epoch:)`` or ``renewFailed(_:epoch:)``.
    case renew(shard: Int, epoch: Int64)
    /// Load the shard's rows and serve it, every write conditional on `epoch` (the restart
    /// path: the clock steps from the last commit).
    case serve(shard: Int, epoch: Int64)
    /// Stop acknowledging and delivering anything of the shard, at once.
    case stopServing(shard: Int, reason: StopReason)
    /// Give the lease up (expire it now) so that another node can take it.
    case release(shard: Int, epoch: Int64)
  }

  /// A shard as this node sees it.
  enum ShardState: Sendable, Equatable {
    /// Not this node's (another node's, or nobody's).
    case free
    /// An acquisition is in flight.
    case acquiring
    /// This node serves it with `epoch` until `stopAt` unless a renewal moves that;
    /// `lastRenewAt` is when the last renewal (or the grant's request) was sent, and
    /// `renewing` whether that renewal is still unanswered.
    case owned(epoch: Int64, stopAt: Int64, lastRenewAt: Int64, renewing: Bool)
  }

  /// This node's name (`--node`).
  package let node: String
  /// The lease timings.
  package let timing: Timing
  /// Each shard as this node sees it, by shard number.
  private(set) var shards: [ShardState]
  /// Shards this node handed over or stopped, not to be asked for again before the instant
  /// (so that a hand-over is not undone at once).
  private var holdOffUntil: [Int: Int64] = [:]
  /// The lease table at the last observation.
  private var lastView: [LeaseView] = []
  /// How many shards this node should hold: the shards over the nodes alive, rounded up.
  private(set) var target: Int

  /// - Parameters:
  ///   - node: this node's name (`--node`).
  ///   - shardCount: the cluster's shards (fixed at the database's first use).
  package init(node: String, shardCount: Int, timing: Timing = Timing()) {
    precondition(shardCount > 0 && timing.leaseMs >= 5, "a cluster has shards and a lease")
    self.node = node
    self.timing = timing
    shards = Array(repeating: .free, count: shardCount)
    target = shardCount
  }

  /// The shards this node serves now, with their epochs.
  package var served: [(shard: Int, epoch: Int64)] {
    shards.indices.compactMap { k in
      if case .owned(let epoch, _, _, _) = shards[k] { (k, epoch) } else { nil }
    }
  }

  /// When the last renewal of an owned shard was counted as sent (the instant its answer
  /// names in ``renewed(_:epoch:sentAt:)``); nil for a shard not owned.
  package func lastRenewal(of shard: Int) -> Int64? {
    guard shards.indices.contains(shard), case .owned(_, _, let at, _) = shards[shard] else {
      return nil
    }
    return at
  }

  /// The next instant at which ``tick(now:)`` has something to do (a renewal or a stop);
  /// nil when nothing is owned. The driver also ticks after each observation.
  package var nextDeadline: Int64? {
    var next: Int64?
    for s in shards {
      guard case .owned(_, let stopAt, let lastRenewAt, let renewing) = s else { continue }
      let renewAt = renewing ? stopAt : lastRenewAt + timing.renewEveryMs
      next = min(next ?? .max, min(stopAt, renewAt))
    }
    return next
  }

  // MARK: - Inputs

  /// The lease table as PostgreSQL showed it, and how many nodes are alive (this one among
  /// them): acquires what is free up to this node's share, hands over what is beyond it.
  package mutating func observe(_ view: [LeaseView], aliveNodes: Int, now: Int64) -> [Action] {
    lastView = view
    target = (shards.count + max(1, aliveNodes) - 1) / max(1, aliveNodes)
    var actions: [Action] = []
    for v in view where shards.indices.contains(v.shard) {
      // PostgreSQL names another owner whose lease holds: whatever this node thinks, it is
      // not this node's (a renewal will say so too; stopping now is the safe side).
      if case .owned = shards[v.shard], v.owner != node, !v.expired {
        shards[v.shard] = .free
        actions.append(.stopServing(shard: v.shard, reason: .lost))
      }
    }
    actions += balance(now: now)
    checkInvariants()
    return actions
  }

  /// Time passes: renewals that are due, and stops of leases that could lapse.
  package mutating func tick(now: Int64) -> [Action] {
    var actions: [Action] = []
    for k in shards.indices {
      guard case .owned(let epoch, let stopAt, let lastRenewAt, let renewing) = shards[k] else {
        continue
      }
      if now >= stopAt {
        shards[k] = .free
        holdOffUntil[k] = now + timing.leaseMs
        actions.append(.stopServing(shard: k, reason: .leaseLapsing))
      } else if !renewing, now >= lastRenewAt + timing.renewEveryMs {
        shards[k] = .owned(epoch: epoch, stopAt: stopAt, lastRenewAt: now, renewing: true)
        actions.append(.renew(shard: k, epoch: epoch))
      }
    }
    checkInvariants()
    return actions
  }

  /// PostgreSQL granted the lease asked for at `sentAt` with `epoch`.
  package mutating func acquired(_ shard: Int, epoch: Int64, sentAt: Int64, now: Int64) -> [Action]
  {
    guard case .acquiring = shards[shard] else { return [] }
    let stopAt = sentAt + timing.leaseMs - timing.guardMs
    guard now < stopAt else {
      // The answer came too late to serve on: the lease lapses unused and is asked for again.
      shards[shard] = .free
      checkInvariants()
      return []
    }
    shards[shard] = .owned(epoch: epoch, stopAt: stopAt, lastRenewAt: sentAt, renewing: false)
    checkInvariants()
    return [.serve(shard: shard, epoch: epoch)]
  }

  /// PostgreSQL refused the lease (another node holds it, or the request failed).
  package mutating func acquireRefused(_ shard: Int) {
    if case .acquiring = shards[shard] { shards[shard] = .free }
    checkInvariants()
  }

  /// The renewal sent at `sentAt` with `epoch` was committed: the stop moves to
  /// `sentAt + leaseMs - guardMs`. An answer for a lease this node no longer serves changes
  /// nothing (a shard once stopped is served again only through a new acquisition).
  package mutating func renewed(_ shard: Int, epoch: Int64, sentAt: Int64) {
    guard case .owned(let held, let stopAt, let lastRenewAt, let renewing) = shards[shard],
      held == epoch
    else { return }
    let moved = max(stopAt, sentAt + timing.leaseMs - timing.guardMs)
    shards[shard] = .owned(
      epoch: held, stopAt: moved, lastRenewAt: lastRenewAt,
      renewing: renewing && sentAt != lastRenewAt)
    checkInvariants()
  }

  /// The renewal could not be made (no answer, an error): the next one goes at its time; the
  /// stop instant does not move.
  package mutating func renewFailed(_ shard: Int, epoch: Int64) {
    guard case .owned(let held, let stopAt, let lastRenewAt, _) = shards[shard], held == epoch
    else { return }
    shards[shard] = .owned(epoch: held, stopAt: stopAt, lastRenewAt: lastRenewAt, renewing: false)
    checkInvariants()
  }

  /// PostgreSQL holds another epoch for the shard: another node has it. Stops at once.
  package mutating func renewLost(_ shard: Int, epoch: Int64) -> [Action] {
    guard case .owned(let held, _, _, _) = shards[shard], held == epoch else { return [] }
    shards[shard] = .free
    checkInvariants()
    return [.stopServing(shard: shard, reason: .lost)]
  }

  // MARK: - Balance

  /// Acquires free shards up to ``target`` (those nobody holds, whose lease expired, or that
  /// PostgreSQL still names this node for), or hands over those beyond it.
  private mutating func balance(now: Int64) -> [Action] {
    var actions: [Action] = []
    var held = shards.filter { if case .free = $0 { false } else { true } }.count
    if held > target {
      // The highest shards go first, so that nodes agree without talking.
      for k in shards.indices.reversed() where held > target {
        guard case .owned(let epoch, _, _, _) = shards[k] else { continue }
        shards[k] = .free
        holdOffUntil[k] = now + timing.leaseMs
        actions += [.stopServing(shard: k, reason: .handingOver), .release(shard: k, epoch: epoch)]
        held -= 1
      }
      return actions
    }
    for v in lastView where held < target && shards.indices.contains(v.shard) {
      guard case .free = shards[v.shard], v.owner == nil || v.expired || v.owner == node else {
        continue
      }
      if let until = holdOffUntil[v.shard], now < until { continue }
      holdOffUntil[v.shard] = nil
      shards[v.shard] = .acquiring
      actions.append(.acquire(shard: v.shard))
      held += 1
    }
    return actions
  }

  // MARK: - Invariants

  /// Checks, in debug builds, what every input must leave true: an owned shard has a positive
  /// epoch and its last renewal before its stop.
  func checkInvariants() {
    #if DEBUG
      for s in shards {
        guard case .owned(let epoch, let stopAt, let lastRenewAt, _) = s else { continue }
        precondition(epoch > 0, "an owned shard has an epoch")
        precondition(lastRenewAt < stopAt, "a lease is renewed before its stop")
      }
      precondition(target >= 1 && target <= shards.count, "the share is within the shards")
    #endif
  }
}
