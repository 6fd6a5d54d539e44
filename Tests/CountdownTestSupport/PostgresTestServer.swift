// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation

/// The PostgreSQL server the tests that need one run against: `make postgres` starts one
/// (Tests/postgres/with-postgres.sh) and says where in `COUNTDOWN_TEST_POSTGRES`; without it
/// those tests are skipped, saying so.
package enum PostgresTestServer {
  /// The server's URL (its `postgres` database), nil when none was started.
  package static let url = ProcessInfo.processInfo.environment["COUNTDOWN_TEST_POSTGRES"]
  static let restartCommand = ProcessInfo.processInfo.environment["COUNTDOWN_TEST_PG_RESTART"]

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  /// A new, empty database on the server; its URL.
  package static func freshDatabaseURL() throws -> String {
    let name = "countdown_t\(UInt32.random(in: 0...UInt32.max))"
    try psql("CREATE DATABASE \(name)")
    return try url(of: name)
  }

  /// The URL of `database` on the server.
  package static func url(of database: String) throws -> String {
    guard let url, let slash = url.lastIndex(of: "/") else {
      throw Failure(description: "COUNTDOWN_TEST_POSTGRES is not set: run make postgres")
    }
    return String(url[...slash]) + database
  }

  /// Runs `sql` with psql (in `database`, else the server's own), failing on an error; its
  /// output back.
  @discardableResult
  package static func psql(_ sql: String, in database: String = "postgres") throws -> String {
    try run(["psql", try url(of: database), "-v", "ON_ERROR_STOP=1", "-qAtc", sql])
  }

  /// Restarts the server at once (`pg_ctl restart -m immediate`, as after a crash); with
  /// `downFor`, stops it so, keeps it down that many seconds, then starts it.
  package static func restart(downFor seconds: Double = 0) throws {
    guard let restartCommand else {
      throw Failure(description: "COUNTDOWN_TEST_PG_RESTART is not set: run make postgres")
    }
    guard seconds > 0 else {
      try run(["/bin/sh", "-c", restartCommand])
      return
    }
    let verb = " restart -m immediate -w"
    guard restartCommand.contains(verb) else {
      throw Failure(description: "COUNTDOWN_TEST_PG_RESTART has no \"\(verb)\": \(restartCommand)")
    }
    let stop = restartCommand.replacingOccurrences(of: verb, with: " stop -m immediate -w")
    let start = restartCommand.replacingOccurrences(of: verb, with: " start -w")
    try run(["/bin/sh", "-c", "\(stop) && sleep \(seconds) && \(start)"])
  }

  /// Runs `arguments` (found on the PATH) and waits for it; its output (both streams)
  /// back, an error when it fails. posix_spawn and waitpid: Foundation's `Process` was seen
  /// to wait forever in `waitUntilExit` for a psql that had exited.
  @discardableResult
  package static func run(_ arguments: [String]) throws -> String {
    let output = "/tmp/cd-pg-out-\(UInt32.random(in: 0...UInt32.max))"
    defer { unlink(output) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var argv = arguments.map { strdup($0) } + [nil]
    defer { for a in argv { free(a) } }
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, arguments[0], &actions, nil, &argv, environ)
    guard rc == 0 else {
      throw Failure(description: "cannot run \(arguments[0]): \(String(cString: strerror(rc)))")
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let text = readTextFile(output)
    guard status == 0 else {
      throw Failure(description: "\(arguments.joined(separator: " ")) failed (\(status)): \(text)")
    }
    return text
  }
}
