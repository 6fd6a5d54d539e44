// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownPush

/// Where a server's state is kept: the SQLite state file (``StateStore``) or PostgreSQL
/// (`PostgresStore` in `CountdownPostgres`), the same rows and the same outbox either way
/// (docs/state-file.md, docs/cluster.md).
///
/// Everything here is synchronous and called from one thread at a time (the ``StoreWriter``'s
/// once a server runs), which keeps the group commit, the epochs and the failure path one
/// piece for every store. A failure is a ``StoreError`` whose message names the place; after
/// one, a later call may succeed (a store that lost its connection opens a new one).
package protocol DurableStore: AnyObject {
  /// The stored engine state and activities, or nil when nothing was ever committed.
  func load() throws(StoreError) -> EngineSnapshot?

  /// Writes `groups` in one transaction (each group's removals and changed rows, the last
  /// group's engine state), the outbox's new pushes (a replacement deletes the waiting push
  /// it replaces) and webhook deliveries, and deletes the outbox rows `forget`. Returns the
  /// sequence numbers given to `pushes` and to `webhooks`, in order. Nothing is written when
  /// it throws.
  func write(
    _ groups: [StoreChanges], pushes: [PushOperation], webhooks: [WebhookItem], forget: [Int64]
  ) throws(StoreError) -> (pushes: [Int64], webhooks: [Int64])

  /// The pushes not yet answered, in order, and the budget spent per activity and token.
  func loadPushes() throws(StoreError) -> (
    pending: [(seq: Int64, item: PushItem)],
    budget: [(key: PushBudget.Key, timestamp: Int64, notBefore: Int64)]
  )

  /// The webhook deliveries not yet answered, in order.
  func loadWebhooks() throws(StoreError) -> [(seq: Int64, item: WebhookItem)]

  /// Closes the store; it is not used again.
  func close()
}

extension DurableStore {
  /// Writes `groups` (and what else is given) in one transaction; see
  /// ``DurableStore/write(_:pushes:webhooks:forget:)``.
  @discardableResult
  package func write(
    _ groups: [StoreChanges], pushes: [PushOperation] = [], webhooks: [WebhookItem] = [],
    forget: [Int64] = []
  ) throws(StoreError) -> (pushes: [Int64], webhooks: [Int64]) {
    try write(groups, pushes: pushes, webhooks: webhooks, forget: forget)
  }

  /// Deletes answered pushes and webhook deliveries from the outbox, in a transaction of
  /// their own.
  package func forget(outbox seqs: [Int64]) throws(StoreError) {
    _ = try write([], pushes: [], webhooks: [], forget: seqs)
  }
}
