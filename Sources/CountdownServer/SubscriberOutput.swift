// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import NIOCore

/// What waits for one subscriber whose connection cannot take more (backpressure, see
/// docs/protocol.md, "Backpressure"), and when it is cut off.
///
/// A pure state machine: the hub tells it what was framed for the subscriber and what time
/// it is, and it answers what to do. While the waiting bytes are under `bound`, every event
/// waits in order. At or over the bound, a new tick replaces the same activity's waiting tick
/// (the newest value is all a display needs) and other events are kept. A subscriber that
/// stays over the bound for `cutOffAfter` is cut off.
///
/// What waits is `ByteBuffer`s: slices of the wake's framed bytes, which the hub frames once
/// per framing and shares among its subscribers (a slice is a reference, not a copy). Under
/// the bound a subscriber that takes a whole wake keeps it as one run (``append(run:)``),
/// so a subscriber that is behind costs one entry a wake, not one copy an event; over it,
/// the hub appends each event alone, so that ticks can replace each other. A slice keeps its
/// wake's bytes alive: over the bound, each waiting tick may hold a whole wake's frames (the
/// wakes of at most the 10 s before the cut-off).
///
/// Before its snapshot is written (an event stream registers before its `subscribe` runs),
/// the subscriber is *pending*: its events are kept with their sequence numbers, and past the
/// bound it is dropped (nothing has been written to it yet). On a cluster node an event may
/// come from another node (``Hub/relayed(from:sequence:id:kind:line:)``): it is kept with
/// that node's incarnation, and its sequence number is that node's.
struct SubscriberOutput {
  /// One waiting write: framed bytes and, for a tick appended alone, its activity (a newer
  /// tick of that activity may replace it).
  typealias Entry = (tickOf: ActivityHandle?, bytes: ByteBuffer)

  /// The bytes that may wait before ticks coalesce and the cut-off clock starts.
  let bound: Int
  /// How long a subscriber may stay over `bound`.
  let cutOffAfter: TimeAmount

  private(set) var entries: [Entry] = []
  /// Bytes in `entries`, or in `pending` while pending.
  private(set) var byteCount = 0
  /// Where each activity's waiting tick is in `entries`.
  private var tickAt: [ActivityHandle: Int] = [:]
  /// When `byteCount` went over the bound (nil while at or under it).
  private(set) var overSince: NIODeadline?
  /// While the snapshot is not written: the events so far, with their sequence numbers and,
  /// for another node's, that node's incarnation.
  private(set) var pending: [(source: UInt64?, sequence: UInt64, bytes: ByteBuffer)]?

  init(bound: Int, cutOffAfter: TimeAmount, pending: Bool = false) {
    self.bound = bound
    self.cutOffAfter = cutOffAfter
    self.pending = pending ? [] : nil
  }

  /// Whether nothing waits (a pending subscriber's kept events do not count: they are
  /// written by ``activate(from:after:)``).
  var isEmpty: Bool { entries.isEmpty }
  var isPending: Bool { pending != nil }

  // MARK: - Pending

  /// Keeps an event for a pending subscriber. False when the kept events now exceed the
  /// bound: drop the subscriber (its snapshot never came).
  mutating func keep(sequence: UInt64, from source: UInt64? = nil, _ bytes: ByteBuffer) -> Bool {
    precondition(pending != nil, "keep(sequence:_:) on a subscriber that is not pending")
    pending!.append((source, sequence, bytes))
    byteCount += bytes.readableBytes
    return byteCount <= bound
  }

  /// The snapshot is written: the kept events numbered `from` on (those before are in the
  /// snapshot), appended to `bytes`; another node's, those numbered from its `cuts` entry on
  /// (all of a node that has none: its activities were not in the snapshot). The subscriber
  /// is live from now on.
  mutating func activate(
    from sequence: UInt64, cuts: [UInt64: UInt64] = [:], after bytes: inout ByteBuffer
  ) {
    defer { checkInvariants() }
    guard let kept = pending else { return }
    checkInvariants()
    pending = nil
    byteCount = 0
    for p in kept where p.sequence >= (p.source.map { cuts[$0] ?? 0 } ?? sequence) {
      bytes.writeImmutableBuffer(p.bytes)
    }
  }

  // MARK: - Waiting

  /// Adds one framed event of activity `handle`. True when it was a tick that replaced the
  /// waiting tick of its activity; any other event of the activity ends that replacement, so
  /// that no tick overtakes it.
  @discardableResult
  mutating func append(_ bytes: ByteBuffer, of handle: ActivityHandle, isTick: Bool) -> Bool {
    defer { checkAppended(handle) }
    if isTick, byteCount >= bound, let at = tickAt[handle] {
      byteCount += bytes.readableBytes - entries[at].bytes.readableBytes
      entries[at].bytes = bytes
      return true
    }
    tickAt[handle] = isTick ? entries.count : nil
    entries.append((isTick ? handle : nil, bytes))
    byteCount += bytes.readableBytes
    return false
  }

  /// Whether a run (``append(run:)``) may be appended now: under the bound. At or over it
  /// the hub appends each event alone, so that ticks coalesce.
  var takesRuns: Bool { byteCount < bound }

  /// Adds bytes that are not one event: a whole wake's frames, or an event stream's gathered
  /// frames, older than anything appended after them. No tick before them is replaced from
  /// now on (a tick that replaced one would overtake what the run holds of its activity).
  mutating func append(run bytes: ByteBuffer) {
    defer { checkAppended(nil) }
    if !tickAt.isEmpty { tickAt.removeAll(keepingCapacity: true) }
    entries.append((nil, bytes))
    byteCount += bytes.readableBytes
  }

  /// Called after appending, at `now`: where the subscriber stands against its bound. Returns
  /// the instant to check again (``staysOver(since:)``) when it has just gone over.
  /// `now` is read only when the output has just gone over (a clock read per delivery to
  /// each waiting subscriber would be one per subscriber per wake).
  mutating func measure(now: @autoclosure () -> NIODeadline) -> CutOffCheck? {
    if byteCount <= bound {
      overSince = nil
      return nil
    }
    guard overSince == nil else { return nil }
    let since = now()
    overSince = since
    return CutOffCheck(since: since, at: since + cutOffAfter)
  }

  /// A check to run at `at`: whether the output has stayed over its bound since `since`.
  struct CutOffCheck: Equatable {
    let since: NIODeadline
    let at: NIODeadline
  }

  /// At a ``CutOffCheck``: true when the output has stayed over the bound since `since` (cut
  /// the subscriber off).
  func staysOver(since: NIODeadline) -> Bool { overSince == since }

  /// Everything waiting, in order, emptied: the connection can take it.
  mutating func drain(into write: (ByteBuffer) -> Void) {
    checkInvariants()
    for e in entries { write(e.bytes) }
    entries.removeAll(keepingCapacity: entries.count <= 1024)
    tickAt.removeAll()
    byteCount = 0
    overSince = nil
  }

  /// Debug and test builds, after each append: what the append touched (O(1); the whole
  /// output is checked when it drains).
  private func checkAppended(_ handle: ActivityHandle?) {
    #if DEBUG
      precondition(byteCount >= 0 && !entries.isEmpty, "an append left \(byteCount) bytes")
      if let handle, let at = tickAt[handle] {
        precondition(entries[at].tickOf == handle, "the waiting tick of \(handle) is not at \(at)")
      }
    #endif
  }

  /// Debug and test builds: the byte count is the entries' (or the kept events'), each
  /// waiting tick's position names a tick of its activity, and `overSince` is set only while
  /// something waits. O(entries).
  func checkInvariants() {
    #if DEBUG
      let counted =
        pending.map { $0.reduce(0) { $0 + $1.bytes.readableBytes } }
        ?? entries.reduce(0) { $0 + $1.bytes.readableBytes }
      precondition(counted == byteCount, "byteCount \(byteCount), entries hold \(counted)")
      for (handle, at) in tickAt {
        precondition(
          at < entries.count && entries[at].tickOf == handle,
          "the waiting tick of \(handle) is not at \(at)")
      }
      if entries.isEmpty { precondition(overSince == nil, "over the bound with nothing waiting") }
      if pending != nil { precondition(entries.isEmpty, "a pending subscriber has entries") }
    #endif
  }
}
