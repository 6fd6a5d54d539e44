#if canImport(Glibc)
  import Glibc
#endif

/// Client side of the service's Unix domain socket (and loopback TCP), for tools and tests that
/// speak the protocol (docs/protocol.md) without SwiftNIO: `countdown send`, `countdown board`,
/// the benchmarks, and `countdown serve` itself to tell a live server's socket from a stale
/// one. The target's system calls are all in this file.
public enum UnixSocket {
  /// A blocking stream socket connected to `path`.
  /// - Throws: ``SocketError`` naming the path and the reason (no server there, a path
  ///   too long for a socket address, …).
  public static func connect(_ path: String) throws -> Int32 {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
      throw SocketError("the socket path \(path) is longer than a socket address allows")
    }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
      for (k, b) in bytes.enumerated() { raw[k] = b }
    }
    return try connected(AF_UNIX, to: &addr, naming: path)
  }

  /// A blocking TCP socket connected to `127.0.0.1:port`, optionally with SO_RCVBUF set
  /// before connecting (set after, the window already offered shrinks).
  public static func connect(loopbackPort port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    return try connected(AF_INET, to: &addr, naming: "127.0.0.1:\(port)") { fd in
      if var size = receiveBuffer {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
      }
    }
  }

  /// A new stream socket of `family`, set up by `prepare`, connected to `address`.
  private static func connected<Address>(
    _ family: Int32, to address: inout Address, naming name: String,
    prepare: (Int32) -> Void = { _ in }
  ) throws -> Int32 {
    let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else {
      throw SocketError("cannot make a socket: \(String(cString: strerror(errno)))")
    }
    prepare(fd)
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<Address>.size))
      }
    }
    guard rc == 0 else {
      let reason = String(cString: strerror(errno))
      close(fd)
      throw SocketError("cannot connect to \(name): \(reason)")
    }
    return fd
  }

  /// Writes all of `bytes` to the socket `fd`, retrying short writes and EINTR; false when the
  /// peer closed or the write failed (no SIGPIPE is raised).
  @discardableResult
  public static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var sent = 0
    while sent < bytes.count {
      let n = bytes.withUnsafeBufferPointer {
        Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL))
      }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { return false }
      sent += n
    }
    return true
  }
}

/// A socket that could not be made or connected: a message a person can act on.
public struct SocketError: Error, CustomStringConvertible, Sendable {
  public var message: String
  public var description: String { message }
  package init(_ message: String) { self.message = message }
}
