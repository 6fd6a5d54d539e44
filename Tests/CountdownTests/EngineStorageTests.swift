// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownTestSupport
import Foundation
import Testing

@testable import Countdown

@Suite("Engine storage: the wheel, reservations, copies, records")
struct EngineStorageTests {
  @Test("An update that keeps the phase and the next value leaves the wheel entry in place")
  func updateKeepsWheelEntry() throws {
    var (e, r) = makeEngine()
    // Three countdowns on one phase (ends 400 ms past whole seconds), started in order.
    for (k, id) in ["a", "b", "c"].enumerated() {
      try e.start(.countdown(id: id, to: at(Int64(10_400 + k * 1_000)), title: id), at: t0)
    }
    let b = PhaseWheel.bucket(of: at(400).milliseconds)
    func entries() -> [String] {
      e.wheel.entries(inBucket: b).filter { $0.slot != PhaseWheel.tombstone }.map(\.id)
    }
    #expect(entries() == ["a", "b", "c"])
    // Content only, and an end date that keeps the phase and the next value: no move.
    try e.update("a", ActivityUpdate(content: ["title": .string("A2")]), at: at(100))
    try e.update("b", ActivityUpdate(endDate: at(11_400)), at: at(200))
    #expect(entries() == ["a", "b", "c"] && e.wheel.header(b).sorted)
    #expect(e.wheel.header(b).count == 3, "no tombstone left behind")
    // A new end a second later keeps the phase but not the value: the entry moves.
    try e.update("a", ActivityUpdate(endDate: at(11_400)), at: at(300))
    #expect(entries() == ["b", "c", "a"] && !e.wheel.header(b).sorted)
    e.checkInvariants()
    // Ticks still come in start order with the right values.
    try e.advance(to: at(400))
    #expect(r.lines.suffix(3) == ["400 tick a 11", "400 tick b 11", "400 tick c 12"])
  }

  @Test("The wheel carries a countdown's expiry to its last second, then the heap has it")
  func expiryCarriedByTheWheel() throws {
    var (e, r) = makeEngine()
    // "a" ends at 10 s; "s" goes stale at 9 s, the instant "a" shows 1, so that walk shares
    // its instant with a deadline (the walk that interleaves the heap); "b" ends at 20.5 s,
    // its last-but-one tick in a walk with no deadline at its instant.
    try e.start(.countdown(id: "a", to: at(10_000), title: "A"), at: t0)
    var stale = ActivityRequest.elapsed(id: "s", title: "S")
    stale.staleDate = at(9_000)
    try e.start(stale, at: t0)
    var b = ActivityRequest.countdown(id: "b", to: at(20_500), title: "B")
    b.endOnExpiry = .immediate
    try e.start(b, at: t0)
    let a = e.handle(for: "a")!.slot
    let bSlot = e.handle(for: "b")!.slot
    #expect(e.heap.index[Int(a)] < 0 && e.heap.index[Int(bSlot)] < 0, "no heap entry at start")
    try e.advance(to: at(8_999))
    #expect(e.heap.index[Int(a)] < 0)
    e.checkInvariants()
    try e.advance(to: at(9_000))
    #expect(e.heap.index[Int(a)] >= 0, "armed in the walk at 9 s, for 10 s")
    e.checkInvariants()
    try e.advance(to: at(10_000))
    #expect(r.lines([.expired, .stale]) == ["9000 stale s", "10000 expired a"])
    #expect(r.lines.contains("10000 tick a 0"))
    try e.advance(to: at(20_500))
    #expect(
      r.lines([.expired, .ended, .dismissed]).suffix(3) == [
        "20500 expired b", "20500 ended b 0 expired", "20500 dismissed b",
      ])
    e.checkInvariants()
  }

  @Test("Reserved storage behaves like grown storage")
  func reserved() throws {
    var (a, ra) = makeEngine(EngineOptions(reservedActivities: 5_000))
    var (b, rb) = makeEngine()
    for k in 0..<3_000 {
      let r = ActivityRequest.countdown(id: "r\(k)", to: at(Int64(1_000 + k * 7)), title: "R")
      try a.start(r, at: t0)
      try b.start(r, at: t0)
    }
    try a.advance(to: at(30_000))
    try b.advance(to: at(30_000))
    #expect(a.slots.capacity >= 5_000 && a.count == 3_000)
    #expect(ra.lines == rb.lines && ra.lines.count > 9_000)
  }

  @Test("A large reservation gives each wheel bucket its share of room; a small one none")
  func reservedBuckets() {
    let (large, _) = makeEngine(EngineOptions(reservedActivities: 200_000))
    // 200 an instant on average, room for the spread of random phases.
    #expect((0..<PhaseWheel.bucketCount).allSatisfy { large.wheel.capacity(ofBucket: $0) >= 284 })
    let (small, _) = makeEngine(EngineOptions(reservedActivities: 5_000))
    #expect((0..<PhaseWheel.bucketCount).allSatisfy { small.wheel.capacity(ofBucket: $0) == 0 })
  }

  @Test("A copied engine's wheel is its own: walks, moves and ends in the copy leave it be")
  func copiedWheel() throws {
    // 300 countdowns on spread phases, every seventh ended (tombstones in their buckets).
    func build() throws -> (ActivityEngine, Recorder) {
      var (e, r) = makeEngine()
      for k in 0..<300 {
        try e.start(.countdown(id: "c\(k)", to: at(Int64(4_000 + k * 37)), title: "c"), at: t0)
      }
      for k in stride(from: 0, to: 300, by: 7) { try e.end("c\(k)", at: at(1)) }
      return (e, r)
    }
    var (a, ra) = try build()
    var (reference, rr) = try build()
    var b = a
    let rb = Recorder()
    b.onEvent = { rb.events.append($0) }
    // The copy walks every bucket for 6 s, moves entries, ends and starts activities.
    for s in 1...6 {
      try b.update(
        "c\(s)", ActivityUpdate(endDate: at(Int64(9_000 + s * 111))), at: at(Int64(s * 1_000)))
      try b.end("c\([101, 102, 103, 104, 106, 108][s - 1])", at: at(Int64(s * 1_000 + 1)))
      try b.start(.countdown(id: "n\(s)", to: at(20_000), title: "n"), at: at(Int64(s * 1_000 + 2)))
    }
    try b.advance(to: at(12_000))
    b.checkInvariants()
    #expect(rb.events.count > 1_000)
    // The original runs as an engine that was never copied.
    ra.events.removeAll()
    rr.events.removeAll()
    a.checkInvariants()
    try a.advance(to: at(16_000))
    try reference.advance(to: at(16_000))
    a.checkInvariants()
    #expect(ra.events.count > 1_000 && ra.events == rr.events)
  }

  @Test("A copied engine is an independent value, side boxes included")
  func copies() throws {
    var (a, _) = makeEngine()
    var r = ActivityRequest.countdown(id: "c", to: at(60_000), title: "C")
    r.milestones = [Milestone(name: "m", atMs: 1_000)]
    try a.start(r, at: t0)
    var b = a
    try b.update("c", ActivityUpdate(milestones: .remove, timestamp: at(5)), at: at(10))
    #expect(a.cold[0].milestones.count == 1 && a.cold[0].lastTimestamp == nil)
    #expect(b.cold[0].milestones.isEmpty && b.cold[0].lastTimestamp == at(5).milliseconds)
  }

  @Test("A title kept alone reads back as the canonical text, through updates and a restore")
  func titleKeptAlone() throws {
    var (a, _) = makeEngine()
    let limit = ActivityContent.maximumEncodedSize
    // Plain, needing escapes, non-ASCII, long enough to leave the small-string form, and the
    // largest a title alone may be.
    let titles = [
      "A", "Gate \"12\"\n", "Départ 🚆", String(repeating: "x", count: 40),
      String(repeating: "y", count: limit - 12),
    ]
    func expectCanonical(_ id: String, _ content: ActivityContent) throws {
      let text = content.json.canonicalText
      #expect(try a.state(of: id, at: a.now).contentJSON == text)
      #expect(try a.content(of: id) == content)
      #expect(a.snapshot(of: [id]).activities.first?.content == text)
    }
    for (k, title) in titles.enumerated() {
      let id = "t\(k)"
      try a.start(.countdown(id: id, to: at(60_000), title: title), at: t0)
      let kept = a.cold[Int(try a.lookup(id))].content
      #expect(kept.isTitle == !title.contains("\""), "\(title.prefix(12))")
      try expectCanonical(id, ActivityContent(title: title))
      // A new title alone, then a field: the kept form follows the content.
      let next = titles[(k + 1) % titles.count]
      try a.update(id, ActivityUpdate(content: ["title": .string(next)]), at: t0)
      try expectCanonical(id, ActivityContent(title: next))
      let before = a.cold[Int(try a.lookup(id))].content
      if next.utf8.count + 12 == limit {
        // No room for a subtitle beside the largest title: refused, nothing changed.
        #expect(throws: CountdownError.self) {
          try a.update(id, ActivityUpdate(content: ["subtitle": .string("S")]), at: t0)
        }
        #expect(a.cold[Int(try a.lookup(id))].content == before)
        continue
      }
      try a.update(id, ActivityUpdate(content: ["subtitle": .string("S")]), at: t0)
      #expect(!a.cold[Int(try a.lookup(id))].content.isTitle)
      try expectCanonical(id, ActivityContent(title: next, subtitle: "S"))
      try a.update(id, ActivityUpdate(content: ["subtitle": .null]), at: t0)
      #expect(a.cold[Int(try a.lookup(id))].content == before)
      try expectCanonical(id, ActivityContent(title: next))
    }
    // One byte more than the limit allows is refused, as the writer refuses it.
    let tooLong = String(repeating: "z", count: limit - 11)
    #expect(throws: CountdownError.self) {
      try a.start(.countdown(id: "long", to: at(60_000), title: tooLong), at: t0)
    }
    #expect(a.count == titles.count)
    let restored = try ActivityEngine(restoring: a.snapshot())
    for k in titles.indices {
      #expect(try restored.content(of: "t\(k)") == a.content(of: "t\(k)"))
    }
    a.checkInvariants()
  }

  @Test("The cold record's word: each field set alone leaves the others as they were")
  func endWordFields() {
    var w = ActivityEngine.EndWord(contentIsTitle: true)
    for reason in EndReason.allCases {
      for (delta, delay) in [
        (Int32.min + 1, 0), (-1, 1), (0, ActivityEngine.EndWord.maxDismissDelay),
        (Int32.max, 14_400_000),
      ] {
        w.endDelta = delta
        w.dismissDelay = UInt32(delay)
        w.endReason = reason
        w.ended = true
        #expect(w.endDelta == delta && w.dismissDelay == UInt32(delay) && w.endReason == reason)
        #expect(w.contentIsTitle && w.ended && !w.inBox)
        w.contentIsTitle = false
        w.inBox = true
        #expect(w.endDelta == delta && w.dismissDelay == UInt32(delay) && w.endReason == reason)
        #expect(!w.contentIsTitle && w.ended && w.inBox)
        w.contentIsTitle = true
        w.inBox = false
      }
    }
    #expect(MemoryLayout<ActivityEngine.ColdState>.stride == 40)
    #expect(MemoryLayout<ActivityEngine.Slot>.stride == 40, "the slot record holds no pause")
  }

  @Test(
    "An elapsed timer paused and resumed: its value, start date, a moved start, a restore and its ticks"
  )
  func elapsedPausedAndResumed() throws {
    var (e, events) = makeEngine()
    try e.start(.elapsed(id: "e", title: "E"), at: t0)
    try e.pause("e", at: at(10_000))
    try e.resume("e", at: at(70_000))
    var s = try e.state(of: "e", at: at(100_500))
    // 100.5 s after its start, 60 s of it paused: 40.5 s shown as 40; its start as moved.
    #expect(s.value == 40 && s.milliseconds == 40_500 && s.startDate == at(60_000))
    // A new start date keeps the time paused: its origin is 60 s after it, as it was.
    try e.update("e", ActivityUpdate(startDate: .set(at(5_000))), at: at(100_500))
    s = try e.state(of: "e", at: at(100_500))
    #expect(s.startDate == at(65_000) && s.milliseconds == 35_500)
    let stored = try #require(e.snapshot(of: ["e"]).activities.first)
    #expect(stored.anchor == at(5_000).milliseconds && stored.pausedTotal == 60_000)
    #expect(stored.elapsedOrigin == at(65_000).milliseconds)
    var restored = try ActivityEngine(restoring: e.snapshot())
    #expect(try restored.state(of: "e", at: at(100_500)) == s)
    #expect(restored.snapshot() == e.snapshot())
    // Its ticks fall on its origin's millisecond: at 66 s, 67 s, … showing 1, 2, …
    events.clear()
    try e.advance(to: at(102_000))
    #expect(events.lines([.tick]) == ["101000 tick e 36", "102000 tick e 37"])
    e.checkInvariants()
  }

  @Test(
    "The frozen instant of each phase (never paused, paused, resumed, ended running or paused): stored rows carry it, and a restore gives it back"
  )
  func frozenInstants() throws {
    var (e, _) = makeEngine()
    for id in ["fresh", "resumed", "paused", "ended", "endedPaused", "endedResumed"] {
      try e.start(.countdown(id: id, to: at(600_000), title: id), at: t0)
    }
    for id in ["resumed", "paused", "endedPaused", "endedResumed"] {
      try e.pause(id, at: at(10_000))
    }
    for id in ["resumed", "endedResumed"] { try e.resume(id, at: at(25_000)) }
    for id in ["ended", "endedPaused", "endedResumed"] {
      try e.end(id, ActivityEnding(dismissal: .after(at(3_600_000))), at: at(40_000))
    }
    let rows = Dictionary(
      uniqueKeysWithValues: e.snapshot().activities.map { ($0.id, $0) })
    func row(_ id: String) throws -> StoredActivity { try #require(rows[id]) }
    // Never paused: its start. Paused, or resumed since: its last pause. Ended while running:
    // its end; while paused: its pause.
    #expect(try row("fresh").frozenAt == t0.milliseconds)
    #expect(try row("resumed").frozenAt == at(10_000).milliseconds)
    #expect(try row("paused").frozenAt == at(10_000).milliseconds)
    #expect(try row("ended").frozenAt == at(40_000).milliseconds)
    #expect(try row("endedPaused").frozenAt == at(10_000).milliseconds)
    #expect(try row("endedResumed").frozenAt == at(40_000).milliseconds)
    // A resumed countdown's end moved by the 15 s paused, and its row says both.
    #expect(try row("resumed").anchor == at(615_000).milliseconds)
    #expect(try row("resumed").pausedTotal == 15_000)
    // Values: frozen at the pause or the end, read so after a restore too.
    var restored = try ActivityEngine(restoring: e.snapshot())
    #expect(restored.snapshot() == e.snapshot())
    for var engine in [e, restored] {
      #expect(try engine.state(of: "paused", at: at(50_000)).value == 590)
      #expect(try engine.state(of: "endedPaused", at: at(50_000)).value == 590)
      #expect(try engine.state(of: "ended", at: at(50_000)).value == 560)
      #expect(try engine.state(of: "endedResumed", at: at(50_000)).value == 575)
      #expect(try engine.state(of: "resumed", at: at(50_000)).value == 565)
      #expect(try engine.state(of: "paused", at: at(50_000)).pausedAt == at(10_000))
    }
    // A row from an older store whose running activity froze at some other instant keeps it.
    var odd = e.snapshot()
    let k = try #require(odd.activities.firstIndex { $0.id == "fresh" })
    odd.activities[k].frozenAt = at(1_234).milliseconds
    #expect(try ActivityEngine(restoring: odd).snapshot() == odd)
    // Resuming the restored paused one moves its end by the time it stayed paused.
    try restored.resume("paused", at: at(70_000))
    #expect(try restored.state(of: "paused", at: at(70_000)).endDate == at(660_000))
    restored.checkInvariants()
    e.checkInvariants()
  }

  @Test(
    "An end kept in the cold record's word, or in the side box when 24 days or more after the start; both read back, dismiss on time and survive a restore"
  )
  func endsNearAndFar() async throws {
    try await onThread(computing: true) {
      var (e, events) = makeEngine()
      let day: Int64 = 86_400_000
      try e.start(.elapsed(id: "near", title: "N"), at: t0)
      try e.start(.elapsed(id: "far", title: "F"), at: t0)
      try e.start(.elapsed(id: "paused", title: "P"), at: t0)
      try e.pause("paused", at: at(1_000))
      try e.end("near", ActivityEnding(dismissal: .default), at: at(3_600_000))
      #expect(!e.cold[Int(try e.lookup("near"))].hasExtras)
      let near = try e.state(of: "near", at: e.now)
      #expect(near.endedAt == at(3_600_000) && near.endReason == .requested)
      var nearRestored = try ActivityEngine(restoring: e.snapshot())
      #expect(try nearRestored.state(of: "near", at: e.now) == near)
      // 30 days on: past what the word's 32 bits of milliseconds hold.
      try e.advance(to: at(30 * day))
      try e.end("far", ActivityEnding(dismissal: .after(at(30 * day + 60_000))), at: at(30 * day))
      try e.end("paused", at: at(30 * day + 5))
      for id in ["far", "paused"] { #expect(e.cold[Int(try e.lookup(id))].hasExtras, "\(id)") }
      let far = try e.state(of: "far", at: e.now)
      let paused = try e.state(of: "paused", at: e.now)
      #expect(far.endedAt == at(30 * day) && far.endReason == .requested)
      #expect(paused.endedAt == at(30 * day + 5) && paused.value == 1, "\(paused)")
      var restored = try ActivityEngine(restoring: e.snapshot())
      #expect(restored.snapshot() == e.snapshot())
      #expect(try restored.state(of: "far", at: e.now) == far)
      e.checkInvariants()
      // "near" was dismissed 4 hours after its end (within the 30 days); "far" a minute after its
      // end, "paused" 4 hours after its.
      try e.advance(to: at(30 * day + 4 * 3_600_000 + 5))
      let dismissed = events.lines([.dismissed])
      #expect(
        dismissed == [
          "\(4 * 3_600_000 + 3_600_000) dismissed near", "\(30 * day + 60_000) dismissed far",
          "\(30 * day + 4 * 3_600_000 + 5) dismissed paused",
        ], "\(dismissed)")
    }
  }

  @Test("A reservation of 4 MiB or more keeps the elements and copies, and is advised huge")
  func reserveAdvised() throws {
    // Heap-allocated strings, moved into the new buffer: neither they nor a prior copy of the
    // array may be released.
    var a = (0..<300_000).map { "an id long enough for the heap \($0)" }
    let before = a
    a.reserveAdvised(400_000, vacated: "")
    #expect(a.capacity >= 400_000 && a == before)
    a[7] = "changed"
    #expect(before[7] == "an id long enough for the heap 7" && a[7] == "changed")
    var small = [1, 2, 3]
    small.reserveAdvised(10, vacated: 0)
    #expect(small.capacity >= 10 && small == [1, 2, 3])

    // 150,000 records of each kind: both buffers past the 4 MiB of the advice.
    let (e, _) = makeEngine(EngineOptions(reservedActivities: 150_000))
    #expect(e.slots.capacity >= 150_000 && e.cold.capacity >= 150_000)
    try expectRecordsAdvised(e)
  }

  @Test("Starts grow the records one at a time, into buffers advised huge; ends' slots are reused")
  func recordsGrowByStarts() async throws {
    try await onThread(computing: true) {
      var e = ActivityEngine(now: t0)
      let n = 120_000
      for k in 0..<n {
        try e.start(
          .countdown(id: "g\(k)", to: t0.advanced(by: 60_000 + Int64(k)), title: "G"), at: t0)
        // No record is written ahead of the start that fills it.
        if k % 9_973 == 0 { #expect(e.slots.count == k + 1 && e.cold.count == k + 1) }
      }
      #expect(e.slots.count == n && e.cold.count == n && e.count == n)
      e.checkInvariants()
      // Past 4 MiB the records doubled into advised buffers: neither append grew them alone.
      try expectRecordsAdvised(e)
      for k in stride(from: 0, to: n, by: 3) {
        try e.end("g\(k)", ActivityEnding(dismissal: .immediate), at: t0)
      }
      for k in 0..<n / 3 {
        try e.start(.countdown(id: "h\(k)", to: t0.advanced(by: 90_000), title: "H"), at: t0)
      }
      #expect(e.slots.count == n && e.count == n)
      e.checkInvariants()
      #expect(try e.state(of: "h0", at: t0).contentJSON == #"{"title":"H"}"#)
      #expect(errorCode { _ = try e.state(of: "g0", at: t0) } == .notFound)
    }
  }
}

/// Expects the first whole 2 MiB extent of `e`'s slot and cold record buffers to carry the
/// kernel's `hg` flag (the advice, recorded whatever THP's mode).
func expectRecordsAdvised(_ e: ActivityEngine) throws {
  #if os(Linux)
    guard FileManager.default.fileExists(atPath: "/sys/kernel/mm/transparent_hugepage") else {
      return  // A kernel without THP takes no advice.
    }
    for (name, base, bytes) in [
      (
        "slots", e.slots.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) },
        e.slots.capacity * MemoryLayout<ActivityEngine.Slot>.stride
      ),
      (
        "cold", e.cold.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) },
        e.cold.capacity * MemoryLayout<ActivityEngine.ColdState>.stride
      ),
    ] {
      let huge: UInt = 2 << 20
      let extent = (base + huge - 1) & ~(huge - 1)
      #expect(extent + huge <= base + UInt(bytes))
      #expect(try mappingFlags(containing: extent).contains("hg"), "\(name)")
    }
  #endif
}

/// The `VmFlags` of the mapping of this process that holds `address` (`/proc/self/smaps`).
func mappingFlags(containing address: UInt) throws -> [Substring] {
  // Read to its end: the file's size is 0, and one read gives a few kilobytes of it.
  let file = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
  let smaps = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
  var inside = false
  for line in smaps.split(separator: "\n") {
    if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
      let lo = UInt(line[..<dash], radix: 16),
      let hi = UInt(line[line.index(after: dash)..<space], radix: 16)
    {
      inside = lo <= address && address < hi
    } else if inside, line.hasPrefix("VmFlags:") {
      return line.dropFirst("VmFlags:".count).split(separator: " ")
    }
  }
  return []
}

@Suite("Engine footprint: where an activity's bytes go")
struct EngineFootprintTests {
  func part(_ f: EngineFootprint, _ name: String) -> EngineFootprint.Part {
    f.parts.first { $0.name == name }!
  }

  @Test("Records count per slot, ids and content out of line only when longer than 15 bytes")
  func partsFollowTheStorage() throws {
    var (e, _) = makeEngine()
    try e.start(.countdown(id: "short", to: at(60_000), title: "A"), at: t0)
    let long = String(repeating: "x", count: 40)
    try e.start(.countdown(id: long, to: at(60_000), title: long), at: t0)
    let generated = try e.start(.countdown(to: at(60_000), title: "B"), at: t0)
    #expect(generated.utf8.count > 15, "the engine's ids are UUID text")
    var f = e.footprint
    #expect(f.activities == 3)
    let slot = MemoryLayout<ActivityEngine.Slot>.stride
    #expect(part(f, "slot records").used == 3 * slot)
    #expect(part(f, "slot records").allocated >= part(f, "slot records").used)
    // "short" is inline; the 40-byte id and the generated one have chunks of their own.
    let chunk40 = ActivityEngine.outOfLineBytes(long)
    #expect(chunk40 == 96, "32 header + 40 + 1 + 8, rounded to 16")
    #expect(
      part(f, "ids (out of line)").used == chunk40 + ActivityEngine.outOfLineBytes(generated))
    #expect(part(f, "content text (out of line)").used == chunk40)
    #expect(part(f, "side boxes").used == 0)
    #expect(part(f, "wheel entries").used > 3 * MemoryLayout<PhaseWheel.Entry>.stride)
    #expect(f.used == f.parts.reduce(0) { $0 + $1.used } && f.allocated >= f.used)
    // A dismissed activity's id and content no longer count; its slot is free for reuse.
    try e.end(long, ActivityEnding(dismissal: .immediate), at: at(1_000))
    f = e.footprint
    #expect(f.activities == 2)
    #expect(part(f, "ids (out of line)").used == ActivityEngine.outOfLineBytes(generated))
    #expect(part(f, "content text (out of line)").used == 0)
    #expect(part(f, "free slots").used == MemoryLayout<UInt32>.stride)
    // Milestones put a side box in the cold record.
    var r = ActivityRequest.countdown(id: "m", to: at(90_000), title: "M")
    r.milestones = [Milestone(name: "half", atMs: 30_000)]
    try e.start(r, at: at(1_000))
    #expect(part(e.footprint, "side boxes").used > 0)
  }
}
