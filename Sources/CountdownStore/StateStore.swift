// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

// Over 600 lines: the writer thread, its group commit and the loading of a file share one
// connection and its statements; the loading is the part that can move out.

import Countdown
import CountdownPush
import GRDB
import GRDBSQLite

import struct Foundation.Data

/// How hard a commit presses the data to the disk (SQLite's `synchronous`, in WAL mode).
public enum StoreSync: String, Sendable, CaseIterable {
  /// `synchronous=NORMAL`: a commit is durable across a crash of the process (`kill -9`
  /// included); across a power loss or an OS crash the last commits may roll back (SQLite
  /// syncs the WAL at checkpoints, not at each commit).
  case normal
  /// `synchronous=FULL`: each commit syncs the WAL, so it is durable across power loss too.
  case full
}

/// Why the state file cannot be used, or a write failed: a message a person can act on.
public struct StoreError: Error, CustomStringConvertible, Sendable {
  public var message: String
  /// Whether the write may have been made all the same: the connection to a database went
  /// with the commit under way, so that its answer never came (PostgreSQL). False when the
  /// store knows nothing was written (a rollback, a database that answered with an error, a
  /// file that could not be written).
  public var mayHaveCommitted: Bool
  /// The shard a cluster node's write was refused for: another node holds it with a newer
  /// epoch, or this node does not serve it (docs/cluster.md). Nothing was written.
  public var lostShard: Int?
  public var description: String { message }
  public init(_ message: String, mayHaveCommitted: Bool = false, lostShard: Int? = nil) {
    self.message = message
    self.mayHaveCommitted = mayHaveCommitted
    self.lostShard = lostShard
  }
}

/// The engine options the engine row keeps (the rest are the process's own): a change of
/// them is a change to write.
package struct StoredOptions: Equatable, Sendable {
  var enabled: Bool
  var maxActivities: Int?
  var maxActiveDurationMs: Int64?

  package init(_ o: EngineOptions) {
    enabled = o.enabled
    maxActivities = o.maxActivities
    maxActiveDurationMs = o.maxActiveDurationMs
  }
}

/// What one group commit writes: the engine's own state, the activities that changed (their
/// rows replace the stored ones) and the ids of those that are gone (dismissed).
package struct StoreChanges: Sendable {
  /// The engine's state at the commit's instant; its `activities` are the changed rows.
  package var engine: EngineSnapshot
  package var removed: [String]
  /// The wake's events that may push (docs/pushes.md): planned into the outbox by the
  /// writer, in the same transaction. Empty when the server sends no pushes.
  package var pushEvents: [PushPlanner.Event] = []
  /// The wake's lifecycle events with the activity's state after the wake (nil when it is
  /// gone), for webhooks (docs/webhooks.md): their deliveries are written by the writer in
  /// the same transaction. Empty when the server has no webhook.
  package var webhookEvents: [(event: ActivityEvent, state: ActivityState?)] = []
  /// A cluster node's wake: its commit token and its lifecycle events with their sequence
  /// numbers, which the writer keeps beside the shards' rows until the hub has passed them on
  /// to the other nodes (docs/cluster.md, "A node killed between a commit and its relay").
  /// Nil for a single server.
  package var unsettled: (token: UInt64, events: [(sequence: UInt64, event: ActivityEvent)])?

  package init(engine: EngineSnapshot, removed: [String]) {
    self.engine = engine
    self.removed = removed
  }

  /// Adds to `ids` (once each, `seen` remembering) the activities whose stored row `events`
  /// changed: every event but a tick stands for a change of its activity's row (start, update,
  /// pause, resume, end, expiry, staleness, a milestone, dismissal), and every such change
  /// emits one.
  package static func collect(
    _ events: [ActivityEvent], into ids: inout [String], seen: inout Set<String>
  ) {
    for e in events where e.kind != .tick {
      if seen.insert(e.id).inserted { ids.append(e.id) }
    }
  }

  /// The rows of `ids` as `engine` has them now; those it no longer has are removed.
  package init(engine: borrowing ActivityEngine, ids: [String]) {
    let snapshot = engine.snapshot(of: ids)
    var removed: [String] = []
    if snapshot.activities.count < ids.count {
      let kept = Set(snapshot.activities.map(\.id))
      removed = ids.filter { !kept.contains($0) }
    }
    self.init(engine: snapshot, removed: removed)
  }
}

/// The state file: SQLite in WAL mode through GRDB, one row per activity and one for the
/// engine. Made and used by one thread at a time (the store writer's).
///
/// Opening checks the file before writing anything to it: a file that is not a Countdown
/// database, one written by a newer schema, or a directory that cannot be written is a
/// ``StoreError`` and the file is left as it was.
package final class StateStore: DurableStore {
  /// `PRAGMA application_id` of a Countdown state file ("CDWN").
  static let applicationID: Int32 = 0x4344_574E
  let path: String
  private let queue: DatabaseQueue
  /// Copies the WAL into the file off the commits' path.
  private let checkpointer: Checkpointer
  /// Held open with an exclusive `flock` while the store is open: one server per file.
  private let lockDescriptor: Int32

  /// Opens (creating it when missing) the state file at `path`.
  package init(path: String, sync: StoreSync) throws(StoreError) {
    self.path = path
    try Self.checkPlace(path)
    lockDescriptor = try Self.lock(path)
    do throws(StoreError) {
      try Self.checkExisting(path)
    } catch {
      System.close(lockDescriptor)
      throw error
    }
    var config = Configuration()
    config.journalMode = .wal
    config.label = "countdown.state"
    let level = sync == .full ? "FULL" : "NORMAL"
    // Checkpoints are `Checkpointer`'s, on its own thread; one inside a commit only when the
    // log has outgrown it (a stream of writes with no pause for its checkpoints to finish).
    config.prepareDatabase { db in
      try db.execute(
        sql:
          "PRAGMA synchronous = \(level); PRAGMA wal_autocheckpoint = \(Checkpointer.backstopPages)"
      )
    }
    do {
      queue = try DatabaseQueue(path: path, configuration: config)
      try Self.migrator.migrate(queue)
      checkpointer = try Checkpointer(path: path)
    } catch {
      System.close(lockDescriptor)
      throw StoreError("cannot open the state file \(path): \(Self.describe(error))")
    }
  }

  /// Takes the file's exclusive lock (creating an empty file when there is none, which SQLite
  /// reads as a new database); another server holding it is an error.
  static func lock(_ path: String) throws(StoreError) -> Int32 {
    switch System.lockFile(path) {
    case .locked(let fd): return fd
    case .failed(let reason):
      throw StoreError("cannot open the state file \(path): \(reason)")
    case .busy:
      throw StoreError(
        "another countdown serve is using the state file \(path); stop it first or choose another --state"
      )
    }
  }

  /// The schema, one migration per version (``StateSchema``). A file that has migrations this
  /// list does not know was written by a newer countdown. Each migration's SQL is frozen as
  /// it was written at its version, never built from today's columns or enumerations (what
  /// old files hold must not change when a column or a case is added): a new version is a new
  /// migration here and a new case in ``ActivityColumn`` (or the table's column enumeration),
  /// and `StateMigrationTests` checks that a new file's schema is exactly what those declare.
  static var migrator: DatabaseMigrator {
    var m = DatabaseMigrator()
    m.registerMigration(StateSchema.v1.rawValue) { db in
      try db.execute(sql: "PRAGMA application_id = \(applicationID)")
      try db.execute(sql: FrozenSchema.v1)
    }
    // Kinds, phases and end reasons by name instead of by position (SQLite cannot change a
    // column's type in place: the table is copied).
    m.registerMigration(StateSchema.v2.rawValue) { db in
      try db.execute(sql: FrozenSchema.v2ActivityTable)
      try db.execute(sql: FrozenSchema.v2Copy)
      try db.execute(sql: "DROP TABLE activity")
      try db.execute(sql: "ALTER TABLE activity_v2 RENAME TO activity")
    }
    m.registerMigration(StateSchema.v3.rawValue) { db in try db.execute(sql: FrozenSchema.v3) }
    m.registerMigration(StateSchema.v4.rawValue) { db in try db.execute(sql: FrozenSchema.v4) }
    m.registerMigration(StateSchema.v5.rawValue) { db in try db.execute(sql: FrozenSchema.v5) }
    m.registerMigration(StateSchema.v6.rawValue) { db in try db.execute(sql: FrozenSchema.v6) }
    m.registerMigration(StateSchema.v7.rawValue) { db in try db.execute(sql: FrozenSchema.v7) }
    m.registerMigration(StateSchema.v8.rawValue) { db in try db.execute(sql: FrozenSchema.v8) }
    return m
  }

  // MARK: - Checks before opening

  /// The directory must exist and be writable (SQLite makes the `-wal` and `-shm` files
  /// beside the database), and so must an existing file.
  static func checkPlace(_ path: String) throws(StoreError) {
    let slash = path.lastIndex(of: "/")
    let dir = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    guard System.fileKind(dir) == .directory else {
      throw StoreError(
        "cannot keep state at \(path): the directory \(dir) does not exist; create it or choose another --state"
      )
    }
    guard System.isWritable(dir) else {
      throw StoreError(
        "cannot keep state at \(path): the directory \(dir) is not writable (SQLite needs to create \(path)-wal and \(path)-shm there); fix its permissions or choose another --state"
      )
    }
    if let kind = System.fileKind(path) {
      guard case .regular = kind else {
        throw StoreError("cannot keep state at \(path): it is not a regular file")
      }
      guard System.isReadableAndWritable(path) else {
        throw StoreError(
          "cannot keep state at \(path): the file is not readable and writable by this user")
      }
    }
  }

  /// An existing, non-empty file is looked at read-only first: it must be a Countdown
  /// database (or an SQLite database with nothing in it) of a schema this build knows.
  static func checkExisting(_ path: String) throws(StoreError) {
    guard case .regular(let size)? = System.fileKind(path), size > 0 else { return }
    var config = Configuration()
    config.readonly = true
    do {
      let reader = try DatabaseQueue(path: path, configuration: config)
      defer { try? reader.close() }
      try reader.read { db in
        let id = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        if id != applicationID {
          let tables = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") ?? 0
          guard tables == 0 else {
            throw StoreError(
              "\(path) is an SQLite database of another application, not a Countdown state file; it was left untouched. Choose another --state"
            )
          }
          return
        }
        if try migrator.hasBeenSuperseded(db) {
          let known = Set(migrator.migrations)
          let newer = try migrator.appliedIdentifiers(db).subtracting(known).sorted()
          throw StoreError(
            "\(path) was written by a newer countdown (schema \(newer.joined(separator: ", ")); this one knows up to \(migrator.migrations.last!)); it was left untouched. Run the newer countdown, or choose another --state"
          )
        }
        // A v1 file is migrated on opening: a row it cannot migrate is refused before then.
        if try migrator.appliedIdentifiers(db) == [StateSchema.v1.rawValue],
          let row = try Row.fetchOne(db, sql: V1Codes.firstUnknown)
        {
          let id = row["id"] as String? ?? ""
          throw StoreError(
            "\(path): activity \(JSONValue.string(id).canonicalText) has kind \(row["kind"] as DatabaseValue), phase \(row["phase"] as DatabaseValue), endReason \(row["endReason"] as DatabaseValue), which no countdown wrote (schema v1); it was left untouched. Restore the file from a backup, or choose another --state"
          )
        }
      }
    } catch let error as StoreError {
      throw error
    } catch {
      throw StoreError(
        "\(path) is not a Countdown state file (\(describe(error))); it was left untouched. Choose another --state"
      )
    }
  }

  /// Why the file cannot be written, as ` (reason)`, when the system says so now
  /// (`Read-only file system`), or nothing: SQLite says only "disk I/O error" for a write the
  /// filesystem refused, and does not keep the system's error number for it.
  private func writeRefusalNote() -> String {
    System.writeRefusal(path).map { " (\($0))" } ?? ""
  }

  static func describe(_ error: any Error) -> String {
    if let e = error as? DatabaseError {
      return "SQLite error \(e.resultCode.rawValue): \(e.message ?? "\(e.resultCode)")"
    }
    return "\(error)"
  }

  // MARK: - Reading

  /// The stored state, or nil when the file holds none yet (a new file).
  /// - Throws: ``StoreError`` when reading fails or a row cannot be read back.
  package func load() throws(StoreError) -> EngineSnapshot? {
    do {
      return try queue.read { db -> EngineSnapshot? in
        guard let e = try Row.fetchOne(db, sql: "SELECT \(EngineColumn.list) FROM engine")
        else { return nil }
        let statement = try db.makeStatement(sql: "SELECT \(ActivityColumn.list) FROM activity")
        var rows: [StoredActivity] = []
        let s = statement.sqliteStatement
        while true {
          let rc = sqlite3_step(s)
          if rc == SQLITE_DONE { break }
          guard rc == SQLITE_ROW else {
            throw StoreError(
              "reading activities: \(String(cString: sqlite3_errmsg(db.sqliteConnection)))")
          }
          rows.append(try ActivityColumn.activity { Self.value(s, $0.read) })
        }
        sqlite3_reset(s)
        return EngineColumn.engine({ Self.value(e, $0.read) }, activities: rows)
      }
    } catch let error as StoreError {
      throw StoreError("cannot read the state file \(path): \(error.message)")
    } catch {
      throw StoreError("cannot read the state file \(path): \(Self.describe(error))")
    }
  }

  /// Milestones as JSON: `[["name", atMs], …]` in firing order, a third member with the
  /// content patch of those that have one (`["peaking", 2700000, {"fields": {…}}]`).
  static func encodeMilestones(_ m: [Milestone]) -> String {
    JSONValue.array(
      m.map {
        $0.content.isEmpty
          ? .array([.string($0.name), .int($0.atMs)])
          : .array([.string($0.name), .int($0.atMs), .object($0.content)])
      }
    ).canonicalText
  }

  static func decodeMilestones(_ text: String) -> [Milestone]? {
    guard case .array(let items)? = try? JSONParser.parse(text) else { return nil }
    var out: [Milestone] = []
    for item in items {
      guard case .array(let tuple) = item, tuple.count == 2 || tuple.count == 3,
        case .string(let name) = tuple[0], case .int(let at) = tuple[1]
      else { return nil }
      var content: [String: JSONValue] = [:]
      if tuple.count == 3 {
        guard case .object(let patch) = tuple[2], !patch.isEmpty else { return nil }
        content = patch
      }
      out.append(Milestone(name: name, atMs: at, content: content))
    }
    return out
  }

  // MARK: - Writing

  /// Writes `groups` in one transaction: for each, its changed rows, its removals and the
  /// engine's state; the last group's engine state is what stays. With them, the pushes
  /// their events made (`pushes`, in order: each gets the next sequence number, returned in
  /// order; a replacement deletes the waiting push it replaces) and the deletion of the
  /// pushes answered since (`forget`); and the webhook deliveries they made (`webhooks`, each
  /// also given the next sequence number; docs/webhooks.md). Returns the sequence numbers
  /// of `pushes` and of `webhooks`, in order.
  /// - Throws: ``StoreError`` (disk full, I/O error…); the transaction is rolled back then.
  package func write(
    _ groups: [StoreChanges], pushes: [PushOperation], webhooks: [WebhookItem], forget: [Int64]
  ) throws(StoreError) -> (pushes: [Int64], webhooks: [Int64]) {
    var seqs: [Int64] = []
    var webhookSeqs: [Int64] = []
    do {
      try queue.inTransaction(.immediate) { db in
        try Self.writePushes(
          db, pushes, forget: forget, removed: groups.flatMap(\.removed),
          seqs: &seqs)
        try Self.writeWebhooks(db, webhooks, seqs: &webhookSeqs)
        guard let last = groups.last else { return .commit }
        let upsert = try db.cachedStatement(sql: Self.activityUpsert)
        let delete = try db.cachedStatement(sql: "DELETE FROM activity WHERE id = ?")
        for g in groups {
          for id in g.removed {
            try Self.run(delete.sqliteStatement, db) { s in Self.bind(s, 1, id) }
          }
          for a in g.engine.activities {
            try Self.run(upsert.sqliteStatement, db) { s in Self.bind(s, a) }
          }
        }
        let e = last.engine
        let engine = try db.cachedStatement(sql: EngineColumn.upsert)
        try Self.run(engine.sqliteStatement, db) { s in
          for c in EngineColumn.all { Self.bind(s, c.bind, c.value(e)) }
        }
        return .commit
      }
    } catch let error as StoreError {
      throw error
    } catch {
      throw StoreError(
        "cannot write the state file \(path): \(Self.describe(error))\(writeRefusalNote())")
    }
    return (seqs, webhookSeqs)
  }

  /// The outbox's part of a commit: new pushes (and the budget they spent), answered ones
  /// deleted, the budget of dismissed activities forgotten.
  private static func writePushes(
    _ db: Database, _ pushes: [PushOperation], forget: [Int64], removed: [String],
    seqs: inout [Int64]
  ) throws {
    if !forget.isEmpty {
      let delete = try db.cachedStatement(sql: "DELETE FROM push_outbox WHERE seq = ?")
      for seq in forget { try run(delete.sqliteStatement, db) { s in bind(s, 1, seq) } }
    }
    if !removed.isEmpty {
      let delete = try db.cachedStatement(sql: "DELETE FROM push_budget WHERE activity = ?")
      for id in removed { try run(delete.sqliteStatement, db) { s in bind(s, 1, id) } }
    }
    guard !pushes.isEmpty else { return }
    let insert = try db.cachedStatement(sql: OutboxColumn.insert)
    let replaced = try db.cachedStatement(
      sql:
        "DELETE FROM push_outbox WHERE activity = ? AND token = ? AND timestamp = ? AND destination = 'apns'"
    )
    let budget = try db.cachedStatement(sql: BudgetColumn.upsert)
    for op in pushes {
      let p = op.item
      if case .replace = op {
        try run(replaced.sqliteStatement, db) { s in
          bind(s, 1, p.activity)
          bind(s, 2, p.token)
          bind(s, 3, p.timestamp)
        }
      }
      seqs.append(try insertOutbox(insert, db, OutboxValues(p)))
      try run(budget.sqliteStatement, db) { s in
        for c in BudgetColumn.all { bind(s, c.bind, c.value(p)) }
      }
    }
  }

  /// Inserts `row` with `insert` (``OutboxColumn/insert``, one switch over the declared
  /// columns); returns its sequence number.
  private static func insertOutbox(_ insert: Statement, _ db: Database, _ row: OutboxValues) throws
    -> Int64
  {
    try run(insert.sqliteStatement, db) { s in
      for c in OutboxColumn.all where c != .seq { bind(s, c.bind, row.value(c)) }
    }
    return db.lastInsertedRowID
  }

  /// The webhook deliveries of a commit (docs/webhooks.md), into the same outbox.
  private static func writeWebhooks(_ db: Database, _ items: [WebhookItem], seqs: inout [Int64])
    throws
  {
    guard !items.isEmpty else { return }
    let insert = try db.cachedStatement(sql: OutboxColumn.insert)
    for w in items { seqs.append(try insertOutbox(insert, db, OutboxValues(w))) }
  }

  /// The webhook deliveries the outbox holds, in order (docs/webhooks.md).
  package func loadWebhooks() throws(StoreError) -> [(seq: Int64, item: WebhookItem)] {
    try reading("the webhook deliveries") { db in
      try Self.outbox(db, .webhook) { row throws(StoreError) in
        try OutboxValues.webhook { Self.value(row, $0.read) }
      }
    }
  }

  /// What the outbox holds: the pushes not yet answered, in order, and the budget spent
  /// per activity and token (docs/pushes.md).
  package func loadPushes() throws(StoreError) -> (
    pending: [(seq: Int64, item: PushItem)],
    budget: [(key: PushBudget.Key, timestamp: Int64, notBefore: Int64)]
  ) {
    try reading("the pushes") { db in
      let pending = try Self.outbox(db, .apns) { row throws(StoreError) in
        try OutboxValues.push { Self.value(row, $0.read) }
      }
      let budget = try Row.fetchAll(db, sql: "SELECT \(BudgetColumn.list) FROM push_budget").map {
        row in BudgetColumn.budget { Self.value(row, $0.read) }
      }
      return (pending, budget)
    }
  }

  /// The outbox's rows for `destination`, in order, each made into an item by `item`.
  private static func outbox<Item>(
    _ db: Database, _ destination: OutboxDestination,
    _ item: (Row) throws(StoreError) -> Item
  ) throws -> [(seq: Int64, item: Item)] {
    var out: [(seq: Int64, item: Item)] = []
    let sql =
      "SELECT \(OutboxColumn.list) FROM push_outbox WHERE destination = '\(destination.rawValue)' ORDER BY seq"
    for row in try Row.fetchAll(db, sql: sql) {
      out.append((row[Int(OutboxColumn.seq.read)], try item(row)))
    }
    return out
  }

  /// Reads with `body`; an error names `what` and the file.
  private func reading<T>(_ what: String, _ body: (Database) throws -> T) throws(StoreError) -> T {
    do {
      return try queue.read(body)
    } catch let error as StoreError {
      throw StoreError("cannot read \(what) in \(path): \(error.message)")
    } catch {
      throw StoreError("cannot read \(what) in \(path): \(Self.describe(error))")
    }
  }

  /// Steps a prepared statement once (binding with `bind` first) and resets it.
  private static func run(_ s: OpaquePointer, _ db: Database, bind: (OpaquePointer) -> Void)
    throws
  {
    bind(s)
    let rc = sqlite3_step(s)
    sqlite3_reset(s)
    sqlite3_clear_bindings(s)
    guard rc == SQLITE_DONE else {
      throw DatabaseError(
        resultCode: ResultCode(rawValue: rc),
        message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
    }
  }

  private static func bind(_ s: OpaquePointer, _ i: Int32, _ text: String) {
    var t = text
    t.withUTF8 { p in
      _ = sqlite3_bind_text(
        s, i, UnsafeRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(p.count),
        sqliteTransient)
    }
  }

  private static func bind(_ s: OpaquePointer, _ i: Int32, _ v: Int64?) {
    if let v { sqlite3_bind_int64(s, i, v) } else { sqlite3_bind_null(s, i) }
  }

  private static func bind(_ s: OpaquePointer, _ i: Int32, blob: [UInt8]) {
    blob.withUnsafeBytes { b in
      _ = sqlite3_bind_blob(s, i, b.baseAddress, Int32(b.count), sqliteTransient)
    }
  }

  static let activityUpsert =
    "INSERT OR REPLACE INTO activity (\(ActivityColumn.list)) VALUES (\(ActivityColumn.allCases.map { _ in "?" }.joined(separator: ", ")))"

  /// Binds each column of `a` to its parameter.
  private static func bind(_ s: OpaquePointer, _ a: StoredActivity) {
    for c in ActivityColumn.all { bind(s, c.bind, c.value(a)) }
  }

  private static func bind(_ s: OpaquePointer, _ i: Int32, _ v: StoredValue) {
    switch v {
    case .null: sqlite3_bind_null(s, i)
    case .int(let n): sqlite3_bind_int64(s, i, n)
    case .text(let t): bind(s, i, t)
    case .bytes(let b): bind(s, i, blob: b)
    }
  }

  /// Column `i` of the statement's current row.
  private static func value(_ s: OpaquePointer, _ i: Int32) -> StoredValue {
    switch sqlite3_column_type(s, i) {
    case SQLITE_NULL: return .null
    case SQLITE_INTEGER: return .int(sqlite3_column_int64(s, i))
    case SQLITE_BLOB:
      let n = Int(sqlite3_column_bytes(s, i))
      guard n > 0, let p = sqlite3_column_blob(s, i) else { return .bytes([]) }
      return .bytes(Array(UnsafeRawBufferPointer(start: p, count: n)))
    default:
      guard let p = sqlite3_column_text(s, i) else { return .null }
      return .text(String(cString: p))
    }
  }

  /// Column `i` of a fetched row.
  private static func value(_ row: Row, _ i: Int32) -> StoredValue {
    switch (row[Int(i)] as DatabaseValue).storage {
    case .null: .null
    case .int64(let n): .int(n)
    case .double(let d): .int(Int64(d))
    case .string(let t): .text(t)
    case .blob(let d): .bytes(Array(d))
    }
  }

  /// Closes the file (checkpointing the WAL into it).
  package func close() {
    checkpointer.stop()
    try? queue.close()
    System.close(lockDescriptor)
  }
}

/// SQLite copies a bound value given this destructor.
private let sqliteTransient = unsafeBitCast(
  OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
