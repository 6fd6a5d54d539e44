// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// The state file's migrations, each one's SQL as it was written at its version and never
/// changed since (GRDB's advice: a migration must not depend on the application's types, or
/// adding a column or an enumeration case would change what an old migration makes). What a
/// new file ends up with is checked against `Tests/CountdownStoreTests/Fixtures/schema-v8.sql`
/// (and each older version's fixture)
/// and against the columns that ``ActivityColumn``, ``EngineColumn``, ``OutboxColumn`` and
/// ``BudgetColumn`` declare (`StateMigrationTests`). A new version adds a statement here and
/// a fixture there; nothing above it changes.
enum FrozenSchema {
  /// v1: kinds, phases and end reasons stored as their positions (``V1Codes``).
  static let v1 = """
    CREATE TABLE engine (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      now INTEGER NOT NULL,
      nextOrder INTEGER NOT NULL,
      idGeneratorState INTEGER NOT NULL,
      enabled INTEGER NOT NULL,
      maxActivities INTEGER,
      maxActiveDurationMs INTEGER
    );
    CREATE TABLE activity (
      id TEXT PRIMARY KEY NOT NULL,
      ord INTEGER NOT NULL,
      kind INTEGER NOT NULL,
      phase INTEGER NOT NULL,
      stale INTEGER NOT NULL,
      expired INTEGER NOT NULL,
      anchor INTEGER NOT NULL,
      pausedTotal INTEGER NOT NULL,
      frozenAt INTEGER NOT NULL,
      content TEXT NOT NULL,
      countdownStart INTEGER,
      goalMs INTEGER,
      staleDate INTEGER,
      milestones TEXT,
      nextMilestone INTEGER NOT NULL,
      endOnExpiry INTEGER,
      startedAt INTEGER NOT NULL,
      endedAt INTEGER NOT NULL,
      endReason INTEGER NOT NULL,
      dismissAt INTEGER NOT NULL,
      lastTimestamp INTEGER
    ) WITHOUT ROWID;
    """

  /// v2's `activity` table (renamed from `activity_v2` once v1's rows are copied into it):
  /// kinds, phases and end reasons by name, each checked against the names v2 knew.
  static let v2ActivityTable =
    "CREATE TABLE activity_v2 (id TEXT PRIMARY KEY NOT NULL, ord INTEGER NOT NULL, "
    + "kind TEXT NOT NULL CHECK (kind IN ('countdown', 'elapsed')), "
    + "phase TEXT NOT NULL CHECK (phase IN ('active', 'paused', 'ended')), "
    + "stale INTEGER NOT NULL, expired INTEGER NOT NULL, anchor INTEGER NOT NULL, "
    + "pausedTotal INTEGER NOT NULL, frozenAt INTEGER NOT NULL, content TEXT NOT NULL, "
    + "countdownStart INTEGER, goalMs INTEGER, staleDate INTEGER, milestones TEXT, "
    + "nextMilestone INTEGER NOT NULL, endOnExpiry INTEGER, startedAt INTEGER NOT NULL, "
    + "endedAt INTEGER NOT NULL, "
    + "endReason TEXT NOT NULL CHECK (endReason IN ('requested', 'expired', 'maxDuration', 'disabled')), "
    + "dismissAt INTEGER NOT NULL, lastTimestamp INTEGER) WITHOUT ROWID"

  /// v1's rows into v2's table, each code as its name (NULL for a code v1 never wrote, which
  /// the new column's NOT NULL refuses: the migration fails and the file is left as it was).
  static let v2Copy =
    "INSERT INTO activity_v2 SELECT id, ord, "
    + "CASE kind WHEN 0 THEN 'countdown' WHEN 1 THEN 'elapsed' END, "
    + "CASE phase WHEN 0 THEN 'active' WHEN 1 THEN 'paused' WHEN 2 THEN 'ended' END, "
    + "stale, expired, anchor, pausedTotal, frozenAt, content, countdownStart, goalMs, "
    + "staleDate, milestones, nextMilestone, endOnExpiry, startedAt, endedAt, "
    + "CASE endReason WHEN 0 THEN 'requested' WHEN 1 THEN 'expired' WHEN 2 THEN 'maxDuration' "
    + "WHEN 3 THEN 'disabled' END, dismissAt, lastTimestamp FROM activity"

  /// v3: the Live Activity an activity pushes to (docs/pushes.md).
  static let v3 = "ALTER TABLE activity ADD COLUMN liveActivity TEXT"

  /// v4: the push outbox and the push budget (docs/pushes.md).
  static let v4 = """
    CREATE TABLE push_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, activity TEXT NOT NULL, \
    token TEXT NOT NULL, event TEXT NOT NULL, priority INTEGER NOT NULL, \
    timestamp INTEGER NOT NULL, notBefore INTEGER NOT NULL, eventAt INTEGER NOT NULL, \
    payload BLOB NOT NULL);
    CREATE TABLE push_budget (activity TEXT NOT NULL, token TEXT NOT NULL, \
    timestamp INTEGER NOT NULL, notBefore INTEGER NOT NULL, \
    PRIMARY KEY (activity, token)) WITHOUT ROWID;
    """

  /// v5: overtime (docs/activities.md); rows before it did not run on past their end.
  static let v5 = "ALTER TABLE activity ADD COLUMN overtime INTEGER NOT NULL DEFAULT 0"

  /// v6: whom an outbox row is for, now that webhooks share it (docs/webhooks.md).
  static let v6 =
    "ALTER TABLE push_outbox ADD COLUMN destination TEXT NOT NULL DEFAULT 'apns' "
    + "CHECK (destination IN ('apns', 'webhook'))"

  /// v7: each push's own `apns-id` and its `apns-expiration` (docs/pushes.md, "Tracing",
  /// "Expiry"). The pushes a v6 outbox held get a random version-4 UUID each; their expiry
  /// stays null (sent without one, as before).
  static let v7 = """
    ALTER TABLE push_outbox ADD COLUMN apnsID TEXT NOT NULL DEFAULT '';
    ALTER TABLE push_outbox ADD COLUMN expiration INTEGER;
    UPDATE push_outbox SET apnsID = lower(
      hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2)
      || '-' || substr('89ab', 1 + abs(random() % 4), 1) || substr(hex(randomblob(2)), 2)
      || '-' || hex(randomblob(6)))
    WHERE destination = 'apns';
    """

  /// v8: an activity's group (docs/security.md, "Groups"); the rows a v7 file held have none.
  static let v8 = "ALTER TABLE activity ADD COLUMN groupName TEXT"
}
