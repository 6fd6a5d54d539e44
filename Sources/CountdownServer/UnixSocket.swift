#if canImport(Glibc)
  import Glibc
#endif

/// Client side of the service's Unix domain socket, for tools and tests that speak the
/// protocol without SwiftNIO (`countdown send`, the benchmark).
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
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else {
      throw SocketError("cannot make a socket: \(String(cString: strerror(errno)))")
    }
    let rc = withUnsafePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard rc == 0 else {
      let reason = String(cString: strerror(errno))
      close(fd)
      throw SocketError("cannot connect to \(path): \(reason)")
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
  init(_ message: String) { self.message = message }
}
