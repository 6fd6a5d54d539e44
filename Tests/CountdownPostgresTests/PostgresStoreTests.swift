// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownPush
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownPostgres
@testable import CountdownStore

/// A push of `activity` to `token` at second `ts`, its payload `text`.
func pushItem(_ activity: String, _ token: String, ts: Int64, _ text: String) -> PushItem {
  PushItem(
    activity: activity, token: token, event: .update, priority: 10, timestamp: ts,
    notBefore: ts * 1000, eventAt: ts * 1000 + 7, payload: Array(text.utf8),
    apnsID: "\(activity)-\(token)-\(ts)", expiration: ts.isMultiple(of: 2) ? nil : ts + 3600)
}

extension PostgresTestServer {
  /// A new, empty database on the server; its location.
  static func freshDatabase() throws -> PostgresStore.Location {
    try PostgresStore.Location.parse(try freshDatabaseURL())
  }
}

/// What needs no server: the URL and an address where nothing listens.
@Suite("PostgreSQL store: settings")
struct PostgresSettingsTests {
  @Test("--postgres URLs: user, host, port, database and sslmode read; a bad one named")
  func urls() throws {
    let l = try PostgresStore.Location.parse("postgres://app:s3cret@db.example:6432/countdown")
    #expect(
      l
        == PostgresStore.Location(
          host: "db.example", port: 6432, user: "app", password: "s3cret", database: "countdown",
          requireTLS: false))
    let t = try PostgresStore.Location.parse("postgresql://app@10.0.0.5/c?sslmode=require")
    #expect(t.port == 5432 && t.password == nil && t.requireTLS && t.database == "c")
    let bad: [(String, String)] = [
      ("mysql://a@h/d", "the scheme is mysql"), ("postgres://h/d", "no user"),
      ("postgres://a@h", "no database"), ("postgres://a@h/d?sslmode=verify-full", "sslmode"),
      ("not a url", "not a URL"),
    ]
    for (url, why) in bad {
      let e = #expect(throws: StoreError.self) { try PostgresStore.Location.parse(url) }
      #expect(e?.message.contains(why) == true, "\(url): \(e?.message ?? "")")
      #expect(e?.message.contains("postgres://USER") == true)
    }
    // A password never appears in a message.
    let e = #expect(throws: StoreError.self) {
      try PostgresStore.Location.parse("postgres://a:hunter2@h/d?x=1")
    }
    #expect(e?.message.contains("hunter2") == false && e?.message.contains("***") == true)
  }

  @Test("A server that does not answer is a StoreError naming it, within the connect timeout")
  func unreachable() throws {
    // A port just bound and let go: nothing listens there.
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        _ = bind(fd, $0, length)
        _ = getsockname(fd, $0, &length)
      }
    }
    close(fd)
    let port = Int(UInt16(bigEndian: address.sin_port))
    let began = Date()
    let e = #expect(throws: StoreError.self) {
      try PostgresStore(
        .init(
          host: "127.0.0.1", port: port, user: "u", password: nil, database: "d",
          requireTLS: false))
    }
    #expect(
      e?.message.hasPrefix("cannot reach PostgreSQL database d at 127.0.0.1:\(port)") == true,
      "\(e?.message ?? "")")
    #expect(Date().timeIntervalSince(began) < 6)
  }

  @Test("The tables' columns are the state file's, in PostgreSQL's types")
  func tables() {
    let sql = PostgresStore.createTables.joined(separator: ";\n")
    for c in ActivityColumn.allCases {
      #expect(sql.contains(" \(c.name) ") || sql.contains("(\(c.name) "), "\(c.name)")
    }
    #expect(sql.contains("seq BIGINT PRIMARY KEY"))
    #expect(sql.contains("payload BYTEA NOT NULL"))
    #expect(!sql.contains("INTEGER") && !sql.contains("BLOB"))
  }
}

/// The store against a real PostgreSQL server (`make postgres`), one test at a time (one of
/// them restarts the server).
@Suite(
  "PostgreSQL store", .serialized,
  .enabled(if: PostgresTestServer.url != nil, "needs a PostgreSQL server: run make postgres"))
struct PostgresStoreTests {
  @Test("Random runs written wake by wake: PostgreSQL holds what the state file holds")
  func sameAsTheFile() throws {
    let dir = "/tmp/cd-pg-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let seed = testSeed()
    var g = RandomRun(seed: seed)
    var rows = 0
    for round in 0..<12 {
      let pg = try PostgresStore(try PostgresTestServer.freshDatabase())
      defer { pg.close() }
      let file = try StateStore(path: "\(dir)/s\(round).db", sync: .normal)
      defer { file.close() }
      g.t = t0.milliseconds
      let recorder = Recorder()
      var engine = ActivityEngine(
        now: t0, options: EngineOptions(maxActivities: round % 3 == 0 ? 3 : nil, idSeed: 7)
      ) { recorder.events.append($0) }
      var written = 0
      var groups: [StoreChanges] = []
      // One wake's changes; written alone or with the next wakes', as the writer groups them
      // (so that one commit may change, remove and add again the same activity).
      func commit(flush: Bool) throws {
        var ids: [String] = []
        var seen: Set<String> = []
        StoreChanges.collect(Array(recorder.events[written...]), into: &ids, seen: &seen)
        written = recorder.events.count
        groups.append(StoreChanges(engine: engine, ids: ids))
        guard flush else { return }
        rows += groups.reduce(0) { $0 + $1.engine.activities.count + $1.removed.count }
        try pg.write(groups)
        try file.write(groups)
        groups.removeAll()
      }
      try commit(flush: true)
      for (at, c) in RandomCommands.run(&g, count: 50) {
        _ = RandomCommands.apply(c, at: at, to: &engine)
        try commit(flush: g.chance(0.5))
      }
      try commit(flush: true)
      let fromPostgres = try #require(try pg.load())
      let fromFile = try #require(try file.load())
      #expect(sameStoredState(fromPostgres, engine.snapshot()), "seed \(seed) round \(round)")
      var fileInOrder = fromFile
      fileInOrder.activities.sort { $0.order < $1.order }
      #expect(sameStoredState(fromPostgres, fileInOrder), "seed \(seed) round \(round)")
    }
    // The state at the end of a round may be small (most activities dismissed): what the
    // rounds wrote on the way there is not.
    #expect(rows > 100, "\(rows) rows written")
  }

  @Test("Every field survives PostgreSQL: paused, stale, expired, ended, milestones, Live Activity")
  func everyField() throws {
    let location = try PostgresTestServer.freshDatabase()
    let (e, _) = try everyFieldEngine()
    let live = e.snapshot()
    let store = try PostgresStore(location)
    try store.write([StoreChanges(engine: e, ids: live.activities.map(\.id))])
    store.close()
    let again = try PostgresStore(location)
    defer { again.close() }
    let loaded = try #require(try again.load())
    #expect(sameStoredState(loaded, live))
    #expect(loaded.activities.count == 5)
    // Removed in a later commit, with a group that changes another row.
    try again.write([StoreChanges(engine: e.snapshot(of: ["dose"]), removed: ["done"])])
    #expect(
      try again.load()?.activities.map(\.id).sorted()
        == live.activities.map(\.id).filter { $0 != "done" }.sorted())
  }

  @Test("The outbox: pushes and webhooks in order, replaced, forgotten, the budget beside them")
  func outbox() throws {
    let location = try PostgresTestServer.freshDatabase()
    let dir = "/tmp/cd-pg-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var engine = ActivityEngine(now: t0)
    try engine.start(.countdown(id: "a", to: at(60_000), title: "A"), at: t0)
    try engine.start(.countdown(id: "b", to: at(60_000), title: "B"), at: t0)
    let hook = WebhookItem(
      activity: "a", url: "https://example.test/hook", event: .started, eventAt: 5,
      body: Array(#"{"event":{"event":"started"}}"#.utf8))
    // The same commits to both stores; what each holds afterwards is compared.
    func commits(_ store: any DurableStore) throws -> [[Int64]] {
      var seqs: [[Int64]] = []
      let first = try store.write(
        [StoreChanges(engine: engine, ids: ["a", "b"])],
        pushes: [
          .add(pushItem("a", "t1", ts: 10, "one")), .add(pushItem("a", "t2", ts: 10, "two")),
          .add(pushItem("a", "t1", ts: 11, "three")),
          // Replaces the one made just before it, in the same commit.
          .replace(pushItem("a", "t1", ts: 11, "three'")), .add(pushItem("b", "t1", ts: 10, "b")),
        ], webhooks: [hook])
      seqs.append(first.pushes + first.webhooks)
      // A replacement of a push of an earlier commit; the second push answered.
      let second = try store.write(
        [], pushes: [.replace(pushItem("a", "t2", ts: 10, "two'"))], forget: [first.pushes[1]])
      seqs.append(second.pushes)
      // "b" dismissed: its budget goes.
      try store.write([StoreChanges(engine: engine.snapshot(of: [String]()), removed: ["b"])])
      try store.forget(outbox: [first.pushes[4]])
      return seqs
    }
    let pg = try PostgresStore(location)
    let file = try StateStore(path: "\(dir)/s.db", sync: .normal)
    defer { file.close() }
    let pgSeqs = try commits(pg)
    let fileSeqs = try commits(file)
    pg.close()
    let again = try PostgresStore(location)
    defer { again.close() }
    for seqs in [pgSeqs, fileSeqs] {
      #expect(seqs[0].count == 6 && seqs[0] == seqs[0].sorted() && seqs[1][0] > seqs[0][5])
    }
    let (pending, budget) = try again.loadPushes()
    let (filePending, fileBudget) = try file.loadPushes()
    let texts = pending.map { String(decoding: $0.item.payload, as: UTF8.self) }
    #expect(texts == ["one", "three'", "two'"])
    #expect(pending.map(\.item) == filePending.map(\.item))
    // Sequence numbers stand in the same places in both stores.
    #expect(
      pending.map { pgSeqs.joined().firstIndex(of: $0.seq) }
        == filePending.map { fileSeqs.joined().firstIndex(of: $0.seq) })
    func spent(_ b: [(key: PushBudget.Key, timestamp: Int64, notBefore: Int64)]) -> [String: Int64]
    {
      Dictionary(
        uniqueKeysWithValues: b.map { ("\($0.key.activity)/\($0.key.token)", $0.timestamp) })
    }
    #expect(spent(budget) == ["a/t1": 11, "a/t2": 10])
    #expect(spent(budget) == spent(fileBudget))
    let hooks = try again.loadWebhooks()
    let fileHooks = try file.loadWebhooks()
    #expect(hooks.map(\.item) == [hook] && hooks.map(\.item) == fileHooks.map(\.item))
    #expect(try again.load()?.activities.map(\.id) == ["a"])
  }

  @Test("One server per database: a second is refused by name until the first lets go")
  func oneServer() throws {
    let location = try PostgresTestServer.freshDatabase()
    let first = try PostgresStore(location)
    let e = #expect(throws: StoreError.self) { try PostgresStore(location) }
    #expect(
      e?.message
        == "another countdown serve is using PostgreSQL database \(location.database) at \(location.host):\(location.port); stop it first or give another --postgres database"
    )
    first.close()
    let second = try PostgresStore(location)
    second.close()
  }

  @Test("A database of another application with tables of countdown's names is refused, untouched")
  func anotherApplication() throws {
    let location = try PostgresTestServer.freshDatabase()
    _ = try PostgresTestServer.psql(
      "CREATE TABLE countdown_activity (id int PRIMARY KEY, note text); INSERT INTO countdown_activity VALUES (1, 'theirs')",
      in: location.database)
    let e = #expect(throws: StoreError.self) { try PostgresStore(location) }
    #expect(
      e?.message.contains(
        "has tables of countdown's names (countdown_activity) but no countdown_schema") == true,
      "\(String(describing: e))")
    #expect(
      try PostgresTestServer.psql("SELECT note FROM countdown_activity", in: location.database)
        == "theirs\n")
    #expect(
      try PostgresTestServer.psql(
        "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'countdown%'", in: location.database)
        == "1\n", "nothing made beside it")
    #expect(PostgresStore.tableNames.contains("countdown_schema"))
  }

  @Test("A new database's columns are the declared ones, in order, with their nullability")
  func declaredColumns() throws {
    let location = try PostgresTestServer.freshDatabase()
    try PostgresStore(location).close()
    func check<C: StoredColumn>(_ table: String, _ columns: [C], leading: [String] = []) throws {
      let rows = try PostgresTestServer.psql(
        """
        SELECT column_name, is_nullable, data_type FROM information_schema.columns
        WHERE table_name = '\(table)' ORDER BY ordinal_position
        """, in: location.database
      ).split(separator: "\n").map { $0.split(separator: "|").map(String.init) }
      // The declared columns in order, and the shard (an engine row's key, first; elsewhere
      // where schema 2 added it: before the outbox's schema-4 columns, as a migrated
      // database has it).
      let names = rows.map { $0[0].lowercased() }
      let declared = leading + columns.map { $0.name.lowercased() }
      #expect(names.filter { $0 != "shard" } == declared.filter { $0 != "shard" }, "\(table)")
      #expect(names.contains("shard"), "\(table)")
      for c in columns {
        guard let row = rows.first(where: { $0[0].lowercased() == c.name.lowercased() }) else {
          continue
        }
        let notNull = c.declaration.contains("NOT NULL") || c.declaration.contains("PRIMARY KEY")
        #expect((row[1] == "NO") == notNull, "\(table).\(c.name): nullable \(row[1])")
        let type: String =
          switch c.kind {
          case .int: "bigint"
          case .text: "text"
          case .bytes: "bytea"
          }
        #expect(row[2] == type, "\(table).\(c.name): \(row[2])")
      }
    }
    try check("countdown_activity", ActivityColumn.all)
    try check("countdown_engine", EngineColumn.all, leading: ["shard"])
    try check("countdown_outbox", OutboxColumn.all)
    try check("countdown_budget", BudgetColumn.all)
  }

  @Test("A database a newer countdown wrote is refused and left as it was")
  func newerSchema() throws {
    let location = try PostgresTestServer.freshDatabase()
    try PostgresStore(location).close()
    try PostgresTestServer.psql("UPDATE countdown_schema SET version = 99", in: location.database)
    let e = #expect(throws: StoreError.self) { try PostgresStore(location) }
    #expect(e?.message.contains("written by a newer countdown (schema 99") == true)
    #expect(
      try PostgresTestServer.psql("SELECT version FROM countdown_schema", in: location.database)
        == "99\n")
  }

  @Test("A column changed by hand to another type is a StoreError naming it, not a zero")
  func columnOfAnotherType() throws {
    let (location, store, _) = try Self.storeHoldingA()
    store.close()
    try PostgresTestServer.psql(
      "ALTER TABLE countdown_activity ALTER COLUMN anchor TYPE text USING 'soon'",
      in: location.database)
    let reopened = try PostgresStore(location)
    defer { reopened.close() }
    let e = #expect(throws: StoreError.self) { try reopened.load() }
    #expect(
      e?.message.contains("countdown_activity.anchor of the row a is not bigint") == true,
      "\(e?.message ?? "")")
  }

  @Test("A database of schema 1 (one server) is migrated to today's on open, its rows shard 0's")
  func fromSchemaOne() throws {
    var (location, store, engine) = try Self.storeHoldingA()
    try store.write([], pushes: [.add(pushItem("a", "ab", ts: 1, "{}"))])
    store.close()
    // Back to schema 1's shape: no shard columns or indexes, the engine's row `id` 1, no
    // countdown_unsettled.
    try PostgresTestServer.psql(
      """
      DROP TABLE countdown_unsettled;
      DROP INDEX countdown_activity_shard, countdown_outbox_shard, countdown_budget_shard;
      ALTER TABLE countdown_activity DROP COLUMN shard;
      ALTER TABLE countdown_outbox DROP COLUMN shard;
      ALTER TABLE countdown_outbox DROP COLUMN apnsID, DROP COLUMN expiration;
      ALTER TABLE countdown_budget DROP COLUMN shard;
      ALTER TABLE countdown_engine RENAME COLUMN shard TO id;
      UPDATE countdown_engine SET id = 1;
      ALTER TABLE countdown_engine ADD CONSTRAINT countdown_engine_id_check CHECK (id = 1);
      ALTER TABLE countdown_activity DROP COLUMN groupName;
      UPDATE countdown_schema SET version = 1;
      """, in: location.database)
    let reopened = try PostgresStore(location)
    defer { reopened.close() }
    #expect(
      try PostgresTestServer.psql("SELECT version FROM countdown_schema", in: location.database)
        == "\(PostgresStore.schemaVersion)\n")
    #expect(try reopened.loadUnsettled(shard: 0) == nil)
    #expect(sameStoredState(try #require(try reopened.load()), engine.snapshot()))
    #expect(try reopened.loadPushes().pending.map(\.item.activity) == ["a"])
    // Writes go on (the engine's old CHECK (id = 1) is gone with the rename to shard 0).
    try engine.start(.countdown(id: "b", to: at(90_000), title: "B"), at: t0)
    try reopened.write([StoreChanges(engine: engine, ids: ["b"])])
    #expect(sameStoredState(try #require(try reopened.load()), engine.snapshot()))
  }

  @Test(
    "A database of schema 2 is migrated to today's on open: countdown_unsettled, empty; rows kept")
  func fromSchemaTwo() throws {
    let (location, store, engine) = try Self.storeHoldingA()
    store.close()
    try PostgresTestServer.psql(
      """
      DROP TABLE countdown_unsettled;
      ALTER TABLE countdown_outbox DROP COLUMN apnsID, DROP COLUMN expiration;
      ALTER TABLE countdown_activity DROP COLUMN groupName;
      UPDATE countdown_schema SET version = 2;
      """,
      in: location.database)
    let reopened = try PostgresStore(location)
    defer { reopened.close() }
    #expect(
      try PostgresTestServer.psql("SELECT version FROM countdown_schema", in: location.database)
        == "\(PostgresStore.schemaVersion)\n")
    #expect(
      try PostgresTestServer.psql(
        "SELECT count(*) FROM countdown_unsettled", in: location.database) == "0\n")
    #expect(sameStoredState(try #require(try reopened.load()), engine.snapshot()))
  }

  @Test(
    "A database of schema 3 is migrated to today's on open: each waiting push gets its own apns-id, no expiry"
  )
  func fromSchemaThree() throws {
    let (location, store, _) = try Self.storeHoldingA()
    try store.write(
      [], pushes: [.add(pushItem("a", "ab", ts: 1, "{}")), .add(pushItem("a", "cd", ts: 1, "{}"))])
    store.close()
    try PostgresTestServer.psql(
      """
      ALTER TABLE countdown_outbox DROP COLUMN apnsID, DROP COLUMN expiration;
      ALTER TABLE countdown_activity DROP COLUMN groupName;
      UPDATE countdown_schema SET version = 3;
      """, in: location.database)
    let reopened = try PostgresStore(location)
    defer { reopened.close() }
    #expect(
      try PostgresTestServer.psql("SELECT version FROM countdown_schema", in: location.database)
        == "\(PostgresStore.schemaVersion)\n")
    let pending = try reopened.loadPushes().pending.map(\.item)
    let uuid = /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/
    #expect(pending.count == 2 && Set(pending.map(\.apnsID)).count == 2)
    #expect(pending.allSatisfy { $0.apnsID.wholeMatch(of: uuid) != nil && $0.expiration == nil })
    // Writes go on, with the new columns.
    try reopened.write([], pushes: [.add(pushItem("a", "ef", ts: 3, "{}"))])
    #expect(try reopened.loadPushes().pending.last?.item == pushItem("a", "ef", ts: 3, "{}"))
  }

  @Test(
    "A database of schema 4 is migrated to 5 on open: its activities have no group, new ones keep theirs"
  )
  func fromSchemaFour() throws {
    let (location, store, engine) = try Self.storeHoldingA()
    store.close()
    try PostgresTestServer.psql(
      """
      ALTER TABLE countdown_activity DROP COLUMN groupName;
      UPDATE countdown_schema SET version = 4;
      """, in: location.database)
    let reopened = try PostgresStore(location)
    defer { reopened.close() }
    #expect(
      try PostgresTestServer.psql("SELECT version FROM countdown_schema", in: location.database)
        == "5\n")
    let loaded = try #require(try reopened.load())
    #expect(loaded.activities.map(\.id) == ["a"] && loaded.activities[0].group == nil)
    var e = try ActivityEngine(restoring: engine.snapshot())
    var r = ActivityRequest.countdown(id: "g", to: e.now.advanced(by: 60_000), title: "G")
    r.group = "gate-7"
    _ = try e.start(r, at: e.now)
    try reopened.write([StoreChanges(engine: e, ids: ["g"])])
    #expect(try reopened.load()?.activities.first { $0.id == "g" }?.group == "gate-7")
  }

  /// A new database with a store on it that committed countdown "a", and the engine.
  static func storeHoldingA() throws -> (PostgresStore.Location, PostgresStore, ActivityEngine) {
    let location = try PostgresTestServer.freshDatabase()
    let store = try PostgresStore(location)
    var engine = ActivityEngine(now: t0)
    try engine.start(.countdown(id: "a", to: at(60_000), title: "A"), at: t0)
    try store.write([StoreChanges(engine: engine, ids: ["a"])])
    return (location, store, engine)
  }

  @Test(
    "A write PostgreSQL refuses changes nothing, names the database and the reason; the next goes on"
  )
  func refusedWrite() throws {
    var (location, store, engine) = try Self.storeHoldingA()
    defer { store.close() }
    let before = try #require(try store.load())
    // The database refuses the row of "b" (as a full disk or a lost lease would refuse it).
    try PostgresTestServer.psql(
      "ALTER TABLE countdown_activity ADD CONSTRAINT no_b CHECK (id <> 'b')", in: location.database)
    try engine.advance(to: at(1_000))
    try engine.start(.countdown(id: "b", to: at(60_000), title: "B"), at: engine.now)
    try engine.update("a", ActivityUpdate(content: ["title": .string("A2")]), at: engine.now)
    let e = #expect(throws: StoreError.self) {
      try store.write(
        [StoreChanges(engine: engine, ids: ["a", "b"])],
        pushes: [
          .add(
            PushItem(
              activity: "a", token: "t", event: .update, priority: 5, timestamp: 1, notBefore: 0,
              eventAt: 1, payload: [1]))
        ])
    }
    #expect(
      e?.message.hasPrefix("cannot write to PostgreSQL database \(location.database)") == true
        && e?.message.contains("no_b") == true && e?.message.contains("SQLSTATE 23514") == true,
      "\(e?.message ?? "")")
    #expect(try store.load() == before)
    #expect(try store.loadPushes().pending.isEmpty && store.loadPushes().budget.isEmpty)
    // The same connection goes on.
    try store.write([StoreChanges(engine: engine, ids: ["a"])])
    #expect(try store.load()?.activities.first?.content.contains("A2") == true)
  }

  @Test("PostgreSQL restarted as after a crash: writes go on over a new connection")
  func restarted() throws {
    var (location, store, engine) = try Self.storeHoldingA()
    defer { store.close() }
    let started = "SELECT pg_postmaster_start_time()"
    let before = try PostgresTestServer.psql(started)
    try PostgresTestServer.restart()
    #expect(try PostgresTestServer.psql(started) != before, "the server was not restarted")
    try engine.start(.countdown(id: "b", to: at(60_000), title: "B"), at: t0)
    var failures: [String] = []
    var written = false
    for _ in 0..<3 where !written {
      do {
        try store.write([StoreChanges(engine: engine, ids: ["b"])])
        written = true
      } catch {
        failures.append(error.message)
      }
    }
    #expect(written, "\(failures)")
    #expect(failures.count <= 1, "\(failures)")
    for f in failures {
      #expect(f.hasPrefix("cannot write to PostgreSQL database \(location.database)"), "\(f)")
    }
    #expect(try store.load()?.activities.map(\.id).sorted() == ["a", "b"])
  }
}
