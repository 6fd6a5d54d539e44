// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// Events held until the commit of the wake that made them (durable state: an event reaches a
/// subscriber only once the state that caused it is on disk).
///
/// A pure state machine: no clock, no I/O. The hub feeds it each wake's events with the
/// wake's commit token (nil for a wake that changed nothing durable) and each commit's
/// outcome, and delivers what it hands back.
///
/// Rules: a wake with a token waits for its commit, except the ticks of activities with
/// nothing held, which go out at once (ticks never wait for the disk). A tick waits only
/// behind an earlier held event of its own activity, so one activity's events stay in order.
/// A failed commit drops its events (the engine goes back to the stored state).
struct CommitGate {
  /// A held event and its sequence number.
  typealias Numbered = (sequence: UInt64, event: ActivityEvent)

  /// What of a wake goes out now.
  enum Admission {
    /// Every event of the wake, in order (the usual case: nothing held, or only ticks of
    /// activities with nothing held).
    case all
    /// Only these (possibly none); the others are held.
    case some(events: [ActivityEvent], sequences: [UInt64])
  }

  /// The held events of each pending commit, oldest first.
  private(set) var held: [(token: UInt64, events: [Numbered])] = []
  /// How many held events each activity has: its ticks wait behind them.
  private var heldPerActivity: [ActivityHandle: Int] = [:]

  /// Whether nothing is held.
  var isEmpty: Bool { held.isEmpty }

  /// Takes one wake's events, the first numbered `first`; `token` is the wake's commit (nil
  /// when it changed nothing durable). Returns what goes out now; the rest is held.
  mutating func admit(first: UInt64, _ events: [ActivityEvent], token: UInt64?) -> Admission {
    // (`.all` changes nothing: the invariants are checked where something is held.)
    if token == nil && held.isEmpty { return .all }
    if token == nil,
      !events.contains(where: { $0.kind != .tick || heldPerActivity[$0.handle] != nil })
    {
      return .all
    }
    var lifecycle: Set<ActivityHandle> = []
    if token != nil {
      for e in events where e.kind != .tick { lifecycle.insert(e.handle) }
    }
    var now: [ActivityEvent] = []
    var sequences: [UInt64] = []
    var kept: [Numbered] = []
    for (k, e) in events.enumerated() {
      let sequence = first + UInt64(k)
      if e.kind == .tick && heldPerActivity[e.handle] == nil && !lifecycle.contains(e.handle) {
        now.append(e)
        sequences.append(sequence)
      } else {
        kept.append((sequence, e))
      }
    }
    for k in kept { heldPerActivity[k.event.handle, default: 0] += 1 }
    if let token {
      held.append((token, kept))
    } else if !kept.isEmpty {
      held[held.count - 1].events += kept
    }
    checkInvariants()
    return .some(events: now, sequences: sequences)
  }

  /// The commit `token` (and every one before it) is done: calls `deliver` with the held
  /// events of each, oldest first, if `committed`; if not, drops them, handing them to
  /// `dropped` first.
  mutating func finish(
    token: UInt64, committed: Bool, dropped: ([Numbered]) -> Void = { _ in },
    deliver: ([Numbered]) -> Void
  ) {
    while let oldest = held.first, oldest.token <= token {
      held.removeFirst()
      for k in oldest.events {
        let h = k.event.handle
        if let n = heldPerActivity[h], n > 1 {
          heldPerActivity[h] = n - 1
        } else {
          heldPerActivity[h] = nil
        }
      }
      checkInvariants()
      if !oldest.events.isEmpty { committed ? deliver(oldest.events) : dropped(oldest.events) }
    }
  }

  /// Debug and test builds: tokens increase, sequence numbers increase, and the count per
  /// activity matches what is held. O(held events).
  func checkInvariants() {
    #if DEBUG
      var counts: [ActivityHandle: Int] = [:]
      var lastToken: UInt64?
      var lastSequence: UInt64?
      for (token, events) in held {
        if let lastToken { precondition(token > lastToken, "commit tokens out of order") }
        lastToken = token
        for (sequence, event) in events {
          if let lastSequence {
            precondition(sequence > lastSequence, "held events out of order")
          }
          lastSequence = sequence
          counts[event.handle, default: 0] += 1
        }
      }
      precondition(counts == heldPerActivity, "held counts per activity disagree with held events")
    #endif
  }
}
