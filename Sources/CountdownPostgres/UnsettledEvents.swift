// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Synchronization

/// Per shard, the relay lines (`SEQUENCE JSON`, each with its newline) of the lifecycle events
/// a cluster node committed and has perhaps not passed on to the other nodes yet, each with
/// the wake it came from (docs/cluster.md, "A node killed between a commit and its relay").
///
/// A pure structure: the writer adds a commit's lines once it is committed and asks for a
/// shard's lines to write beside its rows; the hub's progress (every wake before a token
/// delivered and relayed, or dropped) settles them.
package struct UnsettledBacklog {
  /// By shard, oldest first.
  package private(set) var lines: [Int64: [(token: UInt64, line: [UInt8])]] = [:]

  package init() {}

  /// Whether nothing is kept.
  package var isEmpty: Bool { lines.isEmpty }

  /// Keeps `added` (by shard, oldest first), after what is kept.
  package mutating func add(_ added: [Int64: [(token: UInt64, line: [UInt8])]]) {
    for (shard, new) in added where !new.isEmpty { lines[shard, default: []] += new }
    checkInvariants()
  }

  /// Drops the lines of every wake before `token`: the hub has passed them on.
  package mutating func settle(before token: UInt64) {
    for (shard, kept) in lines {
      guard let first = kept.first, first.token < token else { continue }
      let rest = kept.drop { $0.token < token }
      lines[shard] = rest.isEmpty ? nil : Array(rest)
    }
    checkInvariants()
  }

  /// Drops `shard`'s lines (this node no longer serves it).
  package mutating func forget(shard: Int64) {
    lines[shard] = nil
  }

  /// `shard`'s kept lines and then `adding`, as one text: what its row says.
  package func text(of shard: Int64, adding: [(token: UInt64, line: [UInt8])]) -> [UInt8] {
    var out: [UInt8] = []
    for l in lines[shard] ?? [] { out += l.line }
    for l in adding { out += l.line }
    return out
  }

  /// Debug and test builds: no shard kept empty, tokens in order within each shard.
  func checkInvariants() {
    #if DEBUG
      for (shard, kept) in lines {
        precondition(!kept.isEmpty, "shard \(shard) is kept with no line")
        for k in kept.indices.dropFirst() {
          precondition(kept[k - 1].token <= kept[k].token, "shard \(shard): tokens out of order")
        }
      }
    #endif
  }
}

/// A cluster node's unsettled events (``UnsettledBacklog``) and how the hub's progress reaches
/// the writer: the writer's thread owns the backlog; the hub's event loop moves ``settled``.
package final class UnsettledEvents: @unchecked Sendable {
  // @unchecked Sendable: `backlog` and `writer` are the writer thread's alone; `settledBefore`
  // is atomic.

  /// This node's incarnation (``relay lines`` are numbered in it).
  package let incarnation: UInt64
  /// The wake tokens below this one were delivered and relayed by the hub, or dropped.
  private let settledBefore = Atomic<UInt64>(0)
  package var backlog = UnsettledBacklog()
  private var writer: WireEventWriter

  /// `formatter`: the hub's, so that a line here is the line the hub would have relayed.
  package init(incarnation: UInt64, formatter: TimerFormatter) {
    self.incarnation = incarnation
    writer = WireEventWriter(formatter: formatter, writesTicks: false)
  }

  /// The hub has delivered and relayed (or dropped) every wake up to `token`. On the hub's loop.
  package func settled(through token: UInt64) {
    settledBefore.max(token + 1, ordering: .releasing)
  }

  /// Settles the backlog as far as the hub has come. On the writer's thread.
  package func settle() {
    backlog.settle(before: settledBefore.load(ordering: .acquiring))
  }

  /// One event's relay line, `SEQUENCE JSON` and a newline. On the writer's thread.
  package func line(sequence: UInt64, _ event: ActivityEvent) -> [UInt8] {
    writer.out.bytes.removeAll(keepingCapacity: true)
    writer.out.write(int: Int64(bitPattern: sequence))
    writer.out.raw(" ")
    writer.write(event)
    return writer.out.bytes
  }

  /// Parses a row's text back into its lines: sequence, the event's JSON with its newline.
  /// Lines that are not `SEQUENCE JSON` are skipped.
  package static func parse(_ text: [UInt8]) -> [(sequence: UInt64, json: ArraySlice<UInt8>)] {
    var out: [(UInt64, ArraySlice<UInt8>)] = []
    var start = text.startIndex
    while start < text.endIndex {
      let end = text[start...].firstIndex(of: 0x0A).map { $0 + 1 } ?? text.endIndex
      let line = text[start..<end]
      start = end
      guard let space = line.firstIndex(of: 0x20), space > line.startIndex,
        let sequence = UInt64(String(decoding: line[..<space], as: UTF8.self)),
        line.last == 0x0A, line.index(after: space) < line.endIndex - 1
      else { continue }
      out.append((sequence, line[line.index(after: space)...]))
    }
    return out
  }
}
