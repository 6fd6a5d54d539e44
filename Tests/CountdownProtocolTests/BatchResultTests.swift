// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownProtocol
import Testing

/// What a batch's requests are answered when its wake's commit fails: `storageFailed` for a
/// store that failed, `unavailable` naming the shard for a commit that touched a shard the
/// node had just stopped serving; requests that had failed keep their own errors.
@Suite("Batch results after a failed commit")
struct BatchResultTests {
  static let result = BatchResult(
    at: Instant(milliseconds: 1_767_225_600_000),
    items: [
      (.int(1), .ok), (.int(2), .failed(CountdownError(.notFound, "no activity has id \"x\""))),
      (nil, .started(id: "a")),
    ])

  static func codes(_ r: BatchResult) -> [CountdownError.Code?] {
    r.items.map {
      if case .failed(let e) = $0.outcome { e.code } else { nil }
    }
  }

  @Test("A store that failed: storageFailed, saying whether it may have been carried out")
  func storage() {
    let r = Self.result.storageFailed("disk full")
    #expect(Self.codes(r) == [.storageFailed, .notFound, .storageFailed])
    guard case .failed(let e) = r.items[0].outcome else { return }
    #expect(e.message.contains("disk full") && e.message.contains("was not carried out"))
    let maybe = Self.result.storageFailed("connection reset", mayHaveCommitted: true)
    guard case .failed(let m) = maybe.items[2].outcome else { return }
    #expect(m.message.contains("may or may not have been carried out"))
  }

  @Test("A shard that changed hands: unavailable naming it, nothing carried out")
  func lostShard() {
    let r = Self.result.storageFailed("shard 4 is not this node's (it serves 0, 1)", lostShard: 4)
    #expect(Self.codes(r) == [.unavailable, .notFound, .unavailable])
    guard case .failed(let e) = r.items[2].outcome else { return }
    #expect(e.message.hasPrefix("shard 4 changed hands") && e.message.contains("not carried out"))
  }
}
