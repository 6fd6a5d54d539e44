// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `countdown-bench store`: durable state (docs/state-file.md) measured on a real server child and a real
/// SQLite file: acknowledged commands per second with group commit (`normal`, `full`, and
/// `:memory:` beside them), restart time and file size with many activities stored, and tick
/// lateness while commands stream in, with the file and without, in alternating rounds.
struct StoreBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "store",
    abstract: "Durable state: acknowledged commands/s, restart time, bytes per activity, ticks.")

  @Option(help: "Commands per throughput run.")
  var commands = 200_000

  @Option(help: "Activities stored for the restart run.")
  var activities = 1_000_000

  @Option(help: "Ticking activities in the lateness runs.")
  var ticking = 100_000

  @Option(help: "update commands per second streamed during the lateness runs.")
  var streamPerSecond = 10_000

  @Option(help: "Seconds measured per lateness run.")
  var seconds: Double = 5

  @Option(help: "Alternating rounds of the lateness comparison.")
  var rounds = 3

  @Option(help: "Which parts to run: commands, restart, ticks (comma-separated).")
  var parts = "commands,restart,ticks"

  @Option(help: "Directory for the state files (on the disk to measure).")
  var directory = "/tmp"

  @Option(
    help:
      "A PostgreSQL server's URL (its postgres database): the commands runs also keep the state there, each in a new database (make bench-postgres starts a scratch server)."
  )
  var postgres: String?

  func run() throws {
    let dir = "\(directory)/cdb-store-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    func fresh(_ name: String) -> String {
      let path = "\(dir)/\(name).db"
      for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
      return path
    }

    let parts = Set(self.parts.split(separator: ",").map(String.init))
    if parts.contains("commands") { try commandRuns(fresh) }
    if parts.contains("restart") { try restart(path: fresh("restart")) }
    if parts.contains("ticks") { try latenessComparison(path: { fresh("ticks") }) }
  }

  func commandRuns(_ fresh: (String) -> String) throws {
    let pg = postgres != nil
    print(
      "| acknowledged commands | connections | :memory: | sync normal | sync full |\(pg ? " PostgreSQL |" : "")"
    )
    print("|---|---|---|---|---|\(pg ? "---|" : "")")
    for (op, connections) in [("start", 1), ("start", 8)] {
      let memory = try ServeBench.throughput(op: op, connections: connections, commands: commands)
      let normal = try ServeBench.throughput(
        op: op, connections: connections, commands: commands, state: fresh("n"), sync: "normal")
      let full = try ServeBench.throughput(
        op: op, connections: connections, commands: commands, state: fresh("f"), sync: "full")
      var line = "| \(op) | \(connections) | \(Int(memory))/s | \(Int(normal))/s | \(Int(full))/s |"
      if let postgres {
        let url = try Self.freshDatabase(postgres)
        let rate = try ServeBench.throughput(
          op: op, connections: connections, commands: commands, extra: ["--postgres", url])
        line += " \(Int(rate))/s |"
      }
      print(line)
    }
  }

  /// A new database on the server at `url` (with psql); its URL.
  static func freshDatabase(_ url: String) throws -> String {
    let name = "cdb_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["psql", url, "-qc", "CREATE DATABASE \(name)"]
    try p.run()
    p.waitUntilExit()
    guard p.terminationStatus == 0, let slash = url.lastIndex(of: "/") else {
      throw ValidationError("cannot create a database on \(url) with psql")
    }
    return String(url[...slash]) + name
  }

  /// Fills a file with `activities` countdowns through a server, stops it, and times a new
  /// server on the file: to its first reply, and to its first tick.
  func restart(path: String) throws {
    do {
      let child = try Child(state: path)
      let client = try Client(child.socket)
      let base = wallNanoseconds() / 1_000_000 + 3_600_000
      var sent = 0
      let t0 = monotonicNanoseconds()
      while sent < activities {
        let n = min(100_000, activities - sent)
        var batch = [UInt8]()
        batch.reserveCapacity(n * 110)
        for k in sent..<(sent + n) {
          batch += Array(
            #"{"op":"start","id":"gate-\#(k)","kind":"countdown","endDate":\#(base + Int64(k % 3_600_000)),"title":"Gate \#(k % 500)"}"#
              .utf8)
          batch.append(0x0A)
        }
        client.sendWhileReading(batch, replies: n)
        sent += n
      }
      let fill = Double(monotonicNanoseconds() - t0) / 1e9
      print(
        "\nfilled \(activities) activities through the socket in \(String(format: "%.1f", fill)) s (\(Int(Double(activities) / fill))/s, sync normal)"
      )
      child.stop()
    }
    var st = stat()
    stat(path, &st)
    let bytes = Int64(st.st_size)
    print(
      "state file: \(bytes / 1_048_576) MB, \(bytes / Int64(activities)) bytes per activity (after a clean stop: WAL checkpointed)"
    )
    for run in 1...2 {
      let t0 = monotonicNanoseconds()
      let child = try Child(state: path)
      let ready = Double(monotonicNanoseconds() - t0) / 1e9
      let client = try Client(child.socket)
      client.send(Array(#"{"op":"subscribe","ids":["gate-0"],"ticks":true}"#.utf8) + [0x0A])
      // The reply (its snapshot), then the first tick of gate-0.
      client.awaitReplies(2)
      let ticking = Double(monotonicNanoseconds() - t0) / 1e9
      let rss = residentBytes(of: child.process.processIdentifier)
      print(
        "restart \(run) with \(activities) stored: serving after \(String(format: "%.2f", ready)) s, ticks resumed after \(String(format: "%.2f", ticking)) s, RSS \(rss / 1_048_576) MB"
      )
      child.stop()
    }
  }

  /// Tick lateness of `ticking` activities while `update` commands stream in, with a state
  /// file and with `:memory:`, alternating.
  func latenessComparison(path: () -> String) throws {
    print(
      "\n| \(ticking / 1000)k ticking, \(streamPerSecond) updates/s streaming | round | tick p50 | tick p99 | tick max | server CPU | events/s | updated p50 | updated p99 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    let bench = ServeBench.parseOrExit(["--seconds", "\(seconds)"])
    var memory: [Double] = []
    var stored: [Double] = []
    for round in 1...max(1, rounds) {
      for useFile in [false, true] {
        let r = try bench.lateness(
          activities: ticking, subscribers: 1, stalled: false, state: useFile ? path() : ":memory:",
          streamPerSecond: streamPerSecond)
        let updated = r.others.map { "\(fmt($0.p50)) | \(fmt($0.p99))" } ?? "- | -"
        print(
          "| \(useFile ? "state file (normal)" : ":memory:") | \(round) | \(r.row) | \(updated) |")
        if useFile { stored.append(r.latency.p99) } else { memory.append(r.latency.p99) }
      }
    }
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    print(
      "\nthe state file moves the median tick p99 by \(String(format: "%+.1f", (median(stored) / median(memory) - 1) * 100))% (\(fmt(median(memory))) → \(fmt(median(stored))), \(memory.count) rounds each)"
    )
  }
}
