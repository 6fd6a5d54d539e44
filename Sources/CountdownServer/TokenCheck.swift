// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// How a client's token is compared with the server's (docs/protocol.md, docs/http.md): as bytes, never as Swift
/// strings (`"e\u{301}" == "é"` is true for `String`, and its comparison stops at the first
/// difference), in time that depends on the length only.
enum TokenCheck {
  /// Whether `given` is the token, byte for byte.
  static func matches(_ given: some Collection<UInt8>, _ token: String) -> Bool {
    matches(given, token.utf8)
  }

  /// Whether `given` is `expected`, byte for byte, in time that depends on the lengths only.
  static func matches(_ given: some Collection<UInt8>, _ expected: some Collection<UInt8>) -> Bool {
    guard given.count == expected.count else { return false }
    var diff: UInt8 = 0
    for (x, y) in zip(given, expected) { diff |= x ^ y }
    return diff == 0
  }
}
