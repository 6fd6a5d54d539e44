// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Dispatch
import Foundation

/// One `DispatchSourceTimer` per activity, repeating every second from its first change, with
/// zero leeway (`.strict`), all on one serial queue.
///
/// `@unchecked Sendable`: `sources` and `next` are touched on `queue` once activities start.
final class DispatchPeer: TickPeer, @unchecked Sendable {
  let queue = DispatchQueue(label: "countdown-bench.dispatch", qos: .userInteractive)
  var sources: [DispatchSourceTimer] = []
  var next: UnsafeMutablePointer<Int64>?
  var recorder: TickRecorder?
  /// Fires that coalesced several seconds (`data > 1`).
  var coalesced = 0

  func start(ends: [Int64], recorder: TickRecorder) async throws {
    self.recorder = recorder
    next = .allocate(capacity: ends.count)
    let nowMs = wallNanoseconds() / 1_000_000
    await onQueue {
      for i in 0..<ends.count {
        self.sources.append(self.makeSource(i, end: ends[i], nowMs: nowMs))
      }
    }
  }

  func makeSource(_ i: Int, end: Int64, nowMs: Int64) -> DispatchSourceTimer {
    let first = firstChange(end: end, after: nowMs)
    next![i] = first
    let source = DispatchSource.makeTimerSource(flags: .strict, queue: queue)
    let deadline = DispatchWallTime(
      timespec: timespec(tv_sec: Int(first / 1000), tv_nsec: Int(first % 1000) * 1_000_000))
    source.schedule(wallDeadline: deadline, repeating: .seconds(1), leeway: .nanoseconds(0))
    // The handler runs on the serial queue, where `sources[i]` is this source by then (it is
    // stored before the queue can run the handler), so no source captures itself.
    source.setEventHandler { [unowned self] in
      let n = max(1, Int64(self.sources[i].data))
      if n > 1 { self.coalesced += 1 }
      // The latest change this fire stands for; earlier ones it coalesced were never delivered.
      self.next![i] += (n - 1) * 1000
      self.recorder!.record(atMs: self.next![i])
      self.next![i] += 1000
    }
    source.activate()
    return source
  }

  private func onQueue(_ body: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
      queue.async {
        body()
        c.resume()
      }
    }
  }

  func barrier(_ body: @escaping @Sendable () -> Void) async throws { await onQueue(body) }

  func replace(_ items: [(index: Int, end: Int64)]) async throws {
    await onQueue {
      let nowMs = wallNanoseconds() / 1_000_000
      for (i, end) in items {
        self.sources[i].cancel()
        self.sources[i] = self.makeSource(i, end: end, nowMs: nowMs)
      }
    }
  }

  func note(seconds: Double) async throws -> String {
    let c = await withCheckedContinuation { (k: CheckedContinuation<Int, Never>) in
      queue.async { k.resume(returning: self.coalesced) }
    }
    return "\(c) coalesced fires"
  }

  func stop() async {
    await onQueue {
      for s in self.sources { s.cancel() }
      self.sources = []
    }
    next?.deallocate()
  }
}
