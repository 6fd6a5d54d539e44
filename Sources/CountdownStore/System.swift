// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#if canImport(Glibc)
  import Glibc
#endif

/// The store's system calls, in one place: the state file's lock and the checks before it is
/// opened. (SQLite does the rest of the file's I/O.)
enum System {
  /// What is at a path.
  enum FileKind: Equatable {
    case regular(size: Int64)
    case directory
    case other
  }

  /// What is at `path` (links followed), or nil when nothing is.
  static func fileKind(_ path: String) -> FileKind? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    switch st.st_mode & S_IFMT {
    case S_IFREG: return .regular(size: Int64(st.st_size))
    case S_IFDIR: return .directory
    default: return .other
    }
  }

  /// Why this user may not write `path` now, in the system's words (`Read-only file
  /// system`), or nil when it may.
  static func writeRefusal(_ path: String) -> String? {
    access(path, W_OK) == 0 ? nil : String(cString: strerror(errno))
  }

  /// Whether this user may write to `path`.
  static func isWritable(_ path: String) -> Bool { writeRefusal(path) == nil }

  /// Whether this user may read and write `path`.
  static func isReadableAndWritable(_ path: String) -> Bool { access(path, R_OK | W_OK) == 0 }

  /// What ``lockFile(_:)`` got.
  enum LockResult {
    case locked(Int32)
    /// Another process holds the lock.
    case busy
    /// The file could not be opened: the reason.
    case failed(String)
  }

  /// Opens `path` (creating it empty, mode 0600, when missing) and takes its exclusive
  /// `flock` without waiting.
  static func lockFile(_ path: String) -> LockResult {
    let fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return .failed(String(cString: strerror(errno))) }
    guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
      _ = Glibc.close(fd)
      return .busy
    }
    return .locked(fd)
  }

  /// Closes a descriptor (and so releases its lock).
  static func close(_ fd: Int32) { _ = Glibc.close(fd) }
}
