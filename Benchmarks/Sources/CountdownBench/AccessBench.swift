// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import CountdownClient
import Foundation

/// `countdown-bench access`: what `--access` with a file of many keys costs, side by side with
/// no keys in one run (docs/security.md, "Roles"): pipelined socket commands on connections
/// that gave a key (`auth`, then each request checked for its role and the key's groups), and
/// HTTP requests, each of which carries its key (`Authorization: Bearer`) and is looked up.
struct AccessBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "access",
    abstract: "Commands/s and HTTP requests/s with a file of N keys beside none, alternating.")

  @Option(help: "Keys in the access file.")
  var keys = 10_000

  @Option(help: "Alternating rounds.")
  var rounds = 3

  @Option(help: "Pipelined socket commands per run.")
  var commands = 200_000

  @Option(help: "HTTP requests per run (4 keep-alive connections, one request at a time each).")
  var requests = 20_000

  func run() throws {
    let dir = "/tmp/cdb-access-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = "\(dir)/access"
    // Keys of 24 characters, the kind a generator makes, and last the one the clients give.
    var text = ""
    for k in 0..<keys {
      let role = k % 3 == 0 ? "view" : k % 3 == 1 ? "control" : "admin"
      text += "\(role) key-\(String(format: "%020d", k))\n"
    }
    text += "admin bench-admin-key-000000001\n"
    try text.write(toFile: path, atomically: false, encoding: .utf8)
    chmod(path, 0o600)
    let admin = "bench-admin-key-000000001"
    print("| run | keys | round | per second |")
    print("|---|---|---|---|")
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    var summary: [String] = []
    for (op, connections) in [("start", 1), ("start", 8), ("get", 1), ("get", 8)] {
      var with: [Double] = []
      var without: [Double] = []
      for round in 1...rounds {
        let a = try ServeBench.throughput(op: op, connections: connections, commands: commands)
        let b = try ServeBench.throughput(
          op: op, connections: connections, commands: commands, extra: ["--access", path],
          key: admin)
        without.append(a)
        with.append(b)
        let name = "socket \(op), \(connections) connection\(connections > 1 ? "s" : "")"
        print("| \(name) | none | \(round) | \(Int(a)) |")
        print("| \(name) | \(keys + 1) | \(round) | \(Int(b)) |")
      }
      summary.append(
        "| socket \(op), \(connections) conn. | \(Int(median(without))) | \(Int(median(with))) | \(String(format: "%.2f", median(with) / median(without)))x |"
      )
    }
    var with: [Double] = []
    var without: [Double] = []
    for round in 1...rounds {
      let a = try httpRate(access: nil, key: nil)
      let b = try httpRate(access: path, key: admin)
      without.append(a)
      with.append(b)
      print("| HTTP GET /v1/activities/g, 4 connections | none | \(round) | \(Int(a)) |")
      print("| HTTP GET /v1/activities/g, 4 connections | \(keys + 1) | \(round) | \(Int(b)) |")
    }
    summary.append(
      "| HTTP GET, 4 conn. | \(Int(median(without))) | \(Int(median(with))) | \(String(format: "%.2f", median(with) / median(without)))x |"
    )
    print("\n| run | median, no keys | median, \(keys + 1) keys | ratio |")
    print("|---|---|---|---|")
    for row in summary { print(row) }
  }

  /// HTTP requests per second: `requests` GETs of one activity over 4 keep-alive
  /// connections, each waiting for its answer before the next.
  func httpRate(access: String?, key: String?) throws -> Double {
    let child = try Child(http: true, extra: access.map { ["--access", $0] } ?? [])
    defer { child.stop() }
    let setup = try Client(child.socket)
    setup.sendWhileReading(
      Array(#"{"op":"start","id":"g","kind":"elapsed","title":"G"}"#.utf8) + [0x0A], replies: 1)
    guard let port = child.httpPort else { throw ValidationError("the child serves no HTTP") }
    let auth = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
    let request = Array("GET /v1/activities/g HTTP/1.1\r\nHost: 127.0.0.1\r\n\(auth)\r\n".utf8)
    let per = requests / 4
    let fds = try (0..<4).map { _ in try UnixSocket.connect(loopbackPort: port) }
    defer { for fd in fds { close(fd) } }
    let failures = Counter(0)
    let t0 = monotonicNanoseconds()
    let threads = fds.map { fd in
      Thread {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        for _ in 0..<per {
          UnixSocket.sendAll(fd, request)
          if !Self.readResponse(fd, &buffer) { _ = failures.decrement() }
        }
      }
    }
    for t in threads { t.start() }
    while threads.contains(where: { !$0.isFinished }) { usleep(1_000) }
    let rate = Double(per * 4) / (Double(monotonicNanoseconds() - t0) / 1e9)
    let failed = -failures.decrement() - 1
    if failed > 0 { throw ValidationError("\(failed) requests were not answered 200") }
    return rate
  }

  /// Reads one HTTP response (head and `Content-Length` body); true when it is a 200.
  static func readResponse(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
    var have = 0
    var headEnd = -1
    while headEnd < 0 {
      let n = buffer.withUnsafeMutableBytes {
        recv(fd, $0.baseAddress! + have, $0.count - have, 0)
      }
      if n <= 0 { return false }
      have += n
      if have >= 4 {
        for i in 3..<have
        where buffer[i - 3] == 13 && buffer[i - 2] == 10 && buffer[i - 1] == 13 && buffer[i] == 10 {
          headEnd = i + 1
          break
        }
      }
    }
    let head = String(decoding: buffer[0..<headEnd], as: UTF8.self).lowercased()
    let ok = head.hasPrefix("http/1.1 200")
    guard let r = head.range(of: "content-length: "),
      let length = Int(head[r.upperBound...].prefix { $0.isNumber })
    else { return false }
    var body = have - headEnd
    while body < length {
      let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
      if n <= 0 { return false }
      body += n
    }
    return ok
  }
}
