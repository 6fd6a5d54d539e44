// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation
import NIOConcurrencyHelpers

/// A TCP proxy on loopback that makes a link fail short of death, with Toxiproxy's verbs
/// (docs/cluster.md, "Faults short of death"): each connection it accepts is forwarded to
/// `target` on 127.0.0.1 until a test
/// - **holds** it (``hold()``): nothing is forwarded either way and nothing is closed, as a
///   network partition does: the connections stay open with no reset and no error, a peer
///   waiting for an answer waits, the bytes wait (in the kernel's buffers and the proxy's),
///   none lost, and go on once healed. New connections are accepted (the kernel completes the
///   handshake) and hang as the others do.
/// - **cuts** it (``cut()``): every open connection is closed with a reset on both sides
///   (`SO_LINGER` 0), and each new one is reset as soon as it is accepted, until healed.
/// - **slows** it (``slow(_:)``): each chunk read is forwarded that many milliseconds after it
///   came, in each direction (so a request and its answer take twice that more).
/// - **heals** it (``heal()``): forwards again, at once.
/// - **flaps** (``flap(every:for:)``): cut and healed in turn, on a thread of its own.
///
/// No byte leaves loopback. Each direction of each connection is one thread.
package final class FaultProxy: @unchecked Sendable {
  // @unchecked Sendable: the mode and the bookkeeping are locked boxes; the listener is set
  // once.
  /// The port it listens on, on 127.0.0.1.
  package let port: Int
  private let target: Int
  private let listener: Int32
  private let state = NIOLockedValueBox(Mode())
  private let threads = NIOLockedValueBox(0)
  /// Connections accepted so far and connections reset by ``cut()`` (for the tests' checks).
  private let counts = NIOLockedValueBox((accepted: 0, reset: 0))

  private struct Mode {
    var held = false
    var refusing = false
    /// Each ``cut()`` moves it on: a connection made before it closes.
    var cuts = 0
    var delayMs = 0
    var stopped = false
  }

  /// Listens on a free loopback port and forwards each connection to `target` on 127.0.0.1.
  package init(to target: Int) throws {
    self.target = target
    let (fd, port) = try loopbackSocket(listening: true)
    listener = fd
    self.port = port
    run { [self] in accepting() }
  }

  /// `url` (a `postgres://…@127.0.0.1:PORT/…` URL) through this proxy.
  package func through(_ url: String) -> String {
    url.replacingOccurrences(of: ":\(target)/", with: ":\(port)/")
  }

  /// Holds the link: nothing more is forwarded, either way, and nothing is closed.
  package func hold() { state.withLockedValue { $0.held = true } }

  /// Cuts the link: every connection is reset, and so is each new one until ``heal()``.
  package func cut() {
    state.withLockedValue {
      $0.refusing = true
      $0.cuts += 1
    }
  }

  /// Adds `ms` milliseconds to each direction (0: none).
  package func slow(_ ms: Int) { state.withLockedValue { $0.delayMs = ms } }

  /// Mends it: forwards again (what waited first), accepts again, adds no delay.
  package func heal() {
    state.withLockedValue {
      $0.held = false
      $0.refusing = false
      $0.delayMs = 0
    }
  }

  /// Cuts and heals the link in turn, `every` seconds, for `seconds`, then leaves it healed;
  /// returns at once. The returned closure waits for the end.
  package func flap(every: Double, for seconds: Double) -> @Sendable () -> Void {
    let done = NIOLockedValueBox(false)
    run { [self] in
      let end = Date().addingTimeInterval(seconds)
      var isCut = false
      while Date() < end, !isStopped {
        isCut ? heal() : cut()
        isCut.toggle()
        usleep(UInt32(every * 1_000_000))
      }
      heal()
      done.withLockedValue { $0 = true }
    }
    return {
      while !done.withLockedValue({ $0 }) { usleep(10_000) }
    }
  }

  /// Connections accepted, and those closed by a cut.
  package var accepted: Int { counts.withLockedValue { $0.accepted } }
  package var reset: Int { counts.withLockedValue { $0.reset } }

  /// Closes everything and waits for its threads.
  package func stop() {
    let first = state.withLockedValue { mode in
      defer { mode.stopped = true }
      return !mode.stopped
    }
    guard first else { return }
    let until = Date().addingTimeInterval(5)
    while threads.withLockedValue({ $0 }) > 0, Date() < until { usleep(10_000) }
    close(listener)
  }

  deinit { stop() }

  private func run(_ body: @escaping @Sendable () -> Void) {
    threads.withLockedValue { $0 += 1 }
    let t = Thread { [threads] in
      body()
      threads.withLockedValue { $0 -= 1 }
    }
    t.start()
  }

  private var isStopped: Bool { state.withLockedValue { $0.stopped } }

  /// Closes `fd` with a reset rather than a FIN.
  private static func abort(_ fd: Int32) {
    var l = linger(l_onoff: 1, l_linger: 0)
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
    close(fd)
  }

  private func accepting() {
    while !isStopped {
      var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
      guard poll(&p, 1, 100) > 0 else { continue }
      let client = accept(listener, nil, nil)
      guard client >= 0 else { continue }
      let (refusing, cuts) = state.withLockedValue { ($0.refusing, $0.cuts) }
      if refusing {
        Self.abort(client)
        continue
      }
      let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      address.sin_port = in_port_t(UInt16(target).bigEndian)
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
      }
      guard connected else {
        Self.abort(client)
        close(upstream)
        continue
      }
      counts.withLockedValue { $0.accepted += 1 }
      let link = Link(client, upstream, madeAfter: cuts)
      run { [self] in pump(link, from: client, to: upstream) }
      run { [self] in pump(link, from: upstream, to: client) }
    }
  }

  /// One proxied connection's two descriptors, closed by the last of its two pumps out.
  private final class Link: @unchecked Sendable {
    // @unchecked Sendable: `left` and `aborted` are locked; the descriptors are set once.
    let a: Int32
    let b: Int32
    let madeAfter: Int
    private let left = NIOLockedValueBox(2)
    private let aborted = NIOLockedValueBox(false)

    init(_ a: Int32, _ b: Int32, madeAfter: Int) {
      (self.a, self.b, self.madeAfter) = (a, b, madeAfter)
    }

    func markAborted() { aborted.withLockedValue { $0 = true } }

    /// Called by each pump as it ends: the last closes both descriptors (with a reset when
    /// cut), so that neither is closed while the other pump still polls it.
    func pumpEnded() {
      let last = left.withLockedValue {
        $0 -= 1
        return $0 == 0
      }
      guard last else { return }
      if aborted.withLockedValue({ $0 }) {
        FaultProxy.abort(a)
        FaultProxy.abort(b)
      } else {
        close(a)
        close(b)
      }
    }
  }

  /// Copies `from` to `to` until either closes, the link is cut or the proxy stops; reads
  /// nothing while held; forwards each chunk `delayMs` after it was read.
  private func pump(_ link: Link, from: Int32, to: Int32) {
    defer { link.pumpEnded() }
    var buffer = [UInt8](repeating: 0, count: 65_536)
    // Chunks read and not yet due, with the instant each is due (ms since 1970).
    var waiting: [(due: Int64, bytes: [UInt8])] = []
    var fromClosed = false
    while true {
      let mode = state.withLockedValue { $0 }
      if mode.stopped { return }
      if mode.cuts > link.madeAfter {
        link.markAborted()
        // Wake the other pump at once: its poll sees the descriptors shut.
        shutdown(link.a, Int32(SHUT_RDWR))
        shutdown(link.b, Int32(SHUT_RDWR))
        counts.withLockedValue { $0.reset += 1 }
        return
      }
      if mode.held {
        usleep(10_000)
        continue
      }
      // Forward what is due.
      let now = nowMs()
      while let first = waiting.first, first.due <= now {
        guard Self.send(first.bytes, to: to) else { return }
        waiting.removeFirst()
      }
      if fromClosed {
        if waiting.isEmpty {
          shutdown(to, Int32(SHUT_WR))
          return
        }
        usleep(5_000)
        continue
      }
      let wait = waiting.first.map { Int32(max(0, min(50, $0.due - now))) } ?? 50
      var p = pollfd(fd: from, events: Int16(POLLIN), revents: 0)
      guard poll(&p, 1, wait) > 0 else { continue }
      let held = state.withLockedValue { $0.held || $0.cuts > link.madeAfter }
      if held { continue }
      let n = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
      if n <= 0 {
        fromClosed = true
        continue
      }
      let chunk = Array(buffer[0..<n])
      if mode.delayMs > 0 || !waiting.isEmpty {
        waiting.append((nowMs() + Int64(mode.delayMs), chunk))
      } else {
        guard Self.send(chunk, to: to) else { return }
      }
    }
  }

  /// Writes all of `bytes`; false when the peer is gone.
  private static func send(_ bytes: [UInt8], to fd: Int32) -> Bool {
    var sent = 0
    while sent < bytes.count {
      // send, not write: a peer gone is an error here, never SIGPIPE for the test process.
      let w = bytes.withUnsafeBytes {
        Foundation.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
      }
      guard w > 0 else { return false }
      sent += w
    }
    return true
  }
}
