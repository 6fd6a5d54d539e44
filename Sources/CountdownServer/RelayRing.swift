// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import NIOCore

/// A cluster node's recent lifecycle events as relayed to the other nodes (docs/cluster.md,
/// "Subscriptions across nodes"), each with its delivery number, so that a node whose relay
/// connection broke, or that meets this node for the first time, gets what it missed.
///
/// A pure structure: the hub appends each lifecycle event as it delivers it (ticks are not
/// kept: the next one supersedes a lost one) and asks what came after a delivery number. It
/// keeps at most `capacity` events and `byteBound` bytes, dropping the oldest.
struct RelayRing {
  /// Events kept at most.
  let capacity: Int
  /// Bytes kept at most (the lines' own bytes).
  let byteBound: Int

  private var entries: [(delivery: UInt64, line: ByteBuffer)] = []
  /// Where the oldest kept entry is in `entries` (the ones before are dropped, reclaimed in
  /// bulk).
  private var head = 0
  private(set) var byteCount = 0
  /// The delivery number the next event gets (the first is 1).
  private(set) var next: UInt64 = 1

  init(capacity: Int = 65_536, byteBound: Int = 16 << 20) {
    precondition(capacity > 0 && byteBound > 0, "a ring keeps something")
    self.capacity = capacity
    self.byteBound = byteBound
  }

  /// Events kept now.
  var count: Int { entries.count - head }

  /// Numbers the next lifecycle event, keeps its relay line, and returns its number.
  mutating func append(_ line: ByteBuffer) -> UInt64 {
    let d = next
    next += 1
    entries.append((d, line))
    byteCount += line.readableBytes
    while count > capacity || (byteCount > byteBound && count > 1) {
      byteCount -= entries[head].line.readableBytes
      head += 1
    }
    if head > 1024 && head * 2 > entries.count {
      entries.removeFirst(head)
      head = 0
    }
    checkInvariants()
    return d
  }

  /// The lines of the events after delivery number `after`, oldest first, and whether some of
  /// them are no longer kept (a gap: the relay misses them).
  func lines(after: UInt64) -> (lines: [ByteBuffer], gap: Bool) {
    guard after + 1 < next else { return ([], false) }
    let oldest = count > 0 ? entries[head].delivery : next
    var out: [ByteBuffer] = []
    out.reserveCapacity(Int(next - max(after + 1, oldest)))
    for e in entries[head...] where e.delivery > after { out.append(e.line) }
    return (out, after + 1 < oldest)
  }

  /// Debug and test builds: the kept entries are numbered consecutively up to `next`, within
  /// both bounds, and counted right. O(1) for the ends; the byte count is checked in full
  /// every 4096 appends.
  func checkInvariants() {
    #if DEBUG
      precondition(count <= capacity, "the ring keeps \(count) events, over \(capacity)")
      precondition(byteCount <= byteBound || count <= 1, "the ring keeps too many bytes")
      if count > 0 {
        precondition(entries.last!.delivery == next - 1, "the newest entry is not next - 1")
        precondition(
          entries.last!.delivery - entries[head].delivery == UInt64(count - 1),
          "the kept entries are not consecutive")
      }
      if next % 4096 == 0 {
        let counted = entries[head...].reduce(0) { $0 + $1.line.readableBytes }
        precondition(counted == byteCount, "byteCount \(byteCount), entries hold \(counted)")
      }
    #endif
  }
}
