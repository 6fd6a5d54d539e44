/// Something the outbox holds for one destination: a Live Activity push (``PushItem``) or a
/// webhook delivery (``WebhookItem``).
public protocol OutboxItem: Sendable, Equatable {
  /// What must go in order, one request at a time (an activity and a token; an activity).
  associatedtype Lane: Hashable & Sendable
  var lane: Lane { get }
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
public struct DeliveryQueue<Item: OutboxItem>: Sendable {
  /// An item the outbox holds, by its sequence number there.
  public struct Entry: Sendable, Equatable {
    public var seq: Int64
    public var item: Item
    /// Failed attempts so far (in this process: a restart starts again at 0).
    public var attempts: Int = 0
    /// Not before this instant: the budget's, or a retry's.
    public var due: Int64

    init(seq: Int64, item: Item) {
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
  }

  private struct Lane {
    var entries: [Entry] = []
    var head = 0
    var inFlight = false
    var first: Entry? { head < entries.count ? entries[head] : nil }
    var isEmpty: Bool { head >= entries.count }
    var count: Int { entries.count - head }
    mutating func popFirst() {
      head += 1
      if head > 32, head * 2 > entries.count {
        entries.removeFirst(head)
        head = 0
      }
    }
  }

  private var lanes: [Item.Lane: Lane] = [:]
  /// Lanes by the instant their first push is due (some stale: checked when popped).
  private var timers = MinHeap<Item.Lane>()
  /// Requests sent and not answered.
  public private(set) var inFlight = 0
  /// Pushes held, in flight included.
  public private(set) var count = 0
  /// Requests at once, across lanes.
  public var maxInFlight: Int
  public var schedule = RetrySchedule()

  public init(maxInFlight: Int = 1000) {
    self.maxInFlight = max(1, maxInFlight)
  }

  /// An item written to the outbox as `seq` (in outbox order).
  public mutating func add(seq: Int64, _ item: Item) {
    let key = item.lane
    var lane = lanes[key] ?? Lane()
    let wasIdle = lane.isEmpty && !lane.inFlight
    lane.entries.append(Entry(seq: seq, item: item))
    lanes[key] = lane
    count += 1
    if wasIdle { timers.push(due: item.notBefore, key: key) }
  }

  /// The pushes to send at `now`: the first of each lane that is due and has none in flight,
  /// up to ``maxInFlight`` in flight. Each is in flight until ``answered(_:_:now:random:)``.
  public mutating func take(now: Int64) -> [Entry] {
    var out: [Entry] = []
    while inFlight < maxInFlight, let top = timers.top, top.due <= now {
      timers.pop()
      guard var lane = lanes[top.key], !lane.inFlight, let first = lane.first else { continue }
      if first.due > now {
        timers.push(due: first.due, key: top.key)
        continue
      }
      lane.inFlight = true
      lanes[top.key] = lane
      inFlight += 1
      out.append(first)
    }
    return out
  }

  /// When the next push may be due. May be early, never late. Nil when none waits, and
  /// while ``maxInFlight`` requests are out: then nothing can be sent before an answer, and
  /// the sender takes again after each answer (a timer for an instant already passed would
  /// wake it over and over with nothing to send).
  public var nextDue: Int64? { inFlight < maxInFlight ? timers.top?.due : nil }

  /// The answer to the push `seq` of `key`, taken at `now`; `random` (0…1) spreads retries.
  public mutating func answered(
    _ entry: Entry, _ outcome: DeliveryOutcome, now: Int64, random: Double
  ) -> Consequence {
    let key = entry.item.lane
    var result = Consequence()
    guard var lane = lanes[key], lane.inFlight, var first = lane.first, first.seq == entry.seq
    else { return result }
    lane.inFlight = false
    inFlight -= 1
    switch outcome {
    case .delivered, .drop:
      result.forget.append(first.seq)
      lane.popFirst()
      count -= 1
    case .removeToken:
      result.forget = lane.entries[lane.head...].map(\.seq)
      result.removedToken = key
      count -= lane.count
      lanes[key] = nil
      return result
    case .renewProviderToken:
      result.renewProviderToken = true
      first.attempts += 1
      // Once at once with a new token; a gateway that keeps refusing it waits like a retry.
      first.due =
        first.attempts <= 1
        ? now : now + schedule.delay(afterAttempts: first.attempts - 1, random: random)
      lane.entries[lane.head] = first
    case .retry:
      first.attempts += 1
      first.due = now + schedule.delay(afterAttempts: first.attempts, random: random)
      lane.entries[lane.head] = first
    }
    if let next = lane.first {
      lanes[key] = lane
      timers.push(due: next.due, key: key)
    } else {
      lanes[key] = nil
    }
    return result
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
  public mutating func replace(seq: Int64, _ item: PushItem) -> Int64? {
    let key = item.lane
    if var lane = lanes[key] {
      let start = lane.head + (lane.inFlight ? 1 : 0)
      if start < lane.entries.count,
        let i = lane.entries[start...].lastIndex(where: { $0.item.timestamp == item.timestamp })
      {
        let old = lane.entries[i].seq
        var entry = Entry(seq: seq, item: item)
        entry.due = max(lane.entries[i].due, item.notBefore)
        entry.attempts = lane.entries[i].attempts
        lane.entries[i] = entry
        lanes[key] = lane
        return old
      }
    }
    add(seq: seq, item)
    return nil
  }
}

/// A binary min-heap of lanes by due instant.
private struct MinHeap<Key: Hashable & Sendable>: Sendable {
  struct Node: Sendable {
    var due: Int64
    var key: Key
  }
  private var nodes: [Node] = []

  var top: Node? { nodes.first }

  mutating func push(due: Int64, key: Key) {
    nodes.append(Node(due: due, key: key))
    var i = nodes.count - 1
    while i > 0 {
      let parent = (i - 1) / 2
      guard nodes[i].due < nodes[parent].due else { break }
      nodes.swapAt(i, parent)
      i = parent
    }
  }

  mutating func pop() {
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
