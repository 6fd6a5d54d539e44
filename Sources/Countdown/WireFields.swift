// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Reads the fields of one command object, remembering which were used so that unknown ones
/// can be reported.
struct WireFields {
  private let o: JSONMembers
  /// The members read so far, one bit per position (see ``JSONMembers/lookup(_:)``): a command
  /// has a handful of keys, so no string is compared or hashed again to remember them.
  private var usedBits: UInt32 = 0
  /// The keys read so far when the members are in a dictionary (more than
  /// ``JSONMembers/linearLimit``, which only a bad line has).
  private var usedNames: [String] = []

  init(_ o: JSONMembers) { self.o = o }

  /// The raw value of `key` (JSON `null` included), marked as read.
  private mutating func raw(_ key: String) -> JSONValue? {
    guard let (v, bit) = o.lookup(key) else { return nil }
    if bit != 0 {
      usedBits |= bit
    } else if !usedNames.contains(key) {
      usedNames.append(key)
    }
    return v
  }

  mutating func take(_ key: String) { _ = raw(key) }

  /// The value of `key`, treating JSON `null` as absent.
  mutating func value(_ key: String) -> JSONValue? {
    guard let v = raw(key) else { return nil }
    if case .null = v { return nil }
    return v
  }

  /// Whether `key` is present with the value `null` (a removal in an update).
  func isNull(_ key: String) -> Bool {
    if case .null? = o.lookup(key)?.value { return true }
    return false
  }

  func rejectUnknown(op: String) throws(CountdownError) {
    guard usedBits.nonzeroBitCount + usedNames.count != o.count else { return }
    if let first = o.keys(notIn: usedBits, or: usedNames).first {
      throw .payload("\(first) is not a field of \(op)")
    }
  }

  // MARK: - Scalars

  /// A wire number as whole milliseconds: non-integers truncate toward zero.
  static func integer(_ field: String, _ v: JSONValue) throws(CountdownError) -> Int64 {
    switch v {
    case .int(let i): return i
    case .double(let d):
      guard d.isFinite else { throw .payload("\(field) is not a finite number") }
      let t = d.rounded(.towardZero)
      // Out of Int64's range: the range checks below reject it with the right code.
      if t >= 9.2e18 { return .max }
      if t <= -9.2e18 { return .min }
      return Int64(t)
    default:
      throw .payload("\(field) must be a number of milliseconds, not \(v.typeName)")
    }
  }

  static func instant(_ field: String, _ v: JSONValue) throws(CountdownError) -> Instant {
    try Instant(milliseconds: integer(field, v)).validated(field)
  }

  mutating func optionalInstant(_ key: String) throws(CountdownError) -> Instant? {
    guard let v = value(key) else { return nil }
    return try Self.instant(key, v)
  }

  mutating func optionalDuration(_ key: String) throws(CountdownError) -> Int64? {
    guard let v = value(key) else { return nil }
    return try validatedDuration(key, Self.integer(key, v))
  }

  /// A boolean field (`null` or absent: nil).
  mutating func optionalBool(_ key: String) throws(CountdownError) -> Bool? {
    guard let v = value(key) else { return nil }
    guard case .bool(let b) = v else {
      throw .payload("\(key) must be a boolean, not \(v.typeName)")
    }
    return b
  }

  mutating func string(_ key: String) throws(CountdownError) -> String? {
    guard let v = value(key) else { return nil }
    guard case .string(let s) = v else {
      throw .payload("\(key) must be a string, not \(v.typeName)")
    }
    return s
  }

  mutating func requiredID() throws(CountdownError) -> String {
    guard let id = try string("id") else { throw .payload("id is required") }
    return id
  }

  // MARK: - Structured fields

  static func dismissal(_ field: String, _ v: JSONValue) throws(CountdownError) -> DismissalPolicy {
    switch v {
    case .string("immediate"): return .immediate
    case .string("default"): return .default
    case .object(let o):
      guard let after = o["after"], o.count == 1 else {
        throw .payload("\(field) object must be {\"after\": instant}")
      }
      return .after(try instant("\(field).after", after))
    default:
      throw .payload(
        "\(field) must be \"immediate\", \"default\" or {\"after\": instant}, not \(v.canonicalText)"
      )
    }
  }

  static func milestones(_ v: JSONValue) throws(CountdownError) -> [Milestone] {
    guard case .array(let items) = v else {
      throw .payload("milestones must be an array, not \(v.typeName)")
    }
    var out: [Milestone] = []
    for (k, item) in items.enumerated() {
      guard case .object(let m) = item else {
        throw .payload("milestones[\(k)] must be an object {\"name\", \"atMs\", \"content\"}")
      }
      guard case .string(let name)? = m["name"] else {
        throw .payload("milestones[\(k)].name must be a string")
      }
      guard let at = m["atMs"] else { throw .payload("milestones[\(k)].atMs is required") }
      if let extra = m.keys.first(where: { $0 != "name" && $0 != "atMs" && $0 != "content" }) {
        throw .payload("milestones[\(k)].\(extra) is not a milestone field")
      }
      var content: [String: JSONValue] = [:]
      switch m["content"] {
      case nil, .null?: break
      case .object(let patch)?: content = patch
      case let v?:
        throw .payload(
          "milestones[\(k)].content must be an object (a merge patch of the content), not \(v.typeName)"
        )
      }
      // Negative: that long past the end of an overtime countdown (the engine checks which).
      let atMs = try validatedOffset(
        "milestones[\(k)].atMs", integer("milestones[\(k)].atMs", at))
      out.append(Milestone(name: name, atMs: atMs, content: content))
    }
    return out
  }

  /// The content keys present, as a merge patch (nulls kept).
  mutating func contentPatch() -> [String: JSONValue] {
    var patch: [String: JSONValue] = [:]
    for key in ActivityContent.keys {
      if let v = raw(key) { patch[key] = v }
    }
    return patch
  }

  // MARK: - Operations

  mutating func startRequest(id: String?) throws(CountdownError) -> ActivityRequest {
    guard let kindValue = value("kind") else {
      throw .payload("kind is required: countdown or elapsed")
    }
    guard case .string(let kindName) = kindValue, let kind = ActivityKind(rawValue: kindName) else {
      throw .payload("kind must be \"countdown\" or \"elapsed\", not \(kindValue.canonicalText)")
    }
    // Read straight from the members: no patch dictionary for a start.
    var fields = self
    let content = try ActivityContent { fields.value($0) }
    self = fields
    return ActivityRequest(
      id: id, kind: kind, endDate: try optionalInstant("endDate"),
      startDate: try optionalInstant("startDate"), goalMs: try optionalDuration("goalMs"),
      content: content, staleDate: try optionalInstant("staleDate"),
      milestones: try value("milestones").map { (v) throws(CountdownError) in try Self.milestones(v)
      } ?? [],
      endOnExpiry: try value("endOnExpiry").map { (v) throws(CountdownError) in
        try Self.dismissal("endOnExpiry", v)
      },
      overtime: try optionalBool("overtime") ?? false,
      timestamp: try optionalInstant("timestamp"),
      liveActivity: try value("liveActivity").map { (v) throws(CountdownError) in
        try LiveActivity(json: v)
      },
      group: try value("group").map { (v) throws(CountdownError) in
        guard case .string(let g) = v else {
          throw .payload("group must be a string, not \(v.canonicalText)")
        }
        return try ActivityGroup.validated(g)
      })
  }

  mutating func change<T>(
    _ key: String, _ read: (JSONValue) throws(CountdownError) -> T
  ) throws(CountdownError) -> Change<T> {
    if isNull(key) {
      take(key)
      return .remove
    }
    guard let v = value(key) else { return .keep }
    return .set(try read(v))
  }

  mutating func update() throws(CountdownError) -> ActivityUpdate {
    if value("kind") != nil { throw .payload("kind is fixed at start and cannot be updated") }
    if value("group") != nil || isNull("group") {
      throw .payload("group is fixed at start and cannot be updated")
    }
    if isNull("endDate") { throw .payload("endDate cannot be removed; a countdown needs one") }
    return ActivityUpdate(
      content: contentPatch(), endDate: try optionalInstant("endDate"),
      startDate: try change("startDate") { (v) throws(CountdownError) in
        try Self.instant("startDate", v)
      },
      staleDate: try change("staleDate") { (v) throws(CountdownError) in
        try Self.instant("staleDate", v)
      },
      goalMs: try change("goalMs") { (v) throws(CountdownError) in
        try validatedDuration("goalMs", Self.integer("goalMs", v))
      },
      milestones: try change("milestones") { (v) throws(CountdownError) in try Self.milestones(v) },
      endOnExpiry: try change("endOnExpiry") { (v) throws(CountdownError) in
        try Self.dismissal("endOnExpiry", v)
      },
      overtime: try optionalBool("overtime"),
      timestamp: try optionalInstant("timestamp"), liveActivity: raw("liveActivity"))
  }

  mutating func ending() throws(CountdownError) -> ActivityEnding {
    ActivityEnding(
      content: contentPatch(),
      dismissal: try value("dismissal").map { (v) throws(CountdownError) in
        try Self.dismissal("dismissal", v)
      } ?? .default,
      timestamp: try optionalInstant("timestamp"))
  }

  mutating func configure() throws(CountdownError) -> WireCommand.Operation {
    let enabled = try optionalBool("enabled")
    let maxActivities = try change("maxActivities") { (v) throws(CountdownError) -> Int in
      let n = try Self.integer("maxActivities", v)
      guard (0...Int64(Int32.max)).contains(n) else {
        throw .payload("maxActivities \(n) must be between 0 and \(Int32.max)")
      }
      return Int(n)
    }
    let maxDuration = try change("maxActiveDurationMs") { (v) throws(CountdownError) in
      try validatedDuration("maxActiveDurationMs", Self.integer("maxActiveDurationMs", v))
    }
    return .configure(
      enabled: enabled, maxActivities: maxActivities, maxActiveDurationMs: maxDuration)
  }
}
