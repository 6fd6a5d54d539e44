import NIOCore

#if canImport(Glibc)
  import Glibc
#endif

extension EventLoop {
  /// Names the event loop's thread `name` (the kernel keeps 15 bytes), as `top -H`, `ps -L`
  /// and /proc/PID/task/TID/comm show it: `countdown-net`, `countdown-push`, …
  /// (docs/driver.md, "Threads"). Best effort, from the loop itself: a failure changes nothing.
  package func nameThread(_ name: String) {
    execute {
      #if os(Linux)
        // The calling thread's own comm file: what prctl(PR_SET_NAME) sets, without C.
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = Array(name.utf8.prefix(15)).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        Glibc.close(fd)
      #endif
    }
  }
}
