// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import CountdownClient

#if canImport(Glibc)
  import Glibc
#endif

/// The command line's own system calls, in one place: files, the environment, signals,
/// `poll`, and the terminal (``RawTerminal``, ``SignalPipe``). Sockets, reads and the one
/// write-until-done are the client target's (`CountdownClient/System.swift`).
enum System {
  /// Opens `path` for reading, or standard input when nil or "-".
  static func openInput(_ path: String?) throws -> Int32 {
    guard let path, path != "-" else { return 0 }
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0 {
      throw IOFailure(message: "cannot open \(path): \(String(cString: strerror(errno)))")
    }
    return fd
  }

  static func close(_ fd: Int32) { _ = Glibc.close(fd) }

  /// The environment variable `name`, or nil.
  static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

  /// Reads the variables `names` and removes them from the environment (so that a child
  /// process does not take what they hand over).
  static func takeEnvironment(_ names: [String]) -> [String: String] {
    var out: [String: String] = [:]
    for name in names {
      if let value = environment(name) { out[name] = value }
      unsetenv(name)
    }
    return out
  }

  /// This process's id.
  static var processID: Int32 { getpid() }

  /// Whether `fd` is a terminal.
  static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) != 0 }

  /// Writes what `print` buffered.
  static func flushStandardOutput() { fflush(nil) }

  /// A write past a file-size limit (`ulimit -f`) becomes an error to report instead of a
  /// signal to die of.
  static func ignoreFileSizeSignal() { signal(SIGXFSZ, SIG_IGN) }

  /// SIGHUP's number, for a dispatch source that handles it (its default action, to end the
  /// process, is turned off first).
  static func takeHangupSignal() -> Int32 {
    signal(SIGHUP, SIG_IGN)
    return SIGHUP
  }

  /// What ``waitForInput(_:timeoutMs:)`` saw on each descriptor.
  struct Readiness {
    var readable: [Bool]
    /// `poll` failed (not interrupted by a signal).
    var failed: Bool
  }

  /// Waits until one of `fds` (negative ones are skipped) can be read, or `timeoutMs`
  /// passes, or a signal arrives.
  static func waitForInput(_ fds: [Int32], timeoutMs: Int64) -> Readiness {
    var polled = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    let n = poll(&polled, nfds_t(polled.count), Int32(clamping: timeoutMs))
    return Readiness(
      readable: polled.map { $0.fd >= 0 && $0.revents != 0 }, failed: n < 0 && errno != EINTR)
  }

  /// One byte from standard input (a key), nil at its end or on failure.
  static func readKey() -> UInt8? {
    var byte: UInt8 = 0
    return read(0, &byte, 1) == 1 ? byte : nil
  }
}

/// The terminal in raw mode on the alternate screen, cursor hidden; `restore()` puts it back.
final class RawTerminal {
  private var saved = termios()
  private var active = false

  init() throws {
    guard tcgetattr(0, &saved) == 0 else {
      printError("countdown board: standard input is not a terminal; run it in one")
      throw ExitCode.failure
    }
    var raw = saved
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN)
    raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
    withUnsafeMutableBytes(of: &raw.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    tcsetattr(0, TCSAFLUSH, &raw)
    active = true
    Self.write(Array("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J".utf8))
  }

  func restore() {
    guard active else { return }
    active = false
    Self.write(Array("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l".utf8))
    tcsetattr(0, TCSAFLUSH, &saved)
  }

  deinit { restore() }

  static func write(_ bytes: [UInt8]) {
    CountdownClient.System.writeAll(1, bytes, socket: false)
  }

  static func size() -> (rows: Int, cols: Int) {
    var ws = winsize()
    guard ioctl(1, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_row > 0, ws.ws_col > 0 else {
      return (24, 80)
    }
    return (Int(ws.ws_row), Int(ws.ws_col))
  }
}

/// SIGWINCH, SIGINT and SIGTERM, turned into bytes on a pipe that `poll` watches.
enum SignalPipe {
  nonisolated(unsafe) static var readEnd: Int32 = -1
  nonisolated(unsafe) static var writeEnd: Int32 = -1
  enum Received { case none, resize, quit }

  static func install() {
    var p: [Int32] = [0, 0]
    guard pipe(&p) == 0 else { return }
    _ = fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK)
    _ = fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK)
    readEnd = p[0]
    writeEnd = p[1]
    for sig in [SIGWINCH, SIGINT, SIGTERM, SIGHUP] {
      signal(sig) { s in
        var b = UInt8(truncatingIfNeeded: s)
        _ = Glibc.write(SignalPipe.writeEnd, &b, 1)
      }
    }
  }

  static func drain() -> Received {
    var got = Received.none
    var b: UInt8 = 0
    while read(readEnd, &b, 1) == 1 {
      if Int32(b) == SIGWINCH {
        if got == .none { got = .resize }
      } else {
        got = .quit
      }
    }
    return got
  }
}
