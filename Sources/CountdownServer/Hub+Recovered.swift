// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import NIOCore

/// Events passed on from a shard's row of unsettled events (docs/cluster.md, "A node killed
/// between a commit and its relay", "Faults short of death"): another node's, recovered by
/// this one, and this node's own whose commit it took for failed.
extension Hub {
  /// Lifecycle events that another node (`source`, by incarnation) committed and may never have
  /// relayed, found beside a shard's rows when this node took it (docs/cluster.md, "A node
  /// killed between a commit and its relay"), each with its JSON line (and newline): to this
  /// node's subscribers that take them (``relayed(from:sequence:id:kind:line:recovered:)``),
  /// then kept in the ring and written to every relaying node as `~SOURCE SEQUENCE DELIVERY
  /// JSON` lines.
  func relayRecovered(
    from source: UInt64,
    _ events: [(sequence: UInt64, id: String, kind: ActivityEvent.Kind, line: ByteBuffer)]
  ) {
    eventLoop.assertInEventLoop()
    guard let relays, !events.isEmpty else { return }
    // Their activities' rows were taken with the shard (``addGroups(_:)``): their groups are known.
    for e in events {
      relayed(
        from: source, sequence: e.sequence, id: e.id, kind: e.kind, group: groupOf[e.id],
        line: e.line, recovered: true)
    }
    relays.recovered(from: source, events) { self.groupOf[$0] }
    checkInvariants()
  }

  /// This node's own events that a shard's row shows committed (their sequence numbers):
  /// those whose commit this node took for failed (``UndecidedEvents``) are delivered now, as
  /// they would have been at the commit's end, to its subscribers and to every node relaying
  /// its events, with their own sequence numbers; the others it delivered already. Returns how
  /// many it delivered.
  @discardableResult
  func landed(_ sequences: [UInt64]) -> Int {
    eventLoop.assertInEventLoop()
    var found: [CommitGate.Numbered] = []
    for s in sequences.sorted() {
      if let e = undecided.take(s) { found.append((s, e)) }
    }
    guard !found.isEmpty else { return 0 }
    deliver(found.map(\.event)) { found[$0].sequence }
    checkInvariants()
    return found.count
  }
}
