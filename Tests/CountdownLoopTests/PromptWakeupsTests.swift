// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation
import Testing

@testable import CountdownLoop

/// Whether this kernel keeps a thread's own scheduling slice (EEVDF's custom slice, Linux
/// 6.12 and later); older kernels accept the request and keep theirs.
let kernelKeepsCustomSlices: Bool = {
  let v = ProcessInfo.processInfo.operatingSystemVersion
  return v.majorVersion > 6 || (v.majorVersion == 6 && v.minorVersion >= 12)
}()

/// Runs `body` on a new thread of its own and returns what it returned.
func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
  let result = Locked<T?>(nil)
  let done = DispatchSemaphore(value: 0)
  let thread = Thread {
    result.withLock { $0 = body() }
    done.signal()
  }
  thread.start()
  done.wait()
  return result.withLock { $0! }
}

@Suite("PromptWakeups: the loop thread's scheduling slice")
struct PromptWakeupsTests {
  @Test(
    "The loop thread runs with the kernel's shortest slice",
    .enabled(if: kernelKeepsCustomSlices, "custom slices need Linux 6.12 or later"))
  func loopThreadSlice() async throws {
    let loop = try CountdownLoop()
    defer { loop.shutdown() }
    let slice = try await loop.submit { _ in PromptWakeups.currentSliceNanoseconds }
    #expect(slice == PromptWakeups.sliceNanoseconds)
    #expect(PromptWakeups.sliceNanoseconds == 100_000)
    // A thread that did not ask keeps the kernel's default, which is longer.
    let plain = onNewThread { PromptWakeups.currentSliceNanoseconds }
    #expect(
      plain.map { $0 > PromptWakeups.sliceNanoseconds } == true, "\(String(describing: plain))")
  }

  @Test(
    "Asking keeps the thread's nice value and leaves a thread of another policy as it is",
    .enabled(if: kernelKeepsCustomSlices, "custom slices need Linux 6.12 or later"))
  func requestKeepsTheRest() {
    let niced = onNewThread { () -> (Int32, Int32, UInt64?) in
      _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 7)
      let rc = PromptWakeups.request()
      return (
        rc, getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0),
        PromptWakeups.currentSliceNanoseconds
      )
    }
    #expect(niced.0 == 0)
    #expect(niced.1 == 7)
    #expect(niced.2 == 100_000)
    // SCHED_IDLE (5): not the normal policy, so nothing is changed and the call says so.
    let idle = onNewThread { () -> (Int32, Int32, Int32) in
      var param = sched_param(sched_priority: 0)
      let set = sched_setscheduler(0, 5, &param)
      let rc = PromptWakeups.request()
      return (set, rc, sched_getscheduler(0))
    }
    #expect(idle.0 == 0)
    #expect(idle.1 == 1)
    #expect(idle.2 == 5)
  }
}
