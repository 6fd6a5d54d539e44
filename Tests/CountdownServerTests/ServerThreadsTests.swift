// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownLoop
import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// The threads a tick passes through on its way to a subscriber (the loop thread, then a
/// network thread) take the CPU as soon as they wake: each runs with the kernel's shortest
/// scheduling slice (`PromptWakeups`, docs/driver.md).
@Suite("Server threads")
struct ServerThreadsTests {
  @Test("The loop thread and every network thread say what they are")
  func names() async throws {
    let seen = try await onTickThreads {
      readTextFile("/proc/thread-self/comm").trimmingCharacters(in: .newlines)
    }
    #expect(seen.network == ["countdown-net", "countdown-net", "countdown-net"])
    #expect(seen.loop == "countdown-loop")
  }

  @Test(
    "The loop thread and every network thread run with the short slice",
    .enabled(
      if: {
        let v = ProcessInfo.processInfo.operatingSystemVersion
        return v.majorVersion > 6 || (v.majorVersion == 6 && v.minorVersion >= 12)
      }(), "custom slices need Linux 6.12 or later"))
  func shortSlices() async throws {
    let seen = try await onTickThreads { PromptWakeups.currentSliceNanoseconds }
    #expect(seen.network == Array(repeating: PromptWakeups.sliceNanoseconds, count: 3))
    #expect(seen.loop == PromptWakeups.sliceNanoseconds)
  }

  /// What `body` returns on each of a started server's three network threads and on its loop
  /// thread.
  private func onTickThreads<T: Sendable>(_ body: @escaping @Sendable () -> T) async throws -> (
    network: [T], loop: T
  ) {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let options = ServerOptions(
      socketPath: dir.appendingPathComponent("c.sock").path, networkThreads: 3)
    let server = CountdownServer(options: options)
    try server.start()
    defer { server.stop() }
    let core = try #require(server.core)
    var network: [T] = []
    for eventLoop in core.group.makeIterator() {
      network.append(try await eventLoop.submit { body() }.get())
    }
    return (network, try await core.loop.submit { _ in body() })
  }
}
