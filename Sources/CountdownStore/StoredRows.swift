// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownPush

/// A value of a stored column, whichever the database holds it: what a row of
/// ``ActivityColumn``, ``EngineColumn``, ``OutboxColumn`` or ``BudgetColumn`` is made of.
/// Each store only binds and reads these; what a column holds of an activity, an engine or
/// an outbox item is said once, here.
package enum StoredValue: Equatable, Sendable {
  case null
  case int(Int64)
  case text(String)
  case bytes([UInt8])

  init(_ v: Int64?) { self = v.map(StoredValue.int) ?? .null }
  init(_ v: String?) { self = v.map(StoredValue.text) ?? .null }

  package var int: Int64? { if case .int(let v) = self { v } else { nil } }
  package var text: String? { if case .text(let v) = self { v } else { nil } }
}

extension ActivityColumn {
  /// What the column holds of `a`: one switch over the declared columns, so a new column
  /// that is not written does not compile.
  package func value(_ a: StoredActivity) -> StoredValue {
    switch self {
    case .id: .text(a.id)
    case .ord: .int(Int64(bitPattern: a.order))
    case .kind: .text(a.kind.rawValue)
    case .phase: .text(a.phase.rawValue)
    case .stale: .int(a.stale ? 1 : 0)
    case .expired: .int(a.expired ? 1 : 0)
    case .anchor: .int(a.anchor)
    case .pausedTotal: .int(a.pausedTotal)
    case .frozenAt: .int(a.frozenAt)
    case .content: .text(a.content)
    case .countdownStart: StoredValue(a.countdownStart)
    case .goalMs: StoredValue(a.goalMs)
    case .staleDate: StoredValue(a.staleDate)
    case .milestones:
      a.milestones.isEmpty ? .null : .text(StateStore.encodeMilestones(a.milestones))
    case .nextMilestone: .int(Int64(a.nextMilestone))
    case .endOnExpiry:
      switch a.endOnExpiry {
      case nil: .null
      case .immediate?: .int(Self.dismissImmediately)
      case .default?: .int(Self.dismissByDefault)
      case .after(let at)?: .int(at.milliseconds)
      }
    case .startedAt: .int(a.startedAt)
    case .endedAt: .int(a.endedAt)
    case .endReason: .text(a.endReason.rawValue)
    case .dismissAt: .int(a.dismissAt)
    case .lastTimestamp: StoredValue(a.lastTimestamp)
    case .liveActivity:
      StoredValue(a.liveActivity.map { JSONValue.object($0.object).canonicalText })
    case .overtime: .int(a.overtime ? 1 : 0)
    case .groupName: StoredValue(a.group)
    }
  }

  /// The activity a row holds, each column read by `column`.
  /// - Throws: ``StoreError`` naming the activity and the column that cannot be read back.
  package static func activity(_ column: (ActivityColumn) -> StoredValue) throws(StoreError)
    -> StoredActivity
  {
    func int(_ c: ActivityColumn) -> Int64 { column(c).int ?? 0 }
    func optional(_ c: ActivityColumn) -> Int64? { column(c).int }
    func text(_ c: ActivityColumn) -> String? { column(c).text }
    let id = text(.id) ?? ""
    func bad(_ what: String) -> StoreError {
      StoreError("activity \(JSONValue.string(id).canonicalText): \(what)")
    }
    func named<T: RawRepresentable<String> & CaseIterable>(_ c: ActivityColumn) throws(StoreError)
      -> T
    {
      let name = text(c) ?? "NULL"
      guard let value = T(rawValue: name) else {
        throw bad("\(c.name) \(name) is not one of \(T.allCases.map(\.rawValue))")
      }
      return value
    }
    let kind: ActivityKind = try named(.kind)
    let phase: ActivityPhase = try named(.phase)
    let reason: EndReason = try named(.endReason)
    var milestones: [Milestone] = []
    if let m = text(.milestones) {
      guard let decoded = StateStore.decodeMilestones(m) else {
        throw bad("milestones \(m) cannot be read")
      }
      milestones = decoded
    }
    var liveActivity: LiveActivity?
    if let text = text(.liveActivity) {
      guard case .object(let o)? = try? JSONParser.parse(text) else {
        throw bad("liveActivity \(text) is not a JSON object")
      }
      do {
        liveActivity = try LiveActivity(object: o, stored: true)
      } catch {
        throw bad("liveActivity: \(error.message)")
      }
    }
    let group = text(.groupName)
    if let group, !ActivityGroup.isValid(group) {
      throw bad("groupName \(JSONValue.string(group).canonicalText) is not a group name")
    }
    let endOnExpiry: DismissalPolicy? =
      switch optional(.endOnExpiry) {
      case nil: nil
      case dismissImmediately: .immediate
      case dismissByDefault: .default
      case let at?: .after(Instant(milliseconds: at))
      }
    return StoredActivity(
      id: id, kind: kind, phase: phase, order: UInt64(bitPattern: int(.ord)),
      stale: int(.stale) != 0, expired: int(.expired) != 0, anchor: int(.anchor),
      pausedTotal: int(.pausedTotal), frozenAt: int(.frozenAt), content: text(.content) ?? "",
      countdownStart: optional(.countdownStart), goalMs: optional(.goalMs),
      staleDate: optional(.staleDate), milestones: milestones,
      nextMilestone: Int(int(.nextMilestone)), endOnExpiry: endOnExpiry,
      startedAt: int(.startedAt), endedAt: int(.endedAt), endReason: reason,
      dismissAt: int(.dismissAt), lastTimestamp: optional(.lastTimestamp),
      liveActivity: liveActivity, overtime: int(.overtime) != 0, group: group)
  }
}

extension EngineColumn {
  /// What the column holds of the engine's state `e`.
  package func value(_ e: EngineSnapshot) -> StoredValue {
    switch self {
    case .now: .int(e.now.milliseconds)
    case .nextOrder: .int(Int64(bitPattern: e.nextOrder))
    case .idGeneratorState: .int(Int64(bitPattern: e.idGeneratorState))
    case .enabled: .int(e.options.enabled ? 1 : 0)
    case .maxActivities: StoredValue(e.options.maxActivities.map(Int64.init))
    case .maxActiveDurationMs: StoredValue(e.options.maxActiveDurationMs)
    }
  }

  /// The engine's state a row holds (each column read by `column`), with `activities`.
  package static func engine(
    _ column: (EngineColumn) -> StoredValue, activities: [StoredActivity]
  ) -> EngineSnapshot {
    let options = EngineOptions(
      maxActivities: column(.maxActivities).int.map { Int($0) },
      maxActiveDurationMs: column(.maxActiveDurationMs).int,
      enabled: column(.enabled).int != 0)
    return EngineSnapshot(
      now: Instant(milliseconds: column(.now).int ?? 0), options: options,
      nextOrder: UInt64(bitPattern: column(.nextOrder).int ?? 0),
      idGeneratorState: UInt64(bitPattern: column(.idGeneratorState).int ?? 0),
      activities: activities)
  }
}

/// What one row of the outbox holds, whichever its destination (docs/state-file.md): a
/// push, or a webhook delivery with its URL in `token`, no priority, timestamp or budget.
package struct OutboxValues: Sendable {
  /// The activity the row is of (its shard's, in a cluster).
  package var activity: String
  var token, event: String
  var priority, timestamp, notBefore, eventAt: Int64
  var payload: [UInt8]
  var destination: OutboxDestination
  var apnsID: String
  var expiration: Int64?

  package init(_ p: PushItem) {
    (activity, token, event) = (p.activity, p.token, p.event.rawValue)
    (priority, timestamp, notBefore, eventAt) =
      (Int64(p.priority), p.timestamp, p.notBefore, p.eventAt)
    (payload, destination) = (p.payload, .apns)
    (apnsID, expiration) = (p.apnsID, p.expiration)
  }

  package init(_ w: WebhookItem) {
    (activity, token, event) = (w.activity, w.url, w.event.rawValue)
    (priority, timestamp, notBefore, eventAt) = (0, 0, 0, w.eventAt)
    (payload, destination) = (w.body, .webhook)
    (apnsID, expiration) = ("", nil)
  }

  /// What `c` holds of this row (`seq` is the store's to give: null).
  package func value(_ c: OutboxColumn) -> StoredValue {
    switch c {
    case .seq: .null
    case .activity: .text(activity)
    case .token: .text(token)
    case .event: .text(event)
    case .priority: .int(priority)
    case .timestamp: .int(timestamp)
    case .notBefore: .int(notBefore)
    case .eventAt: .int(eventAt)
    case .payload: .bytes(payload)
    case .destination: .text(destination.rawValue)
    case .apnsID: .text(apnsID)
    case .expiration: StoredValue(expiration)
    }
  }

  /// The push an `apns` row holds, each column read by `column`.
  package static func push(_ column: (OutboxColumn) -> StoredValue) throws(StoreError) -> PushItem {
    let name = column(.event).text ?? ""
    guard let event = LiveActivityPush.Event(rawValue: name) else {
      throw StoreError("push \(column(.seq).int ?? 0): event \(name) is not known")
    }
    return PushItem(
      activity: column(.activity).text ?? "", token: column(.token).text ?? "", event: event,
      priority: Int(column(.priority).int ?? 0), timestamp: column(.timestamp).int ?? 0,
      notBefore: column(.notBefore).int ?? 0, eventAt: column(.eventAt).int ?? 0,
      payload: bytes(column(.payload)), apnsID: column(.apnsID).text ?? "",
      expiration: column(.expiration).int)
  }

  /// The delivery a `webhook` row holds, each column read by `column`.
  package static func webhook(_ column: (OutboxColumn) -> StoredValue) throws(StoreError)
    -> WebhookItem
  {
    let name = column(.event).text ?? ""
    guard let event = ActivityEvent.Kind(rawValue: name) else {
      throw StoreError("webhook delivery \(column(.seq).int ?? 0): event \(name) is not known")
    }
    return WebhookItem(
      activity: column(.activity).text ?? "", url: column(.token).text ?? "", event: event,
      eventAt: column(.eventAt).int ?? 0, body: bytes(column(.payload)))
  }

  private static func bytes(_ v: StoredValue) -> [UInt8] {
    switch v {
    case .bytes(let b): b
    case .text(let t): Array(t.utf8)
    default: []
    }
  }
}

extension BudgetColumn {
  /// What the column holds of a push's spending of its activity and token's budget.
  package func value(_ p: PushItem) -> StoredValue {
    switch self {
    case .activity: .text(p.activity)
    case .token: .text(p.token)
    case .timestamp: .int(p.timestamp)
    case .notBefore: .int(p.notBefore)
    }
  }

  /// The budget a row holds, each column read by `column`.
  package static func budget(_ column: (BudgetColumn) -> StoredValue) -> (
    key: PushBudget.Key, timestamp: Int64, notBefore: Int64
  ) {
    (
      PushBudget.Key(activity: column(.activity).text ?? "", token: column(.token).text ?? ""),
      column(.timestamp).int ?? 0, column(.notBefore).int ?? 0
    )
  }
}
