// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CLibUV
import Countdown

/// The libuv loop and its handles, allocated once so that their addresses never move.
/// All pointer code of the driver is here; its C calls go through `LibUV`. Used by the
/// creating thread until the loop thread starts, then only by the loop thread, except
/// `wake()`, which `LoopCore` calls under its queue lock and never after the async handle is
/// closed.
final class LoopHandles {
  let sys: LibUV
  let loop = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
  let async = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
  /// Watches `timerFD` (the main timer) when timerfd is available.
  let poll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
  /// The timer where timerfd is missing, or after arming the timerfd failed.
  let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
  /// Watches `clockFD`, which reports steps of CLOCK_REALTIME.
  let clockPoll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
  private(set) var timerFD: Int32?
  private(set) var clockFD: Int32?
  /// Whether the main timer is the timerfd (else the `uv_timer_t`).
  private(set) var usesTimerfd = false
  /// Times arming the timerfd failed, after which the loop uses the `uv_timer_t` for good.
  private(set) var timerFallbacks = 0
  /// Times a timer could not be armed at all, or the clock watch could not be re-armed (the
  /// loop then notices clock steps at its next wake-up, within `maximumSleepMs`).
  private(set) var armFailures = 0
  /// Handles initialized so far, closed by `abandon()` when creation fails part way.
  private var opened: [UnsafeMutablePointer<uv_handle_t>] = []
  private var closing = false

  /// Allocates the loop and initializes it.
  init(_ sys: LibUV) throws(CountdownError) {
    self.sys = sys
    do {
      try sys.loopInit(loop)
    } catch {
      freeMemory()
      throw error
    }
  }

  private func freeMemory() {
    loop.deallocate()
    async.deallocate()
    poll.deallocate()
    timer.deallocate()
    clockPoll.deallocate()
  }

  private static func handle<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_handle_t> {
    UnsafeMutableRawPointer(p).assumingMemoryBound(to: uv_handle_t.self)
  }

  /// Initializes the handles and descriptors. On failure the caller calls `abandon()`.
  func open(usesTimerfd wantsTimerfd: Bool, watchesClockSteps: Bool) throws(CountdownError) {
    try sys.asyncInit(loop, async, loopAsyncCallback)
    opened.append(Self.handle(async))
    // The uv_timer_t always exists (inactive, it costs nothing), so that the loop can fall
    // back to it at run time if arming the timerfd ever fails.
    try sys.timerInit(loop, timer)
    opened.append(Self.handle(timer))
    if wantsTimerfd, let fd = try sys.monotonicTimerFD() {
      timerFD = fd
      try sys.pollInit(loop, poll, fd)
      opened.append(Self.handle(poll))
      usesTimerfd = true
    }
    if watchesClockSteps, let fd = try sys.realtimeTimerFD() {
      clockFD = fd
      try sys.pollInit(loop, clockPoll, fd)
      opened.append(Self.handle(clockPoll))
    }
  }

  /// Points every handle at `core` (unretained: the loop thread holds `core` while it runs)
  /// and starts the watchers. On failure the caller calls `abandon()`.
  func attach(_ core: LoopCore) throws(CountdownError) {
    let opaque = Unmanaged.passUnretained(core).toOpaque()
    async.pointee.data = opaque
    poll.pointee.data = opaque
    timer.pointee.data = opaque
    clockPoll.pointee.data = opaque
    if timerFD != nil { try sys.pollStart(poll, loopPollCallback) }
    if clockFD != nil {
      try sys.pollStart(clockPoll, loopClockCallback)
      armClockWatch()
    }
  }

  /// Undoes a creation that failed part way: closes what was opened, lets libuv finish the
  /// closes, closes the loop and the descriptors, and frees the memory. No thread runs the
  /// loop then, so this runs it here.
  func abandon() {
    for h in opened { LibUV.close(h) }
    opened = []
    closing = true
    LibUV.run(loop)
    closeLoop()
  }

  /// A realtime timer far in the future whose only job is to report clock steps. When it
  /// cannot be armed the watch is dropped; clock steps are then seen at the next wake-up.
  private func armClockWatch() {
    guard let fd = clockFD else { return }
    let tenYears: Int64 = 10 * 365 * 86_400 * 1_000_000_000
    if sys.arm(fd, atNanoseconds: LibUV.realtimeNanoseconds() + tenYears, cancelOnSet: true) != 0 {
      armFailures += 1
      LibUV.pollStop(clockPoll)
    }
  }

  /// Wakes the loop to drain commands. Thread-safe (libuv's one thread-safe call).
  func wake() { LibUV.asyncSend(async) }

  /// Arms the main timer for the monotonic instant `ns`. If the timerfd cannot be armed, the
  /// loop moves to the `uv_timer_t` for good (counted in `timerFallbacks`) rather than sleep
  /// until the next command.
  func arm(monotonicNanoseconds ns: Int64, now: Int64) {
    if usesTimerfd, let fd = timerFD {
      if sys.arm(fd, atNanoseconds: ns) == 0 { return }
      usesTimerfd = false
      timerFallbacks += 1
      LibUV.pollStop(poll)
    }
    LibUV.updateTime(loop)
    let ms = UInt64(max(0, (ns - now + 999_999) / 1_000_000))
    if LibUV.timerStart(timer, loopTimerCallback, milliseconds: ms) != 0 { armFailures += 1 }
  }

  func run() { LibUV.run(loop) }

  /// Closes every handle; `run()` returns once the closes complete.
  func closeAll() {
    guard !closing else { return }
    closing = true
    for h in opened { LibUV.close(h) }
    opened = []
  }

  /// After `run()` returned: closes the loop and the descriptors and frees the memory.
  func closeLoop() {
    let rc = LibUV.loopClose(loop)
    assert(rc == 0, "uv_loop_close: \(LibUV.errorName(rc))")
    if let fd = timerFD { LibUV.closeDescriptor(fd) }
    if let fd = clockFD { LibUV.closeDescriptor(fd) }
    timerFD = nil
    clockFD = nil
    freeMemory()
  }

  /// Drains the clock watch after a step and arms it again.
  func clockStepped() {
    guard let fd = clockFD else { return }
    _ = LibUV.drain(fd)
    armClockWatch()
  }

  func drainTimer() {
    if let fd = timerFD { _ = LibUV.drain(fd) }
  }
}

private func core(_ data: UnsafeMutableRawPointer?) -> LoopCore {
  Unmanaged<LoopCore>.fromOpaque(data!).takeUnretainedValue()
}

private let loopAsyncCallback: @convention(c) (UnsafeMutablePointer<uv_async_t>?) -> Void = {
  core($0!.pointee.data).drainCommands()
}

private let loopPollCallback:
  @convention(c) (UnsafeMutablePointer<uv_poll_t>?, Int32, Int32) -> Void = { handle, _, _ in
    let c = core(handle!.pointee.data)
    c.handles.drainTimer()
    c.timerFired()
  }

private let loopTimerCallback: @convention(c) (UnsafeMutablePointer<uv_timer_t>?) -> Void = {
  core($0!.pointee.data).timerFired()
}

private let loopClockCallback:
  @convention(c) (UnsafeMutablePointer<uv_poll_t>?, Int32, Int32) -> Void = { handle, _, _ in
    let c = core(handle!.pointee.data)
    c.handles.clockStepped()
    c.timerFired()
  }
