// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Crypto
import Foundation
import Testing

@testable import CountdownServer

/// `Countdown-Signature` (docs/webhooks.md), checked by docs/webhooks.md's Swift receiver code,
/// copied below as it is written there (the test fails when the two differ).
@Suite("Webhook signatures")
struct WebhookSignatureTests {
  // docs/webhooks.md, "Checking a delivery": from `func verify` to its closing brace.
  // BEGIN DOC
  func verify(secret: Data, body: Data, header: String, tolerance: TimeInterval = 300) -> Bool {
    var fields: [Substring: Substring] = [:]
    for part in header.split(separator: ",") {
      let kv = part.split(separator: "=", maxSplits: 1)
      if kv.count == 2 { fields[kv[0]] = kv[1] }
    }
    guard let t = fields["t"], let v1 = fields["v1"], v1.utf8.count == 64,
      let seconds = TimeInterval(t), abs(Date().timeIntervalSince1970 - seconds) <= tolerance
    else { return false }
    let hex = Array(v1.utf8)
    let mac = stride(from: 0, to: 64, by: 2).compactMap {
      UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)
    }
    return mac.count == 32
      && HMAC<SHA256>.isValidAuthenticationCode(
        mac, authenticating: Data(t.utf8) + Data(".".utf8) + body,
        using: SymmetricKey(data: secret))
  }
  // END DOC

  let secret = Data("whsec-test".utf8)
  let body = Data(#"{"event":{"at":1,"event":"started","id":"a"},"activity":null}"#.utf8)

  func sign(_ body: Data, at seconds: Int64) -> String {
    WebhookSignature.header(
      key: SymmetricKey(data: secret), unixSeconds: seconds, body: Array(body))
  }

  @Test(
    "The server's signature verifies with the secret; a changed body, another secret, an old or malformed header do not"
  )
  func verifies() {
    let now = Int64(Date().timeIntervalSince1970)
    let header = sign(body, at: now)
    #expect(header.hasPrefix("t=\(now),v1="))
    #expect(verify(secret: secret, body: body, header: header))
    #expect(!verify(secret: secret, body: body + Data(" ".utf8), header: header))
    #expect(!verify(secret: Data("other".utf8), body: body, header: header))
    #expect(!verify(secret: secret, body: body, header: sign(body, at: now - 3600)))
    for bad in ["", "t=1", "v1=00", "t=x,v1=" + String(repeating: "0", count: 64), "garbage"] {
      #expect(!verify(secret: secret, body: body, header: bad))
    }
  }

  @Test(
    "A known vector: HMAC-SHA256 of \"t.body\" in lower-case hex, as Python's hmac computes it")
  func knownVector() {
    // python3 -c 'import hmac,hashlib;print(hmac.new(b"whsec-test", b"1700000000.{}", hashlib.sha256).hexdigest())'
    let header = WebhookSignature.header(
      key: SymmetricKey(data: secret), unixSeconds: 1_700_000_000, body: Array("{}".utf8))
    #expect(header == "t=1700000000,v1=\(Self.expected)")
  }
  static let expected = "b61622af519f191c257cf4d76855c6f588e4a0799440900d6c0d16b671af84fa"

  @Test("docs/webhooks.md carries this receiver code, line for line")
  func readmeHasIt() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let doc = try String(
      contentsOf: root.appendingPathComponent("docs/webhooks.md"), encoding: .utf8)
    let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
    let lines = source.components(separatedBy: "\n")
    let start = lines.firstIndex { $0.contains("// BEGIN DOC") }! + 1
    let end = lines.firstIndex { $0.contains("// END DOC") }!
    // Indented by two here, inside the suite.
    let code = lines[start..<end].map { $0.hasPrefix("  ") ? String($0.dropFirst(2)) : $0 }
    #expect(doc.contains(code.joined(separator: "\n")))
  }
}
