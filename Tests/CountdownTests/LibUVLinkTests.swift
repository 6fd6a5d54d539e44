// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CLibUV
import Testing

/// Counts timer callbacks; the loop and the test share one thread.
private final class Fired {
  var count = 0
}

@Suite("libuv link")
struct LibUVLinkTests {
  @Test("A real uv_loop_t runs one timer to completion and closes cleanly")
  func oneTimer() throws {
    let loop = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
    defer { loop.deallocate() }
    #expect(uv_loop_init(loop) == 0)
    let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    defer { timer.deallocate() }
    #expect(uv_timer_init(loop, timer) == 0)
    let fired = Fired()
    timer.pointee.data = Unmanaged.passUnretained(fired).toOpaque()
    let start = uv_now(loop)
    #expect(
      uv_timer_start(
        timer,
        { t in
          let f = Unmanaged<Fired>.fromOpaque(t!.pointee.data).takeUnretainedValue()
          f.count += 1
        }, 5, 0) == 0)
    #expect(uv_run(loop, UV_RUN_DEFAULT) == 0)
    #expect(fired.count == 1)
    uv_update_time(loop)
    #expect(uv_now(loop) - start >= 5)
    timer.withMemoryRebound(to: uv_handle_t.self, capacity: 1) { uv_close($0, nil) }
    #expect(uv_run(loop, UV_RUN_DEFAULT) == 0)
    #expect(uv_loop_close(loop) == 0)
  }
}
