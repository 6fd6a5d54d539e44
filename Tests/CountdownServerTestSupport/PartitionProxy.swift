// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation
import NIOConcurrencyHelpers

/// A TCP proxy on loopback that can cut a link as a network partition does (issue 55): while
/// held it forwards nothing either way and closes nothing, so the connections stay open with no
/// reset and no error, and a peer waiting for an answer waits; the bytes wait in the kernel's
/// buffers, none lost, and go on once healed. New connections are accepted meanwhile (the
/// kernel completes the handshake) and hang as the others do.
package final class PartitionProxy: @unchecked Sendable {
  // @unchecked Sendable: the flags are locked boxes; the descriptors are set once.
  /// The port it listens on, on 127.0.0.1.
  package let port: Int
  private let target: Int
  private let listener: Int32
  private let held = NIOLockedValueBox(false)
  private let stopped = NIOLockedValueBox(false)
  private let open = NIOLockedValueBox<[Int32]>([])
  private let threads = NIOLockedValueBox(0)

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

  /// Cuts the link: nothing more is forwarded, either way.
  package func hold() { held.withLockedValue { $0 = true } }
  /// Mends it: what waited is forwarded.
  package func heal() { held.withLockedValue { $0 = false } }

  /// Closes everything and waits for its threads.
  package func stop() {
    stopped.withLockedValue { $0 = true }
    let until = Date().addingTimeInterval(5)
    while threads.withLockedValue({ $0 }) > 0, Date() < until { usleep(10_000) }
    close(listener)
    for fd in open.withLockedValue({ $0 }) { close(fd) }
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

  private var isStopped: Bool { stopped.withLockedValue { $0 } }

  private func accepting() {
    while !isStopped {
      var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
      guard poll(&p, 1, 100) > 0 else { continue }
      let client = accept(listener, nil, nil)
      guard client >= 0 else { continue }
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
        close(client)
        close(upstream)
        continue
      }
      open.withLockedValue { $0 += [client, upstream] }
      run { [self] in pump(from: client, to: upstream) }
      run { [self] in pump(from: upstream, to: client) }
    }
  }

  /// Copies `from` to `to` until either closes or the proxy stops; reads nothing while held.
  private func pump(from: Int32, to: Int32) {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while !isStopped {
      if held.withLockedValue({ $0 }) {
        usleep(10_000)
        continue
      }
      var p = pollfd(fd: from, events: Int16(POLLIN), revents: 0)
      guard poll(&p, 1, 50) > 0 else { continue }
      if held.withLockedValue({ $0 }) { continue }
      let n = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
      guard n > 0 else {
        shutdown(to, Int32(SHUT_WR))
        return
      }
      var sent = 0
      while sent < n {
        // send, not write: a peer gone is an error here, never SIGPIPE for the test process.
        let w = buffer.withUnsafeBytes {
          send(to, $0.baseAddress! + sent, n - sent, Int32(MSG_NOSIGNAL))
        }
        guard w > 0 else { return }
        sent += w
      }
    }
  }
}
