// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownStore

/// The PostgreSQL store's tables, each version's SQL as it was written at that version and
/// never changed since (as the state file's ``FrozenSchema``): what an old database holds
/// must not change when a column or an enumeration case is added. A new database is made at
/// today's version in one go (``createTables``); an older one climbs ``migrations`` from its
/// version. `PostgresStoreTests` checks that a new database's columns are the ones
/// `ActivityColumn`, `EngineColumn`, `OutboxColumn` and `BudgetColumn` declare.
extension PostgresStore {
  /// The tables' schema version this build writes (`countdown_schema`): 2 adds the `shard`
  /// columns (a single server's rows are shard 0); 3 adds `countdown_unsettled`; 4 adds each
  /// push's `apnsID` and `expiration` to `countdown_outbox`; 5 adds `groupName` to
  /// `countdown_activity`.
  static let schemaVersion = 5

  /// A new database's tables, at schema 5, made in one transaction.
  static let createTables =
    [
      "CREATE TABLE countdown_schema (version int NOT NULL)",
      "INSERT INTO countdown_schema VALUES (5)",
      "CREATE TABLE countdown_engine (shard int PRIMARY KEY, now BIGINT NOT NULL, "
        + "nextOrder BIGINT NOT NULL, idGeneratorState BIGINT NOT NULL, enabled BIGINT NOT NULL, "
        + "maxActivities BIGINT, maxActiveDurationMs BIGINT)",
      "CREATE TABLE countdown_activity (id TEXT PRIMARY KEY NOT NULL, ord BIGINT NOT NULL, "
        + "kind TEXT NOT NULL CHECK (kind IN ('countdown', 'elapsed')), "
        + "phase TEXT NOT NULL CHECK (phase IN ('active', 'paused', 'ended')), "
        + "stale BIGINT NOT NULL, expired BIGINT NOT NULL, anchor BIGINT NOT NULL, "
        + "pausedTotal BIGINT NOT NULL, frozenAt BIGINT NOT NULL, content TEXT NOT NULL, "
        + "countdownStart BIGINT, goalMs BIGINT, staleDate BIGINT, milestones TEXT, "
        + "nextMilestone BIGINT NOT NULL, endOnExpiry BIGINT, startedAt BIGINT NOT NULL, "
        + "endedAt BIGINT NOT NULL, "
        + "endReason TEXT NOT NULL CHECK (endReason IN ('requested', 'expired', 'maxDuration', 'disabled')), "
        + "dismissAt BIGINT NOT NULL, lastTimestamp BIGINT, liveActivity TEXT, "
        + "overtime BIGINT NOT NULL DEFAULT 0, shard int NOT NULL DEFAULT 0, groupName TEXT)",
      "CREATE TABLE countdown_outbox (seq BIGINT PRIMARY KEY, activity TEXT NOT NULL, "
        + "token TEXT NOT NULL, event TEXT NOT NULL, priority BIGINT NOT NULL, "
        + "timestamp BIGINT NOT NULL, notBefore BIGINT NOT NULL, eventAt BIGINT NOT NULL, "
        + "payload BYTEA NOT NULL, "
        + "destination TEXT NOT NULL DEFAULT 'apns' CHECK (destination IN ('apns', 'webhook')), "
        + "shard int NOT NULL DEFAULT 0, apnsID TEXT NOT NULL DEFAULT '', expiration BIGINT)",
      "CREATE SEQUENCE countdown_outbox_seq OWNED BY countdown_outbox.seq",
      "CREATE TABLE countdown_budget (activity TEXT NOT NULL, token TEXT NOT NULL, "
        + "timestamp BIGINT NOT NULL, notBefore BIGINT NOT NULL, shard int NOT NULL DEFAULT 0, "
        + "PRIMARY KEY (activity, token))",
      unsettledTable,
    ] + shardIndexes

  /// The tables ``createTables`` makes, by name.
  static var tableNames: [String] {
    createTables.compactMap { sql in
      guard sql.hasPrefix("CREATE TABLE ") else { return nil }
      return sql.dropFirst("CREATE TABLE ".count).split(separator: " ").first.map(String.init)
    }
  }

  /// From each version to the next: the statements that make version `n` of `n - 1`, run in
  /// order from a database's version up to ``schemaVersion`` in the transaction that opens it.
  static let migrations: [(version: Int, statements: [String])] = [
    // 1 (one server per database, `countdown_engine`'s one row with `id` 1) to 2: the rows
    // there are shard 0's.
    (
      2,
      [
        "ALTER TABLE countdown_engine DROP CONSTRAINT IF EXISTS countdown_engine_id_check",
        "ALTER TABLE countdown_engine RENAME COLUMN id TO shard",
        "UPDATE countdown_engine SET shard = 0",
        "ALTER TABLE countdown_activity ADD COLUMN shard int NOT NULL DEFAULT 0",
        "ALTER TABLE countdown_outbox ADD COLUMN shard int NOT NULL DEFAULT 0",
        "ALTER TABLE countdown_budget ADD COLUMN shard int NOT NULL DEFAULT 0",
      ] + shardIndexes + ["UPDATE countdown_schema SET version = 2"]
    ),
    // 2 to 3: `countdown_unsettled`, empty.
    (3, [unsettledTable, "UPDATE countdown_schema SET version = 3"]),
    // 3 to 4: each push's `apns-id` (a random UUID for the pushes already waiting) and its
    // `apns-expiration` (null for those: sent without one, as before).
    (
      4,
      [
        "ALTER TABLE countdown_outbox ADD COLUMN apnsID TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE countdown_outbox ADD COLUMN expiration BIGINT",
        "UPDATE countdown_outbox SET apnsID = gen_random_uuid()::text WHERE destination = 'apns'",
        "UPDATE countdown_schema SET version = 4",
      ]
    ),
    // 4 to 5: an activity's group (docs/security.md, "Groups"); the rows held have none.
    (
      5,
      [
        "ALTER TABLE countdown_activity ADD COLUMN groupName TEXT",
        "UPDATE countdown_schema SET version = 5",
      ]
    ),
  ]

  /// Per shard, the incarnation of the node whose commit wrote it last and the lifecycle
  /// events of its commits that it had perhaps not relayed yet, as relay lines (`SEQUENCE
  /// JSON`): the node that takes the shard passes them on (docs/cluster.md).
  static let unsettledTable =
    "CREATE TABLE countdown_unsettled (shard int PRIMARY KEY, incarnation bigint NOT NULL, events text NOT NULL)"

  /// What a shard's load reads by (made by schema 2, and by a new database).
  static let shardIndexes = [
    "CREATE INDEX countdown_activity_shard ON countdown_activity (shard, ord)",
    "CREATE INDEX countdown_outbox_shard ON countdown_outbox (shard, seq)",
    "CREATE INDEX countdown_budget_shard ON countdown_budget (shard)",
  ]
}
