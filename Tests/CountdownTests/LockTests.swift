// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation
import Testing

@testable import Countdown

/// ``Lock`` and ``Locked``: the one lock of every target, and its waits.
@Suite("Lock")
struct LockTests {
  @Test("Threads that change a value under the lock lose none of the changes")
  func exclusive() {
    let counter = Locked(0)
    let threads = (0..<4).map { _ in
      Thread {
        for _ in 0..<10_000 { counter.withLockWaking { $0 += 1 } }
      }
    }
    for t in threads {
      t.start()
    }
    #expect(counter.wait(until: { $0 == 40_000 }, deadline: Lock.deadline(after: 30)))
    #expect(counter.withLock { $0 } == 40_000)
  }

  @Test("A wait for a state ends when another thread sets it, not before")
  func waitsForState() {
    let ready = Locked(false)
    let started = Lock.now()
    let setter = Thread {
      Thread.sleep(forTimeInterval: 0.2)
      ready.withLockWaking { $0 = true }
    }
    setter.start()
    #expect(ready.wait(until: { $0 }, deadline: Lock.deadline(after: 30)))
    let waited = Lock.now() - started
    #expect(waited >= 150_000_000, "woke after \(waited) ns, before the state was set")
    // A second wait for a state that holds returns at once (a semaphore's signal would be
    // spent by now).
    let again = Lock.now()
    #expect(ready.wait(until: { $0 }, deadline: Lock.deadline(after: 30)))
    #expect(Lock.now() - again < 100_000_000)
  }

  @Test("A wait whose state never comes ends at its deadline and says so")
  func deadline() {
    let never = Locked(false)
    let started = Lock.now()
    #expect(!never.wait(until: { $0 }, deadline: Lock.deadline(after: 0.15)))
    let waited = Lock.now() - started
    #expect(waited >= 150_000_000, "gave up after \(waited) ns")
    #expect(waited < 5_000_000_000)
    // A deadline already past returns at once.
    #expect(!never.wait(until: { $0 }, deadline: Lock.now()))
  }

  @Test("The condition wait of a Lock lets the lock go while it waits")
  func conditionWait() {
    let lock = Lock()
    var flag = false
    let flagBox = UnsafeMutablePointer<Bool>.allocate(capacity: 1)
    flagBox.initialize(to: false)
    defer { flagBox.deallocate() }
    let pointer = UnsafeSendablePointer(flagBox)
    let setter = Thread {
      Thread.sleep(forTimeInterval: 0.05)
      lock.withLock {
        pointer.value.pointee = true
        lock.broadcast()
      }
    }
    setter.start()
    lock.lock()
    let deadline = Lock.deadline(after: 30)
    while !flagBox.pointee && Lock.now() < deadline {
      lock.wait(untilNanoseconds: deadline)
    }
    flag = flagBox.pointee
    lock.unlock()
    #expect(flag)
  }
}

/// A pointer handed to another thread of the test; it is read and written under a ``Lock``.
private struct UnsafeSendablePointer: @unchecked Sendable {
  let value: UnsafeMutablePointer<Bool>
  init(_ value: UnsafeMutablePointer<Bool>) { self.value = value }
}
