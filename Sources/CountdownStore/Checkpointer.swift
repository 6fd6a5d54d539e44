// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Foundation
import GRDB

/// Copies the state file's write-ahead log into the database on a thread of its own, so that
/// no commit waits for it.
///
/// SQLite checkpoints by default inside the commit that fills the WAL past 1,000 pages, and a
/// checkpoint syncs the database file: milliseconds on a slow disk, which the commands of that
/// wake (and every wake queued behind it) waited for. Here this thread runs a PASSIVE checkpoint
/// on its own connection, which copies what it can without blocking the writer and never waits
/// for it: every ``busyInterval`` while commits come, every ``idleInterval`` once the log has
/// stopped growing. The store's connection checkpoints itself only past ``backstopPages``
/// (writes with no pause long enough for these checkpoints to catch up, after which SQLite
/// starts the log again from its beginning); what that commit copies and syncs is only what
/// came since this thread's last checkpoint, a tenth of a second of writes (with a checkpoint
/// a second, a second's: replies and held events 30–80 ms late every few seconds beside 1,000
/// pushes a second; BENCHMARKS.md, "Checkpoints every 0.1 s"). A checkpoint that fails (a full
/// disk) loses nothing: the commits stay in the WAL and the next checkpoint, or the close,
/// copies them.
final class Checkpointer: @unchecked Sendable {
  // @unchecked Sendable: `stopping` and `finished` are guarded by `condition`; `connection` is
  // used by the checkpoint thread only, then closed by `stop` after that thread has ended.
  private let connection: DatabaseQueue
  private let condition = Lock()
  private var stopping = false
  private var finished = false
  /// How often the log is copied while it grows.
  static let busyInterval: TimeInterval = 0.1
  /// How often once it has not grown since the last checkpoint (an idle server wakes once a
  /// second for it; the first commits after a pause wait at most that long to be copied).
  static let idleInterval: TimeInterval = 1
  /// The log's size in pages past which a commit checkpoints (SQLite's default is 1,000).
  static let backstopPages = 10_000

  /// Opens a second connection to the state file at `path` (already migrated) and starts the
  /// thread.
  init(path: String) throws {
    var config = Configuration()
    config.label = "countdown.checkpoint"
    connection = try DatabaseQueue(path: path, configuration: config)
    let thread = Thread { [self] in
      nameCurrentThread("countdown-ckpt")
      run()
    }
    thread.start()
  }

  private func run() {
    var interval = Self.idleInterval
    var lastFrames: Int?
    condition.lock()
    while !stopping {
      condition.wait(untilNanoseconds: Lock.deadline(after: interval))
      if stopping { break }
      condition.unlock()
      // A row of (busy, frames in the log, frames copied); none when the checkpoint failed.
      let row = try? connection.writeWithoutTransaction { db in
        try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)")
      }
      let frames: Int? = row.flatMap { $0[1] }
      interval = frames == nil || frames == lastFrames ? Self.idleInterval : Self.busyInterval
      lastFrames = frames
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
