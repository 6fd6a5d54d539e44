// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Foundation
import Histogram
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
  import Glibc
#endif

/// `countdown-bench webhook`: webhook deliveries from a `countdown serve` child (state file,
/// `--webhook` pointing here) to a local HTTP/1.1 receiver that answers 200 at once on
/// keep-alive connections. Deliveries per second from the outbox at start and for a burst of
/// updates; from a command to its delivery's request at the receiver at 1,000/s; and the tick
/// lateness of 100k ticking activities with and without 1,000 deliveries/s flowing, in
/// alternating rounds.
struct WebhookBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "webhook",
    abstract: "Webhooks: deliveries/s, command-to-receiver latency, ticks beside deliveries.")

  @OptionGroup var options: OutboxBenchOptions
  var burst: Int { options.burst }
  var seconds: Double { options.seconds }
  var rounds: Int { options.rounds }
  var activities: Int { options.activities }
  var only: String? { options.only }

  func run() throws {
    let receiver = Receiver()
    defer { receiver.stop() }
    let hook = ["--webhook", "http://127.0.0.1:\(receiver.port)/hook"]
    print("| run | figure |")
    print("|---|---|")
    if only == nil || only == "throughput" {
      try sender(receiver, hook)
      try throughput(receiver, hook)
    }
    if only == nil || only == "latency" { try latency(receiver, hook) }
    if only == nil || only == "ticks" { try ticks(receiver, hook) }
  }

  /// Starts `n` elapsed timers `p0`…, with no webhook child-side effect beyond their
  /// `started` deliveries.
  static func startPlain(_ child: Child, _ n: Int) {
    let control = try! Client(child.socket)
    var batch = [UInt8]()
    for k in 0..<n {
      batch += Array(#"{"op":"start","id":"p\#(k)","kind":"elapsed","title":"P"}"#.utf8)
      batch.append(0x0A)
    }
    control.sendWhileReading(batch, replies: n)
  }

  /// Waits until the receiver has had `n` requests (the deliveries of the activities'
  /// starts), so that what is measured next starts from an empty outbox.
  static func settle(_ receiver: Receiver, _ n: Int) {
    let deadline = monotonicNanoseconds() + 120_000_000_000
    while receiver.count < n, monotonicNanoseconds() < deadline { usleep(10_000) }
    usleep(200_000)
  }

  /// The sender alone: `burst` deliveries waiting in the outbox when the server starts
  /// (written by a first child while the receiver refused every connection), posted over
  /// keep-alive connections: deliveries per second from the first request to the last.
  func sender(_ receiver: Receiver, _ hook: [String]) throws {
    let state = PushBench.stateFile()
    defer { PushBench.removeState(state) }
    receiver.refusing = true
    do {
      let child = try Child(state: state, extra: hook)
      defer { child.stop() }
      Self.startPlain(child, burst)
    }
    receiver.refusing = false
    receiver.reset()
    let t0 = monotonicNanoseconds()
    let child = try Child(state: state, extra: hook)
    defer { child.stop() }
    guard let span = receiver.waitFor(burst) else {
      print(
        "| \(burst) deliveries in the outbox at start | only \(receiver.count) answered within 120 s: stalled |"
      )
      return
    }
    let (count, first, last) = span
    print(
      "| sender alone: \(burst) deliveries in the outbox at start, \(count) answered, first within | \(String(format: "%.2f s", Double(monotonicNanoseconds() - t0) / 1e9 - Double(last - first) / 1e9)) |"
    )
    print(
      "| sender alone: deliveries/s (first request to last) | \(Int(Double(count) / (Double(last - first) / 1e9))) |"
    )
    print("| connections the child made | \(receiver.connections) |")
  }

  /// A burst of `burst` updates, one per activity, pipelined: deliveries per second from the
  /// first request at the receiver to the last, and from the burst's start to the last.
  func throughput(_ receiver: Receiver, _ hook: [String]) throws {
    let state = PushBench.stateFile()
    defer { PushBench.removeState(state) }
    let child = try Child(state: state, extra: hook)
    defer { child.stop() }
    receiver.reset()
    Self.startPlain(child, burst)
    Self.settle(receiver, burst)
    try burstOfUpdates(child, receiver, burst: burst, noun: "delivery", nouns: "deliveries")
  }

  /// 1,000 updates a second over 5,000 activities, each carrying its send instant: the
  /// receiver times each request's arrival.
  func latency(_ receiver: Receiver, _ hook: [String]) throws {
    let state = PushBench.stateFile()
    defer { PushBench.removeState(state) }
    let child = try Child(state: state, extra: hook)
    defer { child.stop() }
    let n = 5000
    receiver.reset()
    Self.startPlain(child, n)
    Self.settle(receiver, n)
    receiver.reset()
    receiver.timing = true
    defer { receiver.timing = false }
    let stop = StopFlag()
    let threads = try PushBench.streamTimedUpdates(
      child, activities: n, perSecond: 1000, until: stop)
    usleep(UInt32((1.5 + seconds) * 1_000_000))
    stop.set()
    while threads.contains(where: { !$0.isFinished }) { usleep(10_000) }
    let h = receiver.latencies()
    let l = Latency(h)
    print(
      "| command to its delivery at the receiver at 1,000/s, \(h.totalCount) deliveries: p50 / p99 / max | \(fmt(l.p50)) / \(fmt(l.p99)) / \(fmt(l.max)) |"
    )
  }

  /// `activities` ticking countdowns beside 1,000 updates a second to 5,000 activities; the
  /// child with `--webhook` (each update is a delivery) and without (the same updates),
  /// alternating. With webhooks, the starts' deliveries are drained before the measurement.
  func ticks(_ receiver: Receiver, _ hook: [String]) throws {
    let activities = self.activities
    try TicksBeside.run(
      what: "webhooks", noiseFloor: options.noiseFloor, pin: options.pin,
      answered: "deliveries answered",
      peer: receiver, extra: hook, activities: activities, seconds: seconds, rounds: rounds
    ) { child, sends in
      Self.startPlain(child, 5000)
      // Every start is delivered too: the measurement begins once they all are.
      if sends { Self.settle(receiver, 5000 + activities) }
    }
  }

  /// A local webhook receiver: HTTP/1.1 on SwiftNIO, answering every request 200 at once on
  /// keep-alive connections (``LocalPeer`` counts and times them).
  final class Receiver: LocalPeer, @unchecked Sendable {
    override init() {
      super.init()
      try! listen(
        ServerBootstrap(group: group)
          .serverChannelOption(.backlog, value: 256)
          .childChannelInitializer { [self] channel in
            guard accepted() else {
              return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
            }
            return channel.eventLoop.makeCompletedFuture {
              try channel.pipeline.syncOperations.configureHTTPServerPipeline()
              try channel.pipeline.syncOperations.addHandler(Answers(receiver: self))
            }
          })
    }

    /// One connection's requests: gathers each body, answers 200 at its end, flushing once
    /// per read.
    final class Answers: ChannelInboundHandler {
      typealias InboundIn = HTTPServerRequestPart
      typealias OutboundOut = HTTPServerResponsePart
      let receiver: Receiver
      var body = ByteBuffer()
      var wrote = false
      init(receiver: Receiver) { self.receiver = receiver }

      func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: body.clear()
        case .body(var b): body.writeBuffer(&b)
        case .end:
          receiver.received(body)
          var headers = HTTPHeaders()
          headers.add(name: "Content-Length", value: "0")
          context.write(
            wrapOutboundOut(
              .head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
            promise: nil)
          context.write(wrapOutboundOut(.end(nil)), promise: nil)
          wrote = true
        }
      }

      func channelReadComplete(context: ChannelHandlerContext) {
        if wrote {
          wrote = false
          context.flush()
        }
        context.fireChannelReadComplete()
      }
    }
  }
}
