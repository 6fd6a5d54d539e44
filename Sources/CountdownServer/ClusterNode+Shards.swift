// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownCluster
import CountdownLoop
import CountdownPush
import Dispatch
import Foundation

/// A cluster node's shards on the writer's thread (docs/cluster.md, "Serving shards"): taking
/// one (its rows loaded and assembled into the engine), dropping one, rebuilding the engine
/// after a failed commit, and a shard whose rows cannot be restored, reported and tried again.
extension ClusterNode {
  /// Starts writing `shard` and assembles its rows into the engine; lets its commands in once
  /// they are there. A load that fails is tried again a second later while the shard is wanted.
  func take(_ shard: Int, epoch: Int64) {
    guard state.withLock({ $0.wanted[shard] == epoch }) else { return }
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
    // The groups of its activities, before any of their events (docs/security.md, "Groups").
    if let taken = rows?.activities, taken.contains(where: { $0.group != nil }) {
      let hub = self.hub
      hub.eventLoop.execute { hub.addGroups(taken) }
    }
    // What the shard's last writer committed and perhaps never relayed (it died between the
    // two): passed on before anything the step fires (docs/cluster.md, "A node killed between
    // a commit and its relay").
    if let u = unsettledRow, u.incarnation != incarnation, !u.lines.isEmpty {
      relayLinks?.recover(from: u.incarnation, u.lines)
    }
    guard let loop = loop.withLock({ $0 }) else { return }
    let taken = rows.map { [$0] } ?? []
    let refusal = Refusals()
    loop.rebuildEngine(
      { [self] current throws(CountdownError) in
        // Still wanted when the loop comes to it: a stop since then dropped it already.
        let wanted = state.withLock { $0.wanted[shard] == epoch }
        let a = ShardAssembly.assemble(
          current, keeping: { _ in true }, taking: wanted ? taken : [])
        refusal.byPart = a.refused
        return (a.snapshot, a.events)
      },
      completion: { [self] result in
        var failure: CountdownError?
        switch result {
        case .success: failure = refusal.byPart[0]
        case .failure(let e): failure = e
        }
        if let failure {
          unrestorable(shard, epoch: epoch, failure)
          return
        }
        let opened = state.withLock { s in
          guard s.wanted[shard] == epoch else { return false }
          s.open[shard] = epoch
          s.unrestorable[shard] = nil
          return true
        }
        if opened {
          logger.notice(
            "serving shard \(shard) (epoch \(epoch), \(taken.first?.activities.count ?? 0) activities taken)"
          )
        }
      })
  }

  /// `shard`'s rows could not be restored: nobody serves it (its commands get `unavailable`,
  /// lists name it), it is reported, and its rows are read and tried again in a while, for as
  /// long as this node holds it (a person may mend the rows meanwhile).
  func unrestorable(_ shard: Int, epoch: Int64, _ error: CountdownError) {
    let held = state.withLock { s in
      s.open[shard] = nil
      guard s.wanted[shard] == epoch else { return false }
      s.unrestorable[shard] = error.message
      return true
    }
    guard held else { return }
    logger.critical(
      "cannot serve shard \(shard): its rows cannot be restored: \(error); nobody serves it, trying again in \(Int(Self.restoreRetry)) s"
    )
    // Nothing of it is written or sent meanwhile (a change of the engine alone writes the
    // engine row of every shard served): its rows and outbox stay as its last owner left them.
    writer.perform { [self] in
      if state.withLock({ $0.open[shard] == nil }) { letGo(shard) }
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + Self.restoreRetry) { [weak self] in
      guard let self else { return }
      writer.perform { [self] in take(shard, epoch: epoch) }
    }
  }

  /// The store stops writing `shard`; the push planner and the senders let go of it (on the
  /// writer's thread).
  func letGo(_ shard: Int) {
    store.stop(shard)
    let shards = options.shards
    let inShard: @Sendable (String) -> Bool = {
      ShardOfID.shard(of: $0, shards: shards) == shard
    }
    writer.plannerForgets(where: inShard)
    delivery?.drop(where: inShard)
    webhooks?.drop(where: inShard)
  }

  /// Shards held whose rows cannot be restored, with why.
  var unrestorableShards: [Int: String] { state.withLock { $0.unrestorable } }

  /// What an assembly on the loop thread left out, for its completion (on the same thread).
  private final class Refusals: @unchecked Sendable {
    var byPart: [Int: CountdownError] = [:]
  }

  /// Drops `shard`'s activities from the engine (from any thread: the loop does it in turn
  /// with the other rebuilds, a take's and a reload's, which leave out a shard no longer
  /// wanted by then). The writer stops writing it in ``letGo(_:)``.
  func drop(_ shard: Int) {
    guard let loop = loop.withLock({ $0 }) else { return }
    loop.rebuildEngine(
      { [self] current throws(CountdownError) in
        let a = ShardAssembly.assemble(
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
  /// served, each stepped to now; its wakes then carry `epoch`. When the reads fail (PostgreSQL
  /// out of reach) they are tried again a second later, and meanwhile the writer goes on
  /// failing the wakes of the old epoch: every command is answered (`storageFailed`), none
  /// waits for the database to come back. A shard whose rows cannot be restored is left out,
  /// reported and tried again (``unrestorableShards``); the others are served.
  func reload(epoch: UInt64) {
    guard
      state.withLock({ s in
        guard epoch >= s.reloading else { return false }
        s.reloading = epoch
        return true
      })
    else { return }
    var shards: [(shard: Int, epoch: Int64, rows: EngineSnapshot)] = []
    do {
      for (shard, leaseEpoch) in store.served.sorted(by: { $0.key < $1.key }) {
        let rows = try store.load(shard: shard)
        if let rows { shards.append((shard, leaseEpoch, rows)) }
        // The failed commit may have landed (its connection went with it under way): the
        // shard's row of unsettled events says so, before the next commit rewrites it.
        if relayLinks != nil, let u = try store.loadUnsettled(shard: shard),
          u.incarnation == incarnation
        {
          relayLinks?.recover(from: incarnation, u.lines)
        }
        // The writer's push planner was made afresh: it learns each shard again.
        if delivery != nil {
          writer.plannerTakes(
            rows: rows?.activities ?? [], budget: try store.loadPushes(shard: shard).budget)
        }
      }
    } catch {
      logger.error("cannot read the shards back: \(error.message); trying again in a second")
      DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [weak self] in
        guard let self else { return }
        writer.perform { [self] in reload(epoch: epoch) }
      }
      return
    }
    guard let loop = loop.withLock({ $0 }) else { return }
    let journal = self.journal
    let logger = self.logger
    let refusal = Refusals()
    let held = shards.map { (shard: $0.shard, epoch: $0.epoch) }
    let parts = shards.map(\.rows)
    loop.rebuildEngine(
      { [self] current throws(CountdownError) in
        // The shards still wanted when the loop comes to it: one stopped since its rows were
        // read was dropped from the engine already, and must not come back.
        let kept = state.withLock { s in
          held.indices.filter { s.wanted[held[$0].shard] == held[$0].epoch }
        }
        let a = ShardAssembly.assemble(
          current, keeping: { _ in false }, taking: kept.map { parts[$0] })
        refusal.byPart = Dictionary(
          uniqueKeysWithValues: a.refused.map { (kept[$0.key], $0.value) })
        return (a.snapshot, a.events)
      },
      completion: { [self] result in
        switch result {
        case .success:
          journal.epoch = epoch
          for (k, e) in refusal.byPart.sorted(by: { $0.key < $1.key }) {
            unrestorable(held[k].shard, epoch: held[k].epoch, e)
          }
          logger.notice("the engine was rebuilt from the shards' last commits; writing again")
        case .failure(let e):
          logger.critical(
            "the shards' last commits cannot be restored (\(e)); changes keep failing with storageFailed"
          )
        }
      })
  }
}
