// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

/// A filesystem that turns read-only under the state file: Tests/faults/readonly_fs.py, a FUSE
/// pass-through to a backing directory that answers EROFS to every change between SIGUSR1 and
/// SIGUSR2 (as ext4 does once it has remounted itself read-only after an error).
struct ReadOnlyDisk {
  static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("faults/readonly_fs.py").path
  /// `make test` sets it (after `make faultdeps`): then a missing part fails the test.
  static let required = ProcessInfo.processInfo.environment["COUNTDOWN_READONLY_DISK"] == "1"
  /// Root, /dev/fuse and fusepy: what mounting it needs.
  static let available: Bool = {
    guard getuid() == 0, FileManager.default.fileExists(atPath: "/dev/fuse") else { return false }
    return (try? DurabilityTests.run("/usr/bin/env", ["python3", "-c", "import fuse"])) == 0
  }()

  let process: Process
  let output: Pipe
  let mountPoint: String

  /// Mounts `backing` at `mountPoint` and waits for the mount.
  init(backing: String, mountPoint: String) throws {
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", Self.script, backing, mountPoint]
    output = Pipe()
    process.standardOutput = output
    self.mountPoint = mountPoint
    try process.run()
    guard line() == "mounted" else {
      process.terminate()
      throw TestFailure("\(Self.script) did not mount \(mountPoint)")
    }
  }

  /// The next line the filesystem prints ("mounted", "read-only", "writable"), or nil at its
  /// end or when none comes within `timeout` seconds.
  func line(timeout: Double = 10) -> String? {
    let fd = output.fileHandleForReading.fileDescriptor
    let deadline = Date().addingTimeInterval(timeout)
    var bytes: [UInt8] = []
    while Date() < deadline {
      var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      guard poll(&p, 1, 100) > 0 else { continue }
      var c: UInt8 = 0
      guard read(fd, &c, 1) == 1 else { return nil }
      if c == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
      bytes.append(c)
    }
    return nil
  }

  /// Read-only from the filesystem's next call on (it says so when that call comes).
  func turnReadOnly() { kill(process.processIdentifier, SIGUSR1) }

  /// Writable again from its next call on.
  func turnWritable() { kill(process.processIdentifier, SIGUSR2) }

  /// Unmounts it (libfuse, at SIGTERM) and waits for the process.
  func unmount() {
    process.terminate()
    process.waitUntilExit()
    _ = try? DurabilityTests.run("/usr/bin/umount", ["-l", mountPoint])
  }
}

extension DurabilityTests {
  @Test(
    "The state file's filesystem turned read-only under it: storageFailed saying so, ticks go on, writes again by itself once writable, nothing acknowledged lost",
    .enabled(
      if: ReadOnlyDisk.available || ReadOnlyDisk.required,
      "mounts a FUSE filesystem: needs root, /dev/fuse and fusepy (make faultdeps; make test sets COUNTDOWN_READONLY_DISK=1 and runs it)"
    ))
  func readOnlyFilesystem() async throws {
    try await onThread {
      let dir = temporaryDirectory()
      let backing = dir.appendingPathComponent("backing").path
      let mounted = dir.appendingPathComponent("disk").path
      for d in [backing, mounted] {
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
      }
      let disk = try ReadOnlyDisk(backing: backing, mountPoint: mounted)
      var server: ServerProcess?
      defer {
        if let server { kill(server.pid, SIGKILL) }
        disk.unmount()
        try? FileManager.default.removeItem(at: dir)
      }
      let state = ["--state", mounted + "/s.db"]
      server = try Self.serve(dir, state: state)
      let socket = dir.appendingPathComponent("c.sock").path
      let c = try TestClient(unix: socket)
      try Self.startTick(c)
      var acked = ["tick"]
      for k in 0..<20 {
        try Self.ok(
          c.request(#"{"op":"start","id":"a\#(k)","kind":"elapsed","title":"A"}"#), "a\(k)")
        acked.append("a\(k)")
      }
      let sub = try TestClient(unix: socket)
      try Self.ok(sub.request(#"{"op":"subscribe","ids":["tick"],"ticks":true}"#), "subscribe")
      // Read-only: the next change cannot be stored, and the answer says why.
      disk.turnReadOnly()
      var refused: [String: Any]?
      for k in 0..<50 where refused == nil {
        let reply = try c.request(#"{"op":"start","id":"r\#(k)","kind":"elapsed","title":"R"}"#)
        if reply["ok"] as? Bool == true { acked.append("r\(k)") } else { refused = reply }
      }
      #expect(disk.line() == "read-only")
      let failure = try #require(refused, "every start was stored on a read-only filesystem")
      #expect(failure["code"] as? String == "storageFailed", "\(failure)")
      #expect(
        (failure["message"] as? String ?? "").contains("Read-only file system"), "\(failure)")
      // The ticks go on meanwhile: at least two in 2.5 s, each of `tick`.
      let ticks = Self.ticks(of: "tick", on: sub)
      #expect(ticks >= 2, "\(ticks) ticks while the filesystem was read-only")
      // Reads still answer, from memory and the file: what was acknowledged is there.
      try Self.ok(c.request(#"{"op":"get","id":"a3"}"#), "get a3 while read-only")
      // Writable again: writes go on by themselves, with nothing done to the server.
      disk.turnWritable()
      let resumed = try Self.startOnceStored(c, tries: 250)
      #expect(disk.line() == "writable")
      if let resumed { acked.append(resumed) }
      #expect(resumed != nil, "no start was stored once the filesystem was writable again")
      // Nothing acknowledged is lost: killed and started again on the same file.
      if let s = server {
        server = nil
        try Self.restartAndCheck(s, in: dir, state: state, socket: socket, acked: acked)
      }
    }
  }
}
