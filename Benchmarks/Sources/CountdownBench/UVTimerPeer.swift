// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CBenchUV
import Foundation

/// The peer most people would write first: one `uv_timer_t` per activity, re-armed after each
/// tick for the absolute next change. libuv counts in whole milliseconds of a cached loop
/// clock, so each re-arm refreshes that clock and rounds the timeout up, and a timer that still
/// fires before its instant is re-armed instead of delivering early (without that, most ticks
/// here came early).
///
/// `@unchecked Sendable`: the loop, the timers and `next` are touched by the loop thread once
/// it runs (and by the creating thread before); `inbox` is guarded by `lock`.
final class UVTimerPeer: TickPeer, @unchecked Sendable {
  let loop = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
  let async = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
  var timers: UnsafeMutablePointer<uv_timer_t>?
  /// Each activity's next change, in milliseconds since 1970.
  var next: UnsafeMutablePointer<Int64>?
  var count = 0
  var recorder: TickRecorder?
  let lock = NSLock()
  var inbox: [() -> Void] = []
  let finished = DispatchSemaphore(value: 0)

  func start(ends: [Int64], recorder: TickRecorder) async throws {
    self.recorder = recorder
    count = ends.count
    timers = .allocate(capacity: count)
    next = .allocate(capacity: count)
    uv_loop_init(loop)
    loop.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    uv_async_init(loop, async) { a in UVTimerPeer.of(a!.pointee.loop).drain() }
    let nowMs = wallNanoseconds() / 1_000_000
    for i in 0..<count {
      uv_timer_init(loop, timers! + i)
      timers![i].data = UnsafeMutableRawPointer(bitPattern: i + 1)
      next![i] = firstChange(end: ends[i], after: nowMs)
      arm(i)
    }
    Thread { [self] in
      uv_run(self.loop, UV_RUN_DEFAULT)
      self.finished.signal()
    }.start()
  }

  static func of(_ loop: UnsafeMutablePointer<uv_loop_t>?) -> UVTimerPeer {
    Unmanaged<UVTimerPeer>.fromOpaque(loop!.pointee.data).takeUnretainedValue()
  }

  /// Arms timer `i` for its next change, never early.
  func arm(_ i: Int) {
    uv_update_time(loop)
    let wait = next![i] * 1_000_000 - wallNanoseconds()
    let timeout = max(0, (wait + 999_999) / 1_000_000)
    uv_timer_start(
      timers! + i,
      { t in
        let i = Int(bitPattern: t!.pointee.data) - 1
        UVTimerPeer.of(t!.pointee.loop).fire(i)
      }, UInt64(timeout), 0)
  }

  func fire(_ i: Int) {
    if wallNanoseconds() < next![i] * 1_000_000 {
      arm(i)
      return
    }
    recorder!.record(atMs: next![i])
    next![i] += 1000
    arm(i)
  }

  /// Runs queued work on the loop thread.
  func drain() {
    let work = lock.withLock {
      let w = inbox
      inbox = []
      return w
    }
    for w in work { w() }
  }

  private func onLoop(_ body: @escaping () -> Void) async {
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
      lock.withLock {
        inbox.append {
          body()
          c.resume()
        }
      }
      uv_async_send(async)
    }
  }

  func barrier(_ body: @escaping @Sendable () -> Void) async throws { await onLoop(body) }

  func replace(_ items: [(index: Int, end: Int64)]) async throws {
    await onLoop {
      let nowMs = wallNanoseconds() / 1_000_000
      for (i, end) in items {
        self.next![i] = firstChange(end: end, after: nowMs)
        self.arm(i)
      }
    }
  }

  func note(seconds: Double) async throws -> String { "one uv_timer_t per activity" }

  func stop() async {
    await onLoop {
      for i in 0..<self.count {
        UnsafeMutableRawPointer(self.timers! + i).withMemoryRebound(
          to: uv_handle_t.self, capacity: 1
        ) {
          uv_close($0, nil)
        }
      }
      UnsafeMutableRawPointer(self.async).withMemoryRebound(to: uv_handle_t.self, capacity: 1) {
        uv_close($0, nil)
      }
    }
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
      let finished = self.finished
      Thread {
        finished.wait()
        c.resume()
      }.start()
    }
    uv_loop_close(loop)
    timers?.deallocate()
    next?.deallocate()
  }
}
