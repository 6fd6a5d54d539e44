// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Which shard an activity belongs to (docs/cluster.md, "Shards, leases and the fence"): the 64-bit FNV-1a hash of the id's UTF-8 bytes, modulo
/// the cluster's shard count.
///
/// Fixed for good: every node, version and platform must put an id in the same shard, so it
/// never uses Swift's `Hasher` (seeded anew in each process). FNV-1a is the published function
/// (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`); its test vectors pin it.
package enum ShardOfID {
  /// The 64-bit FNV-1a hash of `id`'s UTF-8 bytes.
  package static func hash(_ id: String) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in id.utf8 {
      h ^= UInt64(b)
      h = h &* 0x0000_0100_0000_01b3
    }
    return h
  }

  /// The shard of `id` among `shards` (at least 1; the count the cluster's table fixed).
  package static func shard(of id: String, shards: Int) -> Int {
    Int(hash(id) % UInt64(max(1, shards)))
  }
}
