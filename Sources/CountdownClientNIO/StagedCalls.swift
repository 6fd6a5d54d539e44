// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient

/// Calls made off the event loop and not yet handed to it: the first call staged schedules
/// one hop, and the hop takes every call staged by then, so that calls made together from
/// many tasks cost one hop, one buffer and one flush, not one each.
final class StagedCalls: Sendable {
  /// Who waits for the replies of a staged item.
  enum Waiter: Sendable {
    /// One request's task.
    case one(CheckedContinuation<ServiceReply, any Error>)
    /// A batch's task, for all its replies together.
    case many(CheckedContinuation<[ServiceReply], any Error>)

    func fail(_ error: any Error) {
      switch self {
      case .one(let c): c.resume(throwing: error)
      case .many(let c): c.resume(throwing: error)
      }
    }
  }

  /// A request, or a batch of `count` numbered from `id` on, with its lines.
  struct Item: Sendable {
    var id: UInt64
    var count: Int
    var waiter: Waiter
    var bytes: [UInt8]
  }

  private struct Batch {
    var items: [Item] = []
    var scheduled = false
  }

  private let batch = Locked(Batch())

  /// Stages an item; true when the caller must schedule the hop (none is pending).
  func add(_ item: Item) -> Bool {
    batch.withLock { b in
      b.items.append(item)
      if b.scheduled { return false }
      b.scheduled = true
      return true
    }
  }

  /// Everything staged, for the hop that now runs on the event loop.
  func take() -> [Item] {
    batch.withLock { b in
      b.scheduled = false
      defer { b.items.removeAll(keepingCapacity: true) }
      return b.items
    }
  }

  /// Takes back the item numbered `id` if it was not handed on yet (its requests are then
  /// never written).
  func remove(id: UInt64) -> Waiter? {
    batch.withLock { b in
      guard let k = b.items.firstIndex(where: { $0.id == id }) else { return nil }
      return b.items.remove(at: k).waiter
    }
  }
}
