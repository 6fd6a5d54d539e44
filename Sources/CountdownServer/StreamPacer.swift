// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import NIOCore

/// The pacing of one HTTP event stream's writes: frames due sooner than ``interval`` after the
/// last write are gathered, and go out together when it has passed.
///
/// Each write to a connection is a system call (about 5 µs on loopback TCP); a stream with
/// the ticks of 10k activities has events every millisecond, and 100 such streams would
/// otherwise cost 100,000 writes a second. Browsers draw at most every 16 ms, so 3 ms cannot
/// be seen; a stream whose last write is older than that is written at once.
///
/// A pure state machine: the hub passes the time and acts on the answer.
struct StreamPacer {
  /// The least time between two writes to one event stream.
  static let interval = TimeAmount.milliseconds(3)

  /// What to do with frames offered to the stream.
  enum Decision: Equatable {
    /// Write them now (the last write is at least ``interval`` old).
    case write
    /// They joined the frames already gathered; a write is scheduled.
    case gathered
    /// They start a new gathering: schedule its write at `due`.
    case gather(due: NIODeadline)
  }

  /// The frames gathered since the last write (nil: none).
  private(set) var batch: ByteBuffer?
  /// When the stream was last written.
  private(set) var lastWrite = NIODeadline.uptimeNanoseconds(0)

  /// Frames for the stream at `now`, whose connection can take them and who has nothing
  /// waiting. On `.write` the caller writes `buffer` (and the write is recorded); otherwise
  /// the pacer keeps it.
  mutating func offer(_ buffer: ByteBuffer, now: NIODeadline) -> Decision {
    if var gathered = batch {
      batch = nil  // so that `gathered` is the buffer's only owner: appended in place
      var more = buffer
      gathered.writeBuffer(&more)
      batch = gathered
      return .gathered
    }
    if now - lastWrite >= Self.interval {
      lastWrite = now
      return .write
    }
    batch = buffer
    return .gather(due: lastWrite + Self.interval)
  }

  /// Takes the gathered frames (to write or to queue).
  mutating func takeBatch() -> ByteBuffer? {
    defer { batch = nil }
    return batch
  }

  /// The stream was written at `now` (a gathered batch, or what waited for the connection):
  /// the next frames are paced from it.
  mutating func wrote(at now: NIODeadline) { lastWrite = now }
}

/// The write times of every event stream with gathered frames, and the one timer that writes
/// them: one timer for the hub, not one per stream. Generic over the stream's key so that it
/// is tested alone.
///
/// A pure state machine: each call says whether to arm the timer, and for when.
struct PacingSchedule<Key: Hashable> {
  private(set) var due: [(key: Key, at: NIODeadline)] = []
  /// When the armed timer fires (nil: none armed).
  private(set) var timerAt: NIODeadline?
  #if DEBUG
    /// How many entries of `due` each key has, kept beside it in debug and test builds so
    /// that an invariant check asks ``isScheduled(_:)`` in O(1) instead of building a set.
    private var entries: [Key: Int] = [:]

    /// Whether `key` has frames due (debug and test builds).
    func isScheduled(_ key: Key) -> Bool { entries[key, default: 0] > 0 }
  #endif

  /// `key`'s gathered frames are due `at`. Returns the deadline to arm the timer for, or nil
  /// when the armed timer fires no later.
  mutating func schedule(_ key: Key, at deadline: NIODeadline) -> NIODeadline? {
    due.append((key, deadline))
    #if DEBUG
      entries[key, default: 0] += 1
    #endif
    return arm(deadline)
  }

  /// The timer armed for `deadline` fired: true when it is still the armed one (a timer for
  /// an earlier deadline replaced it otherwise). The caller then calls ``takeDue(now:_:)``.
  mutating func fired(_ deadline: NIODeadline) -> Bool {
    guard timerAt == deadline else { return false }
    timerAt = nil
    return true
  }

  /// Calls `body` with each key whose frames are due at `now`, drops them from the schedule,
  /// and returns the deadline to arm the timer for (nil: nothing left, or armed already).
  mutating func takeDue(now: NIODeadline, _ body: (Key) -> Void) -> NIODeadline? {
    guard !due.isEmpty else { return nil }
    var next: NIODeadline?
    var kept = 0
    for k in due.indices {
      let entry = due[k]
      guard entry.at <= now else {
        due[kept] = entry
        kept += 1
        next = min(next ?? entry.at, entry.at)
        continue
      }
      #if DEBUG
        entries[entry.key, default: 1] -= 1
        if entries[entry.key] == 0 { entries[entry.key] = nil }
      #endif
      body(entry.key)
    }
    due.removeLast(due.count - kept)
    return next.flatMap { arm($0) }
  }

  private mutating func arm(_ deadline: NIODeadline) -> NIODeadline? {
    if let at = timerAt, at <= deadline { return nil }
    timerAt = deadline
    return deadline
  }
}
