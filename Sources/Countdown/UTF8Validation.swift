// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// UTF-8 checks for bytes from outside: a line, a file, a socket.
package enum UTF8Validation {
  /// The 0-based offset of the first byte that does not belong to valid UTF-8, or nil when
  /// all of `bytes` is valid. ASCII runs are skipped a byte at a time without decoding.
  package static func firstInvalidByte(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    var i = 0
    while i < bytes.count, bytes[i] < 0x80 { i += 1 }
    if i == bytes.count { return nil }
    var parser = Unicode.UTF8.ForwardParser()
    var input = UnsafeBufferPointer(rebasing: bytes[i...]).makeIterator()
    var offset = i
    while true {
      switch parser.parseScalar(from: &input) {
      case .valid(let scalar): offset += scalar.count
      case .emptyInput: return nil
      case .error: return offset
      }
    }
  }

  /// Throws `invalidPayload` naming the first invalid byte (1-based, as the JSON parser's
  /// messages count) and its value, when `bytes` is not valid UTF-8.
  package static func check(_ bytes: UnsafeBufferPointer<UInt8>) throws(CountdownError) {
    guard let k = firstInvalidByte(bytes) else { return }
    let hex = String(bytes[k], radix: 16, uppercase: true)
    throw .payload(
      "invalid UTF-8 at byte \(k + 1) (0x\(hex.count == 1 ? "0" : "")\(hex)); lines must be UTF-8 text"
    )
  }
}
