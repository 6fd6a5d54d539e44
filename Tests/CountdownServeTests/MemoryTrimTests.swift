// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// Freed memory given back to the system (docs/protocol.md, "Memory"): glibc returns an
/// arena's memory by itself only from its top, so the server trims every arena now and then.
@Suite("Freed memory given back", .serialized, .timeLimit(.minutes(2)))
struct MemoryTrimTests {
  @Test(
    "System.returnFreedMemory gives back the free pages under a block still in use, which glibc keeps by itself"
  )
  func freePagesUnderABlockInUse() throws {
    // 48 MB of 256-byte blocks made on a thread of their own, every one freed but one in 64
    // (one in 16 KB) and the last, so that the free room lies under blocks in use: glibc
    // keeps it all resident.
    final class Kept: @unchecked Sendable { var blocks: [UnsafeMutableRawPointer] = [] }
    let kept = Kept()
    let thread = Thread {
      var all: [UnsafeMutableRawPointer] = []
      all.reserveCapacity(200_000)
      for _ in 0..<200_000 {
        let p = UnsafeMutableRawPointer.allocate(byteCount: 240, alignment: 16)
        p.initializeMemory(as: UInt8.self, repeating: 1, count: 240)
        all.append(p)
      }
      for (k, p) in all.enumerated() {
        if k % 64 == 0 || k == all.count - 1 { kept.blocks.append(p) } else { p.deallocate() }
      }
    }
    thread.start()
    while !thread.isFinished { usleep(10_000) }
    defer { for p in kept.blocks { p.deallocate() } }
    let before = try #require(System.residentBytes())
    let returned = System.returnFreedMemory()
    let after = try #require(System.residentBytes())
    // About three quarters of the 48 MB are whole free pages; other suites allocate in this
    // process meanwhile, so the bound leaves room.
    #expect(returned >= 20 << 20, "gave back \(returned) bytes (\(before) → \(after))")
  }

  @Test(
    "countdown serve gives freed memory back every --trim-memory-ms and counts it in /metrics; with 0 it never does"
  )
  func serverTrims() async throws {
    try await onThread {
      for trimMs in [300, 0] {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try ServerProcess(
          [
            "--socket", "c.sock", "--state", ":memory:", "--http", "127.0.0.1:0",
            "--trim-memory-ms", "\(trimMs)", "--subscriber-buffer-bytes", "1048576",
            "--slow-consumer-ms", "1000",
          ], in: dir)
        let port = try #require(server.httpPort)
        let c = try TestClient(unix: dir.appendingPathComponent("c.sock").path)
        try c.startCountdowns(4_000, endingAfter: 600_300)
        // A tick subscriber that never reads: the server holds its ticks (up to one waiting
        // for each activity past its bound) until it is cut off, then frees them, in blocks
        // glibc keeps by itself.
        let stalled = try TestClient(unix: dir.appendingPathComponent("c.sock").path)
        stalled.send(#"{"op":"subscribe","ticks":true}"# + "\n")
        var (subscribed, cutOff) = (false, false)
        let until = Date().addingTimeInterval(30)
        while !cutOff && Date() < until {
          usleep(200_000)
          let subscribers = try metric("countdown_subscribers", port: port)
          if subscribers == 1 { subscribed = true }
          if subscribers == 0 && subscribed { cutOff = true }
        }
        #expect(cutOff, "the stalled subscriber was not cut off")
        usleep(1_000_000)
        let returned = try metric("countdown_memory_returned_bytes_total", port: port)
        print("--trim-memory-ms \(trimMs): gave back \(returned ?? -1) bytes")
        if trimMs > 0 {
          #expect((returned ?? 0) >= Double(1 << 20), "gave back \(returned ?? -1) bytes")
        } else {
          #expect(returned == 0, "gave back \(returned ?? -1) bytes with --trim-memory-ms 0")
        }
      }
    }
  }

  @Test("--trim-memory-ms below 0 is refused with a message, and no server starts")
  func negativeInterval() throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let p = Process()
    p.executableURL = countdownExecutable
    p.arguments = ["serve", "--socket", "c.sock", "--trim-memory-ms=-1"]
    p.currentDirectoryURL = dir
    let err = Pipe()
    p.standardError = err
    p.standardOutput = FileHandle.nullDevice
    try p.run()
    let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    #expect(p.terminationStatus != 0)
    #expect(stderr.contains("--trim-memory-ms must be ≥ 0"), "\(stderr)")
    #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("c.sock").path))
  }
}
