// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Crypto
import Foundation

/// Why the APNs settings cannot be used: a message a person can act on.
public struct APNsConfigurationError: Error, CustomStringConvertible, Sendable {
  public var message: String
  public var description: String { message }
  public init(_ message: String) { self.message = message }
}

/// APNs's token authentication (docs/pushes.md): a JWT signed with ES256 by the team's `.p8`
/// key, with `kid` the key id, `iss` the team id and `iat` the instant it was made. Apple
/// refuses a token older than an hour and one renewed more often than every 20 minutes, so
/// ``ProviderTokens`` keeps one for 20 to 50 minutes.
public struct ProviderToken: Sendable {
  public let keyID: String
  public let teamID: String
  private let key: P256.Signing.PrivateKey

  /// The key of `pem` (Apple's `.p8`: a PKCS#8 PEM P-256 private key).
  /// - Throws: ``APNsConfigurationError`` when it is not a P-256 private key in PEM.
  public init(pem: String, keyID: String, teamID: String) throws(APNsConfigurationError) {
    do {
      key = try P256.Signing.PrivateKey(pemRepresentation: pem)
    } catch {
      throw APNsConfigurationError(
        "the APNs key is not a P-256 private key in PEM (Apple's .p8 file): \(error)")
    }
    guard !keyID.isEmpty, !teamID.isEmpty else {
      throw APNsConfigurationError("the APNs key id and team id must not be empty")
    }
    self.keyID = keyID
    self.teamID = teamID
  }

  /// The JWT made at `issuedAt` (seconds since 1970).
  public func make(issuedAt: Int64) -> String {
    let header = JSONValue.object(["alg": .string("ES256"), "kid": .string(keyID)])
    let claims = JSONValue.object(["iss": .string(teamID), "iat": .int(issuedAt)])
    let input =
      Self.base64URL(Array(header.canonicalText.utf8)) + "."
      + Self.base64URL(Array(claims.canonicalText.utf8))
    // ES256: the raw 64-byte r ‖ s, not DER (RFC 7518 §3.4).
    let signature = (try? key.signature(for: Data(input.utf8)).rawRepresentation) ?? Data()
    return input + "." + Self.base64URL(Array(signature))
  }

  /// Base64 with the URL alphabet and no padding (RFC 7515 §2).
  static func base64URL(_ bytes: [UInt8]) -> String {
    var s = Data(bytes).base64EncodedString()
    s = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    while s.hasSuffix("=") { s.removeLast() }
    return s
  }
}

/// The provider token in use: made when first needed, renewed when older than its lifetime
/// (20 to 50 minutes, drawn at each renewal) or when APNs says it expired. A pure value on
/// instants given by the caller.
public struct ProviderTokens: Sendable {
  public let token: ProviderToken
  private var current: (jwt: String, madeAt: Int64, lifetime: Int64)?
  /// How many tokens were made.
  public private(set) var made = 0

  public init(_ token: ProviderToken) { self.token = token }

  /// The JWT to send at `now` (ms since 1970); `random` (0…1) draws a new token's lifetime.
  public mutating func jwt(now: Int64, random: Double) -> String {
    if let c = current, now - c.madeAt < c.lifetime, now >= c.madeAt { return c.jwt }
    let lifetime = Int64((20 + 30 * min(max(random, 0), 1)) * 60_000)
    let jwt = token.make(issuedAt: Instant.floorDivision(now, by: 1000))
    current = (jwt, now, lifetime)
    made += 1
    return jwt
  }

  /// APNs answered `403 ExpiredProviderToken` to `jwt`: the next request gets a new one
  /// (once, however many requests carried the old one).
  public mutating func expired(_ jwt: String) {
    if current?.jwt == jwt { current = nil }
  }
}
