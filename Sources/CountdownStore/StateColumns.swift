// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// A table's columns, declared once as the cases of an enumeration: each case's SQL name,
/// type and constraints (as the state file declares them; the PostgreSQL store maps the
/// types), and its position in a `SELECT` of all of them. What each one holds of an activity,
/// the engine, an outbox row or the budget is in StoredRows.swift.
package protocol StoredColumn: RawRepresentable<Int32>, CaseIterable, Hashable, Sendable
where AllCases == [Self] {
  /// Its SQL type and constraints, in SQLite's words.
  var declaration: String { get }
  /// The names, kinds and order of the columns, made once: `ColumnTable<Self>()`.
  static var table: ColumnTable<Self> { get }
}

/// What a stored column holds: an integer, text or bytes (its declaration's type).
package enum StoredKind: Sendable {
  case int, text, bytes

  /// The kind of a column declared `declaration` (SQLite's type names).
  init(_ declaration: String) {
    self =
      declaration.hasPrefix("INTEGER") ? .int : declaration.hasPrefix("BLOB") ? .bytes : .text
  }
}

/// What is asked of a table's columns at every row written or read, made once per table (a
/// case's name is `"\(self)"`, reflected at each call, and its declaration builds strings).
package struct ColumnTable<Column: StoredColumn>: Sendable {
  /// Every column in declaration order (`allCases` builds a new array at each call).
  package let all: [Column]
  /// The columns' names, comma-separated, in declaration order.
  package let list: String
  fileprivate let names: [String]
  fileprivate let kinds: [StoredKind]

  package init() {
    all = Column.allCases
    names = all.map { "\($0)" }
    kinds = all.map { StoredKind($0.declaration) }
    list = names.joined(separator: ", ")
  }
}

extension StoredColumn {
  /// The column's name in SQL.
  package var name: String { Self.table.names[Int(rawValue)] }
  /// What it holds.
  package var kind: StoredKind { Self.table.kinds[Int(rawValue)] }
  /// Its position (0-based) in a `SELECT` of ``list``.
  package var read: Int32 { rawValue }
  /// Every column in declaration order.
  package static var all: [Self] { table.all }
  /// The columns' names, comma-separated, in declaration order.
  package static var list: String { table.list }
}

/// The columns of the state file's `activity` table, declared once. The schema's names and
/// types, the position a read takes (0-based) and the one a bind takes (1-based) all come
/// from here; the reference is docs/state-file.md.
///
/// A new column is a new case (at the end) and a new migration in ``FrozenSchema`` that adds
/// it (`ALTER TABLE … ADD COLUMN`), written out as SQL: migrations never read these cases, so
/// that an old file and a new one end up alike whatever is added later. `StateMigrationTests`
/// checks that a new file's columns are these, in this order, with these declarations.
package enum ActivityColumn: Int32, StoredColumn {
  case id, ord, kind, phase, stale, expired, anchor, pausedTotal, frozenAt, content
  case countdownStart, goalMs, staleDate, milestones, nextMilestone, endOnExpiry
  case startedAt, endedAt, endReason, dismissAt, lastTimestamp
  /// The Live Activity the activity pushes to: its `liveActivity` object as canonical JSON.
  case liveActivity
  /// 1 for a countdown that runs on past its end (overtime), else 0.
  case overtime
  /// The activity's group (docs/security.md, "Groups"), or null.
  case groupName

  package static let table = ColumnTable<Self>()
  /// Its parameter in an `INSERT` of ``ActivityColumn/allCases``.
  package var bind: Int32 { rawValue + 1 }

  /// Its SQL type and constraints. Kinds, phases and end reasons are stored by name.
  package var declaration: String {
    switch self {
    case .id: "TEXT PRIMARY KEY NOT NULL"
    case .kind: "TEXT NOT NULL CHECK (kind IN (\(Self.names(ActivityKind.allCases))))"
    case .phase: "TEXT NOT NULL CHECK (phase IN (\(Self.names(ActivityPhase.allCases))))"
    case .endReason:
      "TEXT NOT NULL CHECK (endReason IN (\(Self.names(EndReason.allCases))))"
    case .content: "TEXT NOT NULL"
    case .milestones, .liveActivity, .groupName: "TEXT"
    case .countdownStart, .goalMs, .staleDate, .endOnExpiry, .lastTimestamp: "INTEGER"
    // Added to files that have rows: the default is what they were.
    case .overtime: "INTEGER NOT NULL DEFAULT 0"
    case .ord, .stale, .expired, .anchor, .pausedTotal, .frozenAt, .nextMilestone, .startedAt,
      .endedAt, .dismissAt:
      "INTEGER NOT NULL"
    }
  }

  /// `endOnExpiry`'s codes for the policies that are not an instant (an instant is stored as
  /// its milliseconds, never negative).
  package static let dismissImmediately: Int64 = -1
  package static let dismissByDefault: Int64 = -2

  /// `"a", "b"`: the raw values of `cases` quoted for SQL.
  private static func names<T: RawRepresentable<String>>(_ cases: [T]) -> String {
    cases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
  }
}

/// The columns of the one-row `engine` table, declared once.
package enum EngineColumn: Int32, StoredColumn {
  case now, nextOrder, idGeneratorState, enabled, maxActivities, maxActiveDurationMs

  package static let table = ColumnTable<Self>()
  /// Its parameter in ``upsert`` (after the fixed row id).
  package var bind: Int32 { rawValue + 1 }

  /// Its SQL type and constraints (as the state file's v1 made them).
  package var declaration: String {
    switch self {
    case .maxActivities, .maxActiveDurationMs: "INTEGER"
    case .now, .nextOrder, .idGeneratorState, .enabled: "INTEGER NOT NULL"
    }
  }

  static let upsert =
    "INSERT OR REPLACE INTO engine (id, \(list)) VALUES (1, \(allCases.map { _ in "?" }.joined(separator: ", ")))"
}

/// The columns of `push_outbox` (docs/pushes.md, "Delivery"; docs/webhooks.md): what
/// committed changes made for a destination and it has not yet answered, in the order made
/// (`seq`). Declared once. A Live Activity push has `destination` `apns` and its device token
/// in `token`; a webhook delivery has `webhook`, its URL in `token`, the event's kind in
/// `event`, 0 for `priority` and `timestamp`, and its body in `payload`. A push's `apnsID`
/// and `expiration` are its `apns-id` and `apns-expiration` (a webhook's: empty and null).
package enum OutboxColumn: Int32, StoredColumn {
  case seq, activity, token, event, priority, timestamp, notBefore, eventAt, payload
  case destination
  case apnsID, expiration

  package static let table = ColumnTable<Self>()
  /// Its parameter in ``insert`` (which leaves `seq` to SQLite).
  package var bind: Int32 { rawValue }

  package var declaration: String {
    switch self {
    case .seq: "INTEGER PRIMARY KEY AUTOINCREMENT"
    case .activity, .token, .event: "TEXT NOT NULL"
    case .priority, .timestamp, .notBefore, .eventAt: "INTEGER NOT NULL"
    case .payload: "BLOB NOT NULL"
    case .destination:
      "TEXT NOT NULL DEFAULT 'apns' CHECK (destination IN (\(OutboxDestination.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", "))))"
    case .apnsID: "TEXT NOT NULL DEFAULT ''"
    case .expiration: "INTEGER"
    }
  }

  static let insert =
    "INSERT INTO push_outbox (\(allCases.dropFirst().map(\.name).joined(separator: ", "))) VALUES (\(allCases.dropFirst().map { _ in "?" }.joined(separator: ", ")))"
}

/// Whom an outbox row is for.
package enum OutboxDestination: String, CaseIterable {
  case apns, webhook
}

/// The columns of `push_budget`: per activity and token, the last push timestamp given and
/// when that push goes (``PushBudget``), so that timestamps keep rising across a restart.
package enum BudgetColumn: Int32, StoredColumn {
  case activity, token, timestamp, notBefore

  package static let table = ColumnTable<Self>()
  package var bind: Int32 { rawValue + 1 }

  package var declaration: String {
    switch self {
    case .activity, .token: "TEXT NOT NULL"
    case .timestamp, .notBefore: "INTEGER NOT NULL"
    }
  }

  static let upsert =
    "INSERT OR REPLACE INTO push_budget (\(list)) VALUES (\(allCases.map { _ in "?" }.joined(separator: ", ")))"
}

/// The state file's schema versions: GRDB's migration identifiers, in order.
enum StateSchema: String, CaseIterable, Comparable {
  /// The first file: kinds, phases and end reasons stored as their positions (``V1Codes``).
  case v1
  /// The same columns with kinds, phases and end reasons stored by name.
  case v2
  /// Adds `liveActivity` (docs/pushes.md).
  case v3
  /// Adds the tables `push_outbox` and `push_budget` (docs/pushes.md).
  case v4
  /// Adds `overtime`.
  case v5
  /// Adds `push_outbox.destination`: webhooks share the outbox (docs/webhooks.md).
  case v6
  /// Adds `push_outbox.apnsID` and `expiration` (docs/pushes.md, "Tracing", "Expiry").
  case v7
  /// Adds `activity.groupName` (docs/security.md, "Groups").
  case v8

  static func < (a: Self, b: Self) -> Bool {
    allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
  }
}

/// How schema v1 stored enumerations: their positions in these lists. Read only to refuse a
/// v1 file with a code v1 never wrote before its v2 migration (``FrozenSchema/v2Copy``) runs.
enum V1Codes {
  static let kinds: [ActivityKind] = [.countdown, .elapsed]
  static let phases: [ActivityPhase] = [.active, .paused, .ended]
  static let reasons: [EndReason] = [.requested, .expired, .maxDuration, .disabled]

  /// The first row of a v1 file whose kind, phase or end reason is not a v1 code (its id
  /// and the three columns), for a message before migrating.
  static let firstUnknown = """
    SELECT id, kind, phase, endReason FROM activity
    WHERE \(known("kind", kinds)) OR \(known("phase", phases)) OR \(known("endReason", reasons))
    LIMIT 1
    """

  private static func known<T>(_ column: String, _ cases: [T]) -> String {
    "NOT (typeof(\(column)) = 'integer' AND \(column) BETWEEN 0 AND \(cases.count - 1))"
  }
}
