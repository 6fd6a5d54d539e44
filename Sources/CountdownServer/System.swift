// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CPrefetch

#if canImport(Glibc)
  import Glibc
#endif

/// The service's own system calls, in one internal place: address parsing, the file limit,
/// the socket file, the service manager's sockets and notify datagrams, the HTTP date. (The
/// socket client's calls are in CountdownClient's `System.swift`, the state file's in
/// CountdownStore's; SwiftNIO makes the sockets.)
enum System {
  // MARK: - Addresses

  /// The kind of address `host` is written as, parsed by the C library (`inet_pton`), never by
  /// its prefix: `127.attacker.example` is a name, not a loopback address.
  enum HostKind: Equatable {
    /// An IPv4 address; `loopback` for 127.0.0.0/8.
    case ipv4(loopback: Bool, unspecified: Bool)
    /// An IPv6 address (without brackets); `loopback` for ::1 and ::ffff:127.x.y.z.
    case ipv6(loopback: Bool, unspecified: Bool)
    /// A name (resolved by DNS, so never trusted to mean this machine but `localhost`).
    case name
  }

  static func hostKind(_ host: String) -> HostKind {
    var v4 = in_addr()
    if inet_pton(AF_INET, host, &v4) == 1 {
      let first = UInt32(bigEndian: v4.s_addr) >> 24
      return .ipv4(loopback: first == 127, unspecified: v4.s_addr == 0)
    }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, host, &v6) == 1 {
      let b = withUnsafeBytes(of: &v6) { Array($0) }
      let zeros = b[0..<15].allSatisfy { $0 == 0 }
      let mapped = b[0..<10].allSatisfy { $0 == 0 } && b[10] == 0xFF && b[11] == 0xFF
      return .ipv6(
        loopback: (zeros && b[15] == 1) || (mapped && b[12] == 127),
        unspecified: zeros && b[15] == 0)
    }
    return .name
  }

  /// `localhost`, 127.0.0.0/8 or ::1 (parsed, not matched by prefix).
  static func isLoopback(_ host: String) -> Bool {
    switch hostKind(host) {
    case .ipv4(let loopback, _), .ipv6(let loopback, _): return loopback
    case .name: return host.lowercased() == "localhost"
    }
  }

  // MARK: - The file limit

  /// Raises the soft limit on open files to the hard limit where allowed; returns the soft
  /// limit in force afterwards (nil when it cannot be read).
  static func raiseFileLimit() -> Int? {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
    if limit.rlim_cur < limit.rlim_max {
      var raised = limit
      raised.rlim_cur = limit.rlim_max
      if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
    }
    return Int(clamping: limit.rlim_cur)
  }

  // MARK: - The allocator

  /// The mmap threshold a server holds glibc's allocator at: 128 KiB, glibc's own starting
  /// value (docs/protocol.md, "Memory").
  static let mmapThreshold: Int32 = 128 << 10

  /// Holds glibc's mmap threshold at ``mmapThreshold``, unless the environment sets one
  /// (`MALLOC_MMAP_THRESHOLD_`, or `mmap_threshold` in `GLIBC_TUNABLES`): the listings and
  /// event-stream snapshots of many activities are blocks of megabytes made and freed on
  /// network threads, and with glibc's sliding threshold their pages stayed with the process
  /// (a 100k-activity server with five event-stream clients reconnecting every 5 s held 450-
  /// 500 MB where it needs about 200). Whether it was set.
  static func holdMmapThreshold() -> Bool {
    if getenv("MALLOC_MMAP_THRESHOLD_") != nil { return false }
    if let tunables = getenv("GLIBC_TUNABLES"), String(cString: tunables).contains("mmap_threshold")
    {
      return false
    }
    return cd_hold_mmap_threshold(mmapThreshold) == 1
  }

  /// Gives freed memory's pages back to the system from every arena of the allocator
  /// (glibc's `malloc_trim(0)`; nothing elsewhere), and says how many bytes the process's
  /// resident set shrank by meanwhile (0 when it did not, or it cannot be read).
  static func returnFreedMemory() -> Int {
    let before = residentBytes()
    _ = cd_trim_allocator()
    guard let before, let after = residentBytes(), after < before else { return 0 }
    return before - after
  }

  /// The process's resident set in bytes (the second field of `/proc/self/statm`, in pages),
  /// or nil where there is none.
  static func residentBytes() -> Int? {
    guard let file = fopen("/proc/self/statm", "r") else { return nil }
    defer { fclose(file) }
    var line = [UInt8](repeating: 0, count: 256)
    let read = line.withUnsafeMutableBufferPointer { fread($0.baseAddress, 1, $0.count - 1, file) }
    let fields = String(decoding: line[..<read], as: UTF8.self).split(separator: " ")
    guard fields.count >= 2, let pages = Int(fields[1]) else { return nil }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
  }

  // MARK: - The socket file

  /// Runs `body` (which creates a file) with the file mode creation mask set to `mask`.
  static func withFileModeMask<T>(_ mask: mode_t, _ body: () throws -> T) rethrows -> T {
    let old = umask(mask)
    defer { umask(old) }
    return try body()
  }

  /// Whether `path` is a socket file; nil when nothing is there (not followed if a link).
  static func isSocket(_ path: String) -> Bool? {
    var st = stat()
    guard lstat(path, &st) == 0 else { return nil }
    return (st.st_mode & S_IFMT) == S_IFSOCK
  }

  /// Removes the file at `path` (nothing when there is none).
  static func remove(_ path: String) { unlink(path) }

  /// Why the file at `path` may not hold keys (its group or others may read or write it, or
  /// it is not a regular file), nil when its mode is 0600 or stricter; nil too when it cannot
  /// be read (reading it then says why).
  static func fileModeProblem(_ path: String) -> String? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    guard (st.st_mode & S_IFMT) == S_IFREG else { return "not a regular file" }
    let mode = st.st_mode & 0o777
    guard mode & 0o077 == 0 else {
      return
        "mode \(String(mode, radix: 8)) lets others read it; a file of keys must be 0600 or stricter (chmod 600)"
    }
    return nil
  }

  /// Whether a connection's error says that the peer went away (a reset or a broken pipe):
  /// closed quietly, not logged.
  static func isPeerGone(_ code: Int32) -> Bool { code == ECONNRESET || code == EPIPE }

  /// Lowers the calling thread's scheduling priority to nice `niceness`, so that on a box with
  /// few cores the loop thread wins the CPU when both are ready. On Linux the nice value is a
  /// thread's own, and `setpriority(PRIO_PROCESS, 0, …)` sets the calling thread's
  /// (setpriority(2), NOTES). Best effort: a failure changes nothing.
  static func yieldToOtherThreads(niceness: Int32) {
    #if os(Linux)
      _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
    #endif
  }

  // MARK: - The service manager (docs/systemd.md)

  static var processID: Int32 { getpid() }

  /// What kind of listening socket the descriptor `fd` is: nil when it is not an open stream
  /// socket that listens (socket activation hands over only those).
  static func listeningSocketKind(_ fd: Int32) -> InheritedSocketKind? {
    var type: Int32 = 0
    var accepting: Int32 = 0
    var size = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0,
      type == Int32(SOCK_STREAM.rawValue)
    else { return nil }
    size = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &size) == 0, accepting == 1
    else { return nil }
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let got = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard got == 0 else { return nil }
    switch Int32(storage.ss_family) {
    case AF_UNIX: return .unix
    case AF_INET:
      let address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
      let host = withUnsafeBytes(of: address.sin_addr) { Self.text(of: AF_INET, $0) }
      return .ip(host: host, port: Int(UInt16(bigEndian: address.sin_port)))
    case AF_INET6:
      let address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
      let host = withUnsafeBytes(of: address.sin6_addr) { Self.text(of: AF_INET6, $0) }
      return .ip(host: host, port: Int(UInt16(bigEndian: address.sin6_port)))
    default: return nil
    }
  }

  private static func text(of family: Int32, _ address: UnsafeRawBufferPointer) -> String {
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    guard inet_ntop(family, address.baseAddress, &buffer, socklen_t(buffer.count)) != nil
    else { return "" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// Sends `message` as one datagram to the AF_UNIX socket at `path` (a leading `@` names the
  /// abstract namespace), as sd_notify(3) does; the error's text when it cannot be sent.
  static func sendDatagram(_ message: [UInt8], to path: String) -> String? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    var bytes = Array(path.utf8)
    if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard !bytes.isEmpty, bytes.count < capacity else {
      return "the notify socket \(path) is not an AF_UNIX socket path"
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, b) in bytes.enumerated() { raw[i] = b }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes[0] == 0 ? 0 : 1))
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return String(cString: strerror(errno)) }
    defer { close(fd) }
    let sent = message.withUnsafeBytes { body in
      withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          sendto(fd, body.baseAddress, body.count, Int32(MSG_NOSIGNAL), $0, length)
        }
      }
    }
    return sent == message.count ? nil : String(cString: strerror(errno))
  }

  // MARK: - Time

  /// The names of the HTTP date's days and months (RFC 9110 §5.6.7).
  private static let httpDays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
  private static let httpMonths = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
  ]

  /// The HTTP `Date` of now (RFC 9110 §5.6.7: `Thu, 26 Nov 2026 17:05:09 GMT`).
  static func httpDate() -> String {
    var now = time(nil)
    var t = tm()
    gmtime_r(&now, &t)
    func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
    return
      "\(httpDays[Int(t.tm_wday)]), \(two(t.tm_mday)) \(httpMonths[Int(t.tm_mon)]) \(t.tm_year + 1900) \(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec)) GMT"
  }

  // MARK: - Small files

  /// The bytes of the small file at `path` (a key, a certificate: at most 1 MiB), or why not.
  static func readSmallFile(_ path: String) -> Result<[UInt8], ServerStartError> {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      return .failure(ServerStartError("cannot read \(path): \(String(cString: strerror(errno)))"))
    }
    defer { close(fd) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16384)
    while true {
      let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if n < 0 {
        if errno == EINTR { continue }
        return .failure(
          ServerStartError("cannot read \(path): \(String(cString: strerror(errno)))"))
      }
      if n == 0 { return .success(out) }
      out += chunk[..<n]
      if out.count > 1 << 20 {
        return .failure(ServerStartError("\(path) is over 1 MiB: not a key or a certificate"))
      }
    }
  }
}
