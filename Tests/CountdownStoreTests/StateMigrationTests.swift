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
    let dir = NSTemporaryDirectory() + "cd-migrate-v6-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/state.db"
    let queue = try DatabaseQueue(path: path)
    try StateStore.migrator.migrate(queue, upTo: StateSchema.v5.rawValue)
    try queue.write { db in
      try db.execute(
        sql: """
          INSERT INTO push_outbox (activity, token, event, priority, timestamp, notBefore, eventAt, payload)
          VALUES ('a', 'ab', 'update', 5, 10, 10000, 9000, x'7b7d')
          """)
    }
    try queue.close()
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
}
