// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Foundation

/// `countdown-bench cluster`: two `countdown serve --node` children on one PostgreSQL (issue 35's
/// speed section): a request forwarded to the other node beside one answered locally, the
/// takeover after `kill -9` over rounds, and acknowledged starts through a node beside one
/// server on the same database server and on the state file, in one run.
struct ClusterBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "cluster",
    abstract:
      "A cluster on PostgreSQL: forwarded beside local requests, takeover after kill -9, starts/s.")

  @Option(help: "A PostgreSQL server's URL (make bench-cluster starts a scratch one).")
  var postgres: String

  @Option(help: "Requests timed on each side (local, forwarded).")
  var requests = 5_000

  @Option(help: "Rounds of kill -9 and takeover.")
  var rounds = 10

  @Option(help: "Pipelined starts per throughput run.")
  var starts = 50_000

  @Option(help: "The nodes' --lease-ms.")
  var leaseMs = 1_000

  func run() throws {
    print("| run | figure |")
    print("|---|---|")
    try latency()
    try takeover()
    try throughput()
  }

  /// Two nodes on a fresh database, once each serves its half of the shards.
  func pair() throws -> (a: Child, b: Child, url: String) {
    let url = try StoreBench.freshDatabase(postgres)
    let a = try node("a", url)
    let b = try node("b", url)
    let until = Date().addingTimeInterval(15)
    let client = try Client(a.socket)
    while Date() < until {
      let view = try request(client, #"{"op":"cluster"}"#)
      let owners = (view["shards"] as? [[String: Any]] ?? []).compactMap { $0["owner"] as? String }
      if owners.filter({ $0 == "a" }).count == 4, owners.filter({ $0 == "b" }).count == 4 {
        return (a, b, url)
      }
      usleep(50_000)
    }
    throw ValidationError("the nodes did not split the shards within 15 s")
  }

  func node(_ name: String, _ url: String) throws -> Child {
    try Child(extra: [
      "--postgres", url, "--node", name, "--listen", "127.0.0.1:\(try Self.freePort())",
      "--cluster-token", "bench", "--shards", "8", "--lease-ms", "\(leaseMs)",
    ])
  }

  /// Starts `prefix`0, `prefix`1, … through `client` until one is in a shard `owner` serves
  /// (read from the object's `shard` and the cluster's view); that id.
  func id(_ prefix: String, servedBy owner: String, via client: Client) throws -> String {
    let view = try request(client, #"{"op":"cluster"}"#)
    var owners: [Int: String] = [:]
    for s in view["shards"] as? [[String: Any]] ?? [] {
      if let n = s["shard"] as? Int, let o = s["owner"] as? String { owners[n] = o }
    }
    for k in 0..<1_000 {
      let id = "\(prefix)\(k)"
      var r = try request(
        client, #"{"op":"start","id":"\#(id)","kind":"elapsed","title":"bench"}"#)
      var tries = 0
      while r["code"] as? String == "unavailable", tries < 200 {
        usleep(20_000)
        tries += 1
        r = try request(client, #"{"op":"start","id":"\#(id)","kind":"elapsed","title":"bench"}"#)
      }
      let got = try request(client, #"{"op":"get","id":"\#(id)"}"#)
      if let shard = (got["activity"] as? [String: Any])?["shard"] as? Int, owners[shard] == owner {
        return id
      }
    }
    throw ValidationError("no id in \(owner)'s shards")
  }

  /// A forwarded `get` beside a local one, on one connection to node a, in alternating blocks.
  func latency() throws {
    let (a, b, _) = try pair()
    defer {
      a.stop()
      b.stop()
    }
    let client = try Client(a.socket)
    let local = try id("l", servedBy: "a", via: client)
    let remote = try id("r", servedBy: "b", via: client)
    var times: [Bool: [Int64]] = [true: [], false: []]
    for block in 0..<20 {
      let forwarded = block % 2 == 1
      let line = Array(#"{"op":"get","id":"\#(forwarded ? remote : local)"}"#.utf8) + [0x0A]
      for _ in 0..<(requests / 10) {
        let t0 = monotonicNanoseconds()
        client.send(line)
        client.awaitReplies(1)
        times[forwarded]!.append(monotonicNanoseconds() - t0)
      }
    }
    func p(_ v: [Int64], _ q: Double) -> Double {
      let s = v.sorted()
      return Double(s[min(s.count - 1, Int(Double(s.count) * q))]) / 1_000
    }
    let (l, f) = (times[false]!, times[true]!)
    print(
      "| `get` answered by the node it reaches, \(l.count) requests | p50 \(fmt(p(l, 0.5))), p99 \(fmt(p(l, 0.99))) |"
    )
    print(
      "| `get` forwarded to the other node, \(f.count) requests | p50 \(fmt(p(f, 0.5))), p99 \(fmt(p(f, 0.99))) |"
    )
    print("| forwarding adds at p50 | \(fmt(p(f, 0.5) - p(l, 0.5))) |")
  }

  /// `kill -9` of a node, then the first moment the other answers for its shards.
  func takeover() throws {
    var took: [Int64] = []
    for round in 0..<rounds {
      let (a, b, _) = try pair()
      let client = try Client(b.socket)
      let id = try self.id("t\(round)-", servedBy: "a", via: client)
      let line = Array(#"{"op":"get","id":"\#(id)"}"#.utf8) + [0x0A]
      let killed = monotonicNanoseconds()
      kill(a.process.processIdentifier, SIGKILL)
      a.process.waitUntilExit()
      var answered: Int64?
      while answered == nil, monotonicNanoseconds() - killed < 20_000_000_000 {
        let r = try request(client, line)
        if r["ok"] as? Bool == true {
          answered = monotonicNanoseconds() - killed
        } else {
          usleep(2_000)
        }
      }
      b.stop()
      unlink(a.socket)
      guard let answered else { throw ValidationError("round \(round): never taken over") }
      took.append(answered / 1_000_000)
    }
    took.sort()
    print(
      "| takeover after kill -9, \(rounds) rounds, lease \(leaseMs) ms | median \(took[took.count / 2]) ms, max \(took.last!) ms, min \(took.first!) ms |"
    )
  }

  /// Pipelined starts through one connection: the state file, one server on PostgreSQL, and
  /// node a of a cluster (about half of the ids in b's shards, forwarded).
  func throughput() throws {
    let file = "/tmp/cdb-cluster-\(getpid()).db"
    defer { PushBench.removeState(file) }
    let single = try StoreBench.freshDatabase(postgres)
    var runs: [(String, () throws -> Child)] = [
      ("one server, the state file (sync normal)", { try Child(state: file) }),
      ("one server on PostgreSQL", { try Child(extra: ["--postgres", single]) }),
    ]
    var cluster: (a: Child, b: Child, url: String)?
    runs.append(
      (
        "node a of two (half forwarded to b)",
        {
          cluster = try self.pair()
          return cluster!.a
        }
      ))
    for (name, make) in runs {
      let child = try make()
      let client = try Client(child.socket)
      var batch = [UInt8]()
      batch.reserveCapacity(starts * 80)
      for k in 0..<starts {
        batch += Array(#"{"op":"start","id":"s\#(k)","kind":"elapsed","title":"S"}"#.utf8) + [0x0A]
      }
      let t0 = monotonicNanoseconds()
      client.sendWhileReading(batch, replies: starts)
      let seconds = Double(monotonicNanoseconds() - t0) / 1e9
      print(
        "| acknowledged starts/s, \(name), \(starts) pipelined | \(Int(Double(starts) / seconds)) |"
      )
      child.stop()
    }
    cluster?.b.stop()
  }

  /// One request line and its reply, read whole.
  func request(_ client: Client, _ line: String) throws -> [String: Any] {
    try request(client, Array(line.utf8) + [0x0A])
  }

  func request(_ client: Client, _ line: [UInt8]) throws -> [String: Any] {
    client.send(line)
    var reply: [UInt8] = []
    var byte: UInt8 = 0
    while true {
      let n = recv(client.fd, &byte, 1, 0)
      guard n == 1 else { throw ValidationError("the node closed the connection") }
      if byte == 0x0A { break }
      reply.append(byte)
    }
    return (try? JSONSerialization.jsonObject(with: Data(reply)) as? [String: Any]) ?? [:]
  }

  /// A TCP port nothing listens on now.
  static func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    guard bound else { throw ValidationError("no free port") }
    return Int(UInt16(bigEndian: address.sin_port))
  }
}
