// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Crypto
import Foundation
import Testing

@testable import CountdownAPNs

/// The provider JWT (ES256) and the gateway's address, as APNs reads them.
@Suite("APNs provider token and endpoint")
struct ProviderTokenTests {
  static func decode(_ part: Substring) -> Data? {
    var s = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while s.count % 4 != 0 { s += "=" }
    return Data(base64Encoded: s)
  }

  @Test("The JWT is header.claims.signature: ES256, kid, iss, iat, a raw P-256 signature")
  func jwt() throws {
    let key = P256.Signing.PrivateKey()
    let token = try ProviderToken(pem: key.pemRepresentation, keyID: "KEY1", teamID: "TEAM1")
    let jwt = token.make(issuedAt: 1_795_000_000)
    let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
    #expect(parts.count == 3 && !jwt.contains("=") && !jwt.contains("+") && !jwt.contains("/"))
    let header = try JSONSerialization.jsonObject(with: #require(Self.decode(parts[0])))
    let claims = try JSONSerialization.jsonObject(with: #require(Self.decode(parts[1])))
    #expect(header as? [String: String] == ["alg": "ES256", "kid": "KEY1"])
    #expect((claims as? [String: Any])?["iss"] as? String == "TEAM1")
    #expect((claims as? [String: Any])?["iat"] as? Int == 1_795_000_000)
    let signature = try P256.Signing.ECDSASignature(
      rawRepresentation: #require(Self.decode(parts[2])))
    let signed = Data("\(parts[0]).\(parts[1])".utf8)
    #expect(key.publicKey.isValidSignature(signature, for: signed))
    // Another key's signature does not verify: the check can fail.
    #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: signed))
  }

  @Test("A key that is not P-256 in PEM, or an empty id: an error naming the problem")
  func badKeys() {
    let p384 = P384.Signing.PrivateKey().pemRepresentation
    for pem in [p384, "not a key", ""] {
      #expect {
        _ = try ProviderToken(pem: pem, keyID: "K", teamID: "T")
      } throws: { error in
        (error as? APNsConfigurationError)?.message.contains("not a P-256 private key") == true
      }
    }
    let good = P256.Signing.PrivateKey().pemRepresentation
    #expect(throws: APNsConfigurationError.self) {
      _ = try ProviderToken(pem: good, keyID: "", teamID: "T")
    }
  }

  @Test("One JWT for 20 to 50 minutes; a new one after that or when APNs says it expired")
  func renewal() throws {
    let token = try ProviderToken(
      pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "K", teamID: "T")
    var tokens = ProviderTokens(token)
    let t = Int64(1_795_000_000_000)
    let first = tokens.jwt(now: t, random: 0)
    #expect(tokens.jwt(now: t + 19 * 60_000, random: 0.5) == first)
    #expect(tokens.made == 1)
    let second = tokens.jwt(now: t + 20 * 60_000, random: 1)
    #expect(second != first && tokens.made == 2)
    #expect(tokens.jwt(now: t + 69 * 60_000, random: 0) == second)
    #expect(tokens.jwt(now: t + 70 * 60_000, random: 0) != second)
    let third = tokens.jwt(now: t + 71 * 60_000, random: 0)
    tokens.expired(first)  // an old token's answer changes nothing
    #expect(tokens.jwt(now: t + 71 * 60_000, random: 0) == third)
    tokens.expired(third)
    #expect(tokens.jwt(now: t + 71 * 60_000, random: 0) != third)
  }

  @Test("--apns-url: https://HOST[:PORT] only")
  func endpoints() throws {
    let e = try APNsEndpoint.parse(url: "https://127.0.0.1:8443", caPEM: nil, bundleID: "com.x")
    #expect(e.host == "127.0.0.1" && e.port == 8443 && e.topic == "com.x.push-type.liveactivity")
    let v6 = try APNsEndpoint.parse(url: "https://[::1]:9/", caPEM: nil, bundleID: "b")
    #expect(v6.host == "::1" && v6.port == 9)
    let named = try APNsEndpoint.parse(url: "https://gw.example", caPEM: nil, bundleID: "b")
    #expect(named.host == "gw.example" && named.port == 443)
    for bad in ["http://x", "https://", "https://x/3/device", "https://x:0", "https://x:99999"] {
      #expect(throws: APNsConfigurationError.self, "\(bad)") {
        _ = try APNsEndpoint.parse(url: bad, caPEM: nil, bundleID: "b")
      }
    }
    let apple = APNsEndpoint.apple(production: false, bundleID: "b")
    #expect(apple.host == "api.sandbox.push.apple.com" && apple.port == 443)
    var withCA = apple
    withCA.caPEM = Array("not PEM".utf8)
    #expect(throws: APNsConfigurationError.self) { try withCA.check() }
  }
}
