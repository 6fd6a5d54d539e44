// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Foundation
import Testing

@testable import CountdownLoop

/// Open file descriptors of this process, from /proc/self/fd (less the one reading it).
func openDescriptors() -> Int {
  ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 1) - 1
}

/// Makes and shuts down one loop, so that what libuv opens once per process (its signal
/// pipe) is open before a test counts descriptors. Dispatch, too, opens its descriptors (an
/// epoll instance, an eventfd, a timerfd per clock) on first use, from its own thread: a
/// timer on each clock it serves (uptime, wall, and the monotonic one under `Task.sleep`)
/// has them open before the count, not part way through it.
func warmUp() {
  (try? CountdownLoop())?.shutdown()
  let fired = DispatchSemaphore(value: 0)
  DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1)) { fired.signal() }
  DispatchQueue.global().asyncAfter(wallDeadline: .now() + .milliseconds(1)) { fired.signal() }
  Task.detached {
    try? await Task.sleep(for: .milliseconds(1))
    fired.signal()
  }
  for _ in 0..<3 { fired.wait() }
}

/// What an exit test's child wrote to standard error.
func childMessage(_ result: ExitTest.Result?) -> String {
  String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}

/// Writes `message` to standard error and exits: how an exit test's child says what went
/// wrong. The parent's check on standard error fails with the message. The status stays 0 on
/// purpose: an exit test whose status is not the expected one returns no result, so its
/// standard error (the reason) would be lost.
func childFailure(_ message: String) -> Never {
  FileHandle.standardError.write(Data((message + "\n").utf8))
  exit(0)
}

@Suite("Hardening the driver: commands, C failures, the event stream", .timeLimit(.minutes(2)))
struct HardeningLoopTests {
  @Test("Commands run at the loop's wall-clock now, and nothing they do makes a tick early")
  func commandsCannotRunAhead() async throws {
    let h = try RealHarness()
    defer { h.shutdown() }
    // A command gets a LoopEngine: no advance, no stepClock, no instants of its own. Its now is
    // the wall clock's (whole milliseconds, so at most 1 ms behind it and never ahead).
    let seen = try await h.loop.submit { engine throws(CountdownError) -> (Instant, Instant) in
      let now = engine.now
      for k in 0..<50 {
        try engine.start(
          .countdown(id: "c\(k)", to: now.advanced(by: 1_000 + Int64(k) * 37), title: "C"))
      }
      try engine.pause("c0")
      try engine.resume("c0")
      try engine.end("c1")
      return (now, Instant(milliseconds: SystemWallClock().nanosecondsSinceEpoch() / 1_000_000))
    }
    #expect(seen.0 <= seen.1)
    try await h.wait(until: seen.0.advanced(by: 2_900))
    let ticks = h.delivered().filter { $0.event.kind == .tick }
    #expect(ticks.count >= 49 * 2)
    #expect(h.delivered().early.isEmpty, "early: \(h.delivered().early.prefix(3))")
  }

  @Test("A timerfd that cannot be armed moves the loop to its uv_timer_t, which keeps ticking")
  func armFailureFallsBack() async throws {
    var options = LoopOptions()
    options.faults = .timerfdArm
    let h = try RealHarness(options: options)
    defer { h.shutdown() }
    let start = h.now()
    try await h.loop.start(.countdown(id: "p", to: start.advanced(by: 1_500), title: "P"))
    try await h.wait(until: start.advanced(by: 1_500))
    let lines = h.delivered().lines("p", base: start)
    #expect(lines.suffix(2) == ["1500 tick 0", "1500 expired"], "\(lines)")
    #expect(h.delivered().early.isEmpty)
    let stats = try await h.loop.statistics()
    #expect(!stats.usesTimerfd && stats.timerFallbacks == 1, "\(stats)")
  }

  @Test("Each C call that can fail while creating a loop gives systemError, naming the call")
  func creationFailures() throws {
    let calls: [(LibUVFaults, String)] = [
      (.loopInit, "uv_loop_init"), (.asyncInit, "uv_async_init"), (.timerInit, "uv_timer_init"),
      (.pollInit, "uv_poll_init"), (.pollStart, "uv_poll_start"),
      (.timerfdCreate, "timerfd_create"), (.clockWatchCreate, "timerfd_create"),
      (.threadCreate, "pthread_create"),
    ]
    for (fault, call) in calls {
      var options = LoopOptions()
      options.faults = fault
      do {
        let loop = try CountdownLoop(options: options)
        loop.shutdown()
        Issue.record("\(call) failing still made a loop")
      } catch {
        #expect(error.code == .systemError, "\(call): \(error)")
        #expect(error.message.contains(call), "\(error.message)")
      }
    }
  }

  @Test("A loop that fails part way through creation closes every descriptor it opened")
  func creationFailuresLeakNothing() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      let faults: [LibUVFaults] = [
        .loopInit, .asyncInit, .timerInit, .pollInit, .pollStart, .timerfdCreate,
        .clockWatchCreate, .threadCreate,
      ]
      warmUp()
      let before = openDescriptors()
      for fault in faults {
        var options = LoopOptions()
        options.faults = fault
        for _ in 0..<20 {
          guard (try? CountdownLoop(options: options)) == nil else {
            childFailure("fault \(fault.rawValue) still made a loop")
          }
        }
        let after = openDescriptors()
        if after != before {
          childFailure("fault \(fault.rawValue): \(before) fds before, \(after) after")
        }
      }
    }
    #expect(result?.standardErrorContent.isEmpty == true, "\(childMessage(result))")
  }

  @Test("At every descriptor limit a loop is made or systemError says why; nothing leaks")
  func descriptorLimit() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      var limit = rlimit()
      getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
      let saved = limit
      warmUp()
      let before = openDescriptors()
      let highest =
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [])
        .compactMap { Int($0) }.max() ?? 2
      // New descriptors take the lowest free numbers: fill the gaps below `highest`, so that
      // a limit of highest + 1 + spare leaves exactly `spare` descriptors.
      var fillers: [Int32] = []
      while true {
        let fd = open("/dev/null", O_RDONLY)
        if fd < 0 || fd > highest {
          if fd >= 0 { close(fd) }
          break
        }
        fillers.append(fd)
      }
      defer { for fd in fillers { close(fd) } }
      let filled = openDescriptors()
      var refused = 0
      for spare in 0..<8 {
        limit.rlim_cur = rlim_t(highest + 1 + spare)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        do throws(CountdownError) {
          let loop = try CountdownLoop()
          loop.shutdown()
        } catch {
          refused += 1
          if error.code != .systemError || !error.message.contains("file descriptors") {
            childFailure("with \(spare) spare descriptors: \(error)")
          }
        }
        var restore = saved
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &restore)
        // More after than before is a leak. Fewer is another thread of the test process
        // closing one of its own (seen once in 4 runs since the test binary links the APNs
        // client's libraries), not the loop's doing.
        let after = openDescriptors()
        if after > filled {
          childFailure("with \(spare) spare: \(filled) fds before, \(after) after")
        }
      }
      if refused == 0 { childFailure("no limit was low enough to refuse a loop") }
      if refused == 8 { childFailure("even 7 spare descriptors were not enough for a loop") }
      _ = before
    }
    #expect(result?.standardErrorContent.isEmpty == true, "\(childMessage(result))")
  }

  @Test("Cancelling a consumer waiting for events ends its iteration; the events stay")
  func streamCancellation() async throws {
    let loop = try CountdownLoop(options: LoopOptions(eventStreamCapacity: 16))
    defer { loop.shutdown() }
    let stream = loop.events!
    let consumer = Task {
      var n = 0
      for await _ in stream { n += 1 }
      return n
    }
    try await Task.sleep(for: .milliseconds(100))
    consumer.cancel()
    // The cancelled consumer returns at once, having seen nothing.
    let finished = await withTaskGroup(of: Int?.self) { group in
      group.addTask { await consumer.value }
      group.addTask {
        try? await Task.sleep(for: .seconds(5))
        return nil
      }
      let first = await group.next()!
      group.cancelAll()
      return first
    }
    #expect(finished == 0)
    // A later consumer still gets what happens next.
    try await loop.start(.elapsed(id: "after", title: "A"))
    var iterator = stream.makeAsyncIterator()
    let e = await iterator.next()
    #expect(e?.kind == .started && e?.id == "after")
  }

  @Test("A consumer cancelled before it waits returns nil without waiting")
  func streamCancelledFirst() async throws {
    let loop = try CountdownLoop(options: LoopOptions(eventStreamCapacity: 16))
    defer { loop.shutdown() }
    let stream = loop.events!
    let consumer = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      var iterator = stream.makeAsyncIterator()
      return await iterator.next() == nil
    }
    #expect(await consumer.value)
  }

  @Test("A second consumer waiting at the same time stops the process with a message")
  func secondConsumerFailsLoudly() async {
    await #expect(processExitsWith: .failure) {
      let loop = try? CountdownLoop(options: LoopOptions(eventStreamCapacity: 16))
      let stream = loop!.events!
      let first = Task {
        var it = stream.makeAsyncIterator()
        return await it.next()
      }
      try? await Task.sleep(for: .milliseconds(200))
      var second = stream.makeAsyncIterator()
      _ = await second.next()  // traps: the first consumer is still waiting
      _ = await first.value
    }
  }
}
