// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import NIOSSL

/// A client's TLS settings trusting the system's certificates and those of a PEM file given
/// beside them (`--apns-ca`, `--webhook-ca`): one reading of such a file for every client
/// the server has.
package enum ClientTLS {
  /// Why the PEM cannot be trusted, said after the option that gave it.
  package struct Problem: Error {
    package var message: String
  }

  /// The system's trusted certificates, and `pem`'s when given.
  package static func configuration(alsoTrusting pem: [UInt8]?) throws(Problem)
    -> TLSConfiguration
  {
    var tls = TLSConfiguration.makeClientConfiguration()
    guard let pem else { return tls }
    let extra: [NIOSSLCertificate]
    do {
      extra = try NIOSSLCertificate.fromPEMBytes(pem)
    } catch {
      throw Problem(message: "cannot be read as PEM certificates: \(error)")
    }
    guard !extra.isEmpty else { throw Problem(message: "holds no PEM certificate") }
    tls.additionalTrustRoots = [.certificates(extra)]
    return tls
  }
}
