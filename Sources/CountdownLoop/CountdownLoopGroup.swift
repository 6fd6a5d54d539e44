// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// N loops (default: one per core) sharding activities by id, behind the API of
/// ``CountdownLoop``. An activity lives on the loop its id hashes to (FNV-1a, stable across
/// runs), so commands for one activity are ordered; events of different loops interleave in
/// real time and each loop numbers its own start order.
public final class CountdownLoopGroup: Sendable {
  /// The loops, in shard order.
  public let loops: [CountdownLoop]

  /// Starts `count` loops (default: the number of online cores). `onEvent` is called on the
  /// loop thread of the activity's shard.
  public convenience init(
    count: Int? = nil, options: LoopOptions = LoopOptions(),
    onEvent: (@Sendable (ActivityEvent) -> Void)? = nil
  ) throws(CountdownError) {
    try self.init(count: count, options: options, handlers: { _ in onEvent })
  }

  /// Starts `count` loops, each with the event handler `handlers` makes for its shard index
  /// (0 to count − 1), so that loop threads need share no state: a per-loop counter or
  /// histogram, merged when read.
  public init(
    count: Int? = nil, options: LoopOptions = LoopOptions(),
    handlers: (Int) -> (@Sendable (ActivityEvent) -> Void)?
  ) throws(CountdownError) {
    let n = max(1, count ?? LibUV.onlineCores())
    var loops: [CountdownLoop] = []
    for k in 0..<n { loops.append(try CountdownLoop(options: options, onEvent: handlers(k))) }
    self.loops = loops
  }

  /// The shard index (into ``loops``) of `id`.
  public func shard(for id: String) -> Int {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in id.utf8 {
      h ^= UInt64(b)
      h = h &* 0x100_0000_01b3
    }
    return Int(h % UInt64(loops.count))
  }

  /// The loop that owns `id`.
  public func loop(for id: String) -> CountdownLoop { loops[shard(for: id)] }

  /// Starts an activity on its shard; an id is generated here when absent, so that the
  /// shard is known.
  @discardableResult
  public func start(_ r: ActivityRequest) async throws(CountdownError) -> String {
    var r = r
    let id = r.id ?? Self.randomID()
    r.id = id
    return try await loop(for: id).start(r)
  }

  public func update(_ id: String, _ u: ActivityUpdate) async throws(CountdownError) {
    try await loop(for: id).update(id, u)
  }

  public func pause(_ id: String, timestamp: Instant? = nil) async throws(CountdownError) {
    try await loop(for: id).pause(id, timestamp: timestamp)
  }

  public func resume(_ id: String, timestamp: Instant? = nil) async throws(CountdownError) {
    try await loop(for: id).resume(id, timestamp: timestamp)
  }

  public func end(_ id: String, _ e: ActivityEnding = ActivityEnding()) async throws(CountdownError)
  {
    try await loop(for: id).end(id, e)
  }

  public func state(of id: String) async throws(CountdownError) -> ActivityState {
    try await loop(for: id).state(of: id)
  }

  /// The `k` soonest-ending active countdowns across every shard.
  public func soonestEnding(_ k: Int) async throws(CountdownError) -> [ActivityState] {
    var all: [ActivityState] = []
    for l in loops { all += try await l.soonestEnding(k) }
    all.sort {
      ($0.endDate?.milliseconds ?? .max, $0.id) < ($1.endDate?.milliseconds ?? .max, $1.id)
    }
    return Array(all.prefix(k))
  }

  /// Ended activities within `window` across every shard, by end instant.
  public func ended(within window: ClosedRange<Instant>) async throws(CountdownError)
    -> [ActivityState]
  {
    var all: [ActivityState] = []
    for l in loops { all += try await l.ended(within: window) }
    all.sort { ($0.endedAt?.milliseconds ?? 0, $0.id) < ($1.endedAt?.milliseconds ?? 0, $1.id) }
    return all
  }

  public func setEnabled(_ enabled: Bool) async throws(CountdownError) {
    for l in loops { try await l.setEnabled(enabled) }
  }

  /// Activities not yet dismissed, across every shard.
  public func count() async throws(CountdownError) -> Int {
    var n = 0
    for l in loops { n += try await l.count() }
    return n
  }

  /// Shuts every loop down (see ``CountdownLoop/shutdown()``).
  public func shutdown() {
    for l in loops { l.shutdown() }
  }

  static func randomID() -> String {
    var ids = ActivityIDGenerator(seed: UInt64.random(in: .min ... .max))
    return ids.next()
  }
}
