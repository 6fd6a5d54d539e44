// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownClient

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
    // A reader that went away (EPIPE) leaves nothing more to do.
    CountdownClient.System.writeAll(fd, bytes, socket: false)
    bytes.removeAll(keepingCapacity: true)
  }
}

/// Writes a line to standard error.
func printError(_ s: String) {
  var line = Array(s.utf8)
  line.append(0x0A)
  CountdownClient.System.writeAll(2, line, socket: false)
}
