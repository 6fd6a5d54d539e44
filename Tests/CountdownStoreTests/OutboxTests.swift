// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownPush
import CountdownTestSupport
import Foundation
import GRDB
import Testing

@testable import CountdownStore

/// The push outbox in the state file (docs/pushes.md, "Delivery"): written in the same
/// transaction as the change that made it, read back in order after a restart, replaced and
/// forgotten by sequence number; the budget kept beside it.
@Suite("Push outbox")
struct OutboxTests {
  func item(_ activity: String, _ token: String, ts: Int64, _ text: String) -> PushItem {
    PushItem(
      activity: activity, token: token, event: .update, priority: 10, timestamp: ts,
      notBefore: ts * 1000, eventAt: ts * 1000 + 7, payload: Array(text.utf8),
      apnsID: "\(activity)-\(token)-\(ts)", expiration: ts.isMultiple(of: 2) ? nil : ts + 3600)
  }

  /// A scratch directory, the state file's path in it, and an engine with one activity "a".
  static func scratchWithActivity() throws -> (dir: String, path: String, engine: ActivityEngine) {
    let dir = StateFileTests.scratch()
    var engine = ActivityEngine(now: t0)
    try engine.start(.countdown(id: "a", to: at(60_000), title: "A"), at: t0)
    return (dir, dir + "/s.db", engine)
  }

  func changes(_ engine: borrowing ActivityEngine, _ ids: [String]) -> StoreChanges {
    StoreChanges(engine: engine, ids: ids)
  }

  @Test("Pushes are written with their commit, read back in order, replaced and forgotten")
  func roundTrip() throws {
    let (dir, path, engine) = try Self.scratchWithActivity()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try StateStore(path: path, sync: .normal)
    let seqs = try store.write(
      [changes(engine, ["a"])],
      pushes: [
        .add(item("a", "t1", ts: 10, "one")), .add(item("a", "t2", ts: 10, "two")),
        .add(item("a", "t1", ts: 11, "three")),
      ]
    ).pushes
    #expect(seqs.count == 3 && seqs == seqs.sorted())
    // A replacement deletes the waiting push of the same activity, token and timestamp.
    let more = try store.write([], pushes: [.replace(item("a", "t1", ts: 11, "three'"))]).pushes
    try store.forget(outbox: [seqs[1]])
    store.close()

    let again = try StateFileTests.reopen(path, sync: .normal)
    defer { again.close() }
    let (pending, budget) = try again.loadPushes()
    #expect(pending.map(\.seq) == [seqs[0], more[0]])
    #expect(pending.map { String(decoding: $0.item.payload, as: UTF8.self) } == ["one", "three'"])
    #expect(pending[1].item == item("a", "t1", ts: 11, "three'"))
    let spent = Dictionary(uniqueKeysWithValues: budget.map { ($0.key.token, $0.timestamp) })
    #expect(spent == ["t1": 11, "t2": 10])
    #expect(try again.load()?.activities.map(\.id) == ["a"])
  }

  @Test("A failed commit writes neither the rows nor the pushes")
  func atomic() throws {
    var (dir, path, engine) = try Self.scratchWithActivity()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try StateStore(path: path, sync: .normal)
    try store.write([changes(engine, ["a"])])
    // A trigger makes the next activity row fail inside the transaction.
    let queue = try DatabaseQueue(path: path)
    try queue.write { db in
      try db.execute(
        sql:
          "CREATE TRIGGER no_b BEFORE INSERT ON activity WHEN NEW.id = 'b' BEGIN SELECT RAISE(ABORT, 'refused'); END"
      )
    }
    try queue.close()
    try engine.start(.countdown(id: "b", to: at(60_000), title: "B"), at: t0)
    #expect(throws: StoreError.self) {
      try store.write([changes(engine, ["b"])], pushes: [.add(item("b", "t", ts: 1, "x"))])
    }
    #expect(try store.loadPushes().pending.isEmpty)
    #expect(try store.loadPushes().budget.isEmpty)
    store.close()
  }

  @Test("A dismissed activity's budget goes with its row; its waiting pushes stay")
  func dismissal() throws {
    let (dir, path, engine) = try Self.scratchWithActivity()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try StateStore(path: path, sync: .normal)
    defer { store.close() }
    try store.write([changes(engine, ["a"])], pushes: [.add(item("a", "t", ts: 5, "end"))])
    try store.write([StoreChanges(engine: engine.snapshot(of: [String]()), removed: ["a"])])
    let (pending, budget) = try store.loadPushes()
    #expect(pending.count == 1 && budget.isEmpty)
  }

  @Test("The outbox's tables are the declared columns")
  func columns() throws {
    let dir = StateFileTests.scratch()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try StateStore(path: dir + "/s.db", sync: .normal)
    store.close()
    let queue = try DatabaseQueue(path: dir + "/s.db")
    defer { try? queue.close() }
    let (outbox, budget) = try queue.read { db in
      (
        try Row.fetchAll(db, sql: "PRAGMA table_info(push_outbox)").map { $0["name"] as String },
        try Row.fetchAll(db, sql: "PRAGMA table_info(push_budget)").map { $0["name"] as String }
      )
    }
    #expect(outbox == OutboxColumn.allCases.map(\.name))
    #expect(budget == BudgetColumn.allCases.map(\.name))
  }

  @Test(
    "Answered pushes are deleted with the next commit of changes, or in a commit of their own after a second without one"
  )
  func forgetRides() async throws {
    try await onThread {
      let (dir, path, engine) = try Self.scratchWithActivity()
      defer { try? FileManager.default.removeItem(atPath: dir) }
      let store = try StateStore(path: path, sync: .normal)
      let seqs = try store.write(
        [changes(engine, ["a"])],
        pushes: [.add(item("a", "t1", ts: 10, "one")), .add(item("a", "t2", ts: 10, "two"))]
      ).pushes
      let writer = StoreWriter(store: store, reload: { _, _ in }, onError: { _ in })
      defer { writer.close() }
      let reader = try DatabaseQueue(path: path)
      defer { try? reader.close() }
      func waiting() throws -> [Int64] {
        try reader.read { db in
          try Int64.fetchAll(db, sql: "SELECT seq FROM push_outbox ORDER BY seq")
        }
      }

      writer.forget(outbox: [seqs[0]])
      usleep(300_000)
      // No commit of its own at once: it waits for one of changes.
      #expect(try waiting() == seqs)
      let released = DispatchSemaphore(value: 0)
      writer.enqueue(
        StoreWriter.Unit(changes: changes(engine, ["a"]), epoch: 0) { _ in released.signal() })
      released.wait()
      #expect(try waiting() == [seqs[1]])

      // With no change to ride on, it gets its own commit within a second or so.
      let started = Date()
      writer.forget(outbox: [seqs[1]])
      while try waiting() != [], Date().timeIntervalSince(started) < 5 { usleep(20_000) }
      let took = Date().timeIntervalSince(started)
      #expect(try waiting() == [])
      #expect(took >= StoreWriter.forgetDelay * 0.9 && took < StoreWriter.forgetDelay + 1.5)
    }
  }

  @Test(
    "Webhook deliveries share the outbox: numbered after the pushes of their commit, read back by kind, in order, forgotten alike"
  )
  func webhooksShareTheOutbox() throws {
    let (dir, path, engine) = try Self.scratchWithActivity()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try StateStore(path: path, sync: .normal)
    func hook(_ url: String, _ event: ActivityEvent.Kind, _ body: String) -> WebhookItem {
      WebhookItem(activity: "a", url: url, event: event, eventAt: 1_000, body: Array(body.utf8))
    }
    let first = try store.write(
      [changes(engine, ["a"])], pushes: [.add(item("a", "t1", ts: 10, "push"))],
      webhooks: [
        hook("http://one/", .started, #"{"n":1}"#), hook("http://two/", .started, #"{"n":1}"#),
      ])
    #expect(first.pushes.count == 1 && first.webhooks.count == 2)
    #expect(first.webhooks.allSatisfy { $0 > first.pushes[0] })
    let second = try store.write([], webhooks: [hook("http://one/", .ended, #"{"n":2}"#)])
    // The same push replaced: only the APNs row of that activity, token and timestamp goes.
    _ = try store.write([], pushes: [.replace(item("a", "t1", ts: 10, "push'"))])
    try store.forget(outbox: [first.webhooks[1]])
    store.close()

    let again = try StateFileTests.reopen(path, sync: .normal)
    defer { again.close() }
    let hooks = try again.loadWebhooks()
    #expect(hooks.map(\.seq) == [first.webhooks[0], second.webhooks[0]])
    #expect(
      hooks.map(\.item) == [
        hook("http://one/", .started, #"{"n":1}"#), hook("http://one/", .ended, #"{"n":2}"#),
      ])
    let pushes = try again.loadPushes().pending
    #expect(pushes.map { String(decoding: $0.item.payload, as: UTF8.self) } == ["push'"])
  }
}
