import Countdown
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownStore

/// The state file's checkpoints (`Checkpointer`): made on a thread of their own, not inside
/// the commits.
@Suite("Checkpoints")
struct CheckpointTests {
  func size(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1
  }

  @Test(
    "Commits reach the database file within about a second, copied by the checkpoint thread; none is copied by the commit itself"
  )
  func copiedOffTheCommit() throws {
    let dir = StateFileTests.scratch()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/s.db"
    let store = try StateStore(path: path, sync: .normal)
    defer { store.close() }
    // Let the checkpoint of the empty file's migrations pass first.
    usleep(UInt32(Checkpointer.interval * 1_500_000))
    let before = size(path)

    var engine = ActivityEngine(now: t0)
    let ids = (0..<2000).map { "a\($0)" }
    for id in ids { try engine.start(.countdown(id: id, to: at(60_000), title: id), at: t0) }
    let started = Date()
    _ = try store.write([StoreChanges(engine: engine, ids: ids)], pushes: [])
    // Written to the log, not to the file: the commit does not checkpoint (2,000 rows are far
    // fewer pages than the backstop).
    #expect(size(path) == before)
    #expect(size(path + "-wal") > 100_000)
    while size(path) == before, Date().timeIntervalSince(started) < 5 { usleep(20_000) }
    let took = Date().timeIntervalSince(started)
    #expect(size(path) > before + 100_000)
    #expect(took < Checkpointer.interval + 1)
  }
}
