// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownPush
import Foundation

/// What a writer needs to plan Live Activity pushes with each commit (docs/pushes.md).
package struct PushHooks: Sendable {
  /// The planner, with the budget and rows restored from the state file.
  package var planner: PushPlanner
  /// The wall clock (ms since 1970) the budget decides on.
  package var now: @Sendable () -> Int64
  /// Hears of the pushes each commit wrote, with their outbox sequence numbers, on the
  /// writer thread after the commit.
  package var committed: @Sendable ([(seq: Int64, operation: PushOperation)]) -> Void

  package init(
    planner: PushPlanner, now: @escaping @Sendable () -> Int64,
    committed: @escaping @Sendable ([(seq: Int64, operation: PushOperation)]) -> Void
  ) {
    self.planner = planner
    self.now = now
    self.committed = committed
  }
}

/// What a writer needs to write webhook deliveries with each commit (docs/webhooks.md).
package struct WebhookHooks: Sendable {
  /// The receivers, in the order given.
  package var urls: [String]
  /// The body of one event's deliveries: `{"event": …, "activity": …}`.
  package var body: @Sendable (ActivityEvent, ActivityState?) -> [UInt8]
  /// Hears of the deliveries each commit wrote, with their outbox sequence numbers, on the
  /// writer thread after the commit.
  package var committed: @Sendable ([(seq: Int64, item: WebhookItem)]) -> Void

  package init(
    urls: [String], body: @escaping @Sendable (ActivityEvent, ActivityState?) -> [UInt8],
    committed: @escaping @Sendable ([(seq: Int64, item: WebhookItem)]) -> Void
  ) {
    self.urls = urls
    self.body = body
    self.committed = committed
  }
}

/// The store's own thread: it takes the loop's wakes in order, writes the changes of every
/// wake waiting into one transaction (group commit: one commit, and with `full` one sync,
/// serves them all), and only then releases each wake's replies and events.
///
/// After a failed write (disk full, I/O error) the wakes that were waiting, and every later
/// one that ran on the same uncommitted state, are released as failed; the writer reads the last
/// committed state back and hands it to `reload`, which rebuilds the engine from it. Wakes of
/// the rebuilt engine carry the new epoch and are written again as usual.
package final class StoreWriter: @unchecked Sendable {
  // @unchecked Sendable: `queue`, `closing`, `acceptedEpoch` and `needsReload` are guarded by
  // `condition`; `store`, `reload` and `onError` are used by the writer thread only (and by
  // `close` after it ended).

  /// One wake's share of the work.
  package struct Unit: Sendable {
    /// What to write, or nil when the wake changed nothing (its replies still go out in order).
    package var changes: StoreChanges?
    /// The engine's epoch when the wake ran (see ``StoreWriter``).
    package var epoch: UInt64
    /// Runs on the writer thread after the commit (nil) or with why it failed.
    package var release: @Sendable (_ failure: StoreError?) -> Void

    package init(
      changes: StoreChanges?, epoch: UInt64,
      release: @escaping @Sendable (_ failure: StoreError?) -> Void
    ) {
      self.changes = changes
      self.epoch = epoch
      self.release = release
    }
  }

  private let store: any DurableStore
  private let condition = Lock()
  private var queue: [Unit] = []
  private var closing = false
  private var busy = false
  private var finished = false
  /// Units of an older epoch are built on state that was never committed: they fail.
  private var acceptedEpoch: UInt64 = 0
  private var needsReload = false
  /// The failure that made the current epoch, for the wakes of older ones.
  private var lastFailure = StoreError("an earlier write failed")
  /// Used by the writer thread; let go by `close` once that thread has ended (they capture
  /// the loop, whose wake handler captures this writer: a cycle until then).
  private var reload: (@Sendable (EngineSnapshot?, _ epoch: UInt64) -> Void)?
  private var onError: (@Sendable (StoreError) -> Void)?
  /// Live Activity pushes (docs/pushes.md), nil when the server sends none: the planner
  /// (writer thread only), and who hears of the pushes each commit wrote.
  private var planner: PushPlanner?
  private var onPushes: (@Sendable ([(seq: Int64, operation: PushOperation)]) -> Void)?
  private let clock: (@Sendable () -> Int64)?
  /// Webhooks (docs/webhooks.md), nil when the server has none.
  private var webhooks: WebhookHooks?
  /// After a failed commit: the planner holds pushes that were not written, until it is
  /// rebuilt from the file (writer thread only).
  private var plannerIsAhead = false
  /// Pushes answered, to delete from the outbox with the next commit (guarded by `condition`).
  private var answered: [Int64] = []
  /// When the oldest of `answered` came: they wait at most ``forgetDelay`` for a commit of
  /// changes to ride on, then get one of their own.
  private var answeredSince: UInt64?
  /// How long answered pushes wait for a commit of changes (a crash in that time sends them
  /// again after the restart: delivery is at least once).
  package static let forgetDelay: TimeInterval = 1

  /// Starts the writer thread on `store`. `reload` gets the last committed state after a
  /// failed write (nil when nothing was ever committed), with the epoch the rebuilt engine's wakes must carry; `onError` hears of
  /// each failure (to log it).
  ///
  /// With `pushes`, each commit also plans the pushes of its units' `pushEvents` and writes
  /// them to the outbox in the same transaction; `pushes.committed` hears of them after the
  /// commit, on the writer thread. With `webhooks`, likewise each unit's `webhookEvents`
  /// become one delivery per URL.
  package init(
    store: any DurableStore, reload: @escaping @Sendable (EngineSnapshot?, UInt64) -> Void,
    onError: @escaping @Sendable (StoreError) -> Void,
    pushes: PushHooks? = nil, webhooks: WebhookHooks? = nil
  ) {
    self.webhooks = webhooks
    self.store = store
    self.reload = reload
    self.onError = onError
    self.planner = pushes?.planner
    self.onPushes = pushes?.committed
    self.clock = pushes?.now
    let thread = Thread { [self] in
      nameCurrentThread("countdown-store")
      run()
    }
    thread.start()
  }

  /// Queues one wake; from the loop thread, which never waits here but for a short lock.
  package func enqueue(_ unit: Unit) {
    condition.lock()
    queue.append(unit)
    condition.signal()
    condition.unlock()
  }

  /// Runs `work` on the writer thread after every wake queued so far is committed (or has
  /// failed), in order with them: what must happen between two commits, with the store to
  /// itself (a cluster node taking or giving up a shard: docs/cluster.md). From any thread.
  package func perform(_ work: @escaping @Sendable () -> Void) {
    // A unit without changes, of no epoch (it is never current): its release runs in order.
    enqueue(Unit(changes: nil, epoch: 0) { _ in work() })
  }

  /// A cluster node took a shard: the push planner learns its activities' rows and the budget
  /// its pushes spent. On the writer's thread only (in ``perform(_:)`` or `reload`).
  package func plannerTakes(
    rows: [StoredActivity], budget: [(key: PushBudget.Key, timestamp: Int64, notBefore: Int64)]
  ) {
    planner?.restore(rows: rows, budget: budget)
  }

  /// A cluster node stopped serving a shard: the push planner forgets the activities `forget`
  /// takes. On the writer's thread only (in ``perform(_:)``).
  package func plannerForgets(where forget: (String) -> Bool) {
    planner?.forget(where: forget)
  }

  /// Outbox rows answered (pushes, webhook deliveries, or those of a token that is gone):
  /// deleted from the outbox with the next commit, or in one of their own. From any thread.
  package func forget(outbox seqs: [Int64]) {
    guard !seqs.isEmpty else { return }
    condition.lock()
    answered.append(contentsOf: seqs)
    // No commit of their own at once: a commit for them beside a stream of changes would make
    // the changes' commits wait (a sync of the file each).
    // The writer wakes to set its deadline (and to commit a full batch), not to commit at once.
    if answeredSince == nil || answered.count >= 4096 { condition.signal() }
    if answeredSince == nil { answeredSince = Lock.now() }
    condition.unlock()
  }

  /// Blocks until everything queued so far is written and released.
  package func flush() {
    condition.lock()
    while !queue.isEmpty || busy { condition.wait() }
    condition.unlock()
  }

  /// Writes and releases what is queued, stops the thread and closes the file.
  package func close() {
    condition.lock()
    closing = true
    condition.broadcast()
    while !finished { condition.wait() }
    reload = nil
    onError = nil
    onPushes = nil
    webhooks = nil
    condition.unlock()
    store.close()
  }

  private func run() {
    while true {
      condition.lock()
      while queue.isEmpty && !closing {
        if needsReload {
          // Retry reading the committed state every second until it works.
          condition.wait(untilNanoseconds: Lock.deadline(after: 1))
          break
        }
        if let since = answeredSince {
          let due = since + UInt64(Self.forgetDelay * 1e9)
          if answered.count >= 4096 || due <= Lock.now() { break }
          condition.wait(untilNanoseconds: due)
          continue
        }
        condition.wait()
      }
      if queue.isEmpty && answered.isEmpty && closing {
        finished = true
        condition.broadcast()
        condition.unlock()
        return
      }
      let units = queue
      queue = []
      let forget = answered
      answered = []
      answeredSince = nil
      busy = true
      let accepted = acceptedEpoch
      let reloading = needsReload
      var failure: StoreError? = lastFailure
      condition.unlock()

      if reloading { tryReload() }
      let current = units.filter { $0.epoch >= accepted }
      let changes = current.compactMap(\.changes)
      let pushes = plan(changes)
      let deliveries = webhookDeliveries(changes)
      var ok = true
      if !changes.isEmpty || !forget.isEmpty {
        do throws(StoreError) {
          let seqs = try store.write(
            changes, pushes: pushes, webhooks: deliveries, forget: forget)
          if !pushes.isEmpty {
            onPushes?(zip(seqs.pushes, pushes).map { (seq: $0, operation: $1) })
          }
          if !deliveries.isEmpty {
            webhooks?.committed(zip(seqs.webhooks, deliveries).map { (seq: $0, item: $1) })
          }
        } catch {
          ok = false
          failure = error
          onError?(error)
          // The planner went on as if this commit were made: it is rebuilt from the file with
          // the engine (copying it before each commit instead would cost a copy of every
          // activity it knows, each time).
          if planner != nil { plannerIsAhead = true }
          condition.lock()
          // Answered pushes stay answered: their deletion waits for the next commit.
          answered.insert(contentsOf: forget, at: 0)
          if !forget.isEmpty, answeredSince == nil { answeredSince = Lock.now() }
          acceptedEpoch = max(acceptedEpoch, units.map(\.epoch).max() ?? 0) + 1
          needsReload = true
          lastFailure = error
          condition.unlock()
        }
      }
      for u in units {
        // A wake fails when its write failed, or when it ran on state that was never written
        // (an older epoch): even its queries saw changes that did not happen.
        u.release(ok && u.epoch >= accepted ? nil : failure)
      }
      if !ok { tryReload() }

      condition.lock()
      busy = false
      condition.broadcast()
      condition.unlock()
    }
  }

  /// The pushes of `changes`' events, in order (none without a planner).
  private func plan(_ changes: [StoreChanges]) -> [PushOperation] {
    guard planner != nil, !plannerIsAhead, let clock else { return [] }
    var out: [PushOperation] = []
    let now = clock()
    for c in changes where !c.pushEvents.isEmpty {
      var rows: [String: StoredActivity] = [:]
      for a in c.engine.activities { rows[a.id] = a }
      out += planner!.plan(c.pushEvents, rows: rows, now: now)
    }
    return out
  }

  /// The webhook deliveries of `changes`' events: one per event and URL, in order (none
  /// without webhooks).
  private func webhookDeliveries(_ changes: [StoreChanges]) -> [WebhookItem] {
    guard let webhooks else { return [] }
    var out: [WebhookItem] = []
    for c in changes {
      for (event, state) in c.webhookEvents {
        let body = webhooks.body(event, state)
        for url in webhooks.urls {
          out.append(
            WebhookItem(
              activity: event.id, url: url, event: event.kind, eventAt: event.at.milliseconds,
              body: body))
        }
      }
    }
    return out
  }

  /// Reads the last committed state and hands it to `reload` with the epoch now accepted.
  private func tryReload() {
    condition.lock()
    let epoch = acceptedEpoch
    let wanted = needsReload
    condition.unlock()
    guard wanted else { return }
    do throws(StoreError) {
      let snapshot = try store.load()
      if plannerIsAhead {
        var fresh = PushPlanner(channels: planner?.channels ?? false)
        fresh.restore(rows: snapshot?.activities ?? [], budget: try store.loadPushes().budget)
        planner = fresh
        plannerIsAhead = false
      }
      condition.lock()
      needsReload = false
      condition.unlock()
      reload?(snapshot, epoch)
    } catch {
      onError?(error)
    }
  }
}
