// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// Which activities a request may see and command (docs/security.md, "Groups"): those of its
/// key's groups (every activity for a key without groups), narrowed by the request's own
/// `group` (a list's, a subscription's). A pure value, decided per request where it runs.
package struct GroupScope: Sendable, Hashable {
  /// The key's groups; nil for a key with none, which sees every activity.
  package var keyGroups: Set<String>?
  /// The request's own `group=`, which narrows what a list or a subscription shows.
  package var narrowed: String?

  package init(keyGroups: Set<String>? = nil, narrowed: String? = nil) {
    self.keyGroups = keyGroups
    self.narrowed = narrowed
  }

  /// Every activity: no key groups, no narrowing.
  package static let everything = GroupScope()

  package var isEverything: Bool { keyGroups == nil && narrowed == nil }

  /// Whether a command may act on an activity of `group` (nil: an activity without one):
  /// only a key without groups may act on an activity without one.
  package func commands(_ group: String?) -> Bool {
    guard let keyGroups else { return true }
    guard let group else { return false }
    return keyGroups.contains(group)
  }

  /// Whether a list, a snapshot or an event stream shows an activity of `group`.
  package func shows(_ group: String?) -> Bool {
    commands(group) && (narrowed == nil || group == narrowed)
  }

  /// The refusal of a start whose `group` is not one of the key's.
  package func startRefusal(_ group: String?) -> CountdownError? {
    guard let keyGroups, !commands(group) else { return nil }
    let names = keyGroups.sorted().joined(separator: ", ")
    return CountdownError(
      .forbidden,
      group == nil
        ? "this key may start activities only in its groups (\(names)): give group"
        : "this key may start activities only in its groups (\(names)), not in \(JSONValue.string(group!).canonicalText)"
    )
  }
}
