// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import CBenchUV
import Foundation

// What `push` and `webhook` share: their options, a burst of updates, the tick comparison.

/// The options `push` and `webhook` share.
struct OutboxBenchOptions: ParsableArguments {
  @Option(help: "Pushes or deliveries in the throughput bursts (one activity each).")
  var burst = 50_000

  @Option(help: "Seconds measured per latency and tick run.")
  var seconds: Double = 5

  @Option(help: "Alternating rounds of ticks with and without sending.")
  var rounds = 3

  @Option(help: "Ticking activities in the tick comparison.")
  var activities = 100_000

  @Option(help: "Only one part: throughput, latency, ticks (or, for push, wire).")
  var only: String?

  @Flag(
    help:
      "The tick comparison with nothing sent on either side (both children alike): how far two like sides differ on this machine."
  )
  var noiseFloor = false

  @Flag(
    help:
      "In the tick comparison, the tick path (the child's loop and network threads, the subscriber) on the last CPU and every other thread of the child and the bench on the others, on both sides."
  )
  var pin = false
}

/// A pipelined burst of `burst` updates to `p0`… on `child`, one send each to `peer`:
/// sends per second from the first request at the peer to the last, and from the burst's
/// first command to the last (`noun`: "push", "delivery").
func burstOfUpdates(_ child: Child, _ peer: LocalPeer, burst: Int, noun: String, nouns: String)
  throws
{
  peer.reset()
  let client = try Client(child.socket)
  let batch = PushBench.updates(burst)
  let t0 = wallNanoseconds()
  client.sendWhileReading(batch, replies: burst)
  let acknowledged = wallNanoseconds()
  guard let span = peer.waitFor(burst) else {
    print(
      "| \(burst) updates pipelined | only \(peer.count) \(nouns) answered within 120 s: stalled |")
    return
  }
  let (count, first, last) = span
  let wire = Double(count) / (Double(last - first) / 1e9)
  let whole = Double(count) / (Double(last - t0) / 1e9)
  print("| \(burst) updates pipelined, one \(noun) each | \(count) \(nouns) answered |")
  print("| \(nouns)/s (first request to last) | \(Int(wire)) |")
  print("| \(nouns)/s from the burst's first command to the last \(noun) | \(Int(whole)) |")
  print(
    "| commands acknowledged (all \(burst)) after | \(String(format: "%.2f s", Double(acknowledged - t0) / 1e9)) |"
  )
  print("| connections the child opened during the burst | \(peer.connections) |")
}

/// The tick comparison `push` and `webhook` both make: `activities` ticking countdowns and
/// one subscriber timing every tick, with 1,000 updates a second to 5,000 activities, the
/// child with `extra` (`on`: each update sends to `peer`) and without (`off`: the same
/// updates, nothing sent), in alternating rounds; the median p99 of each side. The updates'
/// own `updated` events are timed apart: they wait for their commit (docs/protocol.md), which the
/// outbox's rows lengthen, and at 1,000 a second among 100,000 ticks they would otherwise be
/// the slowest 1% of the ticks' histogram. With `noiseFloor` (`--noise-floor`), neither side
/// sends: the comparison's own spread.
enum TicksBeside {
  /// `prepare` starts the 5,000 updated activities `p0`… on the child once the ticking ones
  /// have started (and waits for what the starts send, when `sends` says the child sends).
  static func run(
    what sent: String, noiseFloor: Bool, pin: Bool, answered: String, peer: LocalPeer,
    extra sending: [String],
    activities: Int, seconds: Double, rounds: Int,
    prepare: (Child, _ sends: Bool) throws -> Void
  ) throws {
    let what = (noiseFloor ? "nothing sent (noise floor)" : sent) + (pin ? ", pinned" : "")
    let extra = noiseFloor ? [] : sending
    print(
      "\n| \(activities / 1000)k ticking, 1,000 updates/s | round | tick p50 | p99 | max | server CPU | ticks/s | `updated` p50 | p99 | max | \(answered) | loop ns/tick |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    var p99: [Bool: [Double]] = [true: [], false: []]
    var loopPerTick: [Bool: [Double]] = [true: [], false: []]
    var cpu: [Bool: [Double]] = [true: [], false: []]
    var counted: [Double] = []
    for round in 1...max(1, rounds) {
      for on in [false, true] {
        let state = PushBench.stateFile()
        defer { PushBench.removeState(state) }
        let child = try Child(state: state, extra: on ? extra : [])
        defer { child.stop() }
        let pinner = pin ? TickThreadPinner(child.process.processIdentifier) : nil
        defer { pinner?.stop() }
        peer.reset()
        try ServeBench.startCountdowns(child, activities)
        try prepare(child, on && !noiseFloor)
        let reader = try Client(child.socket)
        reader.send(Array(#"{"op":"subscribe","ticks":true}"#.utf8) + [0x0A])
        reader.awaitReplies(1)
        let recorder = LatencyBox()
        let updated = LatencyBox()
        let stop = StopFlag()
        let warmUpUntil = monotonicNanoseconds() + 1_500_000_000
        let readerThread = Thread {
          // The subscriber stands for a board on another machine: it reads as soon as a
          // tick arrives, as the server's loop and network threads run (`PromptWakeups`).
          _ = cbench_set_sched_slice_ns(100_000)
          Client.readTicks(
            [reader], recorder: recorder, others: updated, stop: stop, after: warmUpUntil)
        }
        readerThread.start()
        peer.reset()
        let streams = try PushBench.streamTimedUpdates(
          child, activities: 5000, perSecond: 1000, until: stop)
        let r = ServeBench.measure(
          child, seconds: seconds, threads: [readerThread] + streams, stop: stop,
          recorder: recorder, counter: { peer.count })
        let u = Latency(updated.histogram())
        let perTick = r.loopNanosecondsPerTick.map { String(format: "%.0f", $0) } ?? "–"
        print(
          "| \(what) \(on ? "on" : "off") | \(round) | \(r.row) | \(fmt(u.p50)) | \(fmt(u.p99)) | \(fmt(u.max)) | \(peer.count) | \(perTick) |"
        )
        p99[on]!.append(r.latency.p99)
        if let t = r.loopNanosecondsPerTick { loopPerTick[on]!.append(t) }
        cpu[on]!.append(Double(r.cpuNanoseconds))
        if on { counted.append(Double(r.counted)) }
      }
    }
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    let off = median(p99[false]!)
    let on = median(p99[true]!)
    print(
      "\n\(what) move the median tick p99 by \(String(format: "%+.1f", (on / off - 1) * 100))% (\(fmt(off)) → \(fmt(on)), \(p99[true]!.count) rounds each)"
    )
    // The loop thread's own CPU per tick (schedstat), which the neighbours on two CPUs do not
    // move as they move lateness; the spread of the rounds without sending is its A/A noise.
    if let offTicks = loopPerTick[false], let onTicks = loopPerTick[true], !offTicks.isEmpty,
      !onTicks.isEmpty
    {
      let a = median(offTicks)
      let b = median(onTicks)
      let spread = (offTicks.max()! - offTicks.min()!) / a * 100
      let onSpread = (onTicks.max()! - onTicks.min()!) / b * 100
      print(
        "\(what) move the loop thread's CPU per tick by \(String(format: "%+.1f", (b / a - 1) * 100))% (median \(String(format: "%.0f", a)) → \(String(format: "%.0f", b)) ns; A/A spread of the rounds: \(String(format: "%.1f", spread))% without, \(String(format: "%.1f", onSpread))% with)"
      )
    }
    if !counted.isEmpty, median(counted) > 0 {
      let extra = median(cpu[true]!) - median(cpu[false]!)
      print(
        "each of the \(Int(median(counted))) \(answered) in the \(seconds) s window cost \(String(format: "%.1f", extra / median(counted) / 1000)) µs of the server's CPU, all threads (median CPU with minus without, over the median count)"
      )
    }
  }
}

/// `--pin`: every 0.2 s, the threads of the bench and of `child` that asked for the short
/// scheduling slice (the tick path: the loop thread, the network threads, the subscriber) on
/// the last CPU, all their other threads (the writer, the senders, the gateway or receiver,
/// the update streams) on the others: how the ticks fare when the sending has its own CPUs.
final class TickThreadPinner: @unchecked Sendable {
  // @unchecked Sendable: `stopped` is a StopFlag; the thread is touched only in init and stop.
  private let stopped = StopFlag()
  private let done = DispatchSemaphore(value: 0)
  private let allMask: UInt64

  init(_ child: Int32) {
    let cpus = max(2, min(64, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
    allMask = cpus == 64 ? ~0 : (UInt64(1) << UInt64(cpus)) - 1
    let tickMask = UInt64(1) << UInt64(cpus - 1)
    let otherMask = tickMask - 1
    let pids = [getpid(), child]
    let stopped = self.stopped
    let done = self.done
    Thread {
      while !stopped.isSet {
        for pid in pids {
          _ = cbench_pin_threads_by_slice(pid, 100_000, tickMask, otherMask)
        }
        usleep(200_000)
      }
      done.signal()
    }.start()
  }

  /// Stops placing threads and gives the bench's own back all the CPUs (the child's keep
  /// theirs until it ends).
  func stop() {
    stopped.set()
    done.wait()
    _ = cbench_pin_threads_by_slice(getpid(), 100_000, allMask, allMask)
  }
}
