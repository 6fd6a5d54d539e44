import CLibUV
import Countdown

/// The libuv loop and its handles, allocated once so that their addresses never move.
/// All pointer code of the driver is here. Used by the creating thread until the loop thread
/// starts, then only by the loop thread, except `wake()`, which `LoopCore` calls under its
/// queue lock and never after the async handle is closed.
final class LoopHandles {
  let loop = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
  let async = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
  /// Watches `timerFD` (the main timer) when timerfd is available.
  let poll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
  /// The fallback timer where timerfd is missing.
  let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
  /// Watches `clockFD`, which reports steps of CLOCK_REALTIME.
  let clockPoll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
  let timerFD: Int32?
  let clockFD: Int32?
  private var closing = false

  init(usesTimerfd: Bool, watchesClockSteps: Bool) throws(CountdownError) {
    var rc = uv_loop_init(loop)
    guard rc == 0 else {
      Self.free(loop, async, poll, timer, clockPoll)
      throw CountdownError(.shutdown, "uv_loop_init failed: \(LibUV.errorName(rc))")
    }
    rc = uv_async_init(loop, async, loopAsyncCallback)
    precondition(rc == 0, "uv_async_init: \(LibUV.errorName(rc))")
    timerFD = usesTimerfd ? LibUV.monotonicTimerFD() : nil
    if let fd = timerFD {
      rc = uv_poll_init(loop, poll, fd)
      precondition(rc == 0, "uv_poll_init: \(LibUV.errorName(rc))")
    } else {
      rc = uv_timer_init(loop, timer)
      precondition(rc == 0, "uv_timer_init: \(LibUV.errorName(rc))")
    }
    clockFD = watchesClockSteps ? LibUV.realtimeTimerFD() : nil
    if let fd = clockFD {
      rc = uv_poll_init(loop, clockPoll, fd)
      precondition(rc == 0, "uv_poll_init: \(LibUV.errorName(rc))")
      Self.armClockWatch(fd)
    }
  }

  private static func free(_ pointers: UnsafeMutableRawPointer...) {
    for p in pointers { p.deallocate() }
  }

  private static func handle<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_handle_t> {
    UnsafeMutableRawPointer(p).assumingMemoryBound(to: uv_handle_t.self)
  }

  /// A realtime timer far in the future whose only job is to report clock steps.
  private static func armClockWatch(_ fd: Int32) {
    let tenYears: Int64 = 10 * 365 * 86_400 * 1_000_000_000
    LibUV.arm(fd, atNanoseconds: LibUV.realtimeNanoseconds() + tenYears, cancelOnSet: true)
  }

  /// Points every handle at `core` (unretained: the loop thread holds `core` while it runs)
  /// and starts the watchers.
  func attach(_ core: LoopCore) {
    let opaque = Unmanaged.passUnretained(core).toOpaque()
    async.pointee.data = opaque
    poll.pointee.data = opaque
    timer.pointee.data = opaque
    clockPoll.pointee.data = opaque
    if timerFD != nil { uv_poll_start(poll, Int32(UV_READABLE.rawValue), loopPollCallback) }
    if clockFD != nil { uv_poll_start(clockPoll, Int32(UV_READABLE.rawValue), loopClockCallback) }
  }

  /// Wakes the loop to drain commands. Thread-safe (libuv's one thread-safe call).
  func wake() { uv_async_send(async) }

  /// Arms the main timer for the monotonic instant `ns`.
  func arm(monotonicNanoseconds ns: Int64, now: Int64) {
    if let fd = timerFD {
      LibUV.arm(fd, atNanoseconds: ns)
    } else {
      uv_update_time(loop)
      let ms = UInt64(max(0, (ns - now + 999_999) / 1_000_000))
      uv_timer_start(timer, loopTimerCallback, ms, 0)
    }
  }

  func run() { uv_run(loop, UV_RUN_DEFAULT) }

  /// Closes every handle; `run()` returns once the closes complete.
  func closeAll() {
    guard !closing else { return }
    closing = true
    uv_close(Self.handle(async), nil)
    if timerFD != nil {
      uv_close(Self.handle(poll), nil)
    } else {
      uv_close(Self.handle(timer), nil)
    }
    if clockFD != nil { uv_close(Self.handle(clockPoll), nil) }
  }

  /// After `run()` returned: closes the loop and the descriptors and frees the memory.
  func closeLoop() {
    let rc = uv_loop_close(loop)
    assert(rc == 0, "uv_loop_close: \(LibUV.errorName(rc))")
    if let fd = timerFD { LibUV.close(fd) }
    if let fd = clockFD { LibUV.close(fd) }
    Self.free(loop, async, poll, timer, clockPoll)
  }

  /// Drains the clock watch after a step and arms it again.
  func clockStepped() {
    guard let fd = clockFD else { return }
    _ = LibUV.drain(fd)
    Self.armClockWatch(fd)
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
