// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation
import NIOCore
import NIOPosix

/// SwiftNIO's `scheduleCallback` on one event loop: each tick schedules the next change.
///
/// `@unchecked Sendable`: `next`, `generation` and `callbacks` are touched only on the event
/// loop once activities start.
final class NIOPeer: TickPeer, @unchecked Sendable {
  let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
  var loop: any EventLoop { group.next() }
  var next: UnsafeMutablePointer<Int64>?
  var generation: UnsafeMutablePointer<UInt32>?
  var callbacks: [NIOScheduledCallback?] = []
  var recorder: TickRecorder?
  /// Wall-clock nanoseconds minus NIO's uptime clock.
  var wallMinusUptimeNs: Int64 = 0

  struct Tick: NIOScheduledCallbackHandler, Sendable {
    let peer: NIOPeer
    let index: Int
    let generation: UInt32
    func handleScheduledCallback(eventLoop: some EventLoop) {
      peer.fire(index, generation, eventLoop)
    }
  }

  func start(ends: [Int64], recorder: TickRecorder) async throws {
    self.recorder = recorder
    next = .allocate(capacity: ends.count)
    generation = .allocate(capacity: ends.count)
    callbacks = Array(repeating: nil, count: ends.count)
    wallMinusUptimeNs = wallNanoseconds() - Int64(NIODeadline.now().uptimeNanoseconds)
    let nowMs = wallNanoseconds() / 1_000_000
    let el = loop
    try await el.submit {
      for i in 0..<ends.count {
        self.next![i] = firstChange(end: ends[i], after: nowMs)
        self.generation![i] = 0
        self.schedule(i, el)
      }
    }.get()
  }

  func schedule(_ i: Int, _ el: some EventLoop) {
    let deadline = NIODeadline.uptimeNanoseconds(UInt64(next![i] * 1_000_000 - wallMinusUptimeNs))
    callbacks[i] = try? el.scheduleCallback(
      at: deadline, handler: Tick(peer: self, index: i, generation: generation![i]))
  }

  func fire(_ i: Int, _ gen: UInt32, _ el: some EventLoop) {
    guard generation![i] == gen else { return }
    recorder!.record(atMs: next![i])
    next![i] += 1000
    schedule(i, el)
  }

  func barrier(_ body: @escaping @Sendable () -> Void) async throws {
    try await loop.submit { body() }.get()
  }

  func replace(_ items: [(index: Int, end: Int64)]) async throws {
    let el = loop
    try await el.submit {
      let nowMs = wallNanoseconds() / 1_000_000
      for (i, end) in items {
        self.callbacks[i]?.cancel()
        self.generation![i] &+= 1
        self.next![i] = firstChange(end: end, after: nowMs)
        self.schedule(i, el)
      }
    }.get()
  }

  func note(seconds: Double) async throws -> String { "NIO scheduleCallback, one event loop" }

  func stop() async {
    try? await group.shutdownGracefully()
    next?.deallocate()
    generation?.deallocate()
  }
}
