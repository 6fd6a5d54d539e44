// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownProtocol
import Testing

/// What a batch's requests are answered when its wake's commit fails: `storageFailed` for a
/// store that failed, `unavailable` naming the shard for a commit that touched a shard the
/// node had just stopped serving; requests that had failed keep their own errors, and an
/// `auth` (taken by its connection as it was read) stays answered `ok`.
@Suite("Batch results after a failed commit")
struct BatchResultTests {
  static let result = BatchResult(
    at: Instant(milliseconds: 1_767_225_600_000),
    items: [
      (.int(1), .ok), (.int(2), .failed(CountdownError(.notFound, "no activity has id \"x\""))),
      (nil, .started(id: "a")), (.int(4), .authenticated),
    ])

  static func codes(_ r: BatchResult) -> [CountdownError.Code?] {
    r.items.map {
      if case .failed(let e) = $0.outcome { e.code } else { nil }
    }
  }

  @Test("A store that failed: storageFailed, saying whether it may have been carried out")
  func storage() {
    let r = Self.result.storageFailed("disk full")
    #expect(Self.codes(r) == [.storageFailed, .notFound, .storageFailed, nil])
    guard case .failed(let e) = r.items[0].outcome else { return }
    #expect(e.message.contains("disk full") && e.message.contains("was not carried out"))
    let maybe = Self.result.storageFailed("connection reset", mayHaveCommitted: true)
    guard case .failed(let m) = maybe.items[2].outcome else { return }
    #expect(m.message.contains("may or may not have been carried out"))
  }

  @Test("A shard that changed hands: unavailable naming it, nothing carried out")
  func lostShard() {
    let r = Self.result.storageFailed("shard 4 is not this node's (it serves 0, 1)", lostShard: 4)
    #expect(Self.codes(r) == [.unavailable, .notFound, .unavailable, nil])
    guard case .failed(let e) = r.items[2].outcome else { return }
    #expect(e.message.hasPrefix("shard 4 changed hands") && e.message.contains("not carried out"))
  }

  @Test(
    "An auth in a wake whose commit failed: still answered ok, as its connection took the key (another node reads a failed answer as its cluster token refused)"
  )
  func authStands() {
    for failed in [
      Self.result.storageFailed("disk full"),
      Self.result.storageFailed("connection reset", mayHaveCommitted: true),
      Self.result.storageFailed("shard 4 is not this node's", lostShard: 4),
    ] {
      var w = ReplyWriter(formatter: TimerFormatter(style: .timer))
      w.reply(failed.items[3].rid, failed.items[3].outcome, at: failed.at)
      let line = String(decoding: w.take(), as: UTF8.self)
      #expect(line.hasPrefix(#"{"rid":4,"ok":true"#), "\(line)")
    }
  }
}
