// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Client side of the service's Unix domain socket (and loopback TCP), for tools and tests that
/// speak the protocol (docs/protocol.md) without SwiftNIO: `countdown send`, `countdown board`,
/// the benchmarks, and `countdown serve` itself to tell a live server's socket from a stale
/// one. Read its lines with ``LineReader`` and decode them with ``ServiceMessage``.
public enum UnixSocket {
  /// A blocking stream socket connected to `path`.
  /// - Throws: ``SocketError`` naming the path and the reason (no server there, a path
  ///   too long for a socket address, …).
  public static func connect(_ path: String) throws(SocketError) -> Int32 {
    try System.connectUnix(path)
  }

  /// A blocking TCP socket connected to `127.0.0.1:port`, optionally with SO_RCVBUF set
  /// before connecting (set after, the window already offered shrinks).
  public static func connect(loopbackPort port: Int, receiveBuffer: Int32? = nil)
    throws(SocketError) -> Int32
  {
    try System.connectLoopback(port: port, receiveBuffer: receiveBuffer)
  }

  /// Writes all of `bytes` to the socket `fd`, retrying short writes and EINTR; false when the
  /// peer closed or the write failed (no SIGPIPE is raised).
  @discardableResult
  public static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    System.writeAll(fd, bytes, socket: true)
  }
}

/// A socket that could not be made or connected: a message a person can act on.
public struct SocketError: Error, CustomStringConvertible, Sendable {
  public var message: String
  public var description: String { message }
  package init(_ message: String) { self.message = message }
}
