// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import Foundation
import Testing

@testable import CountdownServer

#if canImport(Glibc)
  import Glibc
#endif

/// systemd's two protocols (docs/systemd.md): socket activation's environment, read as the
/// manager sets it, and the notify socket's datagrams from a server in this process.
@Suite("Service manager")
struct ServiceManagerTests {
  typealias Env = ServiceManagerEnvironment

  /// Descriptors 3… as the test says they are, not as the process has them.
  static func kinds(_ list: [InheritedSocketKind?]) -> (Int32) -> InheritedSocketKind? {
    { fd in Int(fd) - 3 < list.count ? list[Int(fd) - 3] : nil }
  }

  static let unix = InheritedSocketKind.unix
  static let web = InheritedSocketKind.ip(host: "127.0.0.1", port: 8080)
  static let v6 = InheritedSocketKind.ip(host: "::1", port: 7000)

  @Test("Sockets are taken only for this process, by name, or by family when unnamed")
  func sockets() throws {
    let named = try Env.read(
      ["LISTEN_PID": "42", "LISTEN_FDS": "3", "LISTEN_FDNAMES": "http:socket:listen"], pid: 42,
      kind: Self.kinds([Self.web, Self.unix, Self.v6]))
    #expect(named.sockets.http == InheritedSocket(fd: 3, kind: Self.web))
    #expect(named.sockets.socket == InheritedSocket(fd: 4, kind: Self.unix))
    #expect(named.sockets.listen == InheritedSocket(fd: 5, kind: Self.v6))
    #expect(named.sockets.listen?.hostPort == "[::1]:7000")
    #expect(named.sockets.http?.hostPort == "127.0.0.1:8080")
    // A unit's default names: the Unix socket serves the protocol, TCP serves HTTP.
    let unnamed = try Env.read(
      [
        "LISTEN_PID": "42", "LISTEN_FDS": "2",
        "LISTEN_FDNAMES": "countdown.socket:countdown.socket",
      ],
      pid: 42, kind: Self.kinds([Self.unix, Self.web]))
    #expect(unnamed.sockets.socket?.fd == 3)
    #expect(unnamed.sockets.http?.fd == 4)
    #expect(unnamed.sockets.listen == nil)
    let noNames = try Env.read(
      ["LISTEN_PID": "42", "LISTEN_FDS": "1"], pid: 42, kind: Self.kinds([Self.unix]))
    #expect(noNames.sockets.socket?.fd == 3)
    // Another process's (a parent's, inherited by mistake): none taken.
    let other = try Env.read(
      ["LISTEN_PID": "41", "LISTEN_FDS": "1"], pid: 42, kind: Self.kinds([Self.unix]))
    #expect(other == Env())
    #expect(try Env.read([:], pid: 42, kind: Self.kinds([])) == Env())
  }

  @Test("What cannot be served is refused, naming what to change")
  func refusals() {
    func problem(_ env: [String: String], _ kinds: [InheritedSocketKind?]) -> String? {
      do {
        _ = try Env.read(env, pid: 7, kind: Self.kinds(kinds))
        return nil
      } catch {
        return error.message
      }
    }
    let base = ["LISTEN_PID": "7"]
    #expect(problem(base.merging(["LISTEN_FDS": "x"]) { $1 }, [])?.contains("LISTEN_FDS=x") == true)
    #expect(
      problem(
        base.merging(["LISTEN_FDS": "2", "LISTEN_FDNAMES": "http"]) { $1 }, [Self.web, Self.unix])?
        .contains("names 1 sockets but LISTEN_FDS is 2") == true)
    #expect(
      problem(base.merging(["LISTEN_FDS": "1"]) { $1 }, [nil])?.contains(
        "not a listening stream socket") == true)
    #expect(
      problem(base.merging(["LISTEN_FDS": "1", "LISTEN_FDNAMES": "socket"]) { $1 }, [Self.web])?
        .contains("named socket") == true)
    #expect(
      problem(base.merging(["LISTEN_FDS": "1", "LISTEN_FDNAMES": "http"]) { $1 }, [Self.unix])?
        .contains("is a Unix socket") == true)
    #expect(
      problem(base.merging(["LISTEN_FDS": "2"]) { $1 }, [Self.web, Self.web])?.contains(
        "two sockets handed over for http") == true)
    #expect(
      problem(["NOTIFY_SOCKET": "/run/n", "WATCHDOG_USEC": "0"], [])?.contains("WATCHDOG_USEC=0")
        == true)
  }

  @Test("The watchdog: the notify socket, its interval, and only for this process")
  func watchdogEnvironment() throws {
    let mine = try Env.read(
      ["NOTIFY_SOCKET": "@sd", "WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "9"], pid: 9,
      kind: Self.kinds([]))
    #expect(mine.notifySocket == "@sd")
    #expect(mine.watchdogMicroseconds == 3_000_000)
    let theirs = try Env.read(
      ["NOTIFY_SOCKET": "@sd", "WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "8"], pid: 9,
      kind: Self.kinds([]))
    #expect(theirs.notifySocket == "@sd")
    #expect(theirs.watchdogMicroseconds == nil)
    // No notify socket: nowhere to ping.
    let none = try Env.read(["WATCHDOG_USEC": "3000000"], pid: 9, kind: Self.kinds([]))
    #expect(none.watchdogMicroseconds == nil)
  }

  @Test("Watchdog beats ping while the loop answers and withhold while it does not")
  func watchdogBeats() {
    var w = WatchdogState()
    w.answered(activities: 2)
    #expect(w.beat() == .ping(activities: 2))
    w.answered(activities: 3)
    #expect(w.beat() == .ping(activities: 3))
    // No answer before the next beat: withheld, logged once, until the loop answers.
    #expect(w.beat() == .withhold(firstWithheld: true))
    #expect(w.beat() == .withhold(firstWithheld: false))
    #expect(w.beat() == .withhold(firstWithheld: false))
    w.answered(activities: 1)
    #expect(w.beat() == .ping(activities: 1))
    #expect(w.beat() == .withhold(firstWithheld: true))
  }

  /// An AF_UNIX datagram socket that receives what the server sends to NOTIFY_SOCKET.
  final class NotifyListener {
    let fd: Int32
    let path: String

    init(path: String) throws {
      self.path = path
      fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
      var address = sockaddr_un()
      address.sun_family = sa_family_t(AF_UNIX)
      withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, b) in path.utf8.enumerated() { raw[i] = b }
      }
      let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
      }
      guard bound == 0 else { throw TestFailure("cannot bind \(path)") }
    }

    /// The next datagram within `timeout` seconds, or nil.
    func next(timeout: Double) -> String? {
      var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      guard poll(&p, 1, Int32(timeout * 1000)) == 1 else { return nil }
      var buffer = [UInt8](repeating: 0, count: 4096)
      let n = recv(fd, &buffer, buffer.count, 0)
      return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : nil
    }

    /// Datagrams received over `seconds`.
    func all(over seconds: Double) -> [String] {
      let end = Date().addingTimeInterval(seconds)
      var out: [String] = []
      while Date() < end, let m = next(timeout: end.timeIntervalSinceNow) { out.append(m) }
      return out
    }

    deinit {
      close(fd)
      unlink(path)
    }
  }

  @Test("READY=1 once serving, WATCHDOG=1 while the loop answers, none while it is wedged")
  func notifyAndWatchdog() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let listener = try NotifyListener(path: dir.appendingPathComponent("notify").path)
    var options = ServerOptions(socketPath: dir.appendingPathComponent("c.sock").path)
    options.serviceManager.notifySocket = listener.path
    options.serviceManager.watchdogMicroseconds = 200_000
    let server = CountdownServer(options: options)
    try server.start()
    // What run() does once the group traps signals; called here, not from a task, because a
    // full parallel test run can hold the cooperative pool's threads for longer than 10 s.
    server.notifyReady()
    defer { server.stop() }
    let ready = try #require(listener.next(timeout: 10))
    #expect(ready.contains("READY=1"))
    #expect(ready.contains("MAINPID=\(getpid())"))
    #expect(ready.contains("STATUS=Serving 0 activities"))
    let client = try TestClient(unix: options.socketPath)
    try client.startCountdowns(1, endingAfter: 600_000)
    // Pings every 100 ms (half of WATCHDOG_USEC), with the count the loop gave.
    let healthy = listener.all(over: 1)
    let pings = healthy.filter { $0.hasPrefix("WATCHDOG=1") }
    #expect(pings.count >= 5, "\(healthy)")
    #expect(healthy.last?.contains("STATUS=Serving 1 activity") == true, "\(healthy)")
    // The loop thread wedged (a command that does not return): no ping until it does.
    let core = try #require(server.core)
    let release = DispatchSemaphore(value: 0)
    core.loop.submit({ _ in release.wait() }, completion: { _ in })
    _ = listener.all(over: 0.25)  // a beat already under way may still ping
    let wedged = listener.all(over: 1)
    #expect(wedged.filter { $0.hasPrefix("WATCHDOG=1") }.isEmpty, "\(wedged)")
    release.signal()
    let after = listener.all(over: 1)
    #expect(after.filter { $0.hasPrefix("WATCHDOG=1") }.count >= 3, "\(after)")
    server.stop()
    let last = listener.all(over: 0.5)
    #expect(last.contains("STOPPING=1"), "\(last)")
  }
}
