// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Reads lines from a file descriptor (a socket of `countdown serve`, standard input, a file)
/// through a 64 KiB buffer: one `read` per chunk, not per line. Lines end with `\n`, which is
/// not passed on.
public struct LineReader {
  /// The descriptor read from.
  public let fd: Int32
  private var buffer: [UInt8] = []
  private var start = 0
  private static let chunk = 1 << 16

  public init(fd: Int32) { self.fd = fd }

  /// Calls `body` with each line until the input ends (the last line may lack its `\n`).
  /// - Throws: ``ReadFailure`` when `read` fails, or what `body` throws.
  public mutating func forEachLine(_ body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
    while try readOnce(body) {}
  }

  /// Reads once (blocking until the descriptor has bytes, unless it is non-blocking) and calls
  /// `body` with each line completed by them. False when the input has ended: the unfinished
  /// last line, if any, went to `body`. For a loop that `poll`s the descriptor itself.
  /// - Throws: ``ReadFailure`` when `read` fails (not EAGAIN: that reads nothing and returns
  ///   true), or what `body` throws.
  public mutating func readOnce(_ body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws
    -> Bool
  {
    // Keep the partial line, then read more after it.
    if start > 0 {
      buffer.removeSubrange(0..<start)
      start = 0
    }
    let old = buffer.count
    buffer.append(contentsOf: repeatElement(0, count: Self.chunk))
    let n = buffer.withUnsafeMutableBytes {
      System.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[old...]))
    }
    buffer.removeLast(Self.chunk - (n ?? 0))
    guard let n else {
      if System.wouldBlock { return true }
      throw ReadFailure(message: "cannot read: \(System.lastError)")
    }
    guard n > 0 else {
      if start < buffer.count {
        try buffer.withUnsafeBufferPointer {
          try body(UnsafeBufferPointer(rebasing: $0[start...]))
        }
      }
      buffer.removeAll()
      start = 0
      return false
    }
    // Every complete line in the buffer (a line began before this read may end in it).
    var consumed = start
    try buffer.withUnsafeBufferPointer { all in
      var i = old
      while i < all.count {
        if all[i] == 0x0A {
          try body(UnsafeBufferPointer(rebasing: all[consumed..<i]))
          consumed = i + 1
        }
        i += 1
      }
    }
    start = consumed
    return true
  }
}

/// A read that failed: a message a person can act on.
public struct ReadFailure: Error, CustomStringConvertible, Sendable {
  public var message: String
  public var description: String { message }
  public init(message: String) { self.message = message }
}
