// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownLoop

#if canImport(Glibc)
  import Glibc
#endif

// The libuv driver on the real clock, depending on the CountdownLoop product alone: a
// countdown 1.2 s ahead ticks once, expires, and the loop shuts down cleanly.
let done = Semaphore()
let loop = try CountdownLoop { event in
  print(event.kind.rawValue, event.id, event.value)
  if event.kind == .expired { done.signal() }
}
let now = Instant(milliseconds: Int64(Date.nowMilliseconds()))
let id = try await loop.start(.countdown(id: "parking", to: now.advanced(by: 1_200), title: "P"))
done.wait()
loop.shutdown()
print("ok \(id)")

/// A counting semaphore on pthreads, enough for this example.
final class Semaphore: @unchecked Sendable {
  private var sem = sem_t()
  init() { sem_init(&sem, 0, 0) }
  func signal() { sem_post(&sem) }
  func wait() { sem_wait(&sem) }
}

enum Date {
  static func nowMilliseconds() -> Int {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
  }
}
