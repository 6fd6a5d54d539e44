// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownStore
import NIOCore

/// What a sender of the outbox (pushes, webhooks) has had answered and not yet handed to the
/// store's writer: gathered for up to 10 ms, so that a stream of answers costs the writer one
/// call per batch, not per answer. The writer deletes them with its next commit.
final class AnsweredBatch: @unchecked Sendable {
  // @unchecked Sendable: `seqs` and `scheduled` are touched on `eventLoop` only.
  private let writer: StoreWriter
  private let eventLoop: EventLoop
  private var seqs: [Int64] = []
  private var scheduled = false

  init(writer: StoreWriter, eventLoop: EventLoop) {
    self.writer = writer
    self.eventLoop = eventLoop
  }

  /// Adds answered outbox rows: handed over within 10 ms, at once for a full batch.
  func add(_ answered: [Int64]) {
    guard !answered.isEmpty else { return }
    seqs += answered
    if seqs.count >= 4096 { return flush() }
    guard !scheduled else { return }
    scheduled = true
    eventLoop.scheduleTask(in: .milliseconds(10)) { [self] in flush() }
  }

  /// Hands what is gathered to the writer now.
  func flush() {
    scheduled = false
    guard !seqs.isEmpty else { return }
    writer.forget(outbox: seqs)
    seqs = []
  }
}
