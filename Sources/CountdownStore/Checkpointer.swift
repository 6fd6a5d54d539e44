import Foundation
import GRDB

/// Copies the state file's write-ahead log into the database on a thread of its own, so that
/// no commit waits for it.
///
/// SQLite checkpoints by default inside the commit that fills the WAL past 1,000 pages, and a
/// checkpoint syncs the database file: milliseconds on a slow disk, which the commands of that
/// wake (and every wake queued behind it) waited for. Here this thread runs a PASSIVE checkpoint
/// on its own connection every ``interval``, which copies what it can without blocking the
/// writer and never waits for it; the store's connection checkpoints itself only past
/// ``backstopPages`` (writes with no pause long enough for these checkpoints to catch up, after
/// which SQLite starts the log again from its beginning). A checkpoint that fails (a full disk)
/// loses nothing: the commits stay in the WAL and the next checkpoint, or the close, copies
/// them.
final class Checkpointer: @unchecked Sendable {
  // @unchecked Sendable: `stopping` and `finished` are guarded by `condition`; `connection` is
  // used by the checkpoint thread only, then closed by `stop` after that thread has ended.
  private let connection: DatabaseQueue
  private let condition = NSCondition()
  private var stopping = false
  private var finished = false
  /// How often the log is copied.
  static let interval: TimeInterval = 1
  /// The log's size in pages past which a commit checkpoints (SQLite's default is 1,000).
  static let backstopPages = 10_000

  /// Opens a second connection to the state file at `path` (already migrated) and starts the
  /// thread.
  init(path: String) throws {
    var config = Configuration()
    config.label = "countdown.checkpoint"
    connection = try DatabaseQueue(path: path, configuration: config)
    let thread = Thread { [self] in run() }
    thread.name = "countdown.checkpoint"
    thread.start()
  }

  private func run() {
    condition.lock()
    while !stopping {
      _ = condition.wait(until: Date().addingTimeInterval(Self.interval))
      if stopping { break }
      condition.unlock()
      try? connection.writeWithoutTransaction { db in
        try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)")
      }
      condition.lock()
    }
    finished = true
    condition.broadcast()
    condition.unlock()
  }

  /// Stops the thread and closes its connection (waits for a checkpoint under way).
  func stop() {
    condition.lock()
    stopping = true
    condition.broadcast()
    while !finished { condition.wait() }
    condition.unlock()
    try? connection.close()
  }
}
