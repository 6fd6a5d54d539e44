// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Which lifecycle events of other nodes a cluster node has passed on to its subscribers, by
/// the incarnation that made them (docs/cluster.md, "A node killed between a commit and its
/// relay"), so that each is passed on once whichever way it comes: on its node's own relay
/// connection, in order, or recovered from a shard's row by the node that took the shard
/// (the events its node committed and perhaps never relayed).
///
/// A pure structure. Per incarnation: the last sequence its own relay brought (every event
/// of it before that came then, or never will; nil before the first), and the recovered ones
/// after that. A node's first event is numbered 0.
struct RelayedSources {
  private var sources: [UInt64: (streamed: UInt64?, recovered: Set<UInt64>)] = [:]

  /// An event on `source`'s own relay (they come in order): whether it is new.
  mutating func streamed(_ sequence: UInt64, from source: UInt64) -> Bool {
    var s = sources[source] ?? (nil, [])
    guard s.streamed.map({ sequence > $0 }) ?? true else { return false }
    let new = !s.recovered.contains(sequence)
    s.streamed = sequence
    if !s.recovered.isEmpty { s.recovered = s.recovered.filter { $0 > sequence } }
    sources[source] = s
    return new
  }

  /// An event of `source`'s found beside a shard's rows after it lost the shard: whether it
  /// is new (not relayed by it, not recovered already).
  mutating func recovered(_ sequence: UInt64, from source: UInt64) -> Bool {
    var s = sources[source] ?? (nil, [])
    guard s.streamed.map({ sequence > $0 }) ?? true, s.recovered.insert(sequence).inserted
    else { return false }
    sources[source] = s
    return true
  }
}
