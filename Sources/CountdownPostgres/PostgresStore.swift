// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

// Over 600 lines: the connection (its bounds and reconnection), loading a shard and the
// group commit share the store's one connection and its state; the schema is apart
// (PostgresStore+Schema.swift).

import Countdown
import CountdownCluster
import CountdownNIO
import CountdownPush
import CountdownStore
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// A server's state in PostgreSQL (docs/cluster.md, "The store"): the rows of the state file
/// (``ActivityColumn``, ``EngineColumn``, ``OutboxColumn``, ``BudgetColumn``, declared once
/// for both) in tables named `countdown_…`, written with the same group commit.
///
/// One connection, driven from the thread that calls (the store writer's): each call sends
/// its statements on the connection's event loop and waits for the answers, which is allowed
/// off an event loop. A group commit is one statement, a call of ``commitFunction`` with each
/// table's rows as one JSON array (`json_to_recordset`, so that nulls and the column list
/// come from the column declarations).
///
/// A single server's store (shard 0) holds a session-level advisory lock: one server per
/// database, let go by PostgreSQL when the connection ends (the process stopped or died). A
/// cluster node's store (``init(_:nodeOf:)``) holds no lock: it writes each activity's rows
/// in the activity's shard (``ShardOfID``), only for the shards it serves (``serve(_:epoch:)``),
/// and every write is fenced by the epochs of the shards it touches instead. A lost connection fails the call that found it (a
/// ``StoreError``, as a disk error does for the file); the next call connects again (taking
/// the lock again) before it writes.
package final class PostgresStore: DurableStore {
  /// Where the database is: parsed from `postgres://user:password@host:port/database`.
  package struct Location: Sendable, Equatable {
    package var host: String
    package var port: Int
    package var user: String
    package var password: String?
    package var database: String
    /// `sslmode=require`: TLS, the server's certificate checked against the system's CAs.
    package var requireTLS: Bool

    /// `postgres://` or `postgresql://`, user and database required, port 5432 by default,
    /// `?sslmode=disable` (the default) or `require`.
    package static func parse(_ url: String) throws(StoreError) -> Location {
      func bad(_ why: String) -> StoreError {
        StoreError(
          "--postgres \(redacted(url)): \(why); give postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|require]"
        )
      }
      guard let c = URLComponents(string: url), let scheme = c.scheme else {
        throw bad("not a URL")
      }
      guard scheme == "postgres" || scheme == "postgresql" else {
        throw bad("the scheme is \(scheme), not postgres")
      }
      guard let host = c.host, !host.isEmpty else { throw bad("no host") }
      guard let user = c.user, !user.isEmpty else { throw bad("no user") }
      let database = String(c.path.drop { $0 == "/" })
      guard !database.isEmpty, !database.contains("/") else { throw bad("no database") }
      var requireTLS = false
      for item in c.queryItems ?? [] {
        switch (item.name, item.value) {
        case ("sslmode", "disable"?): requireTLS = false
        case ("sslmode", "require"?): requireTLS = true
        default: throw bad("\(item.name)=\(item.value ?? "") is not known")
        }
      }
      return Location(
        host: host, port: c.port ?? 5432, user: user, password: c.password, database: database,
        requireTLS: requireTLS)
    }

    /// The URL with its password replaced by `***`, for messages.
    package static func redacted(_ url: String) -> String {
      guard var c = URLComponents(string: url), c.password != nil else { return url }
      c.password = "***"
      return c.string ?? url
    }

    /// `PostgreSQL database D at HOST:PORT`, for messages.
    package var place: String { "PostgreSQL database \(database) at \(host):\(port)" }

    /// A new connection to the database (TLS when required; 5 s to connect), named
    /// `application` in `pg_stat_activity`.
    package func connect(
      on eventLoop: any EventLoop, id: Int = 1, application: String = "countdown", logger: Logger
    ) -> EventLoopFuture<PostgresConnection> {
      var tls = PostgresConnection.Configuration.TLS.disable
      if requireTLS {
        do {
          tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        } catch {
          return eventLoop.makeFailedFuture(
            StoreError("cannot use TLS to reach \(place): \(error)"))
        }
      }
      var config = PostgresConnection.Configuration(
        host: host, port: port, username: user, password: password, database: database, tls: tls)
      config.options.connectTimeout = .seconds(5)
      config.options.additionalStartupParameters = [("application_name", application)]
      return PostgresConnection.connect(
        on: eventLoop, configuration: config, id: id, logger: logger)
    }
  }

  /// `pg_advisory_lock`'s key: "CDWN", as the state file's application id.
  static let lockKey: Int64 = 0x4344_574E

  package let location: Location
  /// A cluster node's shard count (the cluster's, fixed at its first use); nil for a single
  /// server (every row in shard 0, one server per database by the advisory lock, no fence).
  package let shardCount: Int?
  /// The shards a node serves, with the epoch of each one's lease (docs/cluster.md): a write
  /// touching any other shard is refused before it is sent.
  package private(set) var served: [Int: Int64] = [:]
  /// A cluster node's lifecycle events not yet passed on to the other nodes, written beside
  /// each commit's rows (docs/cluster.md, "A node killed between a commit and its relay");
  /// nil for a single server, or a node that relays nothing.
  package var unsettled: UnsettledEvents?
  private let group: MultiThreadedEventLoopGroup
  private let logger: Logger
  private var connection: PostgresConnection?
  private var closed = false
  /// How long a connection, a query or a commit may go unanswered (`--commit-timeout-ms`;
  /// docs/cluster.md, "A commit cut off from PostgreSQL"): then the connection is dropped and
  /// what waited on it fails, a commit saying it may or may not have been made. PostgreSQL
  /// cut off without a reset (a partition) otherwise keeps a commit waiting for as long as
  /// the cut lasts.
  package let answerTimeout: TimeAmount

  /// Connects, takes the database (one server at a time; a node's store, `nodeOf` the
  /// cluster's shard count, leaves that to the leases) and makes, migrates or checks the
  /// tables. A node's store serves no shard until ``serve(_:epoch:)``.
  /// - Throws: ``StoreError`` naming the database: unreachable, refused, in use by another
  ///   server, written by a newer countdown.
  package init(
    _ location: Location, nodeOf shardCount: Int? = nil, answerTimeout: TimeAmount = .seconds(10)
  ) throws(StoreError) {
    self.location = location
    self.answerTimeout = answerTimeout
    self.shardCount = shardCount.map { max(1, $0) }
    group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    group.next().nameThread("countdown-pg")
    var logger = Logger(label: "countdown.postgres")
    logger.logLevel = .critical
    self.logger = logger
    do {
      _ = try ready()
      try migrate()
    } catch {
      close()
      throw error
    }
  }

  // MARK: - The connection

  /// The open connection, connecting (and taking the database's lock) when there is none.
  private func ready() throws(StoreError) -> PostgresConnection {
    if let c = connection, !c.isClosed { return c }
    connection = nil
    let c: PostgresConnection
    do {
      c = try location.connect(on: group.next(), logger: logger, within: answerTimeout)
    } catch {
      throw StoreError("cannot reach \(location.place): \(Self.describe(error))")
    }
    guard shardCount == nil else {
      connection = c
      return c
    }
    do {
      let rows = try c.answer(
        to: c.query("SELECT pg_try_advisory_lock(\(Self.lockKey))", logger: logger),
        within: answerTimeout
      ).rows
      guard let got = try rows.first?.decode(Bool.self), got else {
        _ = try? c.close().wait()
        throw StoreError(
          "another countdown serve is using \(location.place); stop it first or give another --postgres database"
        )
      }
    } catch let error as StoreError {
      throw error
    } catch {
      _ = try? c.close().wait()
      throw StoreError("cannot use \(location.place): \(Self.describe(error))")
    }
    connection = c
    return c
  }

  /// Runs `sql` with `binds`; the rows back.
  @discardableResult
  private func run(_ c: PostgresConnection, _ sql: String, _ binds: PostgresBindings = .init())
    throws -> [PostgresRow]
  {
    try c.answer(
      to: c.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger),
      within: answerTimeout
    ).rows
  }

  /// `body` in one transaction on the connection: committed when it returns, rolled back
  /// when it throws (the connection closed if even that fails).
  private func transaction<T>(_ what: String, _ body: (PostgresConnection) throws -> T)
    throws(StoreError) -> T
  {
    guard !closed else { throw StoreError("\(location.place) is closed") }
    let c = try ready()
    do {
      try run(c, "BEGIN")
      let result = try body(c)
      try run(c, "COMMIT")
      return result
    } catch {
      if error is NoAnswer || (try? run(c, "ROLLBACK")) == nil {
        _ = try? c.close().wait()
        connection = nil
      }
      throw StoreError("cannot \(what) \(location.place): \(Self.describe(error))")
    }
  }

  /// `body`'s one statement, its own transaction (PostgreSQL rolls it back whole when it
  /// fails; the connection is dropped when it was lost). A statement whose connection went
  /// before any answer may have been committed all the same: its error says so
  /// (``StoreError/mayHaveCommitted``); one the database answered with an error was rolled
  /// back.
  private func statement<T>(_ what: String, _ body: (PostgresConnection) throws -> T)
    throws(StoreError) -> T
  {
    guard !closed else { throw StoreError("\(location.place) is closed") }
    let c = try ready()
    do {
      return try body(c)
    } catch {
      // Unanswered past the bound: the connection is being closed (perhaps not yet).
      let lost = c.isClosed || error is NoAnswer
      if lost { connection = nil }
      let server = (error as? PSQLError)?.serverInfo
      if server?[.sqlState] == Self.fenceErrorCode {
        throw StoreError(
          "cannot \(what) \(location.place): \(Self.describe(error))",
          lostShard: server?[.detail].flatMap { Int($0) })
      }
      guard lost, server == nil else {
        throw StoreError("cannot \(what) \(location.place): \(Self.describe(error))")
      }
      throw StoreError(
        "cannot \(what) \(location.place): \(Self.describe(error)); the connection went with the commit under way, so PostgreSQL may have made it",
        mayHaveCommitted: true)
    }
  }

  /// What went wrong, in PostgreSQL's words when it answered.
  static func describe(_ error: any Error) -> String {
    if let e = error as? StoreError { return e.message }
    guard let e = error as? PSQLError else { return "\(error)" }
    if let message = e.serverInfo?[.message] {
      return "\(message) (SQLSTATE \(e.serverInfo?[.sqlState] ?? "?"))"
    }
    if let underlying = e.underlying { return "\(e.code): \(underlying)" }
    return "\(e.code)"
  }

  // MARK: - The tables

  /// The columns' names and kinds, for ``insert(_:_:from:computed:extra:)`` and
  /// ``upsert(_:_:key:from:)``.
  static func named<Column: StoredColumn>(_ columns: [Column]) -> [(name: String, kind: StoredKind)]
  {
    columns.map { ($0.name, $0.kind) }
  }

  /// Makes the tables in a new database, migrates an older one (in one transaction, under a
  /// transaction lock so that nodes starting together do not race); refuses one a newer
  /// countdown wrote.
  private func migrate() throws(StoreError) {
    var foreign: [String] = []
    let found: Int? = try transaction("read the schema of") { c in
      try run(c, "SELECT pg_advisory_xact_lock(\(LeaseDriver.setupLockKey))")
      let exists = try run(c, "SELECT to_regclass('countdown_schema') IS NOT NULL").first?
        .decode(Bool.self)
      guard exists == true else {
        // No schema row, yet tables of countdown's names: another application's (or a
        // database changed by hand). Nothing is made or changed in it.
        for name in Self.tableNames {
          let taken = try run(c, "SELECT to_regclass('\(name)') IS NOT NULL").first?
            .decode(Bool.self)
          if taken == true { foreign.append(name) }
        }
        guard foreign.isEmpty else { return nil }
        for sql in Self.createTables + [Self.commitFunction] { try run(c, sql) }
        return nil
      }
      let found = try run(c, "SELECT max(version) FROM countdown_schema").first?.decode(Int?.self)
      if let found {
        for (version, statements) in Self.migrations where version > found {
          for sql in statements { try run(c, sql) }
        }
      }
      if let found, found > Self.schemaVersion { return found }
      try run(c, Self.commitFunction)
      return found
    }
    if !foreign.isEmpty {
      throw StoreError(
        "\(location.place) has tables of countdown's names (\(foreign.joined(separator: ", "))) but no countdown_schema: it looks like another application's database; it was left untouched. Give countdown a database of its own"
      )
    }
    if let found, found > Self.schemaVersion {
      throw StoreError(
        "\(location.place) was written by a newer countdown (schema \(found); this one knows up to \(Self.schemaVersion)); it was left untouched. Run the newer countdown, or give another --postgres database"
      )
    }
  }

  // MARK: - Reading

  /// A single server's state; nil for a node's store, which starts with nothing and loads
  /// each shard as it takes it (``load(shard:)``).
  package func load() throws(StoreError) -> EngineSnapshot? {
    guard shardCount == nil else { return nil }
    return try load(shard: 0)
  }

  /// One shard's engine row and activities, as its last commit left them; nil when nothing
  /// of it was ever committed.
  package func load(shard: Int) throws(StoreError) -> EngineSnapshot? {
    let shardIndex = Int64(shard)
    return try transaction("read") { c -> EngineSnapshot? in
      guard
        let row = try run(
          c, "SELECT \(EngineColumn.list) FROM countdown_engine WHERE shard = $1", binds(shardIndex)
        ).first
      else { return nil }
      let e = try Self.cells(row, "countdown_engine", EngineColumn.self)
      var activities: [StoredActivity] = []
      for row in try run(
        c, "SELECT \(ActivityColumn.list) FROM countdown_activity WHERE shard = $1 ORDER BY ord",
        binds(shardIndex))
      {
        let r = try Self.cells(row, "countdown_activity", ActivityColumn.self)
        activities.append(try ActivityColumn.activity { r[Int($0.read)] })
      }
      return EngineColumn.engine({ e[Int($0.read)] }, activities: activities)
    }
  }

  package func loadPushes() throws(StoreError) -> (
    pending: [(seq: Int64, item: PushItem)],
    budget: [(key: PushBudget.Key, timestamp: Int64, notBefore: Int64)]
  ) {
    guard shardCount == nil else { return ([], []) }
    return try loadPushes(shard: 0)
  }

  /// One shard's pushes not yet answered and its budget (a node takes them with the shard).
  package func loadPushes(shard: Int) throws(StoreError) -> (
    pending: [(seq: Int64, item: PushItem)],
    budget: [(key: PushBudget.Key, timestamp: Int64, notBefore: Int64)]
  ) {
    let shardIndex = Int64(shard)
    return try transaction("read the pushes in") { c in
      let pending = try outbox(c, .apns, shardIndex) { column throws(StoreError) in
        try OutboxValues.push(column)
      }
      var budget: [(key: PushBudget.Key, timestamp: Int64, notBefore: Int64)] = []
      for row in try run(
        c, "SELECT \(BudgetColumn.list) FROM countdown_budget WHERE shard = $1", binds(shardIndex))
      {
        let r = try Self.cells(row, "countdown_budget", BudgetColumn.self)
        budget.append(BudgetColumn.budget { r[Int($0.read)] })
      }
      return (pending, budget)
    }
  }

  package func loadWebhooks() throws(StoreError) -> [(seq: Int64, item: WebhookItem)] {
    guard shardCount == nil else { return [] }
    return try loadWebhooks(shard: 0)
  }

  /// One shard's webhook deliveries not yet answered.
  package func loadWebhooks(shard: Int) throws(StoreError) -> [(seq: Int64, item: WebhookItem)] {
    try transaction("read the webhook deliveries in") { c in
      try outbox(c, .webhook, Int64(shard)) { column throws(StoreError) in
        try OutboxValues.webhook(column)
      }
    }
  }

  private func outbox<Item>(
    _ c: PostgresConnection, _ destination: OutboxDestination, _ shardIndex: Int64,
    _ item: ((OutboxColumn) -> StoredValue) throws(StoreError) -> Item
  ) throws -> [(seq: Int64, item: Item)] {
    var out: [(seq: Int64, item: Item)] = []
    let sql =
      "SELECT \(OutboxColumn.list) FROM countdown_outbox WHERE destination = '\(destination.rawValue)' AND shard = $1 ORDER BY seq"
    for row in try run(c, sql, binds(shardIndex)) {
      let r = try Self.cells(row, "countdown_outbox", OutboxColumn.self)
      let column = { (k: OutboxColumn) in r[Int(k.read)] }
      out.append((column(.seq).int ?? 0, try item(column)))
    }
    return out
  }

  /// The cells of a row of `table` that selected every column of `Column` in order, each
  /// as its column's kind holds it.
  /// - Throws: ``StoreError`` naming the table, the column and the row's first cell (its
  ///   key) when a cell is not of its column's type (the table was changed by hand).
  static func cells<Column: StoredColumn>(
    _ row: PostgresRow, _ table: String, _: Column.Type
  ) throws(StoreError) -> [StoredValue] {
    let r = row.makeRandomAccess()
    var out: [StoredValue] = []
    out.reserveCapacity(Column.all.count)
    for column in Column.all {
      let cell = r[Int(column.read)]
      do {
        switch column.kind {
        case .int: out.append(try cell.decode(Int64?.self).map(StoredValue.int) ?? .null)
        case .text: out.append(try cell.decode(String?.self).map(StoredValue.text) ?? .null)
        case .bytes:
          out.append(
            try cell.decode(ByteBuffer?.self).map { .bytes(Array($0.readableBytesView)) } ?? .null)
        }
      } catch {
        let key = (try? r[0].decode(String.self)) ?? (try? r[0].decode(Int64.self)).map { "\($0)" }
        throw StoreError(
          "\(table).\(column.name) of the row \(key ?? "?") is not \(column.kind.postgresType) as countdown declares it (\(cell.dataType)); was the table changed by hand?"
        )
      }
    }
    return out
  }

  // MARK: - Writing

  /// A node's store writes `shard`'s rows from now on, fenced by `epoch` (its lease's).
  package func serve(_ shard: Int, epoch: Int64) { served[shard] = epoch }

  /// A node's store writes nothing of `shard` from now on (its lease was lost or handed over).
  package func stop(_ shard: Int) {
    served[shard] = nil
    unsettled?.backlog.forget(shard: Int64(shard))
  }

  /// What `shard`'s last writer committed and had perhaps not relayed (``unsettled``): its
  /// incarnation and the events' lines, oldest first; nil when no node wrote any.
  package func loadUnsettled(shard: Int) throws(StoreError) -> (
    incarnation: UInt64, lines: [(sequence: UInt64, json: ArraySlice<UInt8>)]
  )? {
    try statement("read") { c in
      guard
        let row = try run(
          c, "SELECT incarnation, events FROM countdown_unsettled WHERE shard = $1",
          binds(Int64(shard))
        ).first
      else { return nil }
      let (incarnation, events) = try row.decode((Int64, String).self)
      return (UInt64(bitPattern: incarnation), UnsettledEvents.parse(Array(events.utf8)))
    }
  }

  /// The shard `id`'s rows are kept in.
  func shard(of id: String) -> Int64 {
    shardCount.map { Int64(ShardOfID.shard(of: id, shards: $0)) } ?? 0
  }

  package func write(
    _ groups: [StoreChanges], pushes: [PushOperation], webhooks: [WebhookItem], forget: [Int64]
  ) throws(StoreError) -> (pushes: [Int64], webhooks: [Int64]) {
    // Each activity's last state in the wake: its row, or its removal.
    var last: [String: StoredActivity?] = [:]
    var removed: [String] = []
    for g in groups {
      for id in g.removed {
        last[id] = .some(nil)
        removed.append(id)
      }
      for a in g.engine.activities { last[a.id] = .some(a) }
    }
    let rows = last.values.compactMap { $0 }
    let gone = last.filter { $0.value == nil }.map(\.key)
    let items = pushes.map { OutboxValues($0.item) } + webhooks.map(OutboxValues.init)
    // The shards the commit writes, each fenced by its epoch (a node's); the engine row goes
    // to each of them (or, for a change of the engine alone, to every shard served).
    var touched = Set<Int64>()
    if shardCount != nil {
      for id in last.keys { touched.insert(shard(of: id)) }
      for item in items { touched.insert(shard(of: item.activity)) }
      if touched.isEmpty && !groups.isEmpty { touched = Set(served.keys.map(Int64.init)) }
      let foreign = touched.filter { served[Int($0)] == nil }.sorted()
      if let first = foreign.first {
        throw StoreError(
          "shard \(first) is not this node's (it serves \(served.isEmpty ? "none" : served.keys.sorted().map(String.init).joined(separator: ", "))); nothing was written",
          lostShard: Int(first))
      }
    } else if !groups.isEmpty {
      touched = [0]
    }
    let fences = shardCount == nil ? [] : touched.sorted()
    // The commit's lifecycle events by shard, kept once it is committed; each touched shard's
    // row holds those still unsettled and these.
    var fresh: [Int64: [(token: UInt64, line: [UInt8])]] = [:]
    var unsettledRows: [(shard: Int64, text: [UInt8])] = []
    if let unsettled, shardCount != nil {
      unsettled.settle()
      for g in groups {
        guard let u = g.unsettled else { continue }
        for (sequence, event) in u.events {
          fresh[shard(of: event.id), default: []].append(
            (u.token, unsettled.line(sequence: sequence, event)))
        }
      }
      // A shard without new events keeps its row: what it holds of the backlog is there.
      for (shard, new) in fresh {
        unsettledRows.append((shard, unsettled.backlog.text(of: shard, adding: new)))
      }
    }
    // The whole commit is one call of countdown_commit (``commitFunction``): one statement,
    // one round trip, its own transaction; each table's rows one JSON array, parsed once.
    var b = PostgresBindings()
    b.append(fences)
    b.append(fences.map { served[Int($0)] ?? 0 })
    b.append(forget)
    b.append(removed)
    b.append(gone)
    b.append(
      RowsJSON.array(rows) { a, row in
        for c in ActivityColumn.all { row.member(c.name, c.value(a)) }
        row.member("shard", .int(shard(of: a.id)))
      })
    b.append(
      RowsJSON.array(groups.last.map { e in touched.sorted().map { (e.engine, $0) } } ?? []) {
        e, row in
        for c in EngineColumn.all { row.member(c.name, c.value(e.0)) }
        row.member("shard", .int(e.1))
      })
    // Outbox rows in order, each with its index: the function gives them the sequence's next
    // numbers in that order.
    b.append(
      RowsJSON.array(Array(items.enumerated())) { e, row in
        for c in Self.outboxWritten { row.member(c.name, e.element.value(c)) }
        row.member("i", .int(Int64(e.offset)))
        row.member("shard", .int(shard(of: e.element.activity)))
      })
    // A replacement deletes the waiting push it replaces: the same activity, token and
    // second, made before it (in an earlier commit or earlier in this one).
    let replacements = pushes.enumerated().filter {
      if case .replace = $0.element { true } else { false }
    }
    b.append(
      RowsJSON.array(replacements) { e, row in
        row.member("activity", .text(e.element.item.activity))
        row.member("token", .text(e.element.item.token))
        row.member("timestamp", .int(e.element.item.timestamp))
        row.member("i", .int(Int64(e.offset)))
      })
    // The budget each push spent, the last per activity and token.
    var spent: [PushBudget.Key: PushItem] = [:]
    for op in pushes {
      spent[PushBudget.Key(activity: op.item.activity, token: op.item.token)] = op.item
    }
    b.append(
      RowsJSON.array(Array(spent.values)) { p, row in
        for c in BudgetColumn.all { row.member(c.name, c.value(p)) }
        row.member("shard", .int(shard(of: p.activity)))
      })
    let incarnation = Int64(bitPattern: unsettled?.incarnation ?? 0)
    b.append(
      RowsJSON.array(unsettledRows) { u, row in
        row.member("shard", .int(u.shard))
        row.member("incarnation", .int(incarnation))
        row.member("events", .text(String(decoding: u.text, as: UTF8.self)))
      })
    let seqs = try statement("write to") { c -> [Int64] in
      try run(
        c,
        "SELECT \(Self.commitFunctionName)($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::json, $7::json, $8::json, $9::json, $10::json, $11::json)",
        b
      ).first?.decode([Int64].self) ?? []
    }
    if !fresh.isEmpty { unsettled?.backlog.add(fresh) }
    guard seqs.count == items.count else {
      throw StoreError(
        "\(location.place) gave \(seqs.count) outbox numbers for \(items.count) rows; was countdown_commit changed by hand?"
      )
    }
    return (Array(seqs.prefix(pushes.count)), Array(seqs.dropFirst(pushes.count)))
  }

  package func close() {
    guard !closed else { return }
    closed = true
    if let c = connection { _ = try? c.close().wait() }
    connection = nil
    try? group.syncShutdownGracefully()
  }

  // MARK: - SQL and JSON

  private func binds<T: PostgresDynamicTypeEncodable>(_ value: T) -> PostgresBindings {
    var b = PostgresBindings()
    b.append(value)
    return b
  }

  /// `INSERT INTO table (columns) SELECT … FROM json_to_recordset(source)`: every row of a
  /// JSON array, each column typed as declared (bytes come as hex). The record's columns are
  /// quoted, so that the JSON's members keep the columns' own names. `computed` gives
  /// columns whose value is an expression (over the record `r`) rather than a member, and
  /// `extra` members the record reads beside the columns.
  static func insert(
    _ table: String, _ columns: [(name: String, kind: StoredKind)], from source: String,
    computed: [String: String] = [:], extra: [(name: String, kind: StoredKind)] = []
  ) -> String {
    let list = columns.map(\.name).joined(separator: ", ")
    let select = columns.map {
      computed[$0.name]
        ?? ($0.kind == .bytes ? "decode(r.\"\($0.name)\", 'hex')" : "r.\"\($0.name)\"")
    }.joined(separator: ", ")
    let record = (columns.filter { computed[$0.name] == nil } + extra).map {
      "\"\($0.name)\" \($0.kind == .bytes ? "text" : $0.kind.postgresType)"
    }
    .joined(separator: ", ")
    return
      "INSERT INTO \(table) (\(list)) SELECT \(select) FROM json_to_recordset(\(source)) AS r(\(record))"
  }

  /// ``insert(_:_:from:computed:extra:)`` that replaces the row with the same `key`.
  static func upsert(
    _ table: String, _ columns: [(name: String, kind: StoredKind)], key: String,
    from source: String
  ) -> String {
    let keys = Set(key.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    let set = columns.filter { !keys.contains($0.name) }.map { "\($0.name) = EXCLUDED.\($0.name)" }
      .joined(separator: ", ")
    return "\(insert(table, columns, from: source)) ON CONFLICT (\(key)) DO UPDATE SET \(set)"
  }

  /// The name of the function a commit calls; a new body gets a new name, so that nodes of
  /// two versions sharing a database each call their own.
  static let commitFunctionName = "countdown_commit_v4"

  /// The function one commit is (``write(_:pushes:webhooks:forget:)``), made or replaced at
  /// each open: from a JSON document of the commit's parts, in one transaction (the
  /// statement's), each step seeing the ones before: the fence, the deletions (answered
  /// outbox rows, the removed activities' budget, the removed activities), the rows, the
  /// engine, the outbox rows numbered from the sequence in order, the pushes they replace, the
  /// budget, the unsettled events (``unsettled``). The outbox numbers back, in order.
  static var commitFunction: String {
    let shard: [(name: String, kind: StoredKind)] = [("shard", .int)]
    let outbox = named(OutboxColumn.all) + shard
    return """
      CREATE OR REPLACE FUNCTION \(commitFunctionName)(
        fence_shards bigint[], fence_epochs bigint[], forget bigint[], removed text[],
        gone text[], activity_rows json, engine_rows json, outbox_rows json, replacements json,
        budget_rows json, unsettled_rows json) RETURNS bigint[] LANGUAGE plpgsql AS $f$
      DECLARE
        seqs bigint[];
      BEGIN
        FOR k IN 1 .. coalesce(array_length(fence_shards, 1), 0) LOOP
          PERFORM 1 FROM countdown_leases
            WHERE shard = fence_shards[k] AND epoch = fence_epochs[k] FOR SHARE;
          IF NOT FOUND THEN
            RAISE EXCEPTION 'shard % is no longer this node''s: another node holds it with an epoch after %; nothing was written',
              fence_shards[k], fence_epochs[k]
              USING ERRCODE = '\(fenceErrorCode)', DETAIL = fence_shards[k]::text;
          END IF;
        END LOOP;
        DELETE FROM countdown_outbox WHERE seq = ANY(forget);
        DELETE FROM countdown_budget WHERE activity = ANY(removed);
        DELETE FROM countdown_activity WHERE id = ANY(gone);
        \(upsert("countdown_activity", named(ActivityColumn.all) + shard, key: "id", from: "activity_rows"));
        \(upsert("countdown_engine", shard + named(EngineColumn.all), key: "shard", from: "engine_rows"));
        SELECT coalesce(array_agg(n ORDER BY n), '{}') INTO seqs
          FROM (SELECT nextval('countdown_outbox_seq') AS n
                  FROM generate_series(1, json_array_length(outbox_rows))) AS s;
        \(insert("countdown_outbox", outbox, from: "outbox_rows", computed: ["seq": "seqs[r.i + 1]"], extra: [("i", .int)]));
        DELETE FROM countdown_outbox o
          USING json_to_recordset(replacements) AS r(activity text, token text, timestamp bigint, i int)
          WHERE o.destination = 'apns' AND o.activity = r.activity AND o.token = r.token
            AND o.timestamp = r.timestamp AND o.seq < seqs[r.i + 1];
        \(upsert("countdown_budget", named(BudgetColumn.all) + shard, key: "activity, token", from: "budget_rows"));
        \(upsert("countdown_unsettled", shard + [("incarnation", .int), ("events", .text)], key: "shard", from: "unsettled_rows"));
        RETURN seqs;
      END
      $f$
      """
  }

  /// The SQLSTATE of a fence that found another node's epoch (its DETAIL: the shard).
  static let fenceErrorCode = "CD001"

  /// The outbox's columns a commit writes: all but `seq`, which the function numbers.
  static let outboxWritten = OutboxColumn.all.filter { $0 != .seq }

  static func appendHex(_ bytes: [UInt8], to out: inout [UInt8]) {
    let digits: StaticString = "0123456789abcdef"
    out.reserveCapacity(out.count + bytes.count * 2)
    digits.withUTF8Buffer { d in
      for b in bytes {
        out.append(d[Int(b >> 4)])
        out.append(d[Int(b & 15)])
      }
    }
  }
}

/// A commit's rows of one table as a JSON array of objects, members named as the columns,
/// written straight into bytes (bytes as hex, which the commit function decodes).
struct RowsJSON {
  private var out = JSONWriter()
  private var first = true

  /// One member, `"name":value`, as bytes: a member every row of an array has.
  static func member(_ name: String, _ value: StoredValue) -> [UInt8] {
    var r = RowsJSON()
    r.member(name, value)
    return r.out.bytes
  }

  /// The array of `items`, each object's members written by `write`, then `constant`'s.
  static func array<Item>(
    _ items: [Item], constant: [UInt8] = [], _ write: (Item, inout RowsJSON) -> Void
  ) -> String {
    var r = RowsJSON()
    r.out.bytes.reserveCapacity(items.count * 320)
    r.out.raw("[")
    for (k, item) in items.enumerated() {
      if k > 0 { r.out.raw(",") }
      r.out.raw("{")
      r.first = true
      write(item, &r)
      if !constant.isEmpty {
        if !r.first { r.out.raw(",") }
        r.out.bytes.append(contentsOf: constant)
      }
      r.out.raw("}")
    }
    r.out.raw("]")
    return r.out.string
  }

  /// Writes one member of the row being written.
  mutating func member(_ name: String, _ value: StoredValue) {
    if !first { out.raw(",") }
    first = false
    out.write(string: name)
    out.raw(":")
    switch value {
    case .null: out.raw("null")
    case .int(let n): out.write(int: n)
    case .text(let t): out.write(string: t)
    case .bytes(let b):
      out.raw("\"")
      PostgresStore.appendHex(b, to: &out.bytes)
      out.raw("\"")
    }
  }
}

extension StoredKind {
  /// How PostgreSQL types the column.
  var postgresType: String {
    switch self {
    case .int: "bigint"
    case .text: "text"
    case .bytes: "bytea"
    }
  }
}

extension String {
  fileprivate func replacingFirst(_ target: String, _ replacement: String) -> String {
    guard let r = range(of: target) else { return self }
    return replacingCharacters(in: r, with: replacement)
  }
}
