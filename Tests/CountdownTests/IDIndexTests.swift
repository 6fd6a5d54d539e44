// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Foundation
import Testing

@testable import Countdown

@Suite("IDIndex")
struct IDIndexTests {
  @Test("IDIndex agrees with a Dictionary under random inserts and removals")
  func idIndex() {
    var rng = SplitMix64(state: 99)
    var ids: [String] = []
    var index = IDIndex()
    index.reserveCapacity(1_000)
    // Seven eighths full exactly: 1,143 entries (not 2,048, the next power of two).
    #expect(index.table.count == 1_143)
    var model: [String: UInt32] = [:]
    var free: [UInt32] = []
    for step in 0..<20_000 {
      let id = "id\(Int.random(in: 0..<3_000, using: &rng))"
      if let slot = model[id] {
        index.remove(slot, hash: IDIndex.hash(id))
        model[id] = nil
        free.append(slot)
      } else {
        let slot: UInt32
        if let f = free.popLast() {
          slot = f
          ids[Int(f)] = id
        } else {
          slot = UInt32(ids.count)
          ids.append(id)
        }
        index.insert(slot, hash: IDIndex.hash(id))
        model[id] = slot
      }
      if step % 997 == 0 {
        for (k, v) in model { #expect(index.find(k, in: ids) == v) }
        #expect(index.find("absent", in: ids) == nil)
      }
      #expect(index.count == model.count)
    }
    for (k, v) in model { #expect(index.find(k, in: ids) == v) }
  }

  @Test("Ids that String equality calls equal hash alike; ASCII ids of every length spread")
  func idHashAgreesWithEquality() throws {
    // Equal under canonical equivalence: ASCII beside the three scalars that decompose to one
    // ASCII character, and non-ASCII texts precomposed beside decomposed.
    let equal: [(String, String)] = [
      ("gate-K7", "gate-\u{212A}7"), ("why;", "why\u{037E}"),
      ("`quoted`", "\u{1FEF}quoted\u{1FEF}"),
      ("\u{212A}\u{037E}\u{1FEF}", "K;`"),
      ("caf\u{E9}", "cafe\u{301}"), ("\u{212B}ngstr\u{F6}m", "A\u{30A}ngstro\u{308}m"),
      ("K\u{E9}", "\u{212A}e\u{301}"),
    ]
    for (a, b) in equal {
      try #require(a == b, "the premise: \(a.debugDescription) == \(b.debugDescription)")
      #expect(IDIndex.hash(a) == IDIndex.hash(b), "\(a.debugDescription) and \(b.debugDescription)")
    }
    // Found under either spelling, whichever was inserted.
    for (a, b) in equal {
      var index = IDIndex()
      index.insert(0, hash: IDIndex.hash(a))
      #expect(index.find(b, in: [a]) == 0 && index.find(a, in: [b]) == 0)
    }
    // Every length 1...140 (the word loop, both tails, the three-byte tail), each byte place:
    // changing one byte changes the hash, and 20,000 ids land in about as many values.
    for n in 1...140 {
      let base = String(repeating: "a", count: n)
      for k in 0..<n {
        var bytes = Array(base.utf8)
        bytes[k] = UInt8(ascii: "b")
        let other = String(decoding: bytes, as: UTF8.self)
        #expect(IDIndex.hash(other) != IDIndex.hash(base), "length \(n), byte \(k)")
      }
    }
    let hashes = Set((0..<20_000).map { IDIndex.hash("op\($0)") })
    #expect(hashes.count > 19_900)
    // The high bits, where probes start (a home is the hash scaled to the table's size),
    // spread as random ones would: 20,000 ids over 4,096 homes leave about 31 empty
    // (4,096 e^-4.88) and none with 20 (Poisson, mean 4.88).
    let homes = Dictionary(grouping: (0..<20_000).map { IDIndex.hash("op\($0)") >> 20 }) { $0 }
    #expect(homes.count > 4_096 - 80 && homes.values.map(\.count).max()! < 20)
  }

  @Test("IDIndex fills its table to seven eighths before it doubles, every id still found")
  func idIndexLoad() {
    var index = IDIndex()
    let ids = (0..<15).map { "load\($0)" }
    for (k, id) in ids.enumerated() {
      index.insert(UInt32(k), hash: IDIndex.hash(id))
      #expect(index.table.count == (k < 14 ? 16 : 32), "after \(k + 1) ids")
      for (j, other) in ids[...k].enumerated() { #expect(index.find(other, in: ids) == UInt32(j)) }
    }
    var reserved = IDIndex()
    reserved.reserveCapacity(114_688)
    #expect(reserved.table.count == 131_072)
    reserved.reserveCapacity(114_689)
    #expect(reserved.table.count == 131_074)
    // A smaller reservation keeps the table; ids past it double the reserved size.
    reserved.reserveCapacity(1_000)
    #expect(reserved.table.count == 131_074)
    let many = (0..<114_690).map { "r\($0)" }
    for (k, id) in many.enumerated() { reserved.insert(UInt32(k), hash: IDIndex.hash(id)) }
    #expect(reserved.table.count == 262_148)
    for k in stride(from: 0, to: many.count, by: 997) {
      #expect(reserved.find(many[k], in: many) == UInt32(k))
    }
  }

  @Test("IDIndex keeps long probe runs that wrap the table intact through removals")
  func idIndexCollisions() {
    // Hashes forced into a few homes near the table's end (homes 10 to 15 of 16: the top four
    // bits), so runs collide and wrap past 0.
    var rng = SplitMix64(state: 7)
    var ids: [String] = []
    var index = IDIndex()
    var model: [String: UInt32] = [:]
    var free: [UInt32] = []
    func hash(_ id: String) -> UInt32 {
      UInt32(10 + (id.utf8.count * 31 + Int(id.utf8.last!)) % 6) << 28
    }
    for _ in 0..<5_000 {
      let id = "c\(Int.random(in: 0..<11, using: &rng))"
      if let slot = model[id] {
        index.remove(slot, hash: hash(id))
        model[id] = nil
        free.append(slot)
      } else {
        let slot = free.popLast() ?? UInt32(ids.count)
        if Int(slot) == ids.count { ids.append(id) } else { ids[Int(slot)] = id }
        index.insert(slot, hash: hash(id))
        model[id] = slot
      }
      #expect(index.table.count == 16 && index.count == model.count)
      for k in 0..<11 {
        let id = "c\(k)"
        #expect(index.find(id, hash: hash(id), in: ids) == model[id])
      }
    }
  }

  /// Two ids whose 32-bit hashes are equal (found by hashing made-up ids: about 80,000 of them
  /// give a pair by the birthday bound).
  static func collidingIDs() -> (String, String) {
    var seen: [UInt32: String] = [:]
    var k = 0
    while true {
      let id = "c\(k)"
      let h = IDIndex.hash(id)
      if let other = seen[h] { return (other, id) }
      seen[h] = id
      k += 1
    }
  }

  @Test(
    "The index's candidate for a hash is the first entry of it in the probe run; an update and an end of the id behind a colliding one reach the right activity"
  )
  func candidateUnderCollision() throws {
    let (first, second) = Self.collidingIDs()
    let h = IDIndex.hash(first)
    #expect(IDIndex.hash(second) == h && first != second)
    var index = IDIndex()
    let ids = [first, second]
    index.insert(0, hash: h)
    index.insert(1, hash: h)
    #expect(index.candidate(h) == 0)
    #expect(index.find(second, hash: h, in: ids) == 1)
    // In the engine: the update and end of `second` start from `first`'s slot (the candidate),
    // find it is not theirs, and fall back to the probe.
    var e = ActivityEngine(now: at(0))
    try e.start(.countdown(id: first, to: at(60_000), title: "First"), at: at(0))
    try e.start(.countdown(id: second, to: at(90_000), title: "Second"), at: at(0))
    try e.update(second, ActivityUpdate(endDate: at(120_000)), at: at(1_000))
    #expect(try e.state(of: second, at: at(1_000)).endDate == at(120_000))
    #expect(try e.state(of: first, at: at(1_000)).endDate == at(60_000))
    try e.end(second, ActivityEnding(dismissal: .immediate), at: at(2_000))
    #expect(throws: CountdownError.self) { try e.state(of: second, at: at(2_000)) }
    #expect(try e.state(of: first, at: at(2_000)).phase == .active)
    try e.update(first, ActivityUpdate(endDate: at(70_000)), at: at(3_000))
    #expect(try e.state(of: first, at: at(3_000)).endDate == at(70_000))
  }
}
