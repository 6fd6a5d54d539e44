// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownProtocol

extension Hub {
  /// One subscription: its sink, what it takes (ids, ticks, groups), where its snapshot
  /// stands, and what waits for it.
  final class Subscriber {
    let sink: any EventSink
    let ids: Set<String>?
    let ticks: Bool
    /// The groups whose events it takes (docs/security.md, "Groups").
    let scope: GroupScope
    var fromSequence: UInt64
    /// Another node's events (a cluster node's): those numbered from its entry on, by that
    /// node's incarnation (the rest were in the snapshot); all of a node without one.
    var cuts: [UInt64: UInt64] = [:]
    var output: SubscriberOutput
    /// An event stream's pacing (unused for a socket subscriber).
    var pacer = StreamPacer()

    init(
      sink: any EventSink, ids: [String]?, ticks: Bool, scope: GroupScope, fromSequence: UInt64,
      output: SubscriberOutput
    ) {
      self.sink = sink
      self.ids = ids.map(Set.init)
      self.ticks = ticks
      self.scope = scope
      self.fromSequence = fromSequence
      self.output = output
    }

    /// Whether it takes `e`; `group` gives the group of `e`'s activity (read only for a
    /// subscriber with a scope).
    func wants(_ e: ActivityEvent, sequence: UInt64, group: (ActivityEvent) -> String?) -> Bool {
      sequence >= fromSequence && (ticks || e.kind != .tick) && (ids?.contains(e.id) ?? true)
        && (scope.isEverything || scope.shows(group(e)))
    }

    /// Whether it takes another node's event of `id`, numbered `sequence` by that node,
    /// incarnation `source` (before its snapshot, the cut is not known yet).
    /// `group`: its activity's, as the relay line's head names it.
    func wantsRelayed(
      _ id: String, _ kind: ActivityEvent.Kind, group: String?, sequence: UInt64,
      from source: UInt64
    ) -> Bool {
      (ticks || kind != .tick) && (ids?.contains(id) ?? true)
        && (scope.isEverything || scope.shows(group))
        && (output.isPending || sequence >= cuts[source] ?? 0)
    }
  }
}
