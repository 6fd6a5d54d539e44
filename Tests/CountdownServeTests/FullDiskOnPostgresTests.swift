// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

/// PostgreSQL's own disk full under a server that keeps its state there (docs/cluster.md,
/// "Faults short of death"): a PostgreSQL of the test's own, its data directory on a tmpfs
/// the test mounts and fills.
@Suite(
  "PostgreSQL's disk full", .serialized,
  .enabled(
    if: PostgresTestServer.url != nil && getuid() == 0,
    "needs root (to mount a tmpfs) and PostgreSQL's programs: make postgres as root"))
struct FullDiskOnPostgresTests {
  /// Runs `script` with /bin/sh, failing with its output when it fails.
  @discardableResult
  static func sh(_ script: String) throws -> String {
    try PostgresTestServer.run(["/bin/sh", "-c", script])
  }

  @Test(
    "PostgreSQL's disk full: starts get storageFailed, ticks go on, and once there is room writes resume by themselves; after kill -9 every acknowledged activity is there"
  )
  func postgresDiskFull() async throws {
    try await onThread {
      // Under /tmp, which the postgres user reaches (a home directory of mode 0700 is not).
      let dir = try Self.sh("mktemp -d /tmp/cd-pgfull.XXXXXX").trimmingCharacters(
        in: .whitespacesAndNewlines)
      let disk = dir + "/disk"
      let bin = try Self.sh("ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1")
        .trimmingCharacters(in: .whitespacesAndNewlines)
      let port = try ClusterOnPostgresTests.freePort()
      let pgctl = "runuser -u postgres -- \(bin)/pg_ctl -D \(disk)/db"
      try Self.sh(
        "mkdir \(disk) && mount -t tmpfs -o size=96m tmpfs \(disk) && chown postgres \(dir) \(disk)"
      )
      defer {
        _ = try? Self.sh("\(pgctl) stop -m immediate; umount \(disk); rm -rf \(dir)")
      }
      try Self.sh(
        "runuser -u postgres -- \(bin)/initdb -D \(disk)/db -A trust -U postgres >/dev/null")
      try Self.sh(
        "\(pgctl) -o '-p \(port) -k \(disk) -c listen_addresses=127.0.0.1 -c fsync=off' -l \(dir)/pg.log start -w >/dev/null"
      )
      let url = "postgres://postgres@127.0.0.1:\(port)/postgres"
      let home = URL(fileURLWithPath: dir + "/serve")
      try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
      let state = ["--postgres", url]
      let server = try DurabilityTests.serve(home, ["--commit-timeout-ms", "3000"], state: state)
      let socket = home.appendingPathComponent("c.sock").path
      let c = try TestClient(unix: socket)
      let end = nowMs() + 600_000
      try DurabilityTests.ok(
        c.request(#"{"op":"start","id":"tick","kind":"countdown","endDate":\#(end),"title":"T"}"#),
        "start tick")
      let sub = try TestClient(unix: socket)
      try DurabilityTests.ok(
        sub.request(#"{"op":"subscribe","ids":["tick"],"ticks":true}"#), "subscribe")
      // Fill PostgreSQL's filesystem to its last byte.
      let filler = disk + "/filler"
      DurabilityTests.fill(filler)
      // Starts until one cannot be stored: storageFailed.
      var acked: [String] = []
      var refused: [String: Any]?
      let title = String(repeating: "x", count: 1_000)
      for k in 0..<20_000 where refused == nil {
        let reply = try c.request(
          #"{"op":"start","id":"a\#(k)","kind":"elapsed","title":"\#(title)"}"#, timeout: 30)
        if reply["ok"] as? Bool == true { acked.append("a\(k)") } else { refused = reply }
      }
      let failure = try #require(refused, "every start was stored on a full disk")
      #expect(failure["code"] as? String == "storageFailed", "\(failure)")
      #expect((failure["message"] as? String ?? "").contains("No space left"), "\(failure)")
      print("PostgreSQL's disk full after \(acked.count) starts: \(failure["message"] ?? "")")
      // The ticks go on meanwhile.
      let ticks = DurabilityTests.ticks(of: "tick", on: sub)
      #expect(ticks >= 2, "\(ticks) ticks while PostgreSQL's disk was full")
      // Room again: writes go on by themselves (PostgreSQL may restart itself meanwhile).
      unlink(filler)
      let resumed = try DurabilityTests.startOnceStored(c, tries: 1_500)
      #expect(resumed != nil, "no start was stored within 30 s of there being room again")
      if let resumed { acked.append(resumed) }
      // Nothing acknowledged is lost.
      try DurabilityTests.restartAndCheck(
        server, in: home, state: state, socket: socket, acked: acked + ["tick"])
    }
  }
}
