// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

/// `countdown send --connect`: a server's TCP listener, plain or over TLS, with a key.
@Suite("countdown send --connect, --tls-ca and --key-file")
struct SendConnectTests {
  /// Runs `countdown send` in `dir`; its status, standard output and standard error.
  func send(_ arguments: [String], in dir: URL, environment: [String: String] = [:]) throws
    -> (status: Int32, out: String, err: String)
  {
    let p = Process()
    p.executableURL = countdownExecutable
    p.arguments = ["send"] + arguments
    p.currentDirectoryURL = dir
    p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let out = Pipe()
    let err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    return (p.terminationStatus, text, errors)
  }

  @Test(
    "Over TLS with the test CA and a key; refused without the CA, with a wrong key, or a bad address"
  )
  func overTLS() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      try makeCertificates(in: dir)
      let access = dir.appendingPathComponent("access").path
      try "control control-key-0001\n".write(toFile: access, atomically: false, encoding: .utf8)
      chmod(access, 0o600)
      try "control-key-0001\n".write(
        toFile: dir.appendingPathComponent("key").path, atomically: false, encoding: .utf8)
      let server = try ServerProcess(
        [
          "--socket", "c.sock", "--listen", "127.0.0.1:0", "--access", access, "--tls-cert",
          "server.pem", "--tls-key", "server.key",
        ], in: dir)
      let port = try #require(server.tcpPort, "\(server.startLine)")
      let address = "tcp:127.0.0.1:\(port)"
      let start =
        #"{"rid":1,"op":"start","id":"gate","kind":"countdown","endDate":4102444800000,"title":"Gate"}"#
      let made = try send(
        [
          "--connect", address, "--tls-ca", "ca.pem", "--key-file", "key", start,
          #"{"rid":2,"op":"get","id":"gate"}"#,
        ], in: dir)
      #expect(made.status == 0, "\(made)")
      let lines = made.out.split(separator: "\n")
      #expect(lines.count == 3 && lines[1].hasPrefix(#"{"rid":1,"ok":true"#), "\(made.out)")
      #expect(lines.count == 3 && lines[2].contains(#""title":"Gate""#))
      // The key from the environment, and --follow over TLS: the snapshot, then the server
      // closes nothing, so the follower is stopped by a time limit (timeout).
      let viaEnvironment = try send(
        ["--connect", address, "--tls-ca", "ca.pem", #"{"rid":3,"op":"get","id":"gate"}"#],
        in: dir, environment: ["COUNTDOWN_KEY": "control-key-0001"])
      #expect(viaEnvironment.status == 0 && viaEnvironment.out.contains(#""rid":3,"ok":true"#))
      // Without the CA: the certificate is not trusted, and it says so.
      let untrusted = try send(
        ["--connect", address, "--tls", "--key-file", "key", start], in: dir)
      #expect(untrusted.status == 1 && untrusted.err.contains("TLS"), "\(untrusted)")
      #expect(untrusted.err.contains("--tls-ca"))
      // Plain TCP to the TLS listener: no reply.
      let plain = try send(["--connect", address, "--key-file", "key", start], in: dir)
      #expect(plain.status == 1)
      // A wrong key.
      let wrong = try send(
        ["--connect", address, "--tls-ca", "ca.pem", #"{"op":"ping"}"#], in: dir,
        environment: ["COUNTDOWN_KEY": "not-a-key"])
      #expect(wrong.status == 1 && wrong.out.contains("unauthorized"), "\(wrong)")
      // Bad addresses and options, named.
      let badAddress = try send(["--connect", "tcp:127.0.0.1", #"{"op":"ping"}"#], in: dir)
      #expect(badAddress.status != 0 && badAddress.err.contains("--connect"), "\(badAddress)")
      let tlsOnUnix = try send(["--tls-ca", "ca.pem", #"{"op":"ping"}"#], in: dir)
      #expect(tlsOnUnix.status != 0 && tlsOnUnix.err.contains("--connect"), "\(tlsOnUnix)")
      let nobody = try send(["--connect", "tcp:127.0.0.1:1", #"{"op":"ping"}"#], in: dir)
      #expect(nobody.status == 1 && nobody.err.contains("127.0.0.1:1"), "\(nobody)")
      // unix: as an address, the same as --socket.
      let local = try send(
        ["--connect", "unix:c.sock", #"{"rid":4,"op":"get","id":"gate"}"#], in: dir)
      #expect(local.status == 0 && local.out.contains(#""rid":4,"ok":true"#))
    }
  }

  @Test("Thousands of pipelined requests through the TCP relay, in order")
  func pipelinedThroughRelay() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let server = try ServerProcess(["--socket", "c.sock", "--listen", "127.0.0.1:0"], in: dir)
      let port = try #require(server.tcpPort)
      var requests: [String] = []
      for k in 0..<3_000 { requests.append(#"{"rid":\#(k),"op":"ping"}"#) }
      let p = Process()
      p.executableURL = countdownExecutable
      p.arguments = ["send", "--connect", "tcp:127.0.0.1:\(port)"]
      p.currentDirectoryURL = dir
      let input = Pipe()
      let out = Pipe()
      p.standardInput = input
      p.standardOutput = out
      try p.run()
      input.fileHandleForWriting.write(Data(requests.joined(separator: "\n").utf8))
      try input.fileHandleForWriting.close()
      let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      p.waitUntilExit()
      #expect(p.terminationStatus == 0)
      let rids = text.split(separator: "\n").compactMap {
        $0.firstMatch(of: /"rid":(\d+)/).flatMap { Int($0.1) }
      }
      #expect(rids.count == 3_000)
      #expect(rids.elementsEqual(0..<3_000))
    }
  }
}
