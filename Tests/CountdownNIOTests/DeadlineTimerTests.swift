// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownNIO
import CountdownTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@Suite("The one timer for what is due next")
struct DeadlineTimerTests {
  @Test("Armed later keeps the earlier instant; earlier re-arms; nil cancels; each fires once")
  func earliestWins() async throws {
    try await onThread {
      let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
      defer { try? group.syncShutdownGracefully() }
      let loop = group.next()
      let fired = NIOLockedValueBox<[String]>([])
      let timer = try loop.submit { DeadlineTimer(on: loop) }.wait()
      @Sendable func ms() -> Int64 { Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000) }
      let start = try loop.submit { [timer] () -> (Int64?, Int64?, Int64?) in
        let now = ms()
        timer.arm(at: now + 200, now: now) { fired.withLockedValue { $0.append("200") } }
        let first = timer.armedFor
        // Later: kept at 200, and this closure never runs.
        timer.arm(at: now + 400, now: now) { fired.withLockedValue { $0.append("400") } }
        let kept = timer.armedFor
        // Earlier: re-armed for 50, the 200 one cancelled.
        timer.arm(at: now + 50, now: now) { fired.withLockedValue { $0.append("50") } }
        return (first.map { $0 - now }, kept.map { $0 - now }, timer.armedFor.map { $0 - now })
      }.wait()
      #expect(start.0 == 200 && start.1 == 200 && start.2 == 50)
      try loop.scheduleTask(in: .milliseconds(300)) {}.futureResult.wait()
      #expect(fired.withLockedValue { $0 } == ["50"])
      #expect(try loop.submit { timer.armedFor }.wait() == nil)
      // Cancelled: nothing fires.
      try loop.submit {
        let now = ms()
        timer.arm(at: now + 50, now: now) { fired.withLockedValue { $0.append("cancelled") } }
        timer.arm(at: nil, now: now) { fired.withLockedValue { $0.append("nil") } }
      }.wait()
      try loop.scheduleTask(in: .milliseconds(150)) {}.futureResult.wait()
      #expect(fired.withLockedValue { $0 } == ["50"])
    }
  }
}
