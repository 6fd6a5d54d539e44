// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownPush
import Foundation
import GRDB
import Testing

@testable import CountdownStore

/// The state file's migrations, on a file written by the build before them:
/// `Fixtures/state-v1.sqlite` was made by `countdown serve --state` at 0fa8af5 (schema v1:
/// kinds, phases and end reasons stored by position) with six activities: `gate` (a countdown
/// with a stale date, content and a milestone), `walk` (an elapsed timer with a goal and two
/// milestones, one passed), `paused`, `done` (ended by request, dismissal ten years on),
/// `expire` (ended by expiry) and `stale` (an elapsed timer gone stale); maxActivities 50.
@Suite("State file migrations")
struct StateMigrationTests {
  static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures/state-v1.sqlite").path

  /// A copy of the fixture in a scratch directory, changed by `edit` (with GRDB, as schema
  /// v1) first.
  static func copy(edit: ((Database) throws -> Void)? = nil) throws -> (dir: String, path: String) {
    let dir = NSTemporaryDirectory() + "cd-migrate-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let path = dir + "/state.sqlite"
    try FileManager.default.copyItem(atPath: fixture, toPath: path)
    if let edit {
      let queue = try DatabaseQueue(path: path)
      try queue.write(edit)
      try queue.close()
    }
    return (dir, path)
  }

  @Test("A v1 file opens as v2: every activity and the engine row read back alike")
  func v1File() throws {
    let (dir, path) = try Self.copy()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try StateStore(path: path, sync: .normal)
    let loaded = try #require(try store.load())
    store.close()
    let byID = Dictionary(uniqueKeysWithValues: loaded.activities.map { ($0.id, $0) })
    #expect(byID.keys.sorted() == ["done", "expire", "gate", "paused", "stale", "walk"])
    #expect(loaded.options.maxActivities == 50 && loaded.options.enabled)
    let gate = try #require(byID["gate"])
    #expect(gate.kind == .countdown && gate.phase == .active && gate.staleDate != nil)
    #expect(gate.milestones == [Milestone(name: "final", atMs: 600_000)])
    #expect(gate.content.contains("Gate 12") && gate.content.contains("Boarding"))
    let walk = try #require(byID["walk"])
    #expect(walk.kind == .elapsed && walk.goalMs == 3_600_000 && walk.nextMilestone == 1)
    #expect(byID["paused"]?.phase == .paused)
    let done = try #require(byID["done"])
    #expect(done.phase == .ended && done.endReason == .requested && done.endOnExpiry == .default)
    let expire = try #require(byID["expire"])
    #expect(expire.phase == .ended && expire.endReason == .expired && expire.expired)
    #expect(byID["stale"]?.stale == true && byID["stale"]?.kind == .elapsed)
    // Restored into an engine, the state is whole.
    let engine = try ActivityEngine(restoring: loaded)
    #expect(engine.activities().count == 6)

    // The file is now current (v2 stored names, v3 added liveActivity), its columns are the
    // declared ones, with names stored.
    let queue = try DatabaseQueue(path: path)
    defer { try? queue.close() }
    let (applied, columns, stored) = try queue.read { db in
      (
        try StateStore.migrator.appliedIdentifiers(db),
        try Row.fetchAll(db, sql: "PRAGMA table_info(activity)").map { $0["name"] as String },
        try Row.fetchOne(
          db, sql: "SELECT kind, phase, endReason FROM activity WHERE id = 'expire'")
      )
    }
    #expect(applied == Set(StateSchema.allCases.map(\.rawValue)))
    #expect(columns == ActivityColumn.allCases.map(\.name))
    #expect(stored?["kind"] as String? == "countdown")
    #expect(stored?["phase"] as String? == "ended")
    #expect(stored?["endReason"] as String? == "expired")
  }

  @Test("Every v1 code becomes its name")
  func everyCode() throws {
    let (dir, path) = try Self.copy { db in
      try db.execute(sql: "UPDATE activity SET endReason = 2 WHERE id = 'done'")
      try db.execute(sql: "UPDATE activity SET endReason = 3 WHERE id = 'expire'")
    }
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try StateStore(path: path, sync: .normal)
    defer { store.close() }
    let loaded = try #require(try store.load())
    let reasons = Dictionary(uniqueKeysWithValues: loaded.activities.map { ($0.id, $0.endReason) })
    #expect(reasons["done"] == .maxDuration && reasons["expire"] == .disabled)
    #expect(Set(loaded.activities.map(\.kind)) == [.countdown, .elapsed])
    #expect(Set(loaded.activities.map(\.phase)) == [.active, .paused, .ended])
  }

  @Test("A v1 file with a code no version wrote: a StoreError, and the file is left as it was")
  func badCode() throws {
    let (dir, path) = try Self.copy { db in
      try db.execute(sql: "UPDATE activity SET phase = 7 WHERE id = 'gate'")
    }
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    #expect {
      _ = try StateStore(path: path, sync: .normal)
    } throws: { error in
      (error as? StoreError)?.message.contains(
        #"activity "gate" has kind 0, phase 7, endReason 0, which no countdown wrote"#) == true
    }
    let after = try Data(contentsOf: URL(fileURLWithPath: path))
    #expect(after == before, "the file changed")
    let queue = try DatabaseQueue(path: path)
    let (applied, phase, count) = try queue.read { db in
      (
        try StateStore.migrator.appliedIdentifiers(db),
        try Int.fetchOne(db, sql: "SELECT phase FROM activity WHERE id = 'gate'"),
        try Int.fetchOne(db, sql: "SELECT count(*) FROM activity")
      )
    }
    try queue.close()
    #expect(applied == ["v1"] && phase == 7 && count == 6)
  }

  @Test("A v2 row whose name is unknown: refused by SQL, and a StoreError if it is there anyway")
  func badName() throws {
    let (dir, path) = try Self.copy()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try StateStore(path: path, sync: .normal).close()
    let queue = try DatabaseQueue(path: path)
    #expect(throws: DatabaseError.self) {
      try queue.write { db in
        try db.execute(sql: "UPDATE activity SET kind = 'sideways' WHERE id = 'gate'")
      }
    }
    // Written past the CHECK constraint (another tool, a hand edit): reading names the row.
    try queue.writeWithoutTransaction { db in
      try db.execute(sql: "PRAGMA ignore_check_constraints = ON")
      try db.execute(sql: "UPDATE activity SET kind = 'sideways' WHERE id = 'gate'")
    }
    try queue.close()
    let store = try StateStore(path: path, sync: .normal)
    defer { store.close() }
    #expect {
      _ = try store.load()
    } throws: { error in
      (error as? StoreError)?.message.contains(
        #"activity "gate": kind sideways is not one of ["countdown", "elapsed"]"#) == true
    }
  }

  @Test(
    "v6 keeps the pushes a v5 outbox held (destination apns) and takes webhook rows beside them")
  func outboxDestination() throws {
    let (dir, path) = try Self.file(
      at: .v5,
      holding: """
        INSERT INTO push_outbox (activity, token, event, priority, timestamp, notBefore, eventAt, payload)
        VALUES ('a', 'ab', 'update', 5, 10, 10000, 9000, x'7b7d')
        """)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try StateStore(path: path, sync: .normal)
    defer { store.close() }
    let pending = try store.loadPushes().pending
    #expect(pending.count == 1 && pending.first?.item.token == "ab")
    #expect(try store.loadWebhooks().isEmpty)
    let seqs = try store.write(
      [],
      webhooks: [
        WebhookItem(activity: "a", url: "http://h/", event: .ended, eventAt: 1, body: [0x7B, 0x7D])
      ])
    #expect(try store.loadWebhooks().map(\.seq) == seqs.webhooks)
    #expect(try store.loadPushes().pending.count == 1)
  }

  /// A state file in a scratch directory, migrated up to `version` and holding the rows
  /// `sql` inserts, closed: its directory (for the caller to remove) and path.
  static func file(at version: StateSchema, holding sql: String) throws -> (
    dir: String, path: String
  ) {
    let dir = NSTemporaryDirectory() + "cd-migrate-\(version)-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let path = dir + "/state.db"
    let queue = try DatabaseQueue(path: path)
    try StateStore.migrator.migrate(queue, upTo: version.rawValue)
    try queue.write { db in try db.execute(sql: sql) }
    try queue.close()
    return (dir, path)
  }

  // MARK: - Frozen migrations

  /// The schema the migrations made when `version` was the newest, as written then.
  static func schemaFixture(_ version: StateSchema) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("Fixtures/schema-\(version.rawValue).sql").path
  }

  /// The tables of a file as `sqlite_master` holds them, in the fixture's form.
  static func schema(of queue: DatabaseQueue) throws -> String {
    try queue.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT type, name, sql FROM sqlite_master
          WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY name
          """
      ).map { row -> String in
        let type: String = row["type"]
        let name: String = row["name"]
        let sql: String = row["sql"]
        return "-- \(type) \(name)\n\(sql);\n"
      }.joined(separator: "\n")
    }
  }

  @Test(
    "A new file's schema is, to the byte, the one the migrations made when v8 was written, and up to v6 and v7 theirs"
  )
  func newFileSchema() throws {
    for version in [StateSchema.v6, .v7, .v8] {
      let queue = try DatabaseQueue()
      try StateStore.migrator.migrate(queue, upTo: version.rawValue)
      let made = try Self.schema(of: queue)
      let frozen = try String(contentsOfFile: Self.schemaFixture(version), encoding: .utf8)
      #expect(
        made == frozen, "\(version): a migration's SQL changed: write a new migration instead")
    }
    #expect(StateSchema.allCases.last == .v8, "a new version brings its fixture here")
  }

  @Test(
    "v7 gives each push a v6 outbox held its own apns-id (a UUID) and no expiry; webhook rows none"
  )
  func outboxTracing() throws {
    let (dir, path) = try Self.file(
      at: .v6,
      holding: """
        INSERT INTO push_outbox (activity, token, event, priority, timestamp, notBefore, eventAt, payload)
        VALUES ('a', 'ab', 'update', 5, 10, 10000, 9000, x'7b7d'), ('a', 'cd', 'update', 5, 10, 10000, 9000, x'7b7d');
        INSERT INTO push_outbox (activity, token, event, priority, timestamp, notBefore, eventAt, payload, destination)
        VALUES ('a', 'http://h/', 'ended', 0, 0, 0, 9000, x'7b7d', 'webhook');
        """)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try StateStore(path: path, sync: .normal)
    defer { store.close() }
    let pending = try store.loadPushes().pending.map(\.item)
    let uuid = /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/
    #expect(pending.count == 2)
    #expect(
      pending.allSatisfy { $0.apnsID.wholeMatch(of: uuid) != nil }, "\(pending.map(\.apnsID))")
    #expect(Set(pending.map(\.apnsID)).count == 2)
    #expect(pending.allSatisfy { $0.expiration == nil })
    #expect(try store.loadWebhooks().count == 1)
  }

  @Test("The declared columns are a new file's: names in order, types and NOT NULL")
  func declaredColumns() throws {
    let queue = try DatabaseQueue()
    try StateStore.migrator.migrate(queue)
    func check<C: StoredColumn>(_ table: String, _ columns: [C], leading: [String] = []) throws {
      let info = try queue.read { db in try Row.fetchAll(db, sql: "PRAGMA table_info(\(table))") }
      let names = info.map { row -> String in row["name"] }
      #expect(names == leading + columns.map(\.name), "\(table)")
      for c in columns {
        guard let row = info.first(where: { ($0["name"] as String) == c.name }) else { continue }
        let type: String = row["type"]
        let notNull: Bool = row["notnull"]
        #expect(c.declaration.hasPrefix(type), "\(table).\(c.name): \(type) in the file")
        #expect(notNull == c.declaration.contains("NOT NULL"), "\(table).\(c.name)'s NOT NULL")
      }
    }
    try check("activity", ActivityColumn.all)
    try check("engine", EngineColumn.all, leading: ["id"])
    try check("push_outbox", OutboxColumn.all)
    try check("push_budget", BudgetColumn.all)
  }

  @Test("A new file's checks take every kind, phase, end reason and outbox destination there is")
  func checksTakeEveryCase() throws {
    let queue = try DatabaseQueue()
    try StateStore.migrator.migrate(queue)
    try queue.write { db in
      var n = 0
      for kind in ActivityKind.allCases {
        for phase in ActivityPhase.allCases {
          for reason in EndReason.allCases {
            n += 1
            try db.execute(
              sql: """
                INSERT INTO activity (id, ord, kind, phase, stale, expired, anchor, pausedTotal,
                  frozenAt, content, nextMilestone, startedAt, endedAt, endReason, dismissAt)
                VALUES (?, ?, ?, ?, 0, 0, 0, 0, 0, '{}', 0, 0, 0, ?, 0)
                """,
              arguments: ["a\(n)", n, kind.rawValue, phase.rawValue, reason.rawValue])
          }
        }
      }
      for destination in OutboxDestination.allCases {
        try db.execute(
          sql: """
            INSERT INTO push_outbox (activity, token, event, priority, timestamp, notBefore,
              eventAt, payload, destination) VALUES ('a1', 't', 'update', 5, 1, 1, 1, x'7b7d', ?)
            """,
          arguments: [destination.rawValue])
      }
    }
  }

  @Test(
    "A file of each earlier version opens as today's, its activities whole",
    arguments: [StateSchema.v2, .v3, .v4, .v5, .v6, .v7])
  func everyEarlierVersion(_ version: StateSchema) throws {
    let (dir, path) = try Self.copy()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let queue = try DatabaseQueue(path: path)
    try StateStore.migrator.migrate(queue, upTo: version.rawValue)
    let applied = try queue.read { try StateStore.migrator.appliedIdentifiers($0) }
    #expect(applied.count == StateSchema.allCases.firstIndex(of: version)! + 1)
    try queue.close()
    let store = try StateStore(path: path, sync: .normal)
    let loaded = try #require(try store.load())
    store.close()
    #expect(
      loaded.activities.map(\.id).sorted() == ["done", "expire", "gate", "paused", "stale", "walk"])
    let engine = try ActivityEngine(restoring: loaded)
    #expect(engine.activities().count == 6)
    let reopened = try DatabaseQueue(path: path)
    #expect(
      try Self.schema(of: reopened)
        == String(contentsOfFile: Self.schemaFixture(StateSchema.allCases.last!), encoding: .utf8))
    try reopened.close()
  }
}
