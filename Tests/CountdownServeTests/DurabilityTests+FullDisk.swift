// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

extension DurabilityTests {
  /// Writes zeros to a new file at `path` until its filesystem has no room left.
  static func fill(_ path: String) {
    let fd = open(path, O_WRONLY | O_CREAT, 0o600)
    let chunk = [UInt8](repeating: 0, count: 64 << 10)
    while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
    close(fd)
  }

  /// Starts `tick`, a countdown of ten minutes, the activity whose ticks
  /// ``ticks(of:on:for:)`` counts while writes fail.
  static func startTick(_ c: TestClient) throws {
    let end = nowMs() + 600_000
    try ok(
      c.request(#"{"op":"start","id":"tick","kind":"countdown","endDate":\#(end),"title":"T"}"#),
      "start tick")
  }

  /// The ticks of activity `id` that `sub` receives in the next `seconds`.
  static func ticks(of id: String, on sub: TestClient, for seconds: Double = 2.5) -> Int {
    var ticks = 0
    let until = Date().addingTimeInterval(seconds)
    while Date() < until {
      guard let line = sub.line(timeout: 0.2) else { continue }
      if line.contains(#""event":"tick""#) && line.contains(#""id":"\#(id)""#) { ticks += 1 }
    }
    return ticks
  }

  /// Kills `server` (-9), starts it again in `dir` on `state`, checks that every one of
  /// `acked` is there and stops it (SIGTERM, exit 0).
  static func restartAndCheck(
    _ server: ServerProcess, in dir: URL, state: [String], socket: String, acked: [String]
  ) throws {
    kill(server.pid, SIGKILL)
    _ = server.exitStatus(within: 5)
    let again = try serve(dir, state: state)
    var stopped = false
    defer { if !stopped { kill(again.pid, SIGKILL) } }
    let d = try TestClient(unix: socket)
    for id in acked {
      try ok(d.request(#"{"op":"get","id":"\#(id)"}"#), "get \(id)")
    }
    kill(again.pid, SIGTERM)
    stopped = true
    #expect(again.exitStatus(within: 10) == 0)
  }

  /// Runs `tool` with `arguments`; its exit status.
  static func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: tool)
    p.arguments = arguments
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    return p.terminationStatus
  }

  @Test(
    "A full filesystem under the state file (a 2 MiB tmpfs): storageFailed, ticks go on, writes again by itself once there is room, nothing acknowledged lost",
    .enabled(if: getuid() == 0, "mounts a tmpfs of its own: needs root (CI runs as root)"))
  func fullFilesystem() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      let disk = dir.appendingPathComponent("disk")
      try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
      #expect(
        try Self.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", disk.path]) == 0)
      defer {
        _ = try? Self.run("/usr/bin/umount", [disk.path])
        try? FileManager.default.removeItem(at: dir)
      }
      let state = ["--state", disk.appendingPathComponent("s.db").path]
      let server = try Self.serve(dir, state: state)
      let socket = dir.appendingPathComponent("c.sock").path
      let c = try TestClient(unix: socket)
      try Self.startTick(c)
      let sub = try TestClient(unix: socket)
      try Self.ok(
        sub.request(#"{"op":"subscribe","ids":["tick"],"ticks":true}"#), "subscribe")
      // Fill the filesystem: a file written until the kernel says no room.
      let filler = disk.appendingPathComponent("filler").path
      Self.fill(filler)
      // Commands until one cannot be stored: storageFailed, saying why.
      var acked: [String] = []
      var refused: [String: Any]?
      let title = String(repeating: "x", count: 300)
      for k in 0..<2_000 where refused == nil {
        let reply = try c.request(
          #"{"op":"start","id":"a\#(k)","kind":"elapsed","title":"\#(title)"}"#)
        if reply["ok"] as? Bool == true { acked.append("a\(k)") } else { refused = reply }
      }
      let failure = try #require(refused, "every start was stored on a full filesystem")
      #expect(failure["code"] as? String == "storageFailed", "\(failure)")
      #expect((failure["message"] as? String ?? "").contains("full"), "\(failure)")
      // The ticks go on meanwhile: at least two in 2.5 s, each of `tick`.
      let ticks = Self.ticks(of: "tick", on: sub)
      #expect(ticks >= 2, "\(ticks) ticks while the filesystem was full")
      // Room again: writes go on by themselves, with nothing done to the server.
      try FileManager.default.removeItem(atPath: filler)
      let resumed = try Self.startOnceStored(c, tries: 250)
      if let resumed { acked.append(resumed) }
      #expect(resumed != nil, "no start was stored once there was room again")
      // Nothing acknowledged is lost: killed and started again on the same file.
      try Self.restartAndCheck(
        server, in: dir, state: state, socket: socket, acked: acked + ["tick"])
    }
  }
}
