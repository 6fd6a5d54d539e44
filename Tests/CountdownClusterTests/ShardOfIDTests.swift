// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Testing

@testable import CountdownCluster

@Suite("Which shard an id belongs to")
struct ShardOfIDTests {
  @Test("FNV-1a's published test vectors, and the shards they give (fixed across versions)")
  func vectors() {
    // FNV-1a 64-bit of "" and "a": the function's published vectors (the offset basis, and
    // 0xaf63dc4c8601ec8c); the others computed by an independent implementation (Python).
    #expect(ShardOfID.hash("") == 0xcbf2_9ce4_8422_2325)
    #expect(ShardOfID.hash("a") == 0xaf63_dc4c_8601_ec8c)
    #expect(ShardOfID.hash("gate-B12") == 0x4821_55fd_62ec_6342)
    #expect(ShardOfID.hash("médication-1") == 0x24ea_5f4d_32f4_ebb7)
    let shards = [
      "": 37, "a": 12, "gate-B12": 2, "p4470": 40, "médication-1": 55,
      "550e8400-e29b-41d4-a716-446655440000": 8,
    ]
    for (id, shard) in shards { #expect(ShardOfID.shard(of: id, shards: 64) == shard, "\(id)") }
    #expect(ShardOfID.shard(of: "p4470", shards: 7) == 6)
  }

  @Test("Ids spread evenly: 64,000 ids over 64 shards, each within 15% of 1,000")
  func spread() {
    for ids in [(0..<64_000).map { "p\($0)" }, (0..<64_000).map { "gate-\($0 % 40)-\($0 / 40)" }] {
      var counts = [Int](repeating: 0, count: 64)
      for id in ids { counts[ShardOfID.shard(of: id, shards: 64)] += 1 }
      #expect(counts.min()! >= 850 && counts.max()! <= 1_150, "\(counts.min()!)…\(counts.max()!)")
    }
  }

  @Test("One shard, or a count below one, puts every id in shard 0")
  func oneShard() {
    for id in ["", "a", "p1"] {
      #expect(ShardOfID.shard(of: id, shards: 1) == 0)
      #expect(ShardOfID.shard(of: id, shards: 0) == 0)
    }
  }
}
