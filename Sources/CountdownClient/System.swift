// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#if canImport(Glibc)
  import Glibc
#endif

/// The client target's system calls, in one place (as `CountdownLoop/LibUV.swift` is the
/// driver's): sockets, reads, and the one write-until-done of the package, which the
/// command line's output and terminal use too. EINTR is handled here, once.
package enum System {
  /// The text of the current `errno`.
  package static var lastError: String { String(cString: strerror(errno)) }

  // MARK: - Writing

  /// Writes all of `bytes` to `fd`, retrying short writes and EINTR; false when the peer
  /// closed or the write failed. A socket is written with `send(MSG_NOSIGNAL)`, so that a
  /// closed peer is a `false` here and never a SIGPIPE.
  @discardableResult
  package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, socket: Bool)
    -> Bool
  {
    guard let base = bytes.baseAddress else { return true }
    var sent = 0
    while sent < bytes.count {
      let n =
        socket
        ? Glibc.send(fd, base + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
        : Glibc.write(fd, base + sent, bytes.count - sent)
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { return false }
      sent += n
    }
    return true
  }

  /// ``writeAll(_:_:socket:)`` of an array.
  @discardableResult
  package static func writeAll(_ fd: Int32, _ bytes: [UInt8], socket: Bool) -> Bool {
    bytes.withUnsafeBytes { writeAll(fd, $0, socket: socket) }
  }

  // MARK: - Reading

  /// One `read` into `buffer`, retried on EINTR: the bytes read (0 at the end of the input),
  /// or nil when it failed (``lastError`` says why; EAGAIN on a descriptor with nothing yet).
  package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
    while true {
      let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
      if n >= 0 { return n }
      if errno != EINTR { return nil }
    }
  }

  /// Whether the last call failed because a non-blocking descriptor has nothing yet.
  package static var wouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK }

  package static func close(_ fd: Int32) { _ = Glibc.close(fd) }

  // MARK: - Sockets

  /// A connected pair of Unix stream sockets, both close-on-exec.
  package static func socketPair() throws(SocketError) -> (Int32, Int32) {
    var ends: [Int32] = [-1, -1]
    guard
      socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends)
        == 0
    else { throw SocketError("cannot make a socket pair: \(lastError)") }
    return (ends[0], ends[1])
  }

  /// A blocking stream socket connected to the Unix socket at `path`.
  static func connectUnix(_ path: String) throws(SocketError) -> Int32 {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
      throw SocketError("the socket path \(path) is longer than a socket address allows")
    }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
      for (k, b) in bytes.enumerated() { raw[k] = b }
    }
    return try connectedSocket(AF_UNIX, to: &addr, naming: path)
  }

  /// A blocking TCP socket connected to `127.0.0.1:port`, with SO_RCVBUF set before
  /// connecting when `receiveBuffer` is given (set after, the window already offered shrinks).
  static func connectLoopback(port: Int, receiveBuffer: Int32?) throws(SocketError) -> Int32 {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    return try connectedSocket(AF_INET, to: &addr, naming: "127.0.0.1:\(port)") { fd in
      if var size = receiveBuffer {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
      }
    }
  }

  /// A new blocking stream socket of `family`, set up by `prepare`, connected to `address`.
  private static func connectedSocket<Address>(
    _ family: Int32, to address: inout Address, naming name: String,
    prepare: (Int32) -> Void = { _ in }
  ) throws(SocketError) -> Int32 {
    let fd = Glibc.socket(family, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SocketError("cannot make a socket: \(lastError)") }
    prepare(fd)
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<Address>.size))
      }
    }
    guard rc == 0 else {
      let reason = lastError
      _ = Glibc.close(fd)
      throw SocketError("cannot connect to \(name): \(reason)")
    }
    return fd
  }
}
