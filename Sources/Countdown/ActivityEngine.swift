// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CPrefetch

/// The clock-free engine: every rule of docs/activities.md, docs/events.md on instants it is given.
///
/// The engine never reads a clock. Each command carries its instant; the engine first
/// delivers every event due at or before it, then applies the command, then delivers the
/// events the command made due at once. ``advance(to:)`` moves time alone, and
/// ``nextDeadline`` says when the next event is due, so a driver arms one timer for it.
///
/// ```swift
/// var engine = ActivityEngine(now: Instant(milliseconds: 1_767_225_600_000)) { event in
///   print(event.kind, event.id, event.value)
/// }
/// try engine.start(.countdown(id: "gate-12", to: engine.now.advanced(by: 600_000),
///                             title: "Gate 12"), at: engine.now)
/// try engine.advance(to: engine.now.advanced(by: 1000))   // tick: 599
/// ```
///
/// Storage is one record per slot (and a cold side record), addressed by generation-checked
/// ``ActivityHandle``s;
/// per-second ticks live in a phase wheel (no per-tick sorting or allocation) and the rare
/// deadlines (expiry, milestones, staleness, maximum duration, dismissal) in one indexed heap
/// with at most one entry per activity (a ticking countdown's expiry joins it only in its last
/// second: until then the wheel carries it).
///
/// The engine is a value confined to one thread; `onEvent` must not call back into it.
public struct ActivityEngine {
  /// Receives every event, in docs/events.md order.
  public var onEvent: (ActivityEvent) -> Void
  /// The engine's clock: the instant of the last command or advance.
  public internal(set) var now: Instant
  /// The engine-wide settings; change them with the `set…` commands.
  public internal(set) var options: EngineOptions

  /// Hot per-slot state, one record per slot.
  var slots: [Slot] = []
  /// Cold per-slot state.
  var cold: [ColdState] = []

  var freeSlots: [UInt32] = []
  var slotIndex = IDIndex()
  var wheel = PhaseWheel()
  var heap = DeadlineHeap()
  var nextSeq: UInt64 = 0
  var ids: SplitMix64
  /// Set while a forward clock step runs the deadlines it jumped over without their ticks.
  var ticksSuppressed = false
  /// The event `emit` fills and hands on (its last id stays referenced until the next).
  var scratchEvent = ActivityEvent(
    at: Instant(milliseconds: 0), kind: .tick, id: "",
    handle: ActivityHandle(slot: 0, generation: 0), activityKind: .countdown, value: 0)

  enum SlotPhase: UInt8 {
    case free, active, paused, ended

    /// A stored or public phase as a slot's.
    init(_ phase: ActivityPhase) {
      switch phase {
      case .active: self = .active
      case .paused: self = .paused
      case .ended: self = .ended
      }
    }

    /// The phase a state or a stored row shows (a free slot is never read as one).
    var activityPhase: ActivityPhase {
      switch self {
      case .active, .free: .active
      case .paused: .paused
      case .ended: .ended
      }
    }
  }

  /// What a command reads and writes of one activity, in one 40-byte record: with a field
  /// per array, a command on an activity not in cache waited on a line of each of ten
  /// arrays; here it waits on one or two. The per-tick path reads the wheel and the id alone.
  /// The time an activity spent paused and the instant of a pause, which few activities have,
  /// are in the cold record's side box (``ColdState/pausedTotal``, ``frozenAt(_:)``).
  struct Slot: IDIndexKeyed {
    /// Start sequence: orders activities (docs/events.md) and listings.
    var seq: UInt64 = 0
    /// Countdown: its end, moved later by pauses. Elapsed: its origin, its start moved later by
    /// pauses (the value it shows while it runs is now − origin).
    var anchor: Int64 = 0
    /// The activity's id ("" while the slot is free): every event carries it.
    var id = ""
    /// Moves on when the slot is freed, so that old handles stop matching.
    var generation: UInt32 = 0
    var kind = ActivityKind.countdown
    var phase = SlotPhase.free
    var isStale = false
    var isExpired = false

    var indexKey: String { id }
  }

  /// Rare deadline kinds, in the per-activity order of docs/events.md at one instant.
  enum Deadline: UInt64 {
    case armTicks = 0
    case milestone, stale, expiry, maxDuration, dismissal
  }

  /// An engine whose clock starts at `now`.
  public init(
    now: Instant, options: EngineOptions = EngineOptions(),
    onEvent: @escaping (ActivityEvent) -> Void = { _ in }
  ) {
    self.now = now
    self.options = options
    self.onEvent = onEvent
    self.ids = SplitMix64(state: options.idSeed)
    if options.reservedActivities > 0 { reserveCapacity(options.reservedActivities) }
  }

  /// Reserves storage for `n` activities (see ``EngineOptions/reservedActivities``).
  public mutating func reserveCapacity(_ n: Int) {
    slots.reserveAdvised(n, vacated: Slot())
    cold.reserveAdvised(n, vacated: ColdState())
    wheel.bucketOf.reserveCapacity(n)
    wheel.position.reserveCapacity(n)
    // Each bucket gets its share of n, with room for the spread of random phases (a bucket
    // that grows by doubling leaves its old buffers behind in the allocator: 75 MB at 10M).
    if n >= 100_000 { wheel.reserveBuckets(n / PhaseWheel.bucketCount + n / 10_000 + 64) }
    heap.reserveCapacity(n)
    slotIndex.reserveCapacity(n)
  }

  /// Activities not yet dismissed.
  public var count: Int { slotIndex.count }

  /// The earliest instant at which an event is due, or nil when none is pending.
  /// - Complexity: O(1).
  public var nextDeadline: Instant? {
    let t = min(nextTickInstant ?? .max, heap.top?.at ?? .max)
    return t == .max ? nil : Instant(milliseconds: t)
  }

  @inline(__always)
  var nextTickInstant: Int64? {
    options.deliversTicks && !ticksSuppressed ? wheel.nextInstant(after: now.milliseconds) : nil
  }

  /// Delivers every event due at or before `t` and moves the clock to `t`.
  /// - Throws: `invalidDate` when `t` is outside the wire's range (``Instant/wireMinimum`` to
  ///   ``Instant/wireMaximum``), `timeWentBackwards` when it is before the clock.
  public mutating func advance(to t: Instant) throws(CountdownError) {
    try moveClock(to: t)
  }

  /// The one place where commands move the clock: every instant is checked against the wire's
  /// range first, so that no `Int64` makes the run loop walk to the end of time.
  mutating func moveClock(to t: Instant) throws(CountdownError) {
    _ = try t.validated("instant")
    if t < now {
      throw CountdownError(
        .timeWentBackwards,
        "instant \(t.milliseconds) is before the clock (\(now.milliseconds)); time only moves forward"
      )
    }
    runDue(upTo: t.milliseconds)
  }

  /// The handle of the activity `id`, if it exists.
  public func handle(for id: String) -> ActivityHandle? {
    slotIndex.find(id, in: slots).map {
      ActivityHandle(slot: $0, generation: slots[Int($0)].generation)
    }
  }

  /// The id of the activity behind `handle`, or nil once it is dismissed.
  public func id(of handle: ActivityHandle) -> String? {
    let s = Int(handle.slot)
    guard s < slots.count, slots[s].generation == handle.generation, slots[s].phase != .free else {
      return nil
    }
    return slots[s].id
  }

  // MARK: - Slots

  /// A free slot. When none is free, a new slot record and cold record are appended, each
  /// written once just before the start fills it (a block of default records written ahead
  /// left the cache before their starts came to them: a first start was 6% slower). The
  /// wheel's and the heap's per-slot arrays, and the records' room, grow by a block of slots
  /// at once (a quarter of those there are, from 16 to 16,384). When the records' buffers must
  /// grow, they double into buffers advised to huge pages
  /// (``Swift/Array/reserveAdvised(_:vacated:)``): first-touch page faults were a fifth of a
  /// first start, and a huge page takes one fault where 4 KiB pages take 512.
  mutating func allocateSlot() -> UInt32 {
    if let s = freeSlots.popLast() { return s }
    let first = slots.count
    // Either buffer may have been given more room than asked for; the smaller one decides,
    // so that neither append below grows its array unadvised.
    let room = min(slots.capacity, cold.capacity)
    if first >= room || first >= wheel.bucketOf.count {
      let n = min(max(first / 4, 16), 16_384)
      if room < first + n {
        let bigger = max(first + n, 2 * room)
        slots.reserveAdvised(bigger, vacated: Slot())
        cold.reserveAdvised(bigger, vacated: ColdState())
      }
      wheel.reserveSlots(first + n)
      heap.reserveSlots(first + n)
    }
    slots.append(Slot())
    cold.append(ColdState())
    return UInt32(first)
  }

  /// Frees `slot`; `hash` is its id's ``IDIndex/hash(_:)`` when the caller has it already.
  mutating func freeSlot(_ slot: UInt32, hash: UInt32? = nil) {
    let s = Int(slot)
    wheel.remove(slot)
    heap.remove(slot)
    slotIndex.remove(slot, hash: hash ?? IDIndex.hash(slots[s].id))
    slots[s].id = ""
    cold[s] = ColdState()
    slots[s].phase = .free
    slots[s].generation &+= 1
    freeSlots.append(slot)
  }

  /// Every slot that holds an activity.
  func liveSlots() -> [UInt32] {
    (0..<slots.count).compactMap { slots[$0].phase == .free ? nil : UInt32($0) }
  }

  /// The slots in use whose activity's group `admits` takes (all of them without one).
  func liveSlots(in admits: ((String?) -> Bool)?) -> [UInt32] {
    guard let admits else { return liveSlots() }
    return (0..<slots.count).compactMap {
      slots[$0].phase == .free || !admits(cold[$0].group) ? nil : UInt32($0)
    }
  }

  /// The error a command on an id that no activity has gets: also what a key whose groups
  /// do not include the activity's is told (docs/security.md, "Groups"), word for word.
  package static func notFound(_ id: String) -> CountdownError {
    CountdownError(.notFound, "no activity has id \(JSONValue.string(id))")
  }

  @inline(__always)
  func lookup(_ id: String) throws(CountdownError) -> UInt32 {
    try lookup(id, hash: IDIndex.hash(id))
  }

  /// The slot of `id`, whose ``IDIndex/hash(_:)`` is `h`.
  @inline(__always)
  func lookup(_ id: String, hash h: UInt32) throws(CountdownError) -> UInt32 {
    guard let s = slotIndex.find(id, hash: h, in: slots) else {
      throw Self.notFound(id)
    }
    return s
  }

  /// ``lookup(_:hash:)`` for a command that goes on to change the activity: from the index's
  /// first entry of hash `h` (``IDIndex/candidate(_:)``, nearly always the id's own slot), it
  /// starts loading what the command reads next (the slot record's lines, its places in
  /// the wheel's and the heap's back indexes) before the id is compared in the slot record.
  /// Those misses then overlap that comparison's own instead of following it one after the
  /// other, when commands name activities in no particular order (update and end in random
  /// order about 10% faster: BENCHMARKS.md). A candidate that is another id of the same 32-bit hash
  /// falls back to the probe.
  @inline(__always)
  func lookupPrefetching(_ id: String, hash h: UInt32) throws(CountdownError) -> UInt32 {
    if let c = slotIndex.candidate(h) {
      let s = Int(c)
      slots.withUnsafeBufferPointer {
        let record = UnsafeRawPointer($0.baseAddress! + s)
        cd_prefetch_write(record)
        cd_prefetch_write(record + (MemoryLayout<Slot>.size - 1))
      }
      wheel.prefetchBackIndex(of: c)
      heap.prefetchIndex(of: c)
      if slots[s].id == id { return c }
    }
    return try lookup(id, hash: h)
  }

  @inline(__always)
  func lookupRunning(_ id: String, for op: String) throws(CountdownError) -> UInt32 {
    try lookupRunning(id, hash: IDIndex.hash(id), for: op)
  }

  /// The slot of running activity `id` (hash `h`). `prefetching`: for a command that goes on
  /// to change it (update, end), see ``lookupPrefetching(_:hash:)``.
  @inline(__always)
  func lookupRunning(
    _ id: String, hash h: UInt32, for op: String, prefetching: Bool = false
  ) throws(CountdownError) -> UInt32 {
    let s = try prefetching ? lookupPrefetching(id, hash: h) : lookup(id, hash: h)
    if slots[Int(s)].phase == .ended {
      throw CountdownError(
        .activityEnded, "activity \(JSONValue.string(id)) has ended; \(op) is not accepted")
    }
    return s
  }

  @inline(__always)
  func checkTimestamp(_ ts: Instant?, slot: UInt32) throws(CountdownError) {
    guard let ts else { return }
    _ = try ts.validated("timestamp")
    if let last = cold[Int(slot)].lastTimestamp, ts.milliseconds < last {
      throw CountdownError(
        .outOfOrder,
        "timestamp \(ts.milliseconds) is older than the last applied update's timestamp \(last)")
    }
  }

  static func validateID(_ id: String) throws(CountdownError) {
    let n = id.utf8.count
    guard (1...128).contains(n) else {
      throw .payload("id must be 1 to 128 bytes of UTF-8, not \(n)")
    }
    // ASCII ids (nearly all) are checked by byte: controls are 0x00-0x1F and 0x7F.
    func asciiControl(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool? {
      var control = false
      for b in bytes {
        if b >= 0x80 { return nil }
        control = control || b < 0x20 || b == 0x7F
      }
      return control
    }
    var id = id
    let ascii = id.withUTF8(asciiControl)
    if ascii
      ?? id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
    {
      throw .payload("id \(JSONValue.string(id)) contains a control character")
    }
  }

  /// Each milestone's `atMs` is a duration, or on an overtime countdown (`overtime`) as far
  /// past the end as a duration goes.
  static func validateMilestones(_ m: [Milestone], overtime: Bool) throws(CountdownError) {
    for (k, milestone) in m.enumerated() {
      if milestone.atMs < 0, !overtime {
        throw .payload(
          "milestones[\(k)].atMs \(milestone.atMs) is negative: only a countdown with overtime passes its end; set \"overtime\": true or give 0 or more milliseconds"
        )
      }
      _ = try validatedOffset("milestones[\(k)].atMs", milestone.atMs)
    }
  }

  /// Refuses `overtime` where it cannot apply: on an elapsed timer, or beside `endOnExpiry`
  /// (a countdown either ends at zero or runs on past it).
  static func checkOvertime(
    _ overtime: Bool, kind: ActivityKind, endOnExpiry: DismissalPolicy?
  ) throws(CountdownError) {
    guard overtime else { return }
    if kind == .elapsed { throw .payload("overtime applies to countdowns, not elapsed activities") }
    if endOnExpiry != nil {
      throw .payload(
        "overtime and endOnExpiry exclude each other: a countdown either ends at zero (endOnExpiry) or runs on past it (overtime); remove one"
      )
    }
  }

  /// Milestones in the order they fire: by remaining time down for a countdown, by elapsed
  /// time up for an elapsed timer; equal ones in the order given.
  static func firingOrder(_ m: [Milestone], _ kind: ActivityKind) -> [Milestone] {
    if m.count < 2 { return m }
    return firingIndices(m, kind).map { m[$0] }
  }

  /// The positions of `m` in the order they fire (``firingOrder(_:_:)``).
  static func firingIndices(_ m: [Milestone], _ kind: ActivityKind) -> [Int] {
    m.indices.sorted { a, b in
      if m[a].atMs != m[b].atMs {
        return kind == .countdown ? m[a].atMs > m[b].atMs : m[a].atMs < m[b].atMs
      }
      return a < b
    }
  }

  /// The contents milestones' patches make, applied in firing order over `content` as they
  /// will be at their instants (empty when none has a patch). Each patch must be valid and each
  /// content it makes must fit the 4096-byte limit now, so that none fails when it fires: else
  /// `invalidPayload` or `attributesTooLarge` naming the milestone (`given`: the request's
  /// order, named by position; else stored milestones in firing order, named by name).
  static func milestoneContents(
    _ m: [Milestone], kind: ActivityKind, over content: StoredContent, given: Bool
  ) throws(CountdownError) -> [ActivityContent] {
    guard m.contains(where: { !$0.content.isEmpty }) else { return [] }
    var current = content
    var made: [ActivityContent] = []
    for k in given ? firingIndices(m, kind) : Array(m.indices) where !m[k].content.isEmpty {
      do throws(CountdownError) {
        current = try ActivityContent.patching(current, with: m[k].content)
      } catch {
        let name =
          given
          ? "milestones[\(k)].content" : "the content of milestone \(JSONValue.string(m[k].name))"
        throw CountdownError(error.code, "\(name), applied when it fires: \(error.message)")
      }
      made.append(current.content)
    }
    return made
  }
}

extension Array {
  /// Reserves room for `n` elements. A buffer of 4 MiB or more is a new one advised to huge
  /// pages before any of its pages is touched (`cd_advise_huge_pages`); the elements are
  /// moved into it (a `memmove`, as the array's own growth moves them) and `vacated` is left in
  /// their old places for the old buffer to destroy. A smaller one grows as `reserveCapacity`
  /// grows it.
  mutating func reserveAdvised(_ n: Int, vacated: Element) {
    guard capacity < n else { return }
    guard n * MemoryLayout<Element>.stride >= 4 << 20 else { return reserveCapacity(n) }
    let moved = count
    let bigger = [Element](unsafeUninitializedCapacity: n) { room, initialized in
      cd_advise_huge_pages(room.baseAddress, room.count * MemoryLayout<Element>.stride)
      self.withUnsafeMutableBufferPointer { old in
        guard let from = old.baseAddress, let to = room.baseAddress, moved > 0 else { return }
        to.moveInitialize(from: from, count: moved)
        from.initialize(repeating: vacated, count: moved)
      }
      initialized = moved
    }
    self = bigger
  }
}
