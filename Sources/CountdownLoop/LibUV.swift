// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CLibUV
import Countdown

#if canImport(Glibc)
  import Glibc
#endif

/// Every C call of the driver, in one internal place: libuv, timerfd, clocks and threads.
///
/// Calls that can fail return a `Result` (or throw) with a `CountdownError` of code
/// `systemError` that names the call and the error; none traps. Tests make any of them fail on
/// purpose through `LibUVFaults`, which a loop takes from its options.
struct LibUV: Sendable {
  /// The calls made to fail, for tests; empty in real use.
  let faults: LibUVFaults

  // MARK: - Clocks (cannot fail)

  static func realtimeNanoseconds() -> Int64 { cdl_realtime_ns() }
  static func monotonicNanoseconds() -> Int64 { cdl_monotonic_ns() }
  static func setTimerSlack(nanoseconds: UInt) -> Int32 { cdl_set_timer_slack_ns(nanoseconds) }

  // MARK: - Errors

  /// libuv's name of an error code (`EMFILE`); libuv's codes are -errno on Linux, so this
  /// serves both.
  static func errorName(_ code: Int32) -> String { String(cString: uv_err_name(code)) }

  /// The error for a failed call: what failed, the code's name and text, and what to do.
  static func failure(_ call: String, _ rc: Int32) -> CountdownError {
    var message = "cannot start the loop: \(call) failed with \(errorName(rc))"
    message += " (\(String(cString: uv_strerror(rc))))"
    if rc == -EMFILE || rc == -ENFILE {
      message +=
        "; the process is out of file descriptors: raise the limit (ulimit -n) or close some"
    } else if rc == -EAGAIN || rc == -ENOMEM {
      message += "; the system is out of threads or memory"
    }
    return CountdownError(.systemError, message)
  }

  private func check(_ fault: LibUVFaults, _ call: String, _ rc: @autoclosure () -> Int32)
    throws(CountdownError)
  {
    let rc = faults.contains(fault) ? fault.injectedCode : rc()
    if rc != 0 { throw Self.failure(call, rc) }
  }

  // MARK: - libuv handles

  /// Descriptors `uv_loop_init` opens on Linux: its epoll instance, its signal pipe (two)
  /// and its eventfd.
  static let loopInitDescriptors: Int32 = 4

  /// Initializes a loop. libuv before 1.51 leaks its epoll descriptor when `uv_loop_init`
  /// fails part way (libuv pull request 4757; Debian 12 ships 1.44), so at the descriptor
  /// limit it is not even tried: the descriptors it needs are checked for first.
  func loopInit(_ loop: UnsafeMutablePointer<uv_loop_t>) throws(CountdownError) {
    try check(.loopInit, "uv_loop_init", cdl_descriptors_available(Self.loopInitDescriptors))
    try check(.loopInit, "uv_loop_init", uv_loop_init(loop))
  }

  func asyncInit(
    _ loop: UnsafeMutablePointer<uv_loop_t>, _ handle: UnsafeMutablePointer<uv_async_t>,
    _ callback: uv_async_cb
  ) throws(CountdownError) {
    try check(.asyncInit, "uv_async_init", uv_async_init(loop, handle, callback))
  }

  func pollInit(
    _ loop: UnsafeMutablePointer<uv_loop_t>, _ handle: UnsafeMutablePointer<uv_poll_t>, _ fd: Int32
  ) throws(CountdownError) {
    try check(.pollInit, "uv_poll_init", uv_poll_init(loop, handle, fd))
  }

  func timerInit(
    _ loop: UnsafeMutablePointer<uv_loop_t>, _ handle: UnsafeMutablePointer<uv_timer_t>
  ) throws(CountdownError) {
    try check(.timerInit, "uv_timer_init", uv_timer_init(loop, handle))
  }

  func pollStart(_ handle: UnsafeMutablePointer<uv_poll_t>, _ callback: uv_poll_cb)
    throws(CountdownError)
  {
    try check(
      .pollStart, "uv_poll_start", uv_poll_start(handle, Int32(UV_READABLE.rawValue), callback))
  }

  static func pollStop(_ handle: UnsafeMutablePointer<uv_poll_t>) { _ = uv_poll_stop(handle) }

  /// Starts a one-shot timer `ms` milliseconds after the loop's cached now. libuv refuses
  /// only a closing handle or a missing callback (`UV_EINVAL`), so this cannot fail while the
  /// loop runs; the result is still returned, and counted by the caller.
  static func timerStart(
    _ handle: UnsafeMutablePointer<uv_timer_t>, _ callback: uv_timer_cb, milliseconds ms: UInt64
  ) -> Int32 {
    uv_timer_start(handle, callback, ms, 0)
  }

  static func updateTime(_ loop: UnsafeMutablePointer<uv_loop_t>) { uv_update_time(loop) }

  /// Wakes the loop; libuv's one thread-safe call.
  static func asyncSend(_ handle: UnsafeMutablePointer<uv_async_t>) { _ = uv_async_send(handle) }

  static func run(_ loop: UnsafeMutablePointer<uv_loop_t>) { _ = uv_run(loop, UV_RUN_DEFAULT) }

  static func close(_ handle: UnsafeMutablePointer<uv_handle_t>) { uv_close(handle, nil) }

  /// Closes a loop whose handles are all closed; the libuv error code otherwise.
  static func loopClose(_ loop: UnsafeMutablePointer<uv_loop_t>) -> Int32 { uv_loop_close(loop) }

  // MARK: - timerfd

  /// A non-blocking timerfd on the monotonic clock; nil where the kernel has no timerfd
  /// (the loop then uses a `uv_timer_t`). Any other failure, such as the descriptor limit, is
  /// an error: falling back then would only hide it.
  func monotonicTimerFD() throws(CountdownError) -> Int32? {
    try timerFD(CLOCK_MONOTONIC, .timerfdCreate)
  }

  /// A realtime timerfd used only to hear about clock steps, or nil where there is none.
  func realtimeTimerFD() throws(CountdownError) -> Int32? {
    try timerFD(CLOCK_REALTIME, .clockWatchCreate)
  }

  private func timerFD(_ clock: clockid_t, _ fault: LibUVFaults) throws(CountdownError) -> Int32? {
    let fd = faults.contains(fault) ? fault.injectedCode : cdl_timerfd_create(clock)
    if fd >= 0 { return fd }
    if fd == -ENOSYS || fd == -EINVAL { return nil }
    throw Self.failure("timerfd_create", fd)
  }

  /// Arms `fd` for the absolute instant `ns` of its clock; 0 or -errno.
  func arm(_ fd: Int32, atNanoseconds ns: Int64, cancelOnSet: Bool = false) -> Int32 {
    if faults.contains(.timerfdArm) { return LibUVFaults.timerfdArm.injectedCode }
    return cdl_timerfd_arm(fd, ns, cancelOnSet ? 1 : 0)
  }

  /// Drains the timerfd; true when the clock was stepped (ECANCELED).
  static func drain(_ fd: Int32) -> Bool {
    var stepped = false
    for _ in 0..<4 {
      let r = cdl_timerfd_drain(fd)
      if r == -ECANCELED { stepped = true }
      if r != 0 { break }
    }
    return stepped
  }

  static func closeDescriptor(_ fd: Int32) { _ = cdl_close(fd) }

  // MARK: - Threads

  /// Starts a joinable thread running `body`.
  func startThread(_ body: @escaping @Sendable () -> Void) throws(CountdownError) -> pthread_t {
    final class Box: @unchecked Sendable {  // handed to exactly one thread, read once there
      let body: @Sendable () -> Void
      init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body))
    var thread = pthread_t()
    let rc =
      faults.contains(.threadCreate)
      ? -LibUVFaults.threadCreate.injectedCode
      : pthread_create(
        &thread, nil,
        { arg in
          Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue().body()
          return nil
        }, box.toOpaque())
    if rc != 0 {
      box.release()
      throw Self.failure("pthread_create", -rc)
    }
    return thread
  }

  static func join(_ thread: pthread_t) { _ = pthread_join(thread, nil) }
  static func detach(_ thread: pthread_t) { _ = pthread_detach(thread) }
  static func isCurrent(_ thread: pthread_t) -> Bool { pthread_equal(pthread_self(), thread) != 0 }

  /// The number of online cores.
  static func onlineCores() -> Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}

/// The threads that must run as soon as they wake: the loop thread (a tick is due at its
/// instant) and a service's network threads (they carry the ticks to subscribers). Each asks
/// the kernel for its shortest scheduling slice, 0.1 ms (EEVDF's custom slice, Linux 6.12 and
/// later, no privilege needed), instead of the default 0.7 ms × (1 + log2 cores). On a box of
/// few cores a woken thread of a shorter slice than the one running takes the CPU at once
/// instead of after the other's slice; the CPU shares do not change. docs/driver.md says
/// more; BENCHMARKS.md, "Short slices", has the measurements.
package enum PromptWakeups {
  /// The slice asked for, in nanoseconds.
  package static let sliceNanoseconds: UInt64 = 100_000

  /// Asks for the short slice for the calling thread. Best effort: 0 when set, 1 when the
  /// thread runs under another policy (real-time, idle; left as it is), or -errno; an older
  /// kernel accepts the call and keeps its own slice. Nothing else about the thread changes.
  @discardableResult
  package static func request() -> Int32 { cdl_set_sched_slice_ns(sliceNanoseconds) }

  /// The calling thread's slice as the kernel reports it (nil where it cannot say).
  package static var currentSliceNanoseconds: UInt64? {
    let ns = cdl_sched_slice_ns()
    return ns < 0 ? nil : UInt64(ns)
  }
}

/// C calls that a test makes fail, each with a realistic error code.
struct LibUVFaults: OptionSet, Sendable {
  let rawValue: UInt32
  static let loopInit = LibUVFaults(rawValue: 1 << 0)
  static let asyncInit = LibUVFaults(rawValue: 1 << 1)
  static let pollInit = LibUVFaults(rawValue: 1 << 2)
  static let timerInit = LibUVFaults(rawValue: 1 << 3)
  static let pollStart = LibUVFaults(rawValue: 1 << 4)
  static let timerfdCreate = LibUVFaults(rawValue: 1 << 5)
  static let clockWatchCreate = LibUVFaults(rawValue: 1 << 6)
  static let timerfdArm = LibUVFaults(rawValue: 1 << 7)
  static let threadCreate = LibUVFaults(rawValue: 1 << 8)

  /// The negative errno a faulted call returns.
  var injectedCode: Int32 {
    switch self {
    case .timerfdCreate, .clockWatchCreate: -EMFILE
    case .threadCreate: -EAGAIN
    case .timerfdArm: -EINVAL
    default: -ENOMEM
    }
  }
}
