// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Testing

@testable import CountdownLoop

/// The wake's event array, handed to the stream and the batch callback and then emptied: a
/// burst does not leave every later wake allocating room for the burst.
@Suite("EventBatch")
struct EventBatchTests {
  func event(_ n: Int) -> ActivityEvent {
    ActivityEvent(
      at: Instant(milliseconds: Int64(n)), kind: .tick, id: "a\(n)",
      handle: ActivityHandle(slot: UInt32(n), generation: 0), activityKind: .countdown,
      value: Int64(n))
  }

  @Test("An ordinary wake keeps its room; after a burst of 20k events the room goes back to 1024")
  func roomAfterABurst() {
    let batch = EventBatch(collecting: true)
    #expect(batch.events.capacity >= EventBatch.room)
    for n in 0..<100 { batch.events.append(event(n)) }
    var handed = batch.events  // what a consumer keeps
    batch.handedOn()
    #expect(batch.events.isEmpty && batch.events.capacity >= EventBatch.room)
    #expect(handed.count == 100, "the consumer's array is its own")
    for n in 0..<20_000 { batch.events.append(event(n)) }
    handed = batch.events
    batch.handedOn()
    #expect(batch.events.isEmpty)
    #expect(batch.events.capacity >= EventBatch.room)
    #expect(
      batch.events.capacity <= 4 * EventBatch.room,
      "room for \(batch.events.capacity) events after a burst")
    #expect(handed.count == 20_000 && handed[19_999] == event(19_999))
  }
}
