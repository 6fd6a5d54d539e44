import CLibUV

/// Every C call of the driver, in one internal place.
enum LibUV {
  static func realtimeNanoseconds() -> Int64 { cdl_realtime_ns() }
  static func monotonicNanoseconds() -> Int64 { cdl_monotonic_ns() }
  static func setTimerSlack(nanoseconds: UInt) -> Int32 { cdl_set_timer_slack_ns(nanoseconds) }

  /// A non-blocking timerfd on the monotonic clock, or nil where timerfd is missing.
  static func monotonicTimerFD() -> Int32? {
    let fd = cdl_timerfd_create(CLOCK_MONOTONIC)
    return fd >= 0 ? fd : nil
  }

  /// A realtime timerfd used only to hear about clock steps, or nil.
  static func realtimeTimerFD() -> Int32? {
    let fd = cdl_timerfd_create(CLOCK_REALTIME)
    return fd >= 0 ? fd : nil
  }

  @discardableResult
  static func arm(_ fd: Int32, atNanoseconds ns: Int64, cancelOnSet: Bool = false) -> Int32 {
    cdl_timerfd_arm(fd, ns, cancelOnSet ? 1 : 0)
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

  static func close(_ fd: Int32) { _ = cdl_close(fd) }

  static func errorName(_ code: Int32) -> String { String(cString: uv_strerror(code)) }
}
