// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// The protocol's request lines (docs/protocol.md, "Requests and replies") made from the
/// core's typed requests: the members a server's decoder reads back into the same values,
/// written in order straight into bytes (no dictionary is built for a request; a start is the
/// hot path of a service that starts many).
enum RequestEncoding {
  /// One request line: `{"op":…`, the members `body` writes, then `}` and the newline.
  private static func line(_ op: StaticString, _ body: (inout JSONWriter) -> Void = { _ in })
    -> [UInt8]
  {
    var out = JSONWriter()
    out.bytes.reserveCapacity(128)
    out.open(op)
    body(&out)
    out.raw("}\n")
    return out.bytes
  }

  /// Start lines, one after another in one array.
  static func start(_ list: [ActivityRequest]) -> [UInt8] {
    var out = JSONWriter()
    out.bytes.reserveCapacity(list.count * 96)
    for r in list { start(r, into: &out) }
    return out.bytes
  }

  static func start(_ r: ActivityRequest) -> [UInt8] {
    var out = JSONWriter()
    out.bytes.reserveCapacity(128)
    start(r, into: &out)
    return out.bytes
  }

  /// Appends a start's line, its newline included, to `line`.
  static func start(_ r: ActivityRequest, into line: inout JSONWriter) {
    line.open("start")
    line.string("kind", r.kind.rawValue)
    if let id = r.id { line.string("id", id) }
    let c = r.content
    line.string("title", c.title)
    if let v = c.subtitle { line.string("subtitle", v) }
    if let v = c.alertMessage { line.string("alertMessage", v) }
    if let v = c.color { line.string("color", v) }
    if !c.fields.isEmpty { line.value("fields", .object(c.fields)) }
    if let v = c.relevance { line.value("relevance", .double(v)) }
    if let v = r.endDate { line.int("endDate", v.milliseconds) }
    if let v = r.startDate { line.int("startDate", v.milliseconds) }
    if let v = r.goalMs { line.int("goalMs", v) }
    if let v = r.staleDate { line.int("staleDate", v.milliseconds) }
    if !r.milestones.isEmpty { line.value("milestones", milestones(r.milestones)) }
    if let v = r.endOnExpiry { line.value("endOnExpiry", dismissal(v)) }
    if r.overtime { line.bool("overtime", true) }
    if let v = r.timestamp { line.int("timestamp", v.milliseconds) }
    if let v = r.liveActivity { line.value("liveActivity", liveActivity(v)) }
    if let v = r.group { line.string("group", v) }
    line.raw("}\n")
  }

  static func update(_ id: String, _ u: ActivityUpdate) -> [UInt8] {
    line("update") { out in
      out.string("id", id)
      if let v = u.endDate { out.int("endDate", v.milliseconds) }
      out.change("startDate", u.startDate, instant)
      out.change("staleDate", u.staleDate, instant)
      out.change("goalMs", u.goalMs, JSONValue.int)
      out.change("milestones", u.milestones, milestones)
      out.change("endOnExpiry", u.endOnExpiry, dismissal)
      if let v = u.overtime { out.bool("overtime", v) }
      if let v = u.timestamp { out.int("timestamp", v.milliseconds) }
      if let v = u.liveActivity { out.value("liveActivity", v) }
      out.members(u.content)
    }
  }

  static func end(_ id: String, _ e: ActivityEnding) -> [UInt8] {
    line("end") { out in
      out.string("id", id)
      out.value("dismissal", dismissal(e.dismissal))
      if let v = e.timestamp { out.int("timestamp", v.milliseconds) }
      out.members(e.content)
    }
  }

  /// `pause`, `resume` or `get` of `id`.
  static func named(_ op: StaticString, _ id: String, timestamp: Instant? = nil) -> [UInt8] {
    line(op) { out in
      out.string("id", id)
      if let timestamp { out.int("timestamp", timestamp.milliseconds) }
    }
  }

  static func list(_ selection: CountdownConnection.Selection, group: String?) -> [UInt8] {
    line("list") { out in
      switch selection {
      case .all: break
      case .soonest(let k): out.int("soonest", Int64(k))
      case .endedWithin(let ms): out.int("endedWithinMs", ms)
      }
      if let group { out.string("group", group) }
    }
  }

  static func subscribe(ids: [String]?, ticks: Bool, group: String?) -> [UInt8] {
    line("subscribe") { out in
      out.bool("ticks", ticks)
      if let ids { out.value("ids", .array(ids.map(JSONValue.string))) }
      if let group { out.string("group", group) }
    }
  }

  static func configure(
    enabled: Bool?, maxActivities: Change<Int>, maxActiveDurationMs: Change<Int64>
  ) -> [UInt8] {
    line("configure") { out in
      if let enabled { out.bool("enabled", enabled) }
      out.change("maxActivities", maxActivities) { .int(Int64($0)) }
      out.change("maxActiveDurationMs", maxActiveDurationMs, JSONValue.int)
    }
  }

  static func auth(_ key: String) -> [UInt8] {
    line("auth") { $0.string("token", key) }
  }

  /// `ping`, `cluster`: an op alone.
  static func bare(_ op: StaticString) -> [UInt8] { line(op) }

  /// Request objects, as ``CountdownConnection/send(_:)`` takes them, one line each in one
  /// array.
  static func objects(_ list: [[String: JSONValue]]) -> [UInt8] {
    var out = JSONWriter()
    for o in list {
      out.write(.object(o))
      out.raw("\n")
    }
    return out.bytes
  }

  // MARK: - Members

  static func instant(_ t: Instant) -> JSONValue { .int(t.milliseconds) }

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

  /// The object form without `channelId`, which only the server sets, and without nulls.
  static func liveActivity(_ a: LiveActivity) -> JSONValue {
    var o = a.object
    o["channelId"] = nil
    return .object(o.filter { $0.value != .null })
  }
}

extension JSONWriter {
  /// `{"op":"OP"`: a request line's start.
  fileprivate mutating func open(_ op: StaticString) {
    raw("{\"op\":\"")
    raw(op)
    raw("\"")
  }

  /// `,"k":` of a request's member.
  fileprivate mutating func key(_ k: StaticString) {
    raw(",\"")
    raw(k)
    raw("\":")
  }

  fileprivate mutating func string(_ k: StaticString, _ v: String) {
    key(k)
    write(string: v)
  }

  fileprivate mutating func int(_ k: StaticString, _ v: Int64) {
    key(k)
    write(int: v)
  }

  fileprivate mutating func value(_ k: StaticString, _ v: JSONValue) {
    key(k)
    write(v)
  }

  fileprivate mutating func bool(_ k: StaticString, _ v: Bool) {
    key(k)
    raw(v ? "true" : "false")
  }

  /// Members of an object whose keys are not known here (a merge patch), after the others.
  fileprivate mutating func members(_ o: [String: JSONValue]) {
    for (k, v) in o.sorted(by: { $0.key < $1.key }) {
      raw(",")
      write(string: k)
      raw(":")
      write(v)
    }
  }

  fileprivate mutating func change<T>(_ k: StaticString, _ c: Change<T>, _ encode: (T) -> JSONValue)
  {
    switch c {
    case .keep: break
    case .set(let v): value(k, encode(v))
    case .remove: value(k, .null)
    }
  }
}
