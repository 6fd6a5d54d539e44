// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownClient
import CountdownServer
import CountdownTestSupport
import Foundation
import Testing

/// A real client socket (Unix or TCP) with line reads bounded in time.
package final class TestClient {
  package let fd: Int32
  private var buffer: [UInt8] = []

  package init(unix path: String) throws { fd = try UnixSocket.connect(path) }

  /// `receiveBuffer` sets SO_RCVBUF before connecting (set after, the window already offered
  /// shrinks, and the kernel then sends what waits only at zero-window probe pace).
  package init(tcpPort port: Int, receiveBuffer: Int32? = nil) throws {
    fd = try UnixSocket.connect(loopbackPort: port, receiveBuffer: receiveBuffer)
  }

  deinit { close(fd) }

  package func send(_ text: String) { sendBytes(Array(text.utf8)) }

  package func sendBytes(_ bytes: [UInt8]) { UnixSocket.sendAll(fd, bytes) }

  /// Where the unread bytes of `buffer` start (lines are not shifted out one by one: that
  /// would cost a copy of the whole buffer per line).
  private var head = 0

  /// Why the last ``line(timeout:)`` gave nil: the time ran out, or the connection ended
  /// first (and when), which a failure must tell apart (a server that closed or died is not
  /// one that is slow).
  package private(set) var noLine = ""

  /// The next line, or nil when the connection closed or `timeout` passed first
  /// (``noLine`` says which).
  package func line(timeout: Double = 5) -> String? {
    let began = Date()
    let deadline = began.addingTimeInterval(timeout)
    while true {
      if let k = buffer[head...].firstIndex(of: 0x0A) {
        let text = String(decoding: buffer[head..<k], as: UTF8.self)
        head = k + 1
        return text
      }
      buffer.removeSubrange(..<head)
      head = 0
      let left = deadline.timeIntervalSinceNow
      if left <= 0 {
        noLine = "no line within \(timeout) s"
        return nil
      }
      var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      if poll(&p, 1, Int32(left * 1000) + 1) <= 0 { continue }
      var chunk = [UInt8](repeating: 0, count: 65536)
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65536, 0) }
      if n <= 0 {
        let after = String(format: "%.1f", Date().timeIntervalSince(began))
        noLine =
          n == 0
          ? "the connection closed after \(after) s, no line"
          : "the connection failed after \(after) s, no line: \(String(cString: strerror(errno)))"
        return nil
      }
      buffer.append(contentsOf: chunk[0..<n])
    }
  }

  /// The next line as a JSON object.
  package func json(timeout: Double = 5) throws -> [String: Any] {
    guard let text = line(timeout: timeout) else { throw TestFailure(noLine) }
    guard let o = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
      throw TestFailure("not an object: \(text)")
    }
    return o
  }

  /// Sends `request` and returns its reply.
  package func request(_ request: String, timeout: Double = 5) throws -> [String: Any] {
    send(request + "\n")
    return try json(timeout: timeout)
  }

  /// Starts countdowns `a0`…`a{n-1}`, the k-th ending `endingAfter + k` ms from now (so that
  /// their ticks spread over the second), in one write, and reads the n replies.
  package func startCountdowns(_ n: Int, endingAfter ms: Int64) throws {
    let base = nowMs() + ms
    var batch = ""
    for k in 0..<n {
      batch +=
        #"{"op":"start","id":"a\#(k)","kind":"countdown","endDate":\#(base + Int64(k)),"title":"A"}"#
        + "\n"
    }
    send(batch)
    // Generous: a debug build beside other suites on two cores takes seconds for thousands.
    for _ in 0..<n { _ = try json(timeout: 30) }
  }

  /// Whether the server closed the connection within `timeout`.
  package func closed(within timeout: Double) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while deadline.timeIntervalSinceNow > 0 {
      if line(timeout: deadline.timeIntervalSinceNow) == nil {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&p, 1, 0) > 0 {
          var b: UInt8 = 0
          if recv(fd, &b, 1, Int32(MSG_PEEK)) == 0 { return true }
        }
      }
    }
    return false
  }
}

package struct TestFailure: Error, CustomStringConvertible {
  package var description: String
  package init(_ d: String) { description = d }
}

/// A fresh temporary directory, removed by `cleanup()`.
package func temporaryDirectory() -> URL {
  // Short: a Unix socket path must fit in 108 bytes.
  let dir = URL(fileURLWithPath: "/tmp/cd-\(UInt32.random(in: 0...UInt32.max))")
  try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
  return dir
}

/// A server in this process on a socket in a temporary directory.
package final class RunningServer {
  package let dir: URL
  package let server: CountdownServer
  package var socket: String { server.options.socketPath }

  package init(_ configure: (inout ServerOptions) -> Void = { _ in }) throws {
    dir = temporaryDirectory()
    var options = ServerOptions(socketPath: dir.appendingPathComponent("c.sock").path)
    configure(&options)
    server = CountdownServer(options: options)
    try server.start()
  }

  package func client() throws -> TestClient { try TestClient(unix: socket) }

  /// A server on a state file that a server of this process just closed. A child process
  /// that another test spawned in that instant holds a copy of the closed lock descriptor
  /// until it execs (O_CLOEXEC closes the copy only then), and so the file's lock for a
  /// moment: the lock error is retried for up to 5 s (500 tries), as `StateFileTests.reopen`
  /// does for the store. Any other error is thrown at once.
  package static func reopening(_ configure: (inout ServerOptions) -> Void) throws -> RunningServer
  {
    for _ in 0..<500 {
      do {
        return try RunningServer(configure)
      } catch let e where "\(e)".contains("another countdown serve") {
        usleep(10_000)
      }
    }
    return try RunningServer(configure)
  }

  deinit {
    server.stop()
    try? FileManager.default.removeItem(at: dir)
  }
}

/// A TCP socket bound to a free port of 127.0.0.1; with `listening`, it listens and never
/// accepts: the kernel completes connections into its backlog and nothing ever answers (a
/// peer that hangs).
package func loopbackSocket(listening: Bool) throws -> (fd: Int32, port: Int) {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
    }
  }
  guard bound, !listening || listen(fd, 64) == 0 else {
    close(fd)
    throw TestFailure("no free port")
  }
  return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// Milliseconds since 1970 by the wall clock.
package func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

/// Waits up to `seconds` for `check` to hold, looking every 20 ms; whether it did.
package func waitUntil(_ seconds: Double, _ check: () -> Bool) -> Bool {
  let until = Date().addingTimeInterval(seconds)
  while Date() < until {
    if check() { return true }
    usleep(20_000)
  }
  return check()
}

/// The built `countdown` executable, beside the test bundle.
package var countdownExecutable: URL {
  var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  while dir.pathExtension == "xctest" { dir.deleteLastPathComponent() }
  return dir.appendingPathComponent("countdown")
}

/// `countdown serve` as a child process; waits for its start-up line.
package final class ServerProcess {
  package let process = Process()
  package let output = Pipe()
  /// Where the process's standard error goes: a file, not a pipe, so that a process writing
  /// more than a pipe holds (64 KiB: a sanitizer's report at exit, a chatty log) never blocks
  /// on it while the test waits for it to exit.
  package let errorsPath =
    NSTemporaryDirectory() + "countdown-serve-stderr-\(UUID().uuidString).log"
  package let startLine: String

  /// `launcher`, when given, runs the server (`prlimit --fsize=N --`, `setpriv …`).
  package init(
    _ arguments: [String], in dir: URL, via launcher: [String] = [],
    environment: [String: String]? = nil, executable: URL = countdownExecutable
  ) throws {
    if let tool = launcher.first {
      process.executableURL = URL(fileURLWithPath: tool)
      process.arguments = launcher.dropFirst() + [executable.path, "serve"] + arguments
    } else {
      process.executableURL = executable
      process.arguments = ["serve"] + arguments
    }
    process.currentDirectoryURL = dir
    if let environment {
      process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    process.standardOutput = output
    guard FileManager.default.createFile(atPath: errorsPath, contents: nil),
      let errors = FileHandle(forWritingAtPath: errorsPath)
    else { throw CocoaError(.fileWriteUnknown) }
    process.standardError = errors
    defer { try? errors.close() }
    try process.run()
    var line = [UInt8]()
    let handle = output.fileHandleForReading
    while true {
      let b = handle.readData(ofLength: 1)
      if b.isEmpty || b.first == 0x0A { break }
      line.append(b.first!)
    }
    startLine = String(decoding: line, as: UTF8.self)
  }

  package var pid: Int32 { process.processIdentifier }

  /// The HTTP port its start-up line names (`--http 127.0.0.1:0`).
  package var httpPort: Int? {
    startLine.firstMatch(of: /http http:\/\/127\.0\.0\.1:(\d+)\//).flatMap { Int($0.1) }
  }

  /// The TCP port its start-up line names (`--listen 127.0.0.1:PORT`).
  package var tcpPort: Int? {
    startLine.firstMatch(of: /tcp 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) }
  }

  /// Resident memory of the server, in KiB.
  package var rssKiB: Int {
    let status = readTextFile("/proc/\(pid)/status")
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
  }

  /// The names of the process's threads (`/proc/PID/task/*/comm`), sorted.
  package var threadNames: [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.map {
      readTextFile("/proc/\(pid)/task/\($0)/comm").trimmingCharacters(in: .whitespacesAndNewlines)
    }.sorted()
  }

  /// What the process has written to standard error so far (all of it once it has exited).
  package var errorText: String {
    readTextFile(errorsPath)
  }

  /// Sends SIGSTOP and waits (up to 5 s) until every thread of the process has stopped.
  ///
  /// `kill` only queues the signal: the group stop begins when the thread chosen to take it
  /// next runs, and until then another thread (woken by a socket) can still answer; on two busy
  /// cores that window was long enough for a forwarded request to be answered (CI, stop 52).
  /// True once every thread's state in `/proc/PID/task/*/stat` is `T` or `t`.
  @discardableResult
  package func stop() -> Bool {
    kill(pid, SIGSTOP)
    let deadline = Date().addingTimeInterval(5)
    while deadline.timeIntervalSinceNow > 0 {
      let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
      let stopped =
        !tasks.isEmpty
        && tasks.allSatisfy { task in
          let state = procStatFields("/proc/\(pid)/task/\(task)/stat").first
          return state == "T" || state == "t"
        }
      if stopped { return true }
      usleep(1_000)
    }
    return false
  }

  /// Waits for the process to exit, up to `timeout` seconds; its status or nil.
  package func exitStatus(within timeout: Double) -> Int32? {
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && deadline.timeIntervalSinceNow > 0 { usleep(10_000) }
    return process.isRunning ? nil : process.terminationStatus
  }

  deinit {
    if process.isRunning {
      process.terminate()
      _ = exitStatus(within: 5)
    }
    unlink(errorsPath)
  }
}
