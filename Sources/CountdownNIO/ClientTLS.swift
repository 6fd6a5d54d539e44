// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import NIOSSL

/// A client's TLS settings trusting the system's certificates and those of a PEM file given
/// beside them (`--apns-ca`, `--webhook-ca`, the client's `--tls-ca`): one reading of such a
/// file for every client the server has, and for the client.
package enum ClientTLS {
  /// Why the PEM cannot be trusted, said after the option that gave it.
  package struct Problem: Error {
    package var message: String
  }

  /// The system's trusted certificates, and `pem`'s when given.
  package static func configuration(alsoTrusting pem: [UInt8]?) throws(Problem)
    -> TLSConfiguration
  {
    guard let pem else { return TLSConfiguration.makeClientConfiguration() }
    return try configuration { try NIOSSLCertificate.fromPEMBytes(pem) }
  }

  /// The system's trusted certificates, and those of the PEM file at `path` (a client's
  /// `--tls-ca`).
  package static func configuration(alsoTrustingFile path: String) throws(Problem)
    -> TLSConfiguration
  {
    try configuration { try NIOSSLCertificate.fromPEMFile(path) }
  }

  /// The system's trusted certificates and those `read` gives, which must be some.
  private static func configuration(
    _ read: () throws -> [NIOSSLCertificate]
  ) throws(Problem) -> TLSConfiguration {
    var tls = TLSConfiguration.makeClientConfiguration()
    let extra: [NIOSSLCertificate]
    do {
      extra = try read()
    } catch {
      throw Problem(message: "cannot be read as PEM certificates: \(error)")
    }
    guard !extra.isEmpty else { throw Problem(message: "holds no PEM certificate") }
    tls.additionalTrustRoots = [.certificates(extra)]
    return tls
  }
}
