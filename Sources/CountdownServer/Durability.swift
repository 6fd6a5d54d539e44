// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop
import CountdownPostgres
import CountdownPush
import CountdownStore
import Logging

/// What the loop thread gathers during one wake for the store: the replies to release once
/// the wake's changes are committed. Confined to the loop thread (its completions and its
/// wake handler run there).
final class Journal: @unchecked Sendable {
  // @unchecked Sendable: touched only on the loop thread.

  /// The engine's epoch: it moves on when the engine is rebuilt after a failed write.
  var epoch: UInt64 = 0
  /// Each runs once the wake is committed (nil) or failed.
  var releases: [@Sendable (StoreError?) -> Void] = []
  /// The engine options as the file has them (or as last handed to the writer): a change of
  /// them (`configure`) changes the engine row even when no activity changed.
  var storedOptions: StoredOptions

  /// Whether the wakes' events are planned into Live Activity pushes (`--apns-*`).
  let pushes: Bool
  /// Whether the wakes' lifecycle events go to webhooks (`--webhook`).
  let webhooks: Bool
  /// Whether the wakes' lifecycle events are written beside their rows until the hub has
  /// relayed them (a cluster node with the cluster token; docs/cluster.md).
  let unsettled: Bool

  init(
    storedOptions: StoredOptions, pushes: Bool = false, webhooks: Bool = false,
    unsettled: Bool = false
  ) {
    self.storedOptions = storedOptions
    self.pushes = pushes
    self.webhooks = webhooks
    self.unsettled = unsettled
  }
  /// Numbers the wakes sent to the writer, for the hub's held events.
  var nextToken: UInt64 = 0
  /// Ids seen in this wake's events, reused from wake to wake.
  private var seen: Set<String> = []
  private var ids: [String] = []

  /// The wake handler: hands the wake's changes and replies to the writer as one unit, and
  /// its events to the hub, holding those that must wait for the commit.
  func wake(
    _ engine: borrowing ActivityEngine, first: UInt64, _ events: [ActivityEvent],
    writer: StoreWriter, hub: Hub
  ) {
    StoreChanges.collect(events, into: &ids, seen: &seen)
    let options = StoredOptions(engine.options)
    let changed = !ids.isEmpty || options != storedOptions
    guard changed || !releases.isEmpty else {
      if !events.isEmpty { hub.eventLoop.execute { hub.publish(first: first, events, token: nil) } }
      return
    }
    let token = nextToken
    nextToken += 1
    // The events go to the hub first: its ticks leave at once, without waiting for the rows
    // below to be read out of the engine (the rest waits for the commit in the hub anyway).
    hub.eventLoop.execute { hub.publish(first: first, events, token: token) }
    var changes = changed ? StoreChanges(engine: engine, ids: ids) : nil
    if pushes, changes != nil {
      for e in events where e.kind != .tick {
        changes!.pushEvents.append(PushPlanner.Event(kind: e.kind, at: e.at.milliseconds, id: e.id))
      }
    }
    if unsettled, changes != nil {
      var lifecycle: [(sequence: UInt64, event: ActivityEvent)] = []
      for (k, e) in events.enumerated() where e.kind != .tick {
        lifecycle.append((first + UInt64(k), e))
      }
      if !lifecycle.isEmpty { changes!.unsettled = (token, lifecycle) }
    }
    if webhooks, changes != nil {
      // The activity as the wake left it (no JSON here: the writer encodes the bodies); read
      // once for a run of its events (an expiry, its end and its dismissal come together).
      for e in events where e.kind != .tick {
        let state =
          if let last = changes!.webhookEvents.last, last.event.id == e.id {
            last.state
          } else {
            engine.state(of: e.handle)
          }
        changes!.webhookEvents.append((e, state))
      }
    }
    let releases = self.releases
    self.releases = []
    seen.removeAll(keepingCapacity: true)
    ids.removeAll(keepingCapacity: true)
    storedOptions = options
    writer.enqueue(
      StoreWriter.Unit(changes: changes, epoch: epoch) { failure in
        for r in releases { r(failure) }
        hub.eventLoop.execute { hub.finish(token: token, committed: failure == nil) }
      })
  }
}

/// The durable side of a server: the state file's writer and the loop's journal, and the
/// senders of what its outbox holds: pushes (nil without `--apns-*`) and webhook deliveries
/// (nil without `--webhook`).
struct Durable {
  let writer: StoreWriter
  let journal: Journal
  let delivery: PushDelivery?
  let webhooks: WebhookDelivery?
}

extension CountdownServer {
  /// Opens the state file or the PostgreSQL database and reads what it holds (nil when
  /// nothing was committed yet), with the limits given to this server put over the stored
  /// ones.
  static func openStore(_ options: ServerOptions) throws(ServerStartError) -> (
    any DurableStore, EngineSnapshot?
  ) {
    do throws(StoreError) {
      let store: any DurableStore =
        if let url = options.postgres {
          // A cluster node's store loads nothing now: it loads each shard as it takes it.
          try PostgresStore(
            PostgresStore.Location.parse(url), nodeOf: options.cluster?.shards,
            answerTimeout: .milliseconds(options.commitTimeout))
        } else {
          try StateStore(path: options.statePath, sync: options.sync)
        }
      let snapshot: EngineSnapshot?
      do throws(StoreError) {
        snapshot = try store.load()
      } catch {
        store.close()
        throw error
      }
      return (store, snapshot.map { overriding($0, with: options) })
    } catch {
      throw ServerStartError(error.message)
    }
  }

  /// `snapshot` with the limits given to this server put over the stored ones.
  static func overriding(_ snapshot: EngineSnapshot, with options: ServerOptions)
    -> EngineSnapshot
  {
    var s = snapshot
    if let n = options.engine.maxActivities { s.options.maxActivities = n }
    if let ms = options.engine.maxActiveDurationMs { s.options.maxActiveDurationMs = ms }
    return s
  }

  /// Rebuilds the loop's engine from the last committed state after a failed write (with the
  /// limits given to this server, as at start).
  static func reload(
    _ snapshot: EngineSnapshot?, epoch: UInt64, loop: CountdownLoop, journal: Journal, hub: Hub,
    options: ServerOptions, logger: Logger
  ) {
    let state =
      snapshot.map { overriding($0, with: options) }
      ?? EngineSnapshot(
        now: SystemWallClock.now(), options: options.engine, nextOrder: 0,
        idGeneratorState: UInt64.random(in: .min ... .max), activities: [])
    loop.replaceEngine(with: state) { result in
      switch result {
      case .success:
        // What the engine went back to: the groups of its activities.
        hub.eventLoop.execute { hub.replaceGroups(state.activities) }
        journal.epoch = epoch
        journal.storedOptions = StoredOptions(state.options)
        logger.notice(
          "the engine was rebuilt from the last commit; writing again")
      case .failure(let e):
        logger.critical(
          "the last commit cannot be restored (\(e)); changes keep failing with storageFailed"
        )
      }
    }
  }
}
