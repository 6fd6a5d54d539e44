// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import CountdownServer

/// The nodes relaying this node's events (``PeerRelays``), each on a NIO `EmbeddedChannel`
/// behind the socket's own ``ChannelSink``, on an embedded event loop and a virtual clock:
/// what each is written, what waits while it cannot take more, and the cut-off.
@Suite("PeerRelays")
struct PeerRelaysTests {
  /// A wake of `kinds`, event `k` of activity `a<k>` encoded as `{"k":<k>}` (the relays copy
  /// the bytes as they are), numbered from `first`.
  struct Wake {
    var events: [ActivityEvent] = []
    var encoded: [UInt8] = []
    var offsets: [Int] = []

    init(_ kinds: [ActivityEvent.Kind]) {
      for (k, kind) in kinds.enumerated() {
        offsets.append(encoded.count)
        events.append(
          ActivityEvent(
            at: Instant(milliseconds: 0), kind: kind, id: "a\(k)",
            handle: ActivityHandle(slot: UInt32(k), generation: 0), activityKind: .countdown,
            value: 0))
        encoded += Array("{\"k\":\(k)}\n".utf8)
      }
      offsets.append(encoded.count)
    }
  }

  final class Clock: Sendable {
    let ms = NIOLockedValueBox<Int64>(0)
    var now: NIODeadline { .uptimeNanoseconds(UInt64(ms.withLockedValue { $0 }) * 1_000_000) }
  }

  let loop = EmbeddedEventLoop()
  let clock = Clock()

  func relays(bound: Int = 1000) -> PeerRelays {
    let clock = self.clock
    return PeerRelays(
      incarnation: 0xabc, eventLoop: loop, bound: bound, cutOffAfter: .seconds(3),
      metrics: ServerMetrics(), now: { clock.now })
  }

  func send(_ wake: Wake, first: UInt64, to relays: PeerRelays) {
    wake.encoded.withUnsafeBufferPointer { encoded in
      relays.wake(wake.events, encoded, offsets: wake.offsets) { first + UInt64($0) }
    }
  }

  /// A channel on the loop, connected (so active until closed).
  func connected() throws -> EmbeddedChannel {
    let channel = EmbeddedChannel(loop: loop)
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    return channel
  }

  /// Everything written to `channel` so far, as lines.
  func lines(_ channel: EmbeddedChannel) throws -> [String] {
    var out: [String] = []
    while let b = try channel.readOutbound(as: ByteBuffer.self) {
      out += String(buffer: b).split(separator: "\n").map(String.init)
    }
    return out
  }

  @Test(
    "A node is answered, given what the ring kept after its delivery number, then every lifecycle event numbered, and ticks only if it asked"
  )
  func writesInOrder() throws {
    let relays = relays()
    send(Wake([.started, .tick, .ended]), first: 10, to: relays)
    let withTicks = try connected()
    let without = try connected()
    relays.accept(ChannelSink(withTicks), after: 1, known: 0xabc, ticks: true)
    relays.accept(ChannelSink(without), after: 0, known: nil, ticks: false)
    #expect(relays.takeTicks)
    // Delivery 1 (started) is before `after`; 2 (ended) is kept.
    #expect(
      try lines(withTicks) == [
        String(
          decoding: PeerMessage.RelayAnswer.accepted(incarnation: 0xabc, gap: false).line
            .dropLast(), as: UTF8.self),
        "12 2 {\"k\":2}",
      ])
    #expect(try lines(without).count == 3)
    send(Wake([.tick, .paused]), first: 13, to: relays)
    #expect(try lines(withTicks) == ["14 3 {\"k\":1}", "13 0 {\"k\":0}"])
    #expect(try lines(without) == ["14 3 {\"k\":1}"])
    relays.remove(ObjectIdentifier(withTicks))
    #expect(!relays.takeTicks)
  }

  @Test(
    "A node that cannot take more: its lifecycle lines wait in order and its ticks are dropped; writable hands it what waited"
  )
  func waitsWhileNotWritable() throws {
    let relays = relays()
    let channel = try connected()
    relays.accept(ChannelSink(channel), after: 0, known: nil, ticks: true)
    _ = try lines(channel)
    channel.isWritable = false
    send(Wake([.started, .tick]), first: 1, to: relays)
    send(Wake([.tick, .ended]), first: 3, to: relays)
    #expect(try lines(channel).isEmpty)
    channel.isWritable = true
    relays.writable(ObjectIdentifier(channel))
    #expect(try lines(channel) == ["1 1 {\"k\":0}", "4 2 {\"k\":1}"])
    send(Wake([.tick]), first: 5, to: relays)
    #expect(try lines(channel) == ["5 0 {\"k\":0}"])
  }

  @Test(
    "A node over its bound for the slow-consumer time is cut off; one that drained in time is not")
  func cutOff() throws {
    let relays = relays(bound: 40)
    let slow = try connected()
    let recovering = try connected()
    relays.accept(ChannelSink(slow), after: 0, known: nil, ticks: false)
    relays.accept(ChannelSink(recovering), after: 0, known: nil, ticks: false)
    slow.isWritable = false
    recovering.isWritable = false
    #expect(slow.isActive && recovering.isActive)
    for k in 0..<5 { send(Wake([.updated, .updated]), first: UInt64(2 * k + 1), to: relays) }
    clock.ms.withLockedValue { $0 = 2000 }
    recovering.isWritable = true
    relays.writable(ObjectIdentifier(recovering))
    loop.advanceTime(by: .seconds(4))
    loop.advanceTime(by: .seconds(1))
    #expect(!slow.isActive, "the slow node was not cut off")
    #expect(recovering.isActive, "a node that caught up was cut off")
    // Gone from the relays: nothing more is written to it, the other goes on.
    send(Wake([.ended]), first: 11, to: relays)
    #expect(try lines(recovering).last == "11 11 {\"k\":0}")
  }
}
