// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import NIOCore

/// The other nodes of a cluster that relay this node's events (docs/cluster.md,
/// "Subscriptions across nodes"), and the recent lifecycle events kept for a node that
/// connects again (a ``RelayRing``). The hub owns it (``Hub/enableRelays(incarnation:)``) and
/// hands it each wake's encoded events; it is confined to the hub's event loop.
///
/// Each relaying node is written every lifecycle event, numbered (`SEQUENCE DELIVERY JSON`,
/// ``PeerMessage/RelayLine``), after what the ring gave it when it connected; ticks (delivery
/// number 0) only to one that asked for them, and only while it keeps up (the next tick
/// supersedes one not written). What waits for a node whose connection cannot take more is a
/// ``SubscriberOutput``, as for a subscriber: bounded, and cut off when it stays over its
/// bound as long as a slow subscriber may (it connects again and asks for what it missed).
final class PeerRelays: @unchecked Sendable {
  // @unchecked Sendable: touched on the hub's event loop only (its cut-off checks run there).
  /// One node relaying this node's events.
  final class Relay {
    let sink: any EventSink
    /// Whether it takes ticks too (the relaying node has a subscriber that wants them).
    let ticks: Bool
    var output: SubscriberOutput
    init(sink: any EventSink, ticks: Bool, output: SubscriberOutput) {
      self.sink = sink
      self.ticks = ticks
      self.output = output
    }
  }

  /// This process's incarnation as a cluster node: the space its sequence and delivery
  /// numbers belong to.
  let incarnation: UInt64
  private let eventLoop: any EventLoop
  private let bound: Int
  private let cutOffAfter: TimeAmount
  private let metrics: ServerMetrics
  private let now: @Sendable () -> NIODeadline
  private var relays: [ObjectIdentifier: Relay] = [:]
  private var ring = RelayRing()
  /// Whether some relaying node takes ticks.
  private(set) var takeTicks = false

  init(
    incarnation: UInt64, eventLoop: any EventLoop, bound: Int, cutOffAfter: TimeAmount,
    metrics: ServerMetrics, now: @escaping @Sendable () -> NIODeadline
  ) {
    self.incarnation = incarnation
    self.eventLoop = eventLoop
    self.bound = bound
    self.cutOffAfter = cutOffAfter
    self.metrics = metrics
    self.now = now
  }

  /// Another node asks for this node's lifecycle events on `sink`: answers with this node's
  /// incarnation, then writes the kept events after delivery number `after` when `known` is
  /// this incarnation (all kept events otherwise: the asking node has not met this one), and
  /// every one from then on. `gap` in the answer says that some it asked for are no longer
  /// kept.
  func accept(_ sink: any EventSink, after: UInt64, known: UInt64?, ticks: Bool) {
    let (lines, gap) = ring.lines(after: known == incarnation ? after : 0)
    var buffer = sink.allocator.buffer(capacity: 128)
    buffer.writeBytes(PeerMessage.RelayAnswer.accepted(incarnation: incarnation, gap: gap).line)
    for line in lines { buffer.writeImmutableBuffer(line) }
    sink.write(buffer)
    relays[sink.key] = Relay(
      sink: sink, ticks: ticks,
      output: SubscriberOutput(bound: bound, cutOffAfter: cutOffAfter))
    changed()
  }

  /// The connection `key` is gone: whether it was a relaying node's.
  func remove(_ key: ObjectIdentifier) {
    if relays.removeValue(forKey: key) != nil { changed() }
  }

  /// The connection `key` can take more: hands it what waits, if it is a relaying node's.
  func writable(_ key: ObjectIdentifier) {
    guard let relay = relays[key], !relay.output.isEmpty, relay.sink.isWritable else { return }
    var buffer = relay.sink.allocator.buffer(capacity: relay.output.byteCount)
    relay.output.drain { buffer.writeImmutableBuffer($0) }
    relay.sink.write(buffer)
  }

  /// A wake's events, encoded in `encoded` (event `k` at `offsets[k]..<offsets[k + 1]`), as
  /// relay lines: the lifecycle events numbered, kept in the ring and written to every
  /// relaying node; the ticks to those that take them.
  /// `group`: the group of an event's activity (none: nil), written in its line's head.
  func wake(
    _ events: [ActivityEvent], _ encoded: UnsafeBufferPointer<UInt8>, offsets: [Int],
    sequence: (Int) -> UInt64, group: (ActivityEvent) -> String? = { _ in nil }
  ) {
    var lifecycle: ByteBuffer?
    var lineStarts: [Int] = []
    var ticks: ByteBuffer?
    let raw = UnsafeRawBufferPointer(encoded)
    for (k, e) in events.enumerated() {
      let json = UnsafeRawBufferPointer(rebasing: raw[offsets[k]..<offsets[k + 1]])
      if e.kind == .tick {
        guard takeTicks else { continue }
        if ticks == nil { ticks = ByteBufferAllocator().buffer(capacity: encoded.count + 4096) }
        PeerMessage.RelayLine(sequence: sequence(k), delivery: 0, group: group(e))
          .writeHead(into: &ticks!)
        ticks!.writeBytes(json)
        continue
      }
      if lifecycle == nil {
        // Sized for the lifecycle events alone: the ring keeps slices of this buffer, and a
        // slice keeps all of it (a wake's ticks would make each kept event cost megabytes).
        var size = 0
        for j in k..<events.count where events[j].kind != .tick {
          size += offsets[j + 1] - offsets[j] + 42
        }
        lifecycle = ByteBufferAllocator().buffer(capacity: size)
      }
      lineStarts.append(lifecycle!.writerIndex)
      PeerMessage.RelayLine(
        sequence: sequence(k), delivery: ring.next + UInt64(lineStarts.count - 1),
        group: group(e)
      ).writeHead(into: &lifecycle!)
      lifecycle!.writeBytes(json)
    }
    if let lifecycle { keep(lifecycle, lineStarts: lineStarts) }
    guard lifecycle != nil || ticks != nil, !relays.isEmpty else { return }
    write(lifecycle, ticks: ticks)
  }

  /// Lifecycle events another node (`source`, by incarnation) committed and may never have
  /// relayed, found beside a shard's rows when this node took it (docs/cluster.md, "A node
  /// killed between a commit and its relay"), each with its JSON line (and newline): kept in
  /// the ring and written to every relaying node as `~SOURCE SEQUENCE DELIVERY JSON` lines.
  func recovered(
    from source: UInt64,
    _ events: [(sequence: UInt64, id: String, kind: ActivityEvent.Kind, line: ByteBuffer)],
    group: (String) -> String? = { _ in nil }
  ) {
    var lifecycle = ByteBufferAllocator().buffer(
      capacity: events.reduce(0) { $0 + $1.line.readableBytes + 60 })
    var lineStarts: [Int] = []
    for e in events {
      lineStarts.append(lifecycle.writerIndex)
      PeerMessage.RelayLine(
        source: source, sequence: e.sequence, delivery: ring.next + UInt64(lineStarts.count - 1),
        group: group(e.id)
      ).writeHead(into: &lifecycle)
      lifecycle.writeImmutableBuffer(e.line)
    }
    keep(lifecycle, lineStarts: lineStarts)
    if !relays.isEmpty { write(lifecycle, ticks: nil) }
  }

  /// Writes `lifecycle` (numbered lines) and `ticks` to every relaying node: to its connection
  /// when it can take them and nothing waits, else the lines wait in its output (the ticks are
  /// not kept: the next supersede them).
  private func write(_ lifecycle: ByteBuffer?, ticks: ByteBuffer?) {
    for relay in relays.values {
      if relay.output.isEmpty && relay.sink.isWritable {
        if let lifecycle { relay.sink.write(lifecycle) }
        if let ticks, relay.ticks { relay.sink.write(ticks) }
      } else if let lifecycle {
        relay.output.append(run: lifecycle)
        measure(relay)
      }
    }
  }

  /// After `relay`'s output grew: starts its cut-off clock if it has just gone over its bound.
  private func measure(_ relay: Relay) {
    guard let check = relay.output.measure(now: now()) else { return }
    let key = relay.sink.key
    eventLoop.scheduleTask(deadline: check.at) { [weak self] in
      guard let self, let relay = self.relays[key], relay.output.staysOver(since: check.since)
      else {
        return
      }
      self.relays[key] = nil
      relay.sink.close(after: nil)
      self.changed()
    }
  }

  /// Keeps each line of `lines` (starting at `lineStarts`, in order, the last running to the
  /// writer index) in the ring, numbered on from `ring.next`. Sliced once every line is
  /// written: a slice shares the buffer, and a write to a shared buffer copies it whole (once
  /// per line, each copy kept by the ring).
  private func keep(_ lines: ByteBuffer, lineStarts: [Int]) {
    for (i, start) in lineStarts.enumerated() {
      let end = i + 1 < lineStarts.count ? lineStarts[i + 1] : lines.writerIndex
      _ = ring.append(lines.getSlice(at: start, length: end - start)!)
    }
  }

  /// After a relay came or went: whether any takes ticks, and the gauge.
  private func changed() {
    takeTicks = relays.values.contains { $0.ticks }
    metrics.relays.record(relays.count)
  }
}
