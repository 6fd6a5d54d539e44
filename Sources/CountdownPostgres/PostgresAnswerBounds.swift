// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Logging
import NIOCore
import PostgresNIO

// Bounds on waiting for PostgreSQL (issue 55; docs/cluster.md, "A commit cut off from
// PostgreSQL"): a database cut off without a reset (a partition) otherwise keeps a connection,
// a query or a commit waiting for as long as the cut lasts.

extension PostgresConnection {
  /// `answer` (a query's on this connection), waited for at most `timeout`: past it this
  /// connection is closed, so the query fails and nothing more is sent on it, and
  /// ``NoAnswer`` is thrown.
  func answer<T: Sendable>(to answer: EventLoopFuture<T>, within timeout: TimeAmount) throws -> T {
    let late = Locked(false)
    let timer = eventLoop.scheduleTask(in: timeout) { [self] in
      late.withLock { $0 = true }
      let closing: EventLoopFuture<Void> = close()
      _ = closing
    }
    defer { timer.cancel() }
    do {
      return try answer.wait()
    } catch {
      if late.withLock({ $0 }) { throw NoAnswer(timeout: timeout) }
      throw error
    }
  }
}

extension PostgresStore.Location {
  /// A new connection within `timeout` (its TCP connection, TLS and PostgreSQL's start-up
  /// together: a peer that accepts and never answers is given up, ``NoAnswer``); a
  /// connection that comes after is closed.
  func connect(on eventLoop: any EventLoop, logger: Logger, within timeout: TimeAmount) throws
    -> PostgresConnection
  {
    let result = eventLoop.makePromise(of: PostgresConnection.self)
    let connecting = connect(on: eventLoop, logger: logger)
    let timer = eventLoop.scheduleTask(in: timeout) {
      result.fail(NoAnswer(timeout: timeout))
    }
    // Both on `eventLoop`: whichever comes first completes the promise (a second completion
    // is ignored); a late connection is closed.
    connecting.whenComplete { outcome in
      timer.cancel()
      switch outcome {
      case .success(let c):
        result.futureResult.whenFailure { _ in
          let closing: EventLoopFuture<Void> = c.close()
          _ = closing
        }
        result.succeed(c)
      case .failure(let e): result.fail(e)
      }
    }
    return try result.futureResult.wait()
  }
}

/// PostgreSQL left a connection, a query or a commit unanswered for the store's
/// ``PostgresStore/answerTimeout``: the connection was dropped.
struct NoAnswer: Error, CustomStringConvertible {
  var timeout: TimeAmount
  var description: String {
    "no answer within \(timeout.nanoseconds / 1_000_000) ms (the connection was dropped)"
  }
}
