#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Reads lines from a file descriptor through a 64 KiB buffer: one `read` per chunk, not per
/// line.
struct LineReader {
  private let fd: Int32
  private var buffer: [UInt8] = []
  private var start = 0
  private var eof = false

  init(fd: Int32) { self.fd = fd }

  /// Calls `body` with each line (without its `\n`) until the input ends.
  /// - Throws: `IOFailure` when `read` fails.
  mutating func forEachLine(_ body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
    let chunk = 1 << 16
    buffer.reserveCapacity(chunk * 2)
    while true {
      // Emit every complete line in the buffer.
      var consumed = start
      try buffer.withUnsafeBufferPointer { all in
        var i = start
        while i < all.count {
          if all[i] == 0x0A {
            try body(UnsafeBufferPointer(rebasing: all[consumed..<i]))
            consumed = i + 1
          }
          i += 1
        }
      }
      start = consumed
      if eof {
        if start < buffer.count {
          try buffer.withUnsafeBufferPointer {
            try body(UnsafeBufferPointer(rebasing: $0[start...]))
          }
        }
        return
      }
      // Keep the partial line, then read more.
      buffer.removeSubrange(0..<start)
      start = 0
      let old = buffer.count
      buffer.append(contentsOf: repeatElement(0, count: chunk))
      let n = buffer.withUnsafeMutableBufferPointer { read(fd, $0.baseAddress! + old, chunk) }
      if n < 0 {
        if errno == EINTR {
          buffer.removeLast(chunk)
          continue
        }
        throw IOFailure(message: "cannot read input: \(String(cString: strerror(errno)))")
      }
      buffer.removeLast(chunk - n)
      if n == 0 { eof = true }
    }
  }
}

/// A failure to read or write, reported on standard error.
struct IOFailure: Error, CustomStringConvertible {
  var message: String
  var description: String { message }
}

/// Collects output and writes it to a file descriptor in large chunks.
final class OutputBuffer {
  private let fd: Int32
  var bytes: [UInt8] = []
  static let flushThreshold = 1 << 16

  init(fd: Int32) {
    self.fd = fd
    bytes.reserveCapacity(Self.flushThreshold * 2)
  }

  func append(_ b: [UInt8]) {
    bytes.append(contentsOf: b)
    if bytes.count >= Self.flushThreshold { flush() }
  }

  func flushIfFull() {
    if bytes.count >= Self.flushThreshold { flush() }
  }

  func flush() {
    var off = 0
    bytes.withUnsafeBytes { raw in
      while off < raw.count {
        let n = write(fd, raw.baseAddress! + off, raw.count - off)
        if n < 0 {
          if errno == EINTR { continue }
          return  // The reader went away (EPIPE): nothing more to do.
        }
        off += n
      }
    }
    bytes.removeAll(keepingCapacity: true)
  }
}

/// Writes a line to standard error.
func printError(_ s: String) {
  var line = Array(s.utf8)
  line.append(0x0A)
  line.withUnsafeBytes { _ = write(2, $0.baseAddress!, $0.count) }
}

/// Opens `path` for reading, or standard input when nil or "-".
func openInput(_ path: String?) throws -> Int32 {
  guard let path, path != "-" else { return 0 }
  let fd = open(path, O_RDONLY)
  if fd < 0 {
    throw IOFailure(message: "cannot open \(path): \(String(cString: strerror(errno)))")
  }
  return fd
}
