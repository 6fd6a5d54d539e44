// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownCluster
import CountdownNIO
import CountdownStore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// Runs one node's ``ShardLeases`` against PostgreSQL (docs/cluster.md, "Shards, leases and
/// the fence"): reads the lease table and the nodes alive every fifth of the lease, asks for,
/// renews and releases leases with the SQL there, and says when the node serves a shard (with
/// its epoch) and when it stops.
///
/// Everything happens on one event loop of its own, with its own connection (a renewal never
/// waits behind a group commit): queries are futures, and a stop is a timer on the same loop,
/// so that a database that does not answer delays no stop. The clock is the monotonic one
/// (`NIODeadline`); PostgreSQL's own clock (`clock_timestamp()`) dates the leases.
///
/// Not yet wired into `countdown serve` (issue 35's next step: one engine per node holding
/// the shards it serves); `make postgres` runs it against a real PostgreSQL with two
/// nodes.
package final class LeaseDriver: @unchecked Sendable {
  // @unchecked Sendable: every `var` is touched on `eventLoop` only.

  /// What the node does with a shard, in the order the driver decided it.
  package enum Change: Sendable, Equatable {
    /// Load the shard's rows and serve them; each write of them is fenced by `epoch`.
    case serve(shard: Int, epoch: Int64)
    /// Stop acknowledging and delivering anything of the shard, at once.
    case stop(shard: Int, reason: ShardLeases.StopReason)
  }

  /// What the driver has done, for `/metrics`.
  package struct Counts: Sendable, Equatable {
    package var acquired = 0
    package var renewed = 0
    /// Renewals with no answer or an error (the lease may still hold).
    package var renewalsFailed = 0
    /// Renewals PostgreSQL refused: another node holds the shard.
    package var renewalsLost = 0

    package init() {}
  }

  package let node: String
  package let location: PostgresStore.Location
  package let shardCount: Int
  private let timing: ShardLeases.Timing
  private let group: MultiThreadedEventLoopGroup
  private let eventLoop: any EventLoop
  private let logger: Logger
  private let onChange: @Sendable (Change) -> Void
  private var leases: ShardLeases
  private var connection: PostgresConnection?
  private var connecting = false
  /// When the oldest unanswered query was sent (monotonic ms): a connection that has not
  /// answered for a whole lease is closed, failing what waits on it.
  private var waitingSince: [Int: Int64] = [:]
  private var nextQuery = 0
  private var observing: RepeatedTask?
  /// Whether an observation is unanswered (the next waits for it).
  private var observeInFlight = false
  /// Whether another observation was asked for while one was unanswered.
  private var observeWanted = false
  /// Renewals decided and not yet sent: they go with the next observation.
  private var dueRenewals: [(shard: Int, epoch: Int64, sentAt: Int64)] = []
  private let deadline: DeadlineTimer
  private var stopped = false
  private var counts = Counts()
  /// Hears of each observation of the lease table and the nodes (for the node's answers: who
  /// owns what, and where it is reached), with what the driver has done so far (for
  /// `/metrics`, which so never waits for the driver's loop).
  private let onObserve: (@Sendable ([Lease], [Node], Counts) -> Void)?

  /// A node of the cluster as last observed.
  package struct Node: Sendable, Equatable {
    package var name: String
    /// Where the other nodes reach it (`--advertise`), if it said.
    package var advertise: String?
    /// Whether its heartbeat was younger than the lease.
    package var alive: Bool
  }

  /// One shard's row of the lease table as last observed.
  package struct Lease: Sendable, Equatable {
    package var shard: Int
    /// Nil when nobody ever held it.
    package var owner: String?
    package var epoch: Int64
    /// Whether the lease had lapsed (nobody serves the shard until it is taken).
    package var expired: Bool
  }

  /// Joins the cluster in `location`'s database as `node`: makes the cluster's tables on first
  /// use (the shard count fixed then), checks the shard count and that no live node has the
  /// name, then starts taking its share of the shards. `onChange` is called on the driver's
  /// thread, in order.
  /// - Throws: ``StoreError`` naming the database: unreachable, another shard count, the
  ///   node's name alive.
  package init(
    node: String, shardCount: Int, timing: ShardLeases.Timing = .init(),
    location: PostgresStore.Location, advertise: String? = nil,
    onChange: @escaping @Sendable (Change) -> Void,
    onObserve: (@Sendable ([Lease], [Node], Counts) -> Void)? = nil
  ) throws(StoreError) {
    guard shardCount >= 1, shardCount <= 4096 else {
      throw StoreError("--shards must be 1 to 4096, not \(shardCount)")
    }
    self.node = node
    self.location = location
    self.shardCount = shardCount
    self.timing = timing
    self.onChange = onChange
    self.onObserve = onObserve
    leases = ShardLeases(node: node, shardCount: shardCount, timing: timing)
    group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    eventLoop = group.next()
    eventLoop.nameThread("countdown-lease")
    deadline = DeadlineTimer(on: eventLoop)
    var logger = Logger(label: "countdown.leases")
    logger.logLevel = .critical
    self.logger = logger
    do {
      let c = try location.connect(
        on: eventLoop, id: 2, application: Self.application(node), logger: logger
      ).wait()
      connection = c
      try join(c, advertise: advertise)
    } catch {
      try? connection?.close().wait()
      try? group.syncShutdownGracefully()
      if let e = error as? StoreError { throw e }
      throw StoreError(
        "cannot join the cluster in \(location.place): \(PostgresStore.describe(error))")
    }
    eventLoop.execute { [self] in
      observing = eventLoop.scheduleRepeatedTask(
        initialDelay: .zero, delay: .milliseconds(timing.renewEveryMs)
      ) { [self] _ in observe() }
    }
  }

  /// The connection's name in `pg_stat_activity`: `countdown leases NODE`.
  package static func application(_ node: String) -> String { "countdown leases \(node)" }

  /// The monotonic clock, in milliseconds.
  static func now() -> Int64 { Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000) }

  // MARK: - Joining

  /// `pg_advisory_xact_lock`'s key while the tables are made: "CDWL".
  static let setupLockKey: Int64 = 0x4344_574C

  /// The cluster's tables (docs/cluster.md).
  static let createTables = [
    "CREATE TABLE IF NOT EXISTS countdown_cluster (id int PRIMARY KEY CHECK (id = 1), shards int NOT NULL)",
    """
    CREATE TABLE IF NOT EXISTS countdown_leases (shard int PRIMARY KEY, owner text,
      epoch bigint NOT NULL DEFAULT 0, expires_at timestamptz NOT NULL DEFAULT '-infinity')
    """,
    "CREATE TABLE IF NOT EXISTS countdown_nodes (node text PRIMARY KEY, expires_at timestamptz NOT NULL)",
    // Where the other nodes reach it (`--advertise`); added after the table's first version.
    "ALTER TABLE countdown_nodes ADD COLUMN IF NOT EXISTS advertise text",
  ]

  private func join(_ c: PostgresConnection, advertise: String?) throws {
    func run(_ sql: String, _ binds: PostgresBindings = .init()) throws -> [PostgresRow] {
      try c.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).wait().rows
    }
    _ = try run("BEGIN")
    do {
      _ = try run("SELECT pg_advisory_xact_lock(\(Self.setupLockKey))")
      for sql in Self.createTables { _ = try run(sql) }
      var b = PostgresBindings()
      b.append(shardCount)
      _ = try run("INSERT INTO countdown_cluster VALUES (1, $1) ON CONFLICT (id) DO NOTHING", b)
      let stored = try run("SELECT shards FROM countdown_cluster").first?.decode(Int.self)
      guard stored == shardCount else {
        throw StoreError(
          "the cluster in \(location.place) has \(stored ?? 0) shards, fixed at its first use; this node was started with --shards \(shardCount). Start it with --shards \(stored ?? 0)"
        )
      }
      _ = try run(
        "INSERT INTO countdown_leases (shard) SELECT generate_series(0, $1 - 1) ON CONFLICT (shard) DO NOTHING",
        b)
      var n = PostgresBindings()
      n.append(node)
      n.append(timing.leaseMs)
      n.append(advertise)
      let joined = try run(
        """
        INSERT INTO countdown_nodes (node, expires_at, advertise)
          VALUES ($1, clock_timestamp() + $2 * interval '1 millisecond', $3)
        ON CONFLICT (node) DO UPDATE SET expires_at = EXCLUDED.expires_at,
          advertise = EXCLUDED.advertise
         WHERE countdown_nodes.expires_at <= clock_timestamp()
        RETURNING node
        """, n)
      guard !joined.isEmpty else {
        throw StoreError(
          "a node named \(node) is alive in the cluster in \(location.place) (its heartbeat is younger than the lease, \(timing.leaseMs) ms); give another --node, or wait for the lease if that node is gone"
        )
      }
      _ = try run("COMMIT")
    } catch {
      _ = try? run("ROLLBACK")
      throw error
    }
  }

  // MARK: - The loop

  /// A query on the connection (connecting first when there is none), answered on the loop.
  private func query(_ sql: String, _ binds: PostgresBindings = .init())
    -> EventLoopFuture<[PostgresRow]>
  {
    guard let c = connection, !c.isClosed else {
      connection = nil
      if !connecting, !stopped {
        connecting = true
        location.connect(on: eventLoop, id: 2, application: Self.application(node), logger: logger)
          .whenComplete { [self] result in
            connecting = false
            if case .success(let c) = result {
              if stopped { let _: EventLoopFuture<Void> = c.close() } else { connection = c }
            }
          }
      }
      return eventLoop.makeFailedFuture(StoreError("not connected to \(location.place)"))
    }
    let id = nextQuery
    nextQuery += 1
    waitingSince[id] = Self.now()
    return c.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
      .map { $0.rows }
      .always { [self] _ in waitingSince[id] = nil }
  }

  /// Every fifth of the lease: the heartbeat, the renewal of every lease held, the lease
  /// table and the nodes alive, in one statement; then what the machine makes of them.
  ///
  /// One statement, and one at a time: a connection runs its queries one after another, so
  /// on a database slowed to a round trip of 300 ms an observation every 200 ms and a renewal
  /// per shard beside it queued without end, each answered later than the one before, until
  /// the leases lapsed (`slowPostgres`, docs/cluster.md, "Faults short of death"). An
  /// observation asked for while one is unanswered goes when that one is answered, so they go
  /// back to back, each renewing from its own sending: a lease holds while a round trip takes
  /// less than two fifths of it (its stop is three fifths after the renewal was sent).
  private func observe() {
    guard !stopped else { return }
    guard !observeInFlight else {
      observeWanted = true
      return
    }
    observeInFlight = true
    observeWanted = false
    let now = Self.now()
    if let oldest = waitingSince.values.min(), now - oldest > timing.leaseMs, let c = connection {
      // No answer for a whole lease: the connection is dead or stuck. Closing it fails what
      // waits; the next observation connects again.
      let _: EventLoopFuture<Void> = c.close()
      connection = nil
    }
    // Stops due now, and the renewals the machine decided since the last observation.
    carryOut(leases.tick(now: now))
    let decided = dueRenewals
    dueRenewals = []
    // Every lease held is renewed, sent now: the observations go back to back on a slow
    // database, and each one moves every stop.
    let held = leases.served
    var b = PostgresBindings()
    b.append(node)
    b.append(timing.leaseMs)
    b.append(held.map { Int64($0.shard) })
    b.append(held.map(\.epoch))
    query(
      """
      WITH beat AS (
        UPDATE countdown_nodes SET expires_at = clock_timestamp() + $2 * interval '1 millisecond'
         WHERE node = $1 RETURNING node),
      renewed AS (
        UPDATE countdown_leases l
           SET expires_at = clock_timestamp() + $2 * interval '1 millisecond'
          FROM unnest($3::int8[], $4::int8[]) AS r(shard, epoch)
         WHERE l.shard = r.shard AND l.owner = $1 AND l.epoch = r.epoch
           AND l.expires_at > clock_timestamp()
        RETURNING l.shard)
      SELECT shard, owner,
        shard NOT IN (SELECT shard FROM renewed) AND expires_at <= clock_timestamp(),
        (SELECT count(*) FROM countdown_nodes WHERE expires_at > clock_timestamp() OR node = $1),
        epoch,
        (SELECT coalesce(string_agg(node || chr(9) || coalesce(advertise, '') || chr(9)
            || (expires_at > clock_timestamp() OR node = $1)::text, chr(10)), '')
           FROM countdown_nodes),
        shard IN (SELECT shard FROM renewed)
        FROM countdown_leases ORDER BY shard
      """, b
    ).whenComplete { [self] result in
      observeInFlight = false
      guard !stopped else { return }
      guard case .success(let rows) = result else {
        counts.renewalsFailed += held.count
        for r in decided { leases.renewFailed(r.shard, epoch: r.epoch) }
        schedule()
        return
      }
      var view: [ShardLeases.LeaseView] = []
      var table: [Lease] = []
      var nodes: [Node] = []
      var alive = 1
      var renewedShards: Set<Int> = []
      for row in rows {
        guard
          let (shard, owner, expired, count, epoch, list, renewed) = try? row.decode(
            (Int, String?, Bool, Int, Int64, String, Bool).self)
        else { continue }
        view.append(.init(shard: shard, owner: owner, expired: expired))
        table.append(Lease(shard: shard, owner: owner, epoch: epoch, expired: expired))
        alive = count
        if nodes.isEmpty { nodes = Self.nodes(list) }
        if renewed { renewedShards.insert(shard) }
      }
      // The renewals' answers first: a renewed lease's stop moves before the view is read.
      var actions: [ShardLeases.Action] = []
      for r in held {
        if renewedShards.contains(r.shard) {
          counts.renewed += 1
          leases.renewed(r.shard, epoch: r.epoch, sentAt: now)
        } else {
          counts.renewalsLost += 1
          actions += leases.renewLost(r.shard, epoch: r.epoch)
        }
      }
      // A renewal the machine decided is answered with its own instant (which marks it done).
      for r in decided where renewedShards.contains(r.shard) {
        leases.renewed(r.shard, epoch: r.epoch, sentAt: r.sentAt)
      }
      carryOut(actions)
      onObserve?(table, nodes, counts)
      carryOut(leases.observe(view, aliveNodes: alive, now: Self.now()))
      carryOut(leases.tick(now: Self.now()))
      // Asked for meanwhile (the period passed, or renewals fell due): at once, so that on a
      // slow database the observations go back to back, each renewal in the next.
      if observeWanted || !dueRenewals.isEmpty { observe() }
    }
  }

  /// The nodes of the observation's list: a line per node, name, advertise and alive
  /// separated by tabs (names and addresses have neither).
  static func nodes(_ list: String) -> [Node] {
    list.split(separator: "\n").compactMap { line in
      let f = line.split(separator: "\t", omittingEmptySubsequences: false)
      guard f.count == 3 else { return nil }
      return Node(
        name: String(f[0]), advertise: f[1].isEmpty ? nil : String(f[1]), alive: f[2] == "true")
    }
  }

  /// Does what the machine decided, then sets the timer for its next deadline.
  private func carryOut(_ actions: [ShardLeases.Action]) {
    for action in actions {
      switch action {
      case .acquire(let shard): acquire(shard)
      case .renew(let shard, let epoch): renew(shard, epoch)
      case .serve(let shard, let epoch): onChange(.serve(shard: shard, epoch: epoch))
      case .stopServing(let shard, let reason): onChange(.stop(shard: shard, reason: reason))
      case .release(let shard, let epoch): release(shard, epoch)
      }
    }
    schedule()
  }

  private func schedule() {
    deadline.arm(at: stopped ? nil : leases.nextDeadline, now: Self.now()) { [self] in
      carryOut(leases.tick(now: Self.now()))
      // A renewal that fell due goes now, with an observation (or right after the one
      // unanswered).
      if !dueRenewals.isEmpty { observe() }
    }
  }

  private func acquire(_ shard: Int) {
    let sentAt = Self.now()
    var b = PostgresBindings()
    b.append(node)
    b.append(timing.leaseMs)
    b.append(shard)
    query(
      """
      UPDATE countdown_leases
         SET owner = $1, epoch = epoch + 1,
             expires_at = clock_timestamp() + $2 * interval '1 millisecond'
       WHERE shard = $3 AND (expires_at <= clock_timestamp() OR owner = $1)
      RETURNING epoch
      """, b
    ).whenComplete { [self] result in
      guard !stopped else { return }
      if case .success(let rows) = result, let epoch = try? rows.first?.decode(Int64.self) {
        counts.acquired += 1
        carryOut(leases.acquired(shard, epoch: epoch, sentAt: sentAt, now: Self.now()))
      } else {
        leases.acquireRefused(shard)
        schedule()
      }
    }
  }

  /// A renewal the machine decided: it goes with the next observation (``observe()``). The
  /// machine counted it as sent at its tick, earlier than it goes (the safe side: the lease
  /// PostgreSQL grants starts later than the node counts); its answer names that instant.
  private func renew(_ shard: Int, _ epoch: Int64) {
    dueRenewals.append((shard, epoch, leases.lastRenewal(of: shard) ?? Self.now()))
  }

  private func release(_ shard: Int, _ epoch: Int64) {
    var b = PostgresBindings()
    b.append(shard)
    b.append(node)
    b.append(epoch)
    _ = query(
      "UPDATE countdown_leases SET expires_at = '-infinity' WHERE shard = $1 AND owner = $2 AND epoch = $3",
      b)
  }

  // MARK: - Outside

  /// The shards served now, with their epochs (from any thread, `onChange` included).
  package var served: [(shard: Int, epoch: Int64)] { onLoop { $0.leases.served } ?? [] }

  /// What the driver has done so far (from any thread).
  package var counters: Counts { onLoop { $0.counts } ?? Counts() }

  /// `body` run on the driver's loop: at once when called there (from `onChange`), else
  /// waited for; nil once the loop is gone.
  private func onLoop<T: Sendable>(_ body: @escaping @Sendable (LeaseDriver) -> T) -> T? {
    if eventLoop.inEventLoop { return body(self) }
    return try? eventLoop.submit { [self] in body(self) }.wait()
  }

  /// Leaves the cluster: stops serving every shard (each `onChange`), gives the leases up and
  /// removes the node, so that the others take its shards at once.
  package func leave() {
    let done = eventLoop.submit { [self] () -> EventLoopFuture<Void> in
      let served = leases.served
      stopped = true
      observing?.cancel()
      deadline.cancel()
      for s in served { onChange(.stop(shard: s.shard, reason: .handingOver)) }
      guard let c = connection, !c.isClosed else { return eventLoop.makeSucceededVoidFuture() }
      var b = PostgresBindings()
      b.append(node)
      return c.query(
        PostgresQuery(
          unsafeSQL: """
            WITH gone AS (DELETE FROM countdown_nodes WHERE node = $1)
            UPDATE countdown_leases SET expires_at = '-infinity' WHERE owner = $1
            """, binds: b), logger: logger
      ).map { _ in }
    }.flatMap { $0 }
    _ = try? done.wait()
    close()
  }

  /// Stops at once as a killed process does: no release, no goodbye; PostgreSQL keeps the
  /// leases until they expire.
  package func halt() {
    _ = try? eventLoop.submit { [self] in
      stopped = true
      observing?.cancel()
      deadline.cancel()
    }.wait()
    close()
  }

  private func close() {
    let c = try? eventLoop.submit { [self] () -> PostgresConnection? in
      let c = connection
      connection = nil
      return c
    }.wait()
    if let c = c ?? nil {
      try? c.close().wait()
    }
    try? group.syncShutdownGracefully()
  }
}
