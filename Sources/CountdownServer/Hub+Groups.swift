// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// What the hub knows of activities' groups (docs/security.md, "Groups"): the group of each
/// activity that has one, from the state the server started from, the shards a cluster node
/// took, and the `started` and `dismissed` events delivered; what a subscriber whose key has
/// groups is filtered by, and what a relay line names.
extension Hub {
  /// Takes the groups of `activities` as every activity's (the state the server starts
  /// from, or goes back to after a failed commit).
  func replaceGroups(_ activities: [StoredActivity]) {
    eventLoop.assertInEventLoop()
    groupOf.removeAll()
    addGroups(activities)
  }

  /// Adds the groups of `activities` (a shard's rows, taken by a cluster node).
  func addGroups(_ activities: [StoredActivity]) {
    eventLoop.assertInEventLoop()
    for a in activities { if let g = a.group { groupOf[a.id] = g } }
  }

  /// The group of `e`'s activity: a `started` event carries it.
  func group(of e: ActivityEvent) -> String? {
    e.kind == .started ? e.group : groupOf[e.id]
  }

  /// Keeps ``groupOf`` as `events` (delivered now, in order) leave it.
  func noteGroups(_ events: [ActivityEvent]) {
    for e in events where e.kind == .started || e.kind == .dismissed {
      groupOf[e.id] = e.kind == .started ? e.group : nil
    }
  }
}
