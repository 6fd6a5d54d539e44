// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The one lock of every target: a `pthread_mutex_t` with its condition variable, waited on
/// by the monotonic clock. ``Locked`` puts a value behind it; threads that wait for each other
/// (the store's writer, a caller waiting for the loop, a server waiting for its listener) wait
/// on it too.
///
/// Why this one, in one place:
/// - ThreadSanitizer must see every lock. `Synchronization.Mutex` waits on a raw futex on
///   Linux, which TSan cannot see: it then reports every access under it as a race, and real
///   races would hide among the false ones. A pthread mutex it sees, so `swift test
///   --sanitize=thread` checks the driver and the server for real.
/// - `NSCondition` waits until a wall-clock `Date`, so a step of the system clock moves its
///   deadlines; this waits on `CLOCK_MONOTONIC`. A `DispatchSemaphore` counts signals, so a
///   second waiter (a second `stop()`) waits out its whole timeout for a signal already taken;
///   ``Locked/wait(until:deadline:)`` waits for a state, which stays.
/// - The core and the C library do not import Foundation or NIO, so neither's lock is
///   available everywhere; one type keeps the servers' locks and the loop's the same kind.
///
/// `@unchecked Sendable`: the mutex and condition are the synchronization; the type guards no
/// state of its own.
package final class Lock: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  package init() {
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    #if !canImport(Darwin)
      pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    #endif
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  /// Takes the lock; pair each with ``unlock()``, or use ``withLock(_:)``.
  package func lock() { pthread_mutex_lock(mutex) }

  /// Lets the lock go.
  package func unlock() { pthread_mutex_unlock(mutex) }

  /// Runs `body` holding the lock. Keep it short: never block inside but in ``wait()``.
  package func withLock<R>(_ body: () throws -> R) rethrows -> R {
    lock()
    defer { unlock() }
    return try body()
  }

  /// With the lock held: lets it go until another thread calls ``signal()`` or
  /// ``broadcast()`` (or spuriously), then holds it again. Check the condition in a loop.
  package func wait() { pthread_cond_wait(condition, mutex) }

  /// With the lock held: as ``wait()``, but wakes by `deadline` (``Lock/now()``'s nanoseconds)
  /// at the latest. False when the deadline passed.
  @discardableResult
  package func wait(untilNanoseconds deadline: UInt64) -> Bool {
    #if canImport(Darwin)
      let left = deadline > Self.now() ? deadline - Self.now() : 0
      var span = timespec(tv_sec: Int(left / 1_000_000_000), tv_nsec: Int(left % 1_000_000_000))
      return pthread_cond_timedwait_relative_np(condition, mutex, &span) == 0
    #else
      var at = timespec(
        tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
      return pthread_cond_timedwait(condition, mutex, &at) == 0
    #endif
  }

  /// Wakes one thread waiting on the lock (call it holding the lock).
  package func signal() { pthread_cond_signal(condition) }

  /// Wakes every thread waiting on the lock (call it holding the lock).
  package func broadcast() { pthread_cond_broadcast(condition) }

  /// The monotonic clock's nanoseconds, the unit of ``wait(untilNanoseconds:)``.
  package static func now() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
  }

  /// `seconds` from now, as a deadline for ``wait(untilNanoseconds:)``.
  package static func deadline(after seconds: Double) -> UInt64 {
    now() + UInt64(max(0, seconds) * 1e9)
  }
}

/// A value behind a ``Lock`` (the reason for that lock is there).
///
/// `@unchecked Sendable` where `Value` is: `value` is read and written only while the lock is
/// held.
package final class Locked<Value> {
  private let lock = Lock()
  private var value: Value

  package init(_ value: Value) {
    self.value = value
  }

  /// Runs `body` with the value while holding the lock. Keep it short: never block inside.
  package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }

  /// Changes the value with `body` and wakes every thread in ``wait(until:deadline:)``.
  package func withLockWaking<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    lock.lock()
    defer {
      lock.broadcast()
      lock.unlock()
    }
    return try body(&value)
  }

  /// Blocks until `ready(value)` holds (after a ``withLockWaking(_:)``) or `deadline`
  /// (``Lock/now()``'s nanoseconds) passes; whether it holds.
  @discardableResult
  package func wait(until ready: (Value) -> Bool, deadline: UInt64? = nil) -> Bool {
    lock.lock()
    defer { lock.unlock() }
    while !ready(value) {
      if let deadline {
        if Lock.now() >= deadline { return false }
        lock.wait(untilNanoseconds: deadline)
      } else {
        lock.wait()
      }
    }
    return true
  }
}

extension Locked: @unchecked Sendable where Value: Sendable {}
