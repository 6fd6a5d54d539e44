// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// The protocol's request objects (docs/protocol.md, "Requests and replies") made from the
/// core's typed requests: the members a server's decoder reads back into the same values.
enum RequestEncoding {
  static func start(_ r: ActivityRequest) -> [String: JSONValue] {
    var o = content(r.content)
    o["op"] = .string("start")
    o["kind"] = .string(r.kind.rawValue)
    if let id = r.id { o["id"] = .string(id) }
    if let v = r.endDate { o["endDate"] = instant(v) }
    if let v = r.startDate { o["startDate"] = instant(v) }
    if let v = r.goalMs { o["goalMs"] = .int(v) }
    if let v = r.staleDate { o["staleDate"] = instant(v) }
    if !r.milestones.isEmpty { o["milestones"] = milestones(r.milestones) }
    if let v = r.endOnExpiry { o["endOnExpiry"] = dismissal(v) }
    if r.overtime { o["overtime"] = .bool(true) }
    if let v = r.timestamp { o["timestamp"] = instant(v) }
    if let v = r.liveActivity { o["liveActivity"] = liveActivity(v) }
    if let v = r.group { o["group"] = .string(v) }
    return o
  }

  static func update(_ id: String, _ u: ActivityUpdate) -> [String: JSONValue] {
    var o = u.content
    o["op"] = .string("update")
    o["id"] = .string(id)
    if let v = u.endDate { o["endDate"] = instant(v) }
    change(&o, "startDate", u.startDate, instant)
    change(&o, "staleDate", u.staleDate, instant)
    change(&o, "goalMs", u.goalMs, JSONValue.int)
    change(&o, "milestones", u.milestones, milestones)
    change(&o, "endOnExpiry", u.endOnExpiry, dismissal)
    if let v = u.overtime { o["overtime"] = .bool(v) }
    if let v = u.timestamp { o["timestamp"] = instant(v) }
    if let v = u.liveActivity { o["liveActivity"] = v }
    return o
  }

  static func end(_ id: String, _ e: ActivityEnding) -> [String: JSONValue] {
    var o = e.content
    o["op"] = .string("end")
    o["id"] = .string(id)
    o["dismissal"] = dismissal(e.dismissal)
    if let v = e.timestamp { o["timestamp"] = instant(v) }
    return o
  }

  /// `pause`, `resume` or `get` of `id`.
  static func named(_ op: String, _ id: String, timestamp: Instant? = nil) -> [String: JSONValue] {
    var o: [String: JSONValue] = ["op": .string(op), "id": .string(id)]
    if let timestamp { o["timestamp"] = instant(timestamp) }
    return o
  }

  static func list(_ selection: CountdownConnection.Selection, group: String?) -> [String:
    JSONValue]
  {
    var o: [String: JSONValue] = ["op": .string("list")]
    switch selection {
    case .all: break
    case .soonest(let k): o["soonest"] = .int(Int64(k))
    case .endedWithin(let ms): o["endedWithinMs"] = .int(ms)
    }
    if let group { o["group"] = .string(group) }
    return o
  }

  static func subscribe(ids: [String]?, ticks: Bool, group: String?) -> [String: JSONValue] {
    var o: [String: JSONValue] = ["op": .string("subscribe"), "ticks": .bool(ticks)]
    if let ids { o["ids"] = .array(ids.map(JSONValue.string)) }
    if let group { o["group"] = .string(group) }
    return o
  }

  static func configure(
    enabled: Bool?, maxActivities: Change<Int>, maxActiveDurationMs: Change<Int64>
  ) -> [String: JSONValue] {
    var o: [String: JSONValue] = ["op": .string("configure")]
    if let enabled { o["enabled"] = .bool(enabled) }
    change(&o, "maxActivities", maxActivities) { .int(Int64($0)) }
    change(&o, "maxActiveDurationMs", maxActiveDurationMs, JSONValue.int)
    return o
  }

  static func auth(_ key: String) -> [String: JSONValue] {
    ["op": .string("auth"), "token": .string(key)]
  }

  // MARK: - Members

  static func instant(_ t: Instant) -> JSONValue { .int(t.milliseconds) }

  static func content(_ c: ActivityContent) -> [String: JSONValue] {
    c.json.objectValue ?? [:]
  }

  static func milestones(_ list: [Milestone]) -> JSONValue {
    .array(
      list.map { m in
        var o: [String: JSONValue] = ["name": .string(m.name), "atMs": .int(m.atMs)]
        if !m.content.isEmpty { o["content"] = .object(m.content) }
        return .object(o)
      })
  }

  static func dismissal(_ d: DismissalPolicy) -> JSONValue {
    switch d {
    case .immediate: .string("immediate")
    case .default: .string("default")
    case .after(let t): .object(["after": instant(t)])
    }
  }

  /// The object form without `channelId`, which only the server sets.
  static func liveActivity(_ a: LiveActivity) -> JSONValue {
    var o = a.object
    o["channelId"] = nil
    return .object(o.filter { $0.value != .null })
  }

  static func change<T>(
    _ o: inout [String: JSONValue], _ key: String, _ c: Change<T>, _ encode: (T) -> JSONValue
  ) {
    switch c {
    case .keep: break
    case .set(let v): o[key] = encode(v)
    case .remove: o[key] = .null
    }
  }
}
