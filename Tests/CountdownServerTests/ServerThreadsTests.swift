import CountdownLoop
import Foundation
import Testing

@testable import CountdownServer

/// The threads a tick passes through on its way to a subscriber (the loop thread, then a
/// network thread) take the CPU as soon as they wake: each runs with the kernel's shortest
/// scheduling slice (`PromptWakeups`, docs/driver.md).
@Suite("Server threads")
struct ServerThreadsTests {
  @Test(
    "The loop thread and every network thread run with the short slice",
    .enabled(
      if: {
        let v = ProcessInfo.processInfo.operatingSystemVersion
        return v.majorVersion > 6 || (v.majorVersion == 6 && v.minorVersion >= 12)
      }(), "custom slices need Linux 6.12 or later"))
  func shortSlices() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let options = ServerOptions(
      socketPath: dir.appendingPathComponent("c.sock").path, networkThreads: 3)
    let server = CountdownServer(options: options)
    try server.start()
    defer { server.stop() }
    let core = try #require(server.core)
    var seen = 0
    for eventLoop in core.group.makeIterator() {
      let slice = try await eventLoop.submit { PromptWakeups.currentSliceNanoseconds }.get()
      #expect(slice == PromptWakeups.sliceNanoseconds)
      seen += 1
    }
    #expect(seen == 3)
    let loopSlice = try await core.loop.submit { _ in PromptWakeups.currentSliceNanoseconds }
    #expect(loopSlice == PromptWakeups.sliceNanoseconds)
  }
}
