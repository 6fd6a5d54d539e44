// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// The protocol's request lines (docs/protocol.md, "Requests and replies") made from the
/// core's typed requests: the members a server's decoder reads back into the same values,
/// written in order straight into bytes (no dictionary is built for a request; a start is the
/// hot path of a service that starts many).
enum RequestEncoding {
  /// One request line being written into a ``JSONWriter`` (a batch's lines all go into one):
  /// `{"op":…` then members, then `}` and the newline.
  struct Line: ~Copyable {
    var out: JSONWriter

    init(op: StaticString) {
      out = JSONWriter()
      out.bytes.reserveCapacity(128)
      Self.open(&out, op)
    }

    static func open(_ out: inout JSONWriter, _ op: StaticString) {
      out.raw("{\"op\":\"")
      out.raw(op)
      out.raw("\"")
    }

    consuming func finished() -> [UInt8] {
      out.raw("}\n")
      return out.bytes
    }
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
    Line.open(&line, "start")
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
    var line = Line(op: "update")
    line.out.string("id", id)
    if let v = u.endDate { line.out.int("endDate", v.milliseconds) }
    line.out.change("startDate", u.startDate, instant)
    line.out.change("staleDate", u.staleDate, instant)
    line.out.change("goalMs", u.goalMs, JSONValue.int)
    line.out.change("milestones", u.milestones, milestones)
    line.out.change("endOnExpiry", u.endOnExpiry, dismissal)
    if let v = u.overtime { line.out.bool("overtime", v) }
    if let v = u.timestamp { line.out.int("timestamp", v.milliseconds) }
    if let v = u.liveActivity { line.out.value("liveActivity", v) }
    line.out.members(u.content)
    return line.finished()
  }

  static func end(_ id: String, _ e: ActivityEnding) -> [UInt8] {
    var line = Line(op: "end")
    line.out.string("id", id)
    line.out.value("dismissal", dismissal(e.dismissal))
    if let v = e.timestamp { line.out.int("timestamp", v.milliseconds) }
    line.out.members(e.content)
    return line.finished()
  }

  static func pause(_ id: String, timestamp: Instant?) -> [UInt8] {
    var line = Line(op: "pause")
    line.out.string("id", id)
    if let timestamp { line.out.int("timestamp", timestamp.milliseconds) }
    return line.finished()
  }

  static func resume(_ id: String, timestamp: Instant?) -> [UInt8] {
    var line = Line(op: "resume")
    line.out.string("id", id)
    if let timestamp { line.out.int("timestamp", timestamp.milliseconds) }
    return line.finished()
  }

  static func get(_ id: String) -> [UInt8] {
    var line = Line(op: "get")
    line.out.string("id", id)
    return line.finished()
  }

  static func list(_ selection: CountdownConnection.Selection, group: String?) -> [UInt8] {
    var line = Line(op: "list")
    switch selection {
    case .all: break
    case .soonest(let k): line.out.int("soonest", Int64(k))
    case .endedWithin(let ms): line.out.int("endedWithinMs", ms)
    }
    if let group { line.out.string("group", group) }
    return line.finished()
  }

  static func subscribe(ids: [String]?, ticks: Bool, group: String?) -> [UInt8] {
    var line = Line(op: "subscribe")
    line.out.bool("ticks", ticks)
    if let ids { line.out.value("ids", .array(ids.map(JSONValue.string))) }
    if let group { line.out.string("group", group) }
    return line.finished()
  }

  static func configure(
    enabled: Bool?, maxActivities: Change<Int>, maxActiveDurationMs: Change<Int64>
  ) -> [UInt8] {
    var line = Line(op: "configure")
    if let enabled { line.out.bool("enabled", enabled) }
    line.out.change("maxActivities", maxActivities) { .int(Int64($0)) }
    line.out.change("maxActiveDurationMs", maxActiveDurationMs, JSONValue.int)
    return line.finished()
  }

  static func auth(_ key: String) -> [UInt8] {
    var line = Line(op: "auth")
    line.out.string("token", key)
    return line.finished()
  }

  /// `ping`, `cluster`: an op alone.
  static func bare(_ op: StaticString) -> [UInt8] {
    Line(op: op).finished()
  }

  /// Any request object, as ``CountdownConnection/send(_:)`` takes it.
  static func object(_ o: [String: JSONValue]) -> [UInt8] {
    var out = JSONWriter()
    out.write(.object(o))
    out.raw("\n")
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
