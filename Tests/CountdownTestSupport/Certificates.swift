// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation

/// `openssl` failed while making test certificates.
public struct CertificateError: Error, CustomStringConvertible {
  public var arguments: [String]
  public var description: String { "openssl \(arguments.joined(separator: " ")) failed" }
}

/// A test CA and a server certificate it signed (EC P-256, for localhost and 127.0.0.1), made
/// with the openssl command in `dir`: ca.pem, server.pem, server.key.
public func makeCertificates(
  in dir: URL, commonName: String = "localhost", prefix: String = "server"
)
  throws
{
  func openssl(_ arguments: [String]) throws {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    p.arguments = arguments
    p.currentDirectoryURL = dir
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else {
      throw CertificateError(arguments: arguments)
    }
  }
  let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
  if !FileManager.default.fileExists(atPath: dir.appendingPathComponent("ca.pem").path) {
    try openssl(
      ["req", "-x509"] + ec + [
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Countdown test CA",
      ])
  }
  try openssl(
    ["req"] + ec + [
      "-keyout", "\(prefix).key", "-out", "\(prefix).csr", "-subj", "/CN=\(commonName)",
    ])
  try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(
    to: dir.appendingPathComponent("san.ext"), atomically: true, encoding: .utf8)
  try openssl([
    "x509", "-req", "-in", "\(prefix).csr", "-CA", "ca.pem", "-CAkey", "ca.key",
    "-CAcreateserial", "-out", "\(prefix).pem", "-days", "2", "-extfile", "san.ext",
  ])
}
