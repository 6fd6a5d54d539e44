// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// docs/security.md's findings that need `countdown serve` as a process: the token kept out of the
/// process list, the state file's mode, a low file limit, unread replies, TLS files and SIGHUP.

@Suite("Web safety, processes", .serialized)
struct WebSafetyProcessTests {
  @Test("--token-file and COUNTDOWN_TOKEN keep the token out of the process list")
  func tokenSources() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      try "from-a-file\n".write(
        to: dir.appendingPathComponent("token"), atomically: true, encoding: .utf8)
      for (arguments, environment) in [
        (["--token-file", "token"], [:]), ([], ["COUNTDOWN_TOKEN": "from-a-file"]),
      ] as [([String], [String: String])] {
        let server = try ServerProcess(
          ["--socket", "c.sock", "--state", ":memory:", "--http", "127.0.0.1:0"] + arguments,
          in: dir, environment: environment)
        let port = try #require(server.httpPort, "\(server.startLine)")
        #expect(try http("GET", "/v1/time", port: port).status == 401)
        #expect(
          try http(
            "GET", "/v1/time", port: port, headers: ["Authorization": "Bearer from-a-file"]
          ).status == 200)
        let cmdline = try String(contentsOfFile: "/proc/\(server.pid)/cmdline", encoding: .utf8)
        #expect(!cmdline.contains("from-a-file"))
      }
      try "".write(to: dir.appendingPathComponent("empty"), atomically: true, encoding: .utf8)
      let empty = try ServerProcess(["--socket", "e.sock", "--token-file", "empty"], in: dir)
      #expect(empty.exitStatus(within: 10) == 1)
      #expect(empty.errorText.contains("has no token"))
    }
  }

  @Test("The state file and its -wal and -shm are 0600 whatever the umask")
  func stateFileMode() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let old = umask(0o022)
      defer { umask(old) }
      let server = try ServerProcess(["--socket", "c.sock", "--state", "s.db"], in: dir)
      let c = try TestClient(unix: dir.appendingPathComponent("c.sock").path)
      #expect(
        try c.request(
          #"{"op":"start","id":"a","kind":"countdown","endDate":4102444800000,"title":"A"}"#)[
            "ok"] as? Bool == true)
      for name in ["s.db", "s.db-wal", "s.db-shm"] {
        let attributes = try FileManager.default.attributesOfItem(
          atPath: dir.appendingPathComponent(name).path)
        let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
        #expect(mode == 0o600, "\(name) is \(String(mode, radix: 8))")
      }
      _ = server
    }
  }

  /// CPU seconds the process has used (user + system), from /proc.
  static func cpuSeconds(_ pid: Int32) -> Double {
    let fields = procStatFields("/proc/\(pid)/stat")
    guard fields.count > 13, let u = Double(fields[11]), let s = Double(fields[12]) else {
      return 0
    }
    return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
  }

  @Test("Under a low file limit the server caps its connections and never spins")
  func fileLimit() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let server = try ServerProcess(
        ["--socket", "c.sock", "--state", "s.db", "--listen", "127.0.0.1:0"], in: dir,
        via: ["/usr/bin/prlimit", "--nofile=128:128", "--"])
      #expect(server.startLine.hasPrefix("countdown serve:"), "\(server.startLine)")
      let path = dir.appendingPathComponent("c.sock").path
      var held: [TestClient] = []
      var refused = 0
      var unanswered = 0
      let deadline = Date().addingTimeInterval(20)
      for _ in 0..<170 where Date() < deadline {
        let c = try TestClient(unix: path)
        c.send(#"{"op":"ping"}"# + "\n")
        guard let r = try? c.json(timeout: 1) else {
          unanswered += 1
          continue
        }
        if r["ok"] as? Bool == true { held.append(c) } else { refused += 1 }
      }
      #expect(unanswered == 0)
      // The Unix socket's few beyond the limit: the operator's `countdown send` gets in.
      #expect(
        held.count == 128 - CountdownServer.reservedDescriptors + CountdownServer.operatorRoom)
      #expect(refused == 170 - held.count)
      // Idle at the limit: the network thread does not spin.
      let before = Self.cpuSeconds(server.pid)
      usleep(2_000_000)
      let used = Self.cpuSeconds(server.pid) - before
      #expect(used < 0.3, "the server used \(used) s of CPU in 2 s at its limit")
      // One leaves; a new client is served.
      held.removeLast()
      usleep(100_000)
      #expect(try TestClient(unix: path).request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
    }
  }

  @Test(
    "Under a low file limit, idle HTTP connections past the limit are closed: the Unix socket still answers, TCP gets limitReached, HTTP 429, nothing spins"
  )
  func idleHTTPPastTheLimit() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let server = try ServerProcess(
        [
          "--socket", "c.sock", "--state", "s.db", "--listen", "127.0.0.1:0", "--http",
          "127.0.0.1:0", "--max-connections", "1024",
        ], in: dir, via: ["/usr/bin/prlimit", "--nofile=128:128", "--"])
      let port = try #require(server.httpPort)
      let tcpPort = try #require(
        server.startLine.firstMatch(of: /tcp 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
      // 168 connections that send nothing (the probe's count: more than the file limit).
      var idle: [TestClient] = []
      for _ in 0..<168 {
        guard let c = try? TestClient(tcpPort: port) else { break }
        idle.append(c)
      }
      usleep(1_500_000)
      let files =
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.pid)/fd").count)
        ?? 0
      #expect(files < 128, "the server holds \(files) descriptors of its 128")
      let before = Self.cpuSeconds(server.pid)
      usleep(2_000_000)
      let used = Self.cpuSeconds(server.pid) - before
      #expect(used < 0.3, "the server used \(used) s of CPU in 2 s past its limit")
      let local = try TestClient(unix: dir.appendingPathComponent("c.sock").path)
      #expect(try local.request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      let remote = try TestClient(tcpPort: tcpPort)
      #expect(try remote.request(#"{"op":"ping"}"#)["code"] as? String == "limitReached")
      let answer = try http("GET", "/v1/time", port: port)
      #expect(answer.status == 429 && answer.code == "limitReached")
      _ = idle
    }
  }

  @Test(
    "Event streams that never read are bounded together: past --output-budget-bytes those holding the most are cut off, and the server grows by about the budget"
  )
  func outputBudget() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let budget = 16 << 20
      let server = try ServerProcess(
        [
          "--socket", "c.sock", "--state", ":memory:", "--http", "127.0.0.1:0",
          "--output-budget-bytes", "\(budget)",
        ], in: dir)
      let port = try #require(server.httpPort)
      // 8,000 activities with long titles: a snapshot of about 4 MB, more than a socket's
      // send buffer takes (what the kernel holds is not the server's memory).
      let c = try TestClient(unix: dir.appendingPathComponent("c.sock").path)
      let title = String(repeating: "T", count: 400)
      let end = nowMs() + 3_600_000
      for k in 0..<8_000 {
        c.send(
          #"{"op":"start","id":"a\#(k)","kind":"countdown","endDate":\#(end),"title":"\#(title)"}"#
            + "\n")
      }
      for _ in 0..<8_000 { _ = try c.json(timeout: 10) }
      let before = server.rssKiB
      // 60 streams whose clients never read (a small receive buffer, never drained):
      // 240 MB of snapshots if each were kept.
      var streams: [EventStream] = []
      for _ in 0..<60 { streams.append(try EventStream(port: port, receiveBuffer: 4096)) }
      // The snapshots take the loop a while on a busy machine: /metrics is asked until the
      // cut-offs are counted (or 60 s pass).
      var cut = -1
      let deadline = Date().addingTimeInterval(60)
      while Date() < deadline {
        if let metrics = try? http("GET", "/metrics", port: port).body {
          cut =
            metrics.split(separator: "\n")
            .first { $0.hasPrefix("countdown_subscribers_over_output_budget_total") }
            .flatMap { Int(Double($0.split(separator: " ").last ?? "") ?? -1) } ?? -1
          if cut >= 45 { break }
        }
        usleep(500_000)
      }
      usleep(1_000_000)
      let grown = (server.rssKiB - before) / 1024
      #expect(cut >= 45, "\(cut) streams cut off of 60")
      #expect(grown < 16 + 48, "the server grew by \(grown) MiB with a budget of 16 MiB")
      _ = streams
    }
  }

  @Test("Pipelined listings a client never reads do not grow the server without bound")
  func unreadReplies() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let server = try ServerProcess(["--socket", "c.sock", "--state", ":memory:"], in: dir)
      let path = dir.appendingPathComponent("c.sock").path
      try TestClient(unix: path).startCountdowns(200, endingAfter: 3_600_000)
      let base = server.rssKiB
      let reader = try TestClient(unix: path)
      var small: Int32 = 4096
      setsockopt(reader.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
      let n = 2000
      reader.send(String(repeating: #"{"op":"list"}"# + "\n", count: n))
      usleep(3_000_000)
      let grown = server.rssKiB - base
      // 2000 listings of 200 activities are ~110 MB of replies; the budget is 1 MiB.
      #expect(grown < 64 * 1024, "the server grew by \(grown) KiB")
      // Nothing is lost: every reply comes once the client reads.
      var got = 0
      while got < n, let line = reader.line(timeout: 20) {
        if line.hasPrefix("{\"ok\":true") || line.contains("\"activities\"") { got += 1 }
      }
      #expect(got == n)
    }
  }
}

/// Runs a command and returns its standard output (standard error dropped), with `input`
/// (kept open `hold` seconds after it is written). The command must end by itself: a child of
/// the test process inherits its blocked signals, so `timeout` cannot stop it.
func run(
  _ tool: String, _ arguments: [String], input: String = "", holdingInputFor hold: Double = 0,
  in dir: URL
) throws -> (status: Int32, output: String) {
  let p = Process()
  p.executableURL = URL(fileURLWithPath: tool)
  p.arguments = arguments
  p.currentDirectoryURL = dir
  let out = Pipe()
  let inp = Pipe()
  p.standardOutput = out
  p.standardError = FileHandle.nullDevice
  p.standardInput = inp
  try p.run()
  inp.fileHandleForWriting.write(Data(input.utf8))
  if hold > 0 { usleep(UInt32(hold * 1_000_000)) }
  try inp.fileHandleForWriting.close()
  let data = out.fileHandleForReading.readDataToEndOfFile()
  p.waitUntilExit()
  return (p.terminationStatus, String(decoding: data, as: UTF8.self))
}

@Suite("TLS", .serialized)
struct TLSTests {
  @Test("HTTPS and TLS on --listen: curl, an event stream, the line protocol; SIGHUP reloads")
  func served() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      try makeCertificates(in: dir)
      let server = try ServerProcess(
        [
          "--socket", "c.sock", "--state", ":memory:", "--http", "127.0.0.1:0", "--listen",
          "127.0.0.1:0", "--tls-cert", "server.pem", "--tls-key", "server.key",
        ], in: dir)
      let port = try #require(
        server.startLine.firstMatch(of: /https:\/\/127\.0\.0\.1:(\d+)\//).flatMap { Int($0.1) },
        "\(server.startLine)")
      let tcp = try #require(
        server.startLine.firstMatch(of: /tcp 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
      let base = "https://127.0.0.1:\(port)"
      // Created and read over HTTPS, checked against the test CA.
      let made = try run(
        "/usr/bin/curl",
        [
          "-sS", "--cacert", "ca.pem", "-X", "POST", "\(base)/v1/activities", "-d",
          #"{"id":"gate","kind":"countdown","endDate":4102444800000,"title":"Gate"}"#,
        ], in: dir)
      #expect(made.output.contains(#""id":"gate""#), "\(made)")
      let stream = try run(
        "/usr/bin/curl",
        ["-sS", "-N", "--max-time", "2", "--cacert", "ca.pem", "\(base)/v1/events"],
        in: dir)
      #expect(stream.output.contains("event: snapshot"))
      #expect(stream.output.contains("Gate"))
      // Plain HTTP on the TLS port gets no answer.
      let plain = try run(
        "/usr/bin/curl", ["-sS", "--max-time", "3", "http://127.0.0.1:\(port)/v1/time"], in: dir)
      #expect(!plain.output.contains("now"))
      // The line protocol over TLS.
      // s_client closes when its input ends: the input is held open a moment for the reply.
      let line = try run(
        "/usr/bin/openssl",
        [
          "s_client", "-quiet", "-no_ign_eof", "-connect", "127.0.0.1:\(tcp)", "-CAfile", "ca.pem",
          "-verify_return_error",
        ],
        input: #"{"rid":7,"op":"get","id":"gate"}"# + "\n", holdingInputFor: 1.5, in: dir)
      #expect(line.output.contains(#""rid":7,"ok":true"#), "\(line)")
      // SIGHUP: new connections present the new certificate.
      func subject() throws -> String {
        let chain = try run(
          "/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", "ca.pem"],
          in: dir)
        let pem = try run(
          "/usr/bin/openssl", ["x509", "-noout", "-subject"], input: chain.output, in: dir)
        return pem.output
      }
      #expect(try subject().contains("CN = localhost"))
      try makeCertificates(in: dir, commonName: "reloaded", prefix: "next")
      try FileManager.default.removeItem(at: dir.appendingPathComponent("server.pem"))
      try FileManager.default.removeItem(at: dir.appendingPathComponent("server.key"))
      try FileManager.default.copyItem(
        at: dir.appendingPathComponent("next.pem"), to: dir.appendingPathComponent("server.pem"))
      try FileManager.default.copyItem(
        at: dir.appendingPathComponent("next.key"), to: dir.appendingPathComponent("server.key"))
      kill(server.pid, SIGHUP)
      var reloaded = false
      for _ in 0..<50 where !reloaded {
        usleep(100_000)
        reloaded = try subject().contains("CN = reloaded")
      }
      #expect(reloaded)
      // A broken pair on SIGHUP keeps the last good one.
      try "not a key".write(
        to: dir.appendingPathComponent("server.key"), atomically: true, encoding: .utf8)
      kill(server.pid, SIGHUP)
      usleep(300_000)
      #expect(try subject().contains("CN = reloaded"))
      #expect(server.process.isRunning)
    }
  }

  @Test("A missing or mismatched pair exits 1 before listening; TLS lifts the plain-token rule")
  func badPairs() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      try makeCertificates(in: dir)
      try makeCertificates(in: dir, prefix: "other")
      for (pair, message) in [
        (
          ["--tls-cert", "missing.pem", "--tls-key", "server.key"],
          "cannot read the certificate chain"
        ),
        (["--tls-cert", "server.pem", "--tls-key", "other.key"], "do not make a TLS identity"),
        (["--tls-cert", "server.pem"], "--tls-cert and --tls-key together"),
      ] {
        let p = try ServerProcess(["--socket", "c.sock", "--http", "127.0.0.1:0"] + pair, in: dir)
        #expect(p.exitStatus(within: 10) != 0)
        #expect(p.errorText.contains(message), "\(pair)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("c.sock").path))
      }
      var options = ServerOptions(
        socketPath: dir.appendingPathComponent("t.sock").path, listen: "0.0.0.0:0", token: "tok")
      options.tlsCertificatePath = dir.appendingPathComponent("server.pem").path
      options.tlsKeyPath = dir.appendingPathComponent("server.key").path
      let server = CountdownServer(options: options)
      try server.start()
      server.stop()
    }
  }
}
