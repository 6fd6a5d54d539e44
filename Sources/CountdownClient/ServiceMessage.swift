// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// A line that `countdown serve` wrote on a socket (docs/protocol.md): the reply to a request,
/// or an event (docs/events.md), decoded into typed values.
///
/// ```swift
/// var reader = LineReader(fd: try UnixSocket.connect("countdown.sock"))
/// try reader.forEachLine { line in
///   switch try ServiceMessage(line: line) {
///   case .reply(let r): print(r.ok, r.activity?.clock.value(at: r.at) ?? 0)
///   case .event(let e): print(e.event, e.id ?? "")
///   }
/// }
/// ```
public enum ServiceMessage: Sendable, Equatable {
  /// The reply to one request (it has `ok`).
  case reply(ServiceReply)
  /// An event of a subscription, or a connection error that answers no request.
  case event(ServiceEvent)

  /// Decodes one line (without its newline).
  /// - Throws: ``ServiceMessageError`` naming what is wrong: not JSON, not an object, neither
  ///   a reply nor an event, a member missing or of the wrong type.
  public init(line: UnsafeBufferPointer<UInt8>) throws(ServiceMessageError) {
    if let reply = ServiceReply(plain: line) {
      self = .reply(reply)
      return
    }
    let value: JSONValue
    do {
      value = try JSONParser.parse(bytes: line)
    } catch {
      throw ServiceMessageError("the line is not JSON: \(error.message)")
    }
    guard let o = value.objectValue else {
      throw ServiceMessageError("the line is a JSON \(value.typeName), not an object")
    }
    if o["ok"] != nil {
      self = .reply(try ServiceReply(Members(o, "reply")))
    } else if o["event"] != nil {
      self = .event(try ServiceEvent(Members(o, "event")))
    } else {
      throw ServiceMessageError("the line has neither \"ok\" (a reply) nor \"event\" (an event)")
    }
  }

  /// ``init(line:)`` of an array of bytes.
  public init(line: [UInt8]) throws(ServiceMessageError) {
    self = try line.withUnsafeBufferPointer { (b) throws(ServiceMessageError) in
      try ServiceMessage(line: b)
    }
  }
}

/// A line of the service that does not decode: a message a person can act on.
public struct ServiceMessageError: Error, CustomStringConvertible, Sendable, Equatable {
  public var message: String
  public var description: String { message }
  init(_ message: String) { self.message = message }
}

/// An error the service answered with (docs/errors.md).
public struct ServiceFailure: Sendable, Equatable {
  /// The error's code (`notFound`, `invalidPayload`, …).
  public var code: String
  public var message: String
}

/// The reply to one request: `{"rid":…,"ok":…,"at":…,…}`.
public struct ServiceReply: Sendable, Equatable {
  /// The request's `rid` as sent (a string or an integer), or `.null`.
  public var rid: JSONValue
  public var ok: Bool
  /// The server's clock when it answered (ms since 1970).
  public var at: Int64
  /// Why the request failed (nil when `ok`).
  public var failure: ServiceFailure?
  /// A `start`'s id.
  public var id: String?
  /// A `get`'s activity (or an HTTP command's).
  public var activity: ActivityObject? {
    get { activityBox.first }
    set { activityBox = newValue.map { [$0] } ?? [] }
  }
  /// ``activity`` out of line: most replies have none, and a reply is kept small (a batch of
  /// a thousand replies is a thousand of them side by side).
  private var activityBox: [ActivityObject] = []
  /// A `list`'s activities, or a `subscribe`'s snapshot.
  public var activities: [ActivityObject]?
  /// A `cluster` reply's view (it has `nodes`).
  public var cluster: ClusterState?

  /// The reply most requests get, read without building a JSON tree:
  /// `{"rid":null,"ok":true,"at":DIGITS}` or the same with `,"id":"…"` (a start's, its id
  /// without escapes) before the brace, exactly as the server writes them. Nil for any other
  /// line, which the full parser then reads: this only saves the work, it decides nothing.
  init?(plain line: UnsafeBufferPointer<UInt8>) {
    let head: StaticString = #"{"rid":null,"ok":true,"at":"#
    let n = head.utf8CodeUnitCount
    guard line.count > n + 1, Self.matches(line, at: 0, head) else { return nil }
    var k = n
    var at: Int64 = 0
    let digits = k
    while k < line.count, line[k] >= 0x30, line[k] <= 0x39, k - digits < 18 {
      at = at * 10 + Int64(line[k] - 0x30)
      k += 1
    }
    // JSON has no leading zeros: `05` is the parser's to refuse.
    guard k > digits, k < line.count, line[digits] != 0x30 || k == digits + 1 else { return nil }
    if line[k] == 0x7D {  // }
      guard k == line.count - 1 else { return nil }
      self.init(at: at, id: nil)
      return
    }
    let idHead: StaticString = #","id":""#
    let m = idHead.utf8CodeUnitCount
    guard line.count - k > m + 2, Self.matches(line, at: k, idHead),
      line[line.count - 1] == 0x7D, line[line.count - 2] == 0x22
    else { return nil }
    let id = UnsafeBufferPointer(rebasing: line[(k + m)..<(line.count - 2)])
    // An id with a quote, a backslash or a control byte is left to the parser (escapes).
    for b in id where b < 0x20 || b == 0x22 || b == 0x5C { return nil }
    guard let text = String(validating: id, as: UTF8.self) else { return nil }
    self.init(at: at, id: text)
  }

  /// Whether `line` holds `text` from `offset` on (the caller checked the length).
  private static func matches(
    _ line: UnsafeBufferPointer<UInt8>, at offset: Int, _ text: StaticString
  ) -> Bool {
    text.withUTF8Buffer { t in
      for i in 0..<t.count where line[offset + i] != t[i] { return false }
      return true
    }
  }

  private init(at: Int64, id: String?) {
    rid = .null
    ok = true
    self.at = at
    failure = nil
    self.id = id
    activities = nil
    cluster = nil
  }

  init(_ m: Members) throws(ServiceMessageError) {
    rid = m.o["rid"] ?? .null
    ok = try m.bool("ok")
    at = try m.int("at")
    failure =
      ok ? nil : ServiceFailure(code: try m.string("code"), message: try m.string("message"))
    id = try m.optionalString("id")
    activity = try m.optional("activity").map { (v) throws(ServiceMessageError) in
      try ActivityObject(v, "activity")
    }
    var list = try m.optionalArray("activities")
    if list == nil { list = try m.optionalArray("snapshot") }
    activities = try list.map { (items) throws(ServiceMessageError) in
      var out: [ActivityObject] = []
      for (k, v) in items.enumerated() { out.append(try ActivityObject(v, "activities[\(k)]")) }
      return out
    }
    cluster = try m.optionalArray("nodes").map { (nodes) throws(ServiceMessageError) in
      try ClusterState(m, nodes: nodes)
    }
  }
}

/// What a `cluster` reply says (docs/cluster.md): the node answering and what it last read of
/// the others and of the shards. A single server has no node, no nodes and no shards.
public struct ClusterState: Sendable, Equatable {
  /// One node of the cluster.
  public struct Node: Sendable, Equatable {
    public var name: String
    /// The address the others reach it at (`--advertise`), when it said.
    public var advertise: String?
    /// Whether its heartbeat is recent.
    public var alive: Bool
  }
  /// One shard: its owner (nil while none holds it) and its lease's epoch.
  public struct Shard: Sendable, Equatable {
    public var shard: Int
    public var owner: String?
    public var epoch: Int64
  }
  /// The answering node's name; nil from a single server.
  public var node: String?
  public var nodes: [Node]
  public var shards: [Shard]

  public init(node: String?, nodes: [Node], shards: [Shard]) {
    self.node = node
    self.nodes = nodes
    self.shards = shards
  }

  init(_ m: Members, nodes list: [JSONValue]) throws(ServiceMessageError) {
    node = try m.optionalString("node")
    nodes = []
    for (k, v) in list.enumerated() {
      guard let o = v.objectValue else { throw ServiceMessageError("nodes[\(k)] is not an object") }
      let n = Members(o, "nodes[\(k)]")
      nodes.append(
        Node(
          name: try n.string("name"), advertise: try n.optionalString("advertise"),
          alive: try n.bool("alive")))
    }
    shards = []
    for (k, v) in (try m.optionalArray("shards") ?? []).enumerated() {
      guard let o = v.objectValue else {
        throw ServiceMessageError("shards[\(k)] is not an object")
      }
      let n = Members(o, "shards[\(k)]")
      shards.append(
        Shard(
          shard: Int(clamping: try n.int("shard")), owner: try n.optionalString("owner"),
          epoch: try n.int("epoch")))
    }
  }
}

/// An event (docs/events.md): `{"at":…,"event":…,"id":…,…}`.
public struct ServiceEvent: Sendable, Equatable {
  /// The instant it happened (ms since 1970), not when it was delivered.
  public var at: Int64
  /// The event's name: a kind's (`tick`, `ended`, …) or `error`.
  public var event: String
  /// The kind, or nil for `error` (and for a kind this client does not know).
  public var kind: ActivityEvent.Kind? { ActivityEvent.Kind(rawValue: event) }
  /// The activity's id (nil for a connection error).
  public var id: String?
  /// The whole seconds shown (`tick`, `paused`, `ended`).
  public var value: Int64?
  /// `value` in the server's style.
  public var text: String?
  /// A milestone's name.
  public var name: String?
  /// An `ended` event's reason (`requested`, `expired`, `maxDuration`, `disabled`).
  public var reason: String?
  /// An `error` event's code and message (`slowConsumer`).
  public var failure: ServiceFailure?

  init(_ m: Members) throws(ServiceMessageError) {
    at = try m.int("at")
    event = try m.string("event")
    id = try m.optionalString("id")
    value = try m.optionalInt("value")
    text = try m.optionalString("text")
    name = try m.optionalString("name")
    reason = try m.optionalString("reason")
    failure =
      event == "error"
      ? ServiceFailure(code: try m.string("code"), message: try m.string("message")) : nil
  }
}

/// An activity object (docs/protocol.md, "Activity objects").
public struct ActivityObject: Sendable, Equatable {
  public var id: String
  public var kind: ActivityKind
  public var phase: ActivityPhase
  /// The whole seconds shown when the object was made.
  public var value: Int64
  /// `value` in the server's style.
  public var text: String
  /// 0…1, or nil.
  public var progress: Double?
  public var stale: Bool
  /// A countdown that runs on past its end (false for elapsed timers; absent, from an older
  /// server, is false).
  public var overtime: Bool
  /// The content: `title`, `subtitle`, `alertMessage`, `color`, `fields`, `relevance`.
  public var content: [String: JSONValue]
  /// A countdown's current end (moved later by pauses).
  public var endDate: Int64?
  /// An elapsed timer's origin moved by pauses (a countdown's start for its progress).
  public var startDate: Int64?
  public var pausedAt: Int64?
  /// An elapsed timer's goal, for its progress.
  public var goalMs: Int64?
  /// The last milestone passed.
  public var milestone: String?
  /// The activity's shard, from a cluster node (docs/cluster.md); nil from a single server.
  public var shard: Int?
  /// The group it was started in (docs/security.md, "Groups"), or nil.
  public var group: String?
  /// The next milestone and its instant.
  public var nextMilestone: (name: String, at: Int64)? {
    get { nextMilestoneName.flatMap { n in nextMilestoneAt.map { (n, $0) } } }
    set {
      nextMilestoneName = newValue?.name
      nextMilestoneAt = newValue?.at
    }
  }
  private var nextMilestoneName: String?
  private var nextMilestoneAt: Int64?

  /// The content's title (nil when it has none).
  public var title: String? { content["title"].flatMap(Members.stringValue) }
  public var subtitle: String? { content["subtitle"].flatMap(Members.stringValue) }
  /// `#RRGGBB` or `#RRGGBBAA`.
  public var color: String? { content["color"].flatMap(Members.stringValue) }

  /// What a board needs to show it at any instant (``ActivityClock``).
  public var clock: ActivityClock {
    ActivityClock(
      kind: kind, phase: phase, value: value, progress: progress, endDate: endDate,
      startDate: startDate, goalMs: goalMs, overtime: overtime)
  }

  init(_ v: JSONValue, _ path: String) throws(ServiceMessageError) {
    guard let o = v.objectValue else {
      throw ServiceMessageError("\(path) is a JSON \(v.typeName), not an activity object")
    }
    let m = Members(o, path)
    id = try m.string("id")
    let kindName = try m.string("kind")
    guard let kind = ActivityKind(rawValue: kindName) else {
      throw ServiceMessageError("\(path).kind \"\(kindName)\" is not a kind of activity")
    }
    self.kind = kind
    let phaseName = try m.string("phase")
    guard let phase = ActivityPhase(rawValue: phaseName) else {
      throw ServiceMessageError("\(path).phase \"\(phaseName)\" is not a phase")
    }
    self.phase = phase
    value = try m.int("value")
    text = try m.string("text")
    progress = try m.optionalDouble("progress")
    stale = try m.bool("stale")
    overtime = try m.optional("overtime") == nil ? false : try m.bool("overtime")
    content =
      try m.optional("content").map { (c) throws(ServiceMessageError) in
        guard let o = c.objectValue else {
          throw ServiceMessageError("\(path).content is a JSON \(c.typeName), not an object")
        }
        return o
      } ?? [:]
    endDate = try m.optionalInt("endDate")
    startDate = try m.optionalInt("startDate")
    pausedAt = try m.optionalInt("pausedAt")
    goalMs = try m.optionalInt("goalMs")
    milestone = try m.optionalString("milestone")
    shard = try m.optionalInt("shard").map { Int(clamping: $0) }
    group = try m.optionalString("group")
    if let next = try m.optional("nextMilestone") {
      guard let n = next.objectValue else {
        throw ServiceMessageError("\(path).nextMilestone is not an object")
      }
      let nm = Members(n, "\(path).nextMilestone")
      nextMilestoneName = try nm.string("name")
      nextMilestoneAt = try nm.int("at")
    }
  }

  public static func == (a: Self, b: Self) -> Bool {
    a.id == b.id && a.kind == b.kind && a.phase == b.phase && a.value == b.value
      && a.text == b.text && a.progress == b.progress && a.stale == b.stale
      && a.overtime == b.overtime
      && a.content == b.content && a.endDate == b.endDate && a.startDate == b.startDate
      && a.pausedAt == b.pausedAt && a.goalMs == b.goalMs && a.milestone == b.milestone
      && a.group == b.group
      && a.nextMilestoneName == b.nextMilestoneName && a.nextMilestoneAt == b.nextMilestoneAt
  }
}

/// An object's members, read with messages that name the member and where it is.
struct Members {
  let o: [String: JSONValue]
  let path: String
  init(_ o: [String: JSONValue], _ path: String) {
    self.o = o
    self.path = path
  }

  static func stringValue(_ v: JSONValue) -> String? {
    if case .string(let s) = v { return s }
    return nil
  }

  private func wrong(_ key: String, _ v: JSONValue, _ want: String) -> ServiceMessageError {
    ServiceMessageError("\(path).\(key) is a JSON \(v.typeName), not \(want)")
  }

  /// The member, nil when absent or null.
  func optional(_ key: String) throws(ServiceMessageError) -> JSONValue? {
    guard let v = o[key], v != .null else { return nil }
    return v
  }

  func required(_ key: String) throws(ServiceMessageError) -> JSONValue {
    guard let v = try optional(key) else {
      throw ServiceMessageError("\(path) has no \"\(key)\"")
    }
    return v
  }

  func string(_ key: String) throws(ServiceMessageError) -> String {
    let v = try required(key)
    guard let s = Self.stringValue(v) else { throw wrong(key, v, "a string") }
    return s
  }

  func optionalString(_ key: String) throws(ServiceMessageError) -> String? {
    guard let v = try optional(key) else { return nil }
    guard let s = Self.stringValue(v) else { throw wrong(key, v, "a string") }
    return s
  }

  func bool(_ key: String) throws(ServiceMessageError) -> Bool {
    let v = try required(key)
    guard case .bool(let b) = v else { throw wrong(key, v, "a boolean") }
    return b
  }

  func int(_ key: String) throws(ServiceMessageError) -> Int64 {
    guard let n = try optionalInt(key) else {
      throw ServiceMessageError("\(path) has no \"\(key)\"")
    }
    return n
  }

  func optionalInt(_ key: String) throws(ServiceMessageError) -> Int64? {
    guard let v = try optional(key) else { return nil }
    switch v {
    case .int(let n): return n
    case .double(let d) where d.isFinite && d == d.rounded() && abs(d) < 9.2e18: return Int64(d)
    default: throw wrong(key, v, "an integer")
    }
  }

  func optionalDouble(_ key: String) throws(ServiceMessageError) -> Double? {
    guard let v = try optional(key) else { return nil }
    switch v {
    case .int(let n): return Double(n)
    case .double(let d): return d
    default: throw wrong(key, v, "a number")
    }
  }

  func optionalArray(_ key: String) throws(ServiceMessageError) -> [JSONValue]? {
    guard let v = try optional(key) else { return nil }
    guard case .array(let a) = v else { throw wrong(key, v, "an array") }
    return a
  }
}
