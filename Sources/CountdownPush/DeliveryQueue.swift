// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// Something the outbox holds for one destination: a Live Activity push (``PushItem``) or a
/// webhook delivery (``WebhookItem``).
public protocol OutboxItem: Sendable, Equatable {
  /// What must go in order, one request at a time (an activity and a token; an activity).
  associatedtype Lane: Hashable & Sendable
  var lane: Lane { get }
  /// The activity it is of (a cluster node lets go of a shard's by their activities).
  var activity: String { get }
  /// Not to be sent before this instant (ms since 1970).
  var notBefore: Int64 { get }
}

/// The sender's queue of what the outbox holds for it (docs/pushes.md, "Delivery";
/// docs/webhooks.md): which to send now, and what each answer does. The same mechanism for
/// both kinds of destination.
///
/// One lane per ``OutboxItem/Lane`` (an activity and a token for pushes, an activity for one
/// webhook URL), sent in order, one request at a time (so items reach their destination in
/// the order they were made, retries included); lanes go side by side up to ``maxInFlight``
/// requests. A pure state machine on instants in milliseconds: the sender asks it what to
/// send at each wake-up and tells it each answer; nothing here reads a clock or does I/O.
///
/// Its methods are `@inlinable`: the sender (another module) runs them specialized for its
/// item type, not through the generic witness tables (a profile of the push sender had a
/// quarter of its thread in this queue's generic copies and metadata lookups). A lane is
/// changed in place in its dictionary, so that its entries are never copied.
public struct DeliveryQueue<Item: OutboxItem>: Sendable {
  /// An item the outbox holds, by its sequence number there.
  public struct Entry: Sendable, Equatable {
    public var seq: Int64
    public var item: Item
    /// Failed attempts so far (in this process: a restart starts again at 0).
    public var attempts: Int = 0
    /// Not before this instant: the budget's, or a retry's.
    public var due: Int64

    @inlinable init(seq: Int64, item: Item) {
      self.seq = seq
      self.item = item
      self.due = item.notBefore
    }
  }

  /// What the sender must do after an answer.
  public struct Consequence: Sendable, Equatable {
    /// Outbox entries to delete (delivered, dropped, or of a token that is gone).
    public var forget: [Int64] = []
    /// The lane whose destination is gone (a token APNs no longer takes, to remove from its
    /// activity).
    public var removedToken: Item.Lane?
    /// Make a new provider token before the next request.
    public var renewProviderToken = false

    @inlinable init() {}
  }

  /// One lane's entries in order, the first of them perhaps in flight.
  @usableFromInline struct Lane: Sendable {
    @usableFromInline var entries: [Entry] = []
    @usableFromInline var head = 0
    @usableFromInline var inFlight = false
    @inlinable init() {}
    @inlinable var first: Entry? { head < entries.count ? entries[head] : nil }
    @inlinable var isEmpty: Bool { head >= entries.count }
    @inlinable var count: Int { entries.count - head }

    /// Appends `entry`; whether the lane was idle (nothing held, nothing in flight).
    @inlinable mutating func append(_ entry: Entry) -> Bool {
      let wasIdle = isEmpty && !inFlight
      entries.append(entry)
      return wasIdle
    }

    @inlinable mutating func popFirst() {
      head += 1
      if head > 32, head * 2 > entries.count {
        entries.removeFirst(head)
        head = 0
      }
    }

    /// The first entry, now in flight, if it is due at `now` and none is; else when it is
    /// due, if later.
    @inlinable mutating func start(now: Int64) -> (sent: Entry?, later: Int64?) {
      guard !inFlight, let first else { return (nil, nil) }
      guard first.due <= now else { return (nil, first.due) }
      inFlight = true
      return (first, nil)
    }

    /// The answer to the entry `seq` in flight: what to forget and whether to renew the
    /// provider token; nil if `seq` is not the one in flight. A token gone empties the lane.
    @inlinable mutating func answer(
      _ seq: Int64, _ outcome: DeliveryOutcome, now: Int64, random: Double,
      schedule: RetrySchedule
    ) -> Consequence? {
      guard inFlight, var first, first.seq == seq else { return nil }
      inFlight = false
      var result = Consequence()
      switch outcome {
      case .delivered, .drop:
        result.forget.append(first.seq)
        popFirst()
      case .removeToken:
        result.forget = entries[head...].map(\.seq)
        entries = []
        head = 0
      case .renewProviderToken:
        result.renewProviderToken = true
        first.attempts += 1
        // Once at once with a new token; a gateway that keeps refusing it waits like a retry.
        first.due =
          first.attempts <= 1
          ? now : now + schedule.delay(afterAttempts: first.attempts - 1, random: random)
        entries[head] = first
      case .retry:
        first.attempts += 1
        first.due = now + schedule.delay(afterAttempts: first.attempts, random: random)
        entries[head] = first
      case .hold:
        // Kept first in its lane, due at once: the queue's hold says when anything goes.
        first.attempts += 1
        first.due = now
        entries[head] = first
      }
      return result
    }
  }

  @usableFromInline var lanes: [Item.Lane: Lane] = [:]
  /// Lanes by the instant their first push is due (some stale: checked when popped).
  @usableFromInline var timers = DueHeap<Item.Lane>()
  @usableFromInline var _inFlight = 0
  @usableFromInline var _count = 0
  /// Answers in a row that said the sender is wrong (``DeliveryOutcome/hold``); 0 when not
  /// held.
  @usableFromInline var holdAnswers = 0
  /// While held: when one item may be tried again.
  @usableFromInline var probeAt: Int64 = 0
  /// While held: the item tried again (answers to those sent before the hold began do not
  /// lengthen its backoff).
  @usableFromInline var probeSeq: Int64?

  /// Whether the destination's last answers said the sender, not the items, is wrong
  /// (``DeliveryOutcome/hold``): then one item at a time is tried again, after the retries'
  /// backoff, and nothing else is sent until one is delivered. Nothing is forgotten meanwhile.
  @inlinable public var isHeld: Bool { holdAnswers > 0 }
  /// Requests sent and not answered.
  @inlinable public var inFlight: Int { _inFlight }
  /// Pushes held, in flight included.
  @inlinable public var count: Int { _count }
  /// Requests at once, across lanes.
  public var maxInFlight: Int
  public var schedule = RetrySchedule()

  /// Requests at once when not told otherwise (APNs multiplexes them on one connection).
  public static var defaultMaxInFlight: Int { 1000 }

  public init(maxInFlight: Int = defaultMaxInFlight) {
    self.maxInFlight = max(1, maxInFlight)
  }

  /// An item written to the outbox as `seq` (in outbox order).
  @inlinable public mutating func add(seq: Int64, _ item: Item) {
    let key = item.lane
    let wasIdle = lanes[key, default: Lane()].append(Entry(seq: seq, item: item))
    _count += 1
    if wasIdle { timers.push(due: item.notBefore, key: key) }
  }

  /// The pushes to send at `now`: the first of each lane that is due and has none in flight,
  /// up to ``maxInFlight`` in flight. Each is in flight until ``answered(_:_:now:random:)``.
  @inlinable public mutating func take(now: Int64) -> [Entry] {
    var out: [Entry] = []
    // Held: one item, when the backoff has passed and no request is out.
    let limit = isHeld ? (now >= probeAt ? 1 : 0) : maxInFlight
    while _inFlight < limit, let top = timers.top, top.due <= now {
      timers.pop()
      guard let i = lanes.index(forKey: top.key) else { continue }
      let started = lanes.values[i].start(now: now)
      if let later = started.later { timers.push(due: later, key: top.key) }
      if let sent = started.sent {
        _inFlight += 1
        out.append(sent)
        if isHeld { probeSeq = sent.seq }
      }
    }
    return out
  }

  /// When the next push may be due. May be early, never late. Nil when none waits, and
  /// while ``maxInFlight`` requests are out: then nothing can be sent before an answer, and
  /// the sender takes again after each answer (a timer for an instant already passed would
  /// wake it over and over with nothing to send).
  @inlinable public var nextDue: Int64? {
    if isHeld { return _inFlight == 0 ? timers.top.map { max($0.due, probeAt) } : nil }
    return _inFlight < maxInFlight ? timers.top?.due : nil
  }

  /// The answer to the push `seq` of `key`, taken at `now`; `random` (0…1) spreads retries.
  @inlinable public mutating func answered(
    _ entry: Entry, _ outcome: DeliveryOutcome, now: Int64, random: Double
  ) -> Consequence {
    let key = entry.item.lane
    guard let i = lanes.index(forKey: key),
      var result = lanes.values[i].answer(
        entry.seq, outcome, now: now, random: random, schedule: schedule)
    else { return Consequence() }
    _inFlight -= 1
    _count -= result.forget.count
    if outcome == .removeToken { result.removedToken = key }
    let probe = entry.seq == probeSeq
    if probe { probeSeq = nil }
    switch outcome {
    case .hold where !isHeld || probe:
      holdAnswers += 1
      probeAt = now + schedule.delay(afterAttempts: holdAnswers, random: random)
    case .hold: break  // sent before the hold began: the hold stands as it is
    case .retry where probe:
      // A probe that got no answer: the hold stands, the next probe after the same backoff.
      probeAt = now + schedule.delay(afterAttempts: holdAnswers, random: random)
    case .retry: break
    case .delivered, .removeToken, .renewProviderToken, .drop:
      // An answer about the item: the sender's settings are good again.
      holdAnswers = 0
      probeSeq = nil
    }
    if let next = lanes.values[i].first?.due {
      timers.push(due: next, key: key)
    } else {
      lanes.remove(at: i)
    }
    return result
  }

  /// Lets go of every lane whose first item `drop` takes (a cluster node stopped serving the
  /// shard of its activity: the new owner sends them from the outbox). A request of one in
  /// flight is forgotten: its answer changes nothing. Returns how many items went.
  @inlinable public mutating func drop(where drop: (Item) -> Bool) -> Int {
    let keys = lanes.compactMap { key, lane in
      lane.first.map { drop($0.item) } == true ? key : nil
    }
    var dropped = 0
    for key in keys {
      let lane = lanes.removeValue(forKey: key)!
      dropped += lane.count
      if lane.inFlight { _inFlight -= 1 }
    }
    _count -= dropped
    // The heap keeps their keys until they come up: `take` skips a key with no lane.
    return dropped
  }

  /// Lanes held (in flight included).
  public var laneCount: Int { lanes.count }
}

/// The sender's queue of Live Activity pushes.
public typealias PushQueue = DeliveryQueue<PushItem>

extension DeliveryQueue where Item == PushItem {
  /// A push that takes the place of the waiting one of its lane with the same timestamp (the
  /// latest state of that second). Returns the sequence number it replaced (to forget), or
  /// nil when that one is already on its way or gone: then it is added after it.
  @inlinable public mutating func replace(seq: Int64, _ item: PushItem) -> Int64? {
    if let i = lanes.index(forKey: item.lane),
      let old = lanes.values[i].replace(seq: seq, item)
    {
      return old
    }
    add(seq: seq, item)
    return nil
  }
}

extension DeliveryQueue where Item == PushItem {
  /// Adds a push, merged with what waits in its lane (docs/pushes.md, "Coalescing"): an
  /// `update` takes the place of a waiting `update` that is last in the lane (the newest
  /// state, with its timestamp); an `end` takes the place of every waiting `update`; a `start`
  /// is kept. The push in flight is never touched. A merged push keeps the backoff and the
  /// attempts of what it replaced, and the higher priority. Returns the outbox rows merged
  /// away (to forget).
  @inlinable public mutating func addCoalescing(seq: Int64, _ item: PushItem) -> [Int64] {
    guard let i = lanes.index(forKey: item.lane) else {
      add(seq: seq, item)
      return []
    }
    let forgotten = lanes.values[i].coalesce(seq: seq, item)
    _count += 1 - forgotten.count
    // The lane's first waiting push may now be due earlier than the heap has it (an end
    // behind a start): one more node for it (a stale one is skipped when popped).
    if !lanes.values[i].inFlight, let first = lanes.values[i].first {
      timers.push(due: first.due, key: item.lane)
    }
    return forgotten
  }
}

extension DeliveryQueue.Lane where Item == PushItem {
  /// Appends `item` as `seq`, merged with the waiting entries (``DeliveryQueue/addCoalescing(seq:_:)``);
  /// the sequence numbers merged away.
  @inlinable mutating func coalesce(seq: Int64, _ item: PushItem) -> [Int64] {
    let start = head + (inFlight ? 1 : 0)
    var entry = DeliveryQueue.Entry(seq: seq, item: item)
    var forgotten: [Int64] = []
    switch item.event {
    case .update:
      if start < entries.count, let last = entries.last, last.item.event == .update {
        entry.due = max(last.due, item.notBefore)
        entry.attempts = last.attempts
        entry.item.priority = max(item.priority, last.item.priority)
        entries[entries.count - 1] = entry
        return [last.seq]
      }
    case .end:
      var kept: [DeliveryQueue.Entry] = []
      for e in entries[start...] {
        if e.item.event == .update {
          forgotten.append(e.seq)
          entry.due = max(entry.due, e.due)
          entry.attempts = max(entry.attempts, e.attempts)
        } else {
          kept.append(e)
        }
      }
      if !forgotten.isEmpty { entries.replaceSubrange(start..., with: kept) }
    case .start: break
    }
    entries.append(entry)
    return forgotten
  }

  /// Puts `item` in the place of the waiting entry with its timestamp; the sequence number
  /// replaced, or nil if none waits (the one in flight is not replaced).
  @inlinable mutating func replace(seq: Int64, _ item: PushItem) -> Int64? {
    let start = head + (inFlight ? 1 : 0)
    guard start < entries.count,
      let i = entries[start...].lastIndex(where: { $0.item.timestamp == item.timestamp })
    else { return nil }
    let old = entries[i].seq
    var entry = DeliveryQueue.Entry(seq: seq, item: item)
    entry.due = max(entries[i].due, item.notBefore)
    entry.attempts = entries[i].attempts
    entries[i] = entry
    return old
  }
}

/// A binary min-heap of lanes by due instant.
@usableFromInline struct DueHeap<Key: Hashable & Sendable>: Sendable {
  @usableFromInline struct Node: Sendable {
    @usableFromInline var due: Int64
    @usableFromInline var key: Key
    @inlinable init(due: Int64, key: Key) {
      self.due = due
      self.key = key
    }
  }
  @usableFromInline var nodes: [Node] = []

  @inlinable init() {}

  @inlinable var top: Node? { nodes.first }

  @inlinable mutating func push(due: Int64, key: Key) {
    nodes.append(Node(due: due, key: key))
    var i = nodes.count - 1
    while i > 0 {
      let parent = (i - 1) / 2
      guard nodes[i].due < nodes[parent].due else { break }
      nodes.swapAt(i, parent)
      i = parent
    }
  }

  @inlinable mutating func pop() {
    guard !nodes.isEmpty else { return }
    nodes.swapAt(0, nodes.count - 1)
    nodes.removeLast()
    var i = 0
    while true {
      let l = 2 * i + 1
      let r = l + 1
      var m = i
      if l < nodes.count, nodes[l].due < nodes[m].due { m = l }
      if r < nodes.count, nodes[r].due < nodes[m].due { m = r }
      guard m != i else { return }
      nodes.swapAt(i, m)
      i = m
    }
  }
}
