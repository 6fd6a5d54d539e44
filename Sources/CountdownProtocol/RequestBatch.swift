// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop

/// What running one request on the loop gave: values only, encoded to JSON later on a network
/// thread (the loop thread runs the engine and nothing else).
package enum Outcome: Sendable {
  case ok
  /// An `auth` taken: the connection's key (its role, or another node's cluster token) was
  /// applied to the connection as its line was read, and nothing was stored, so a wake whose
  /// commit fails leaves it standing (``BatchResult/storageFailed(_:mayHaveCommitted:lostShard:)``).
  /// Answered as `ok` is.
  case authenticated
  case started(id: String)
  case activity(ActivityState)
  case activities(Listing)
  /// A subscription: its snapshot, and the sequence number of the first event it receives;
  /// `scope`: the groups whose events it takes.
  case subscribed(
    snapshot: Listing, fromSequence: UInt64, ids: [String]?, ticks: Bool,
    scope: GroupScope = .everything)
  case unsubscribed
  case failed(CountdownError)
  /// The `cluster` request's answer.
  case cluster(ClusterView)
  /// A cluster node's command for another node's shard (docs/cluster.md): to be sent to
  /// `node` and its reply relayed; answered with `otherwise` when it cannot be.
  case forward(node: String, otherwise: CountdownError)
}

extension Outcome {
  /// A list or a subscription's snapshot: what a cluster node gathers from every node.
  package var lists: Bool {
    switch self {
    case .activities, .subscribed: true
    default: false
    }
  }
}

/// A list of activities as the engine held them when the request ran. A listing over every
/// activity is taken on the loop thread as an ``ActivitiesView`` (O(1)) and its states are
/// built by ``states()`` where the reply is written, on a network thread: a listing or a
/// subscription of a million activities does not hold the loop's ticks back.
package enum Listing: Sendable {
  /// States built on the loop (a subscription to named ids: as many as it names).
  case built([ActivityState])
  /// Every activity, in start order.
  case all(ActivitiesView)
  /// The `k` countdowns ending soonest.
  case soonest(ActivitiesView, Int)
  /// The activities that ended within the window.
  case endedWithin(ActivitiesView, ClosedRange<Instant>)
  /// Those of a listing over every activity that `scope` shows (docs/security.md, "Groups").
  indirect case scoped(Listing, GroupScope)

  /// The states, built now (on the calling thread).
  package func states() -> [ActivityState] {
    switch self {
    case .built(let list): list
    case .all(let view): view.all()
    case .soonest(let view, let k): view.soonestEnding(k)
    case .endedWithin(let view, let window): view.ended(within: window)
    case .scoped(let listing, let scope):
      switch listing {
      case .built(let list): list.filter { scope.shows($0.group) }
      case .all(let view): view.all(in: scope.shows)
      case .soonest(let view, let k): view.soonestEnding(k, in: scope.shows)
      case .endedWithin(let view, let window): view.ended(within: window, in: scope.shows)
      case .scoped(let inner, let outer):
        inner.states().filter { scope.shows($0.group) && outer.shows($0.group) }
      }
    }
  }

  /// This listing, narrowed to what `scope` shows.
  package func scoped(_ scope: GroupScope) -> Listing {
    scope.isEverything ? self : .scoped(self, scope)
  }
}

/// One request of a batch: its `rid`, and what to run (or the error decoding gave it).
package typealias BatchItem = ServerRequest.Decoded

/// A batch's results, in request order, with the loop's instant.
package struct BatchResult: Sendable {
  package var at: Instant
  package var items: [(rid: RequestID?, outcome: Outcome)]
  /// A cluster node's, when the batch listed or subscribed: the shards whose activities the
  /// engine held in full as it ran (read on the loop thread, with the listing). A list is
  /// whole only when every shard is some node's part of it (docs/cluster.md).
  package var served: [Int]?

  package init(
    at: Instant, items: [(rid: RequestID?, outcome: Outcome)], served: [Int]? = nil
  ) {
    self.at = at
    self.items = items
    self.served = served
  }
}

/// A cluster as one node sees it (docs/cluster.md: `GET /v1/cluster`, the op `cluster`): the nodes and
/// each shard's owner and epoch, as the node last read them from PostgreSQL. A single server
/// has no node name, nodes or shards.
package struct ClusterView: Sendable, Equatable {
  package struct Node: Sendable, Equatable {
    package var name: String
    package var advertise: String?
    package var alive: Bool
    package init(name: String, advertise: String?, alive: Bool) {
      self.name = name
      self.advertise = advertise
      self.alive = alive
    }
  }
  package struct Shard: Sendable, Equatable {
    package var shard: Int
    /// Nil while nobody holds a live lease on it.
    package var owner: String?
    package var epoch: Int64
    /// Why its rows cannot be restored, when this node holds it and cannot serve it.
    package var unrestorable: String?
    package init(shard: Int, owner: String?, epoch: Int64, unrestorable: String? = nil) {
      self.shard = shard
      self.owner = owner
      self.epoch = epoch
      self.unrestorable = unrestorable
    }
  }
  package var node: String?
  package var nodes: [Node]
  package var shards: [Shard]

  package init(node: String?, nodes: [Node], shards: [Shard]) {
    self.node = node
    self.nodes = nodes
    self.shards = shards
  }

  /// A single server's.
  package static let single = ClusterView(node: nil, nodes: [], shards: [])
}

/// Which activities a server may act on: a cluster node (docs/cluster.md) those of
/// the shards it serves now. Its closures run on the loop thread, in each command.
package struct ShardGate: Sendable {
  /// What becomes of a command on one activity.
  package enum Admission: Sendable {
    /// This node's: run it here.
    case local
    /// Another node's: send it there (`otherwise`: the answer when it cannot be sent).
    case forward(node: String, otherwise: CountdownError)
  }

  /// What becomes of a command on `id`'s activity.
  /// - Throws: `unavailable` when no node can take it now.
  package var admission: @Sendable (_ id: String) throws(CountdownError) -> Admission
  /// An id for a `start` that gives none, in a shard this node serves; nil when it serves none.
  package var makeID: @Sendable () -> String?
  /// The cluster as this node sees it now.
  package var view: @Sendable () -> ClusterView
  /// The shards whose activities the engine holds in full now (read on the loop thread).
  package var served: @Sendable () -> [Int]

  package init(
    admission: @escaping @Sendable (String) throws(CountdownError) -> Admission,
    makeID: @escaping @Sendable () -> String?,
    view: @escaping @Sendable () -> ClusterView,
    served: @escaping @Sendable () -> [Int] = { [] }
  ) {
    self.admission = admission
    self.makeID = makeID
    self.view = view
    self.served = served
  }

  /// What a command becomes once the gate has seen it: run here on the id (given, or made for a
  /// `start` without one in a shard this node serves), or forwarded.
  /// - Throws: `unavailable` when the activity is no node's now, or a `start` without an id
  ///   comes while this node serves no shard.
  package func admit(_ operation: WireCommand.Operation, id: String?) throws(CountdownError)
    -> (id: String?, forward: Admission?)
  {
    guard let id else {
      guard case .start = operation else { return (nil, nil) }
      guard let made = makeID() else {
        throw CountdownError(
          .unavailable, "this node serves no shard yet, so it cannot start an activity; try again")
      }
      return (made, nil)
    }
    switch try admission(id) {
    case .local: return (id, nil)
    case .forward(let node, let otherwise): return (id, .forward(node: node, otherwise: otherwise))
    }
  }
}

extension LoopEngine {
  /// Runs a connection's batch of requests in order, at the loop's now; with a `gate`, a
  /// command whose activity is another node's is to be forwarded (``Outcome/forward(node:otherwise:)``)
  /// when `forwarding`, else refused (`unavailable`), as is one of no node's.
  package func run(_ batch: [BatchItem], gate: ShardGate? = nil, forwarding: Bool = false)
    -> BatchResult
  {
    var items: [(rid: RequestID?, outcome: Outcome)] = []
    items.reserveCapacity(batch.count)
    for item in batch {
      let outcome: Outcome
      switch item.request {
      case .failure(let e): outcome = .failed(e)
      case .success(let request):
        do throws(CountdownError) {
          outcome = try run(
            request, gate: gate, forwarding: forwarding, keyGroups: item.keyGroups)
        } catch {
          outcome = .failed(error)
        }
      }
      items.append((item.rid, outcome))
    }
    var result = BatchResult(at: now, items: items)
    if let gate, items.contains(where: \.outcome.lists) { result.served = gate.served() }
    return result
  }

  /// Runs one request; `keyGroups`: those of the key it came with (docs/security.md,
  /// "Groups"), checked here, on the loop, against the activity as it stands.
  private func run(
    _ request: ServerRequest, gate: ShardGate?, forwarding: Bool, keyGroups: Set<String>?
  ) throws(CountdownError) -> Outcome {
    switch request {
    case .command(let operation, var id):
      let scope = GroupScope(keyGroups: keyGroups)
      if case .start(let r) = operation, let refusal = scope.startRefusal(r.group) {
        throw refusal
      }
      if let gate {
        let admitted = try gate.admit(operation, id: id)
        if case .forward(let node, let otherwise)? = admitted.forward {
          // The node that owns the activity checks the key's groups (the forwarded command
          // carries them).
          guard forwarding else { throw otherwise }
          return .forward(node: node, otherwise: otherwise)
        }
        id = admitted.id
      }
      // An activity outside the key's groups is as if absent: the same answer, word for word.
      if keyGroups != nil, let id, Self.actsOnOne(operation) { try check(id, in: scope) }
      // `advance` is refused while decoding: the loop's clock is the wall clock.
      return try run(operation, id: id)
    case .subscribe(let ids, let ticks, let group):
      let scope = GroupScope(keyGroups: keyGroups, narrowed: group)
      let snapshot: Listing
      if let ids {
        snapshot = .built(ids.compactMap { id in handle(for: id).flatMap { state(of: $0) } })
      } else {
        snapshot = .all(activitiesView())
      }
      return .subscribed(
        snapshot: snapshot.scoped(scope), fromSequence: eventSequence, ids: ids, ticks: ticks,
        scope: scope)
    case .unsubscribe:
      return .unsubscribed
    case .list(let query, let group):
      let scope = GroupScope(keyGroups: keyGroups, narrowed: group)
      switch query {
      case .all:
        return .activities(Listing.all(activitiesView()).scoped(scope))
      case .soonest(let k):
        return .activities(Listing.soonest(activitiesView(), k).scoped(scope))
      case .endedWithin(let w):
        let from = Instant(
          milliseconds: max(Instant.wireMinimum.milliseconds, now.milliseconds - w))
        return .activities(Listing.endedWithin(activitiesView(), from...now).scoped(scope))
      }
    case .ping:
      return .ok
    case .auth:
      return .authenticated
    case .cluster:
      return .cluster(gate?.view() ?? .single)
    }
  }

  /// Refuses a command on `id` when its activity is outside `scope` (a key's groups): with
  /// `notFound`, as if it were absent. An absent one is left to the command to refuse.
  package func check(_ id: String, in scope: GroupScope) throws(CountdownError) {
    let group: String?
    do throws(CountdownError) { group = try self.group(of: id) } catch { return }
    if !scope.commands(group) { throw ActivityEngine.notFound(id) }
  }

  /// Whether `operation` names an existing activity (not a start, not the engine's settings).
  private static func actsOnOne(_ operation: WireCommand.Operation) -> Bool {
    switch operation {
    case .update, .pause, .resume, .end, .get: true
    default: false
    }
  }

  private func run(_ operation: WireCommand.Operation, id: String?) throws(CountdownError)
    -> Outcome
  {
    switch try apply(operation, id: id) {
    case .done: .ok
    case .started(let id): .started(id: id)
    case .state(let s): .activity(s)
    }
  }
}

extension BatchResult {
  /// The results as they stand when their wake could not be stored, or ran on state that was
  /// never stored: every request that had succeeded gets `storageFailed` instead (the engine
  /// goes back to the stored state, so neither its changes nor what it read stand). Requests
  /// that had failed keep their errors, and so does an `auth` (``Outcome/authenticated``): its
  /// connection took the key as the line was read, so an answer that it failed would be untrue
  /// (another node would take it for a refused cluster token).
  ///
  /// `mayHaveCommitted`: the database's connection went with the commit under way, so the
  /// requests may have been carried out all the same; the message says so, and how to tell.
  /// `lostShard`: the commit touched a shard this cluster node had just stopped serving (its
  /// lease gone or handed on while the wake ran): `unavailable` naming it, as a request for a
  /// shard changing hands gets; nothing was written.
  package func storageFailed(
    _ error: String, mayHaveCommitted: Bool = false, lostShard: Int? = nil
  ) -> BatchResult {
    let failure: CountdownError
    if let lostShard {
      failure = CountdownError(
        .unavailable,
        "shard \(lostShard) changed hands while this request ran (\(error)), so it was not carried out; the server goes back to what it committed. Try again: the shard's new owner answers"
      )
    } else if mayHaveCommitted {
      failure = CountdownError(
        .storageFailed,
        "the server lost its database connection while storing its state (\(error)), so this request may or may not have been carried out: the server reads its state back from the database, where a get shows which; the server is up and what it acknowledged before is kept. Try again once the database answers"
      )
    } else {
      failure = CountdownError(
        .storageFailed,
        "the server could not store its state (\(error)), so this request was not carried out; the server is up and what it acknowledged before is kept. Try again (once the disk is fixed)"
      )
    }
    var r = self
    for k in r.items.indices {
      switch r.items[k].outcome {
      case .failed, .authenticated: continue
      default: r.items[k].outcome = .failed(failure)
      }
    }
    return r
  }
}
