#if canImport(Glibc)
  import Glibc
#endif

/// A value behind a `pthread_mutex_t`.
///
/// Used instead of `Synchronization.Mutex` because that one waits on a raw futex on Linux,
/// which ThreadSanitizer cannot see: TSan then reports every access under it as a race, and
/// real races would hide among the false ones. With a pthread mutex, `swift test
/// --sanitize=thread` checks the driver for real.
///
/// `@unchecked Sendable`: `value` is read and written only inside `withLock`, while the
/// mutex is held.
final class Locked<Value>: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private var value: Value

  init(_ value: Value) {
    self.value = value
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with the value while holding the lock. Keep it short: never block inside.
  func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}
