// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// How an iPhone's Live Activity mirrors an activity (docs/pushes.md): the tokens its pushes
/// go to and how their content-state is built. Given as `liveActivity` in a start and merge
/// patched by an update, like the content; kept with the activity, stored durably, and
/// returned in activity objects.
///
/// Tokens are the hex strings the app gets from ActivityKit (`Activity.pushTokenUpdates`,
/// `Activity.pushToStartTokenUpdates`), kept in lower case.
public struct LiveActivity: Sendable, Hashable {
  /// How dates are written in the content-state.
  public enum DateEncoding: String, Sendable, Hashable, CaseIterable {
    /// Seconds since 2001-01-01 as a number: what ActivityKit's default decoding of a `Date`
    /// reads (Unix seconds there show dates 31 years late).
    case reference
    /// Seconds since 1970 as a number (`JSONDecoder.DateDecodingStrategy.secondsSince1970`).
    case unix
    /// Milliseconds since 1970 as an integer (`.millisecondsSince1970`).
    case unixMs
    /// ISO 8601 text in whole seconds, `2026-11-21T08:00:00Z` (`.iso8601`, which reads no
    /// fractions).
    case iso8601
  }

  /// The members, kept behind one reference: a request, a state and a stored row carry a
  /// `LiveActivity?` of one word, so that the activities without one (most) and the commands
  /// that do not touch it copy nothing more.
  private final class Storage: Sendable {
    let fields: Fields
    init(_ fields: Fields) { self.fields = fields }
  }

  private struct Fields: Hashable, Sendable {
    var pushTokens: [String]
    var startTokens: [String]
    var attributesType: String?
    var attributes: [String: JSONValue]?
    var keys: [String: String]
    var dateEncoding: DateEncoding
    var priority: Int
    var sound: String?
    var channel: String?
    var channelId: String?
  }

  private var storage: Storage

  private mutating func change(_ body: (inout Fields) -> Void) {
    var f = storage.fields
    body(&f)
    storage = Storage(f)
  }

  /// Update tokens: each receives the `update` and `end` pushes. Sorted.
  public var pushTokens: [String] {
    get { storage.fields.pushTokens }
    set { change { $0.pushTokens = newValue } }
  }
  /// Push-to-start tokens: each receives a `start` push when the activity starts. Sorted.
  public var startTokens: [String] {
    get { storage.fields.startTokens }
    set { change { $0.startTokens = newValue } }
  }
  /// The app's `ActivityAttributes` type name, for a `start` push.
  public var attributesType: String? {
    get { storage.fields.attributesType }
    set { change { $0.attributesType = newValue } }
  }
  /// The attributes' JSON, for a `start` push.
  public var attributes: [String: JSONValue]? {
    get { storage.fields.attributes }
    set { change { $0.attributes = newValue } }
  }
  /// Renames of content-state keys (`["startDate": "startedAt"]`).
  public var keys: [String: String] {
    get { storage.fields.keys }
    set { change { $0.keys = newValue } }
  }
  public var dateEncoding: DateEncoding {
    get { storage.fields.dateEncoding }
    set { change { $0.dateEncoding = newValue } }
  }
  /// The priority of pushes that change only content: 5 (the default, which spends none of the
  /// device's budget) or 10. Start, end, pause, resume and milestone pushes are always 10.
  public var priority: Int {
    get { storage.fields.priority }
    set { change { $0.priority = newValue } }
  }

  /// The sound of the pushes that carry an alert (`aps.alert.sound`): a sound file of the
  /// app, or `"default"`; nil for none.
  public var sound: String? {
    get { storage.fields.sound }
    set { change { $0.sound = newValue } }
  }

  /// The longest sound name, in bytes.
  public static let maximumSoundLength = 256

  /// The broadcast channel asked for at the start (docs/pushes.md, "Broadcast channels"):
  /// ``createChannel`` (the server makes one through APNs's channel management API), a channel
  /// id the caller made (base64), or nil for none. Fixed once the activity has started.
  public var channel: String? {
    get { storage.fields.channel }
    set { change { $0.channel = newValue } }
  }

  /// The channel the activity's updates and end are broadcast on: the caller's id at once, or
  /// the one APNs made for ``createChannel`` once it has answered (nil until then, and after
  /// APNs said the channel is gone). Set by the server only.
  public var channelId: String? {
    get { storage.fields.channelId }
    set { change { $0.channelId = newValue } }
  }

  /// `channel`'s value that asks the server to make the channel.
  public static let createChannel = "create"

  /// The longest channel id, in characters of base64.
  public static let maximumChannelLength = 256

  /// Whether the server made the channel (and so deletes it when the activity is dismissed).
  public var ownsChannel: Bool { channel == Self.createChannel }

  public static func == (a: Self, b: Self) -> Bool {
    a.storage === b.storage || a.storage.fields == b.storage.fields
  }

  public func hash(into hasher: inout Hasher) { hasher.combine(storage.fields) }

  /// The most tokens of each kind one activity holds.
  public static let maximumTokens = 100
  /// The longest token, in hex digits.
  public static let maximumTokenLength = 512

  /// The members a `liveActivity` object may have (`channelId` as the server wrote it).
  public static let members: Set<String> = [
    "pushTokens", "startTokens", "attributesType", "attributes", "keys", "dateEncoding",
    "priority", "sound", "channel", "channelId",
  ]

  public init(
    pushTokens: [String] = [], startTokens: [String] = [], attributesType: String? = nil,
    attributes: [String: JSONValue]? = nil, keys: [String: String] = Dictionary(),
    dateEncoding: DateEncoding = .reference, priority: Int = 5, sound: String? = nil,
    channel: String? = nil, channelId: String? = nil
  ) {
    storage = Storage(
      Fields(
        pushTokens: pushTokens.map { $0.lowercased() }.sorted(),
        startTokens: startTokens.map { $0.lowercased() }.sorted(),
        attributesType: attributesType, attributes: attributes, keys: keys,
        dateEncoding: dateEncoding, priority: priority, sound: sound, channel: channel,
        channelId: channelId ?? (channel == Self.createChannel ? nil : channel)))
  }

  /// The object form: what activity objects carry, and what a merge patch applies to.
  public var object: [String: JSONValue] {
    func tokens(_ list: [String]) -> JSONValue {
      .object(Dictionary(uniqueKeysWithValues: list.map { ($0, JSONValue.bool(true)) }))
    }
    return [
      "pushTokens": tokens(pushTokens), "startTokens": tokens(startTokens),
      "attributesType": attributesType.map(JSONValue.string) ?? .null,
      "attributes": attributes.map(JSONValue.object) ?? .null,
      "keys": .object(keys.mapValues(JSONValue.string)),
      "dateEncoding": .string(dateEncoding.rawValue), "priority": .int(Int64(priority)),
      "sound": sound.map(JSONValue.string) ?? .null,
      "channel": channel.map(JSONValue.string) ?? .null,
      "channelId": channelId.map(JSONValue.string) ?? .null,
    ]
  }

  /// Reads and checks a `liveActivity` object. Every error names the member
  /// (`liveActivity.pushTokens: "xyz" is not a hex token`). A caller's object may not set
  /// `channelId` (the server does); `stored` reads one as the server wrote it.
  public init(object o: [String: JSONValue], stored: Bool = false) throws(CountdownError) {
    if let unknown = o.keys.sorted().first(where: { !Self.members.contains($0) }) {
      throw .payload(
        "liveActivity.\(unknown) is not a member of liveActivity (\(Self.members.sorted().joined(separator: ", ")))"
      )
    }
    let push = try Self.tokens(o["pushTokens"], "pushTokens")
    let start = try Self.tokens(o["startTokens"], "startTokens")
    var type: String?
    switch o["attributesType"] {
    case nil, .null?: type = nil
    case .string(let s)? where !s.isEmpty: type = s
    case let v?:
      throw .payload("liveActivity.attributesType must be a type name, not \(v.canonicalText)")
    }
    var attributes: [String: JSONValue]?
    switch o["attributes"] {
    case nil, .null?: attributes = nil
    case .object(let a)?: attributes = a
    case let v?: throw .payload("liveActivity.attributes must be an object, not \(v.typeName)")
    }
    if !start.isEmpty && (type == nil || attributes == nil) {
      throw .payload(
        "liveActivity.startTokens needs liveActivity.attributesType and liveActivity.attributes (the app's ActivityAttributes type and its values), which a start push carries"
      )
    }
    var keys: [String: String] = [:]
    switch o["keys"] {
    case nil, .null?: break
    case .object(let k)?:
      for (from, to) in k {
        guard case .string(let name) = to, !name.isEmpty else {
          throw .payload(
            "liveActivity.keys.\(from) must be the new key's name, not \(to.canonicalText)")
        }
        keys[from] = name
      }
    case let v?: throw .payload("liveActivity.keys must be an object of renames, not \(v.typeName)")
    }
    var encoding = DateEncoding.reference
    switch o["dateEncoding"] {
    case nil, .null?: break
    case .string(let s)? where DateEncoding(rawValue: s) != nil:
      encoding = DateEncoding(rawValue: s)!
    case let v?:
      throw .payload(
        "liveActivity.dateEncoding must be one of \(DateEncoding.allCases.map(\.rawValue).joined(separator: ", ")), not \(v.canonicalText)"
      )
    }
    var priority = 5
    switch o["priority"] {
    case nil, .null?: break
    case .int(let p)? where p == 5 || p == 10: priority = Int(p)
    case .double(let p)? where p == 5 || p == 10: priority = Int(p)
    case let v?: throw .payload("liveActivity.priority must be 5 or 10, not \(v.canonicalText)")
    }
    var sound: String?
    switch o["sound"] {
    case nil, .null?: break
    case .string(let name)? where !name.isEmpty && name.utf8.count <= Self.maximumSoundLength:
      sound = name
    case let v?:
      throw .payload(
        "liveActivity.sound must be a sound file's name or \"default\" (1 to \(Self.maximumSoundLength) bytes), not \(v.canonicalText)"
      )
    }
    var channel: String?
    switch o["channel"] {
    case nil, .null?: break
    case .string(let c)? where c == Self.createChannel || Self.isChannelID(c): channel = c
    case let v?:
      throw .payload(
        "liveActivity.channel must be \"create\" (the server makes a broadcast channel) or a channel id APNs gave (base64, at most \(Self.maximumChannelLength) characters), not \(v.canonicalText)"
      )
    }
    var channelId: String?
    switch o["channelId"] {
    case nil, .null?: break
    case .string(let c)? where stored && Self.isChannelID(c): channelId = c
    case let v?:
      guard stored else {
        throw .payload(
          "liveActivity.channelId is set by the server (the channel APNs made for \"channel\": \"create\"), not by a request; give liveActivity.channel instead"
        )
      }
      throw .payload("liveActivity.channelId must be a base64 channel id, not \(v.canonicalText)")
    }
    if !stored, channel != nil, channel != Self.createChannel { channelId = channel }
    self.init(
      pushTokens: push, startTokens: start, attributesType: type, attributes: attributes,
      keys: keys, dateEncoding: encoding, priority: priority, sound: sound, channel: channel,
      channelId: channelId)
  }

  /// Whether `s` is a channel id as APNs gives them: base64 (standard alphabet, padded), 4 to
  /// ``maximumChannelLength`` characters.
  public static func isChannelID(_ s: String) -> Bool {
    let u = Array(s.utf8)
    guard u.count >= 4, u.count <= maximumChannelLength, u.count % 4 == 0 else { return false }
    var padding = 0
    for (k, c) in u.enumerated() {
      let letter = (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c)
      let digit = (0x30...0x39).contains(c)
      if c == 0x3D {
        padding += 1
        guard k >= u.count - 2 else { return false }
      } else {
        guard padding == 0, letter || digit || c == 0x2B || c == 0x2F else { return false }
      }
    }
    return true
  }

  /// Reads and checks a `liveActivity` value, which must be an object (``init(object:stored:)``).
  public init(json v: JSONValue) throws(CountdownError) {
    guard case .object(let o) = v else {
      throw .payload("liveActivity must be an object, not \(v.typeName)")
    }
    try self.init(object: o)
  }

  /// `{"HEX": true, …}`: the tokens, checked.
  private static func tokens(_ v: JSONValue?, _ member: String) throws(CountdownError) -> [String] {
    guard let v, v != .null else { return [] }
    guard case .object(let o) = v else {
      throw .payload(
        "liveActivity.\(member) must be an object whose keys are hex tokens (values true), not \(v.typeName)"
      )
    }
    guard o.count <= maximumTokens else {
      throw .payload("liveActivity.\(member) has \(o.count) tokens; at most \(maximumTokens)")
    }
    var out: [String] = []
    for (token, value) in o {
      guard isHexToken(token) else {
        throw .payload(
          "liveActivity.\(member): \(JSONValue.string(token).canonicalText) is not a hex token (an even number of 0-9a-f digits, at most \(maximumTokenLength))"
        )
      }
      guard value == .bool(true) else {
        throw .payload(
          "liveActivity.\(member).\(token) must be true (null removes it in an update)")
      }
      out.append(token)
    }
    return out
  }

  static func isHexToken(_ s: String) -> Bool {
    let u = s.utf8
    guard !u.isEmpty, u.count % 2 == 0, u.count <= maximumTokenLength else { return false }
    return u.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0 | 0x20) }
  }

  /// `current` with the merge patch `patch` applied (RFC 7396; `null` removes the whole
  /// object, `{"pushTokens":{"ab12":null}}` one token). Token keys are matched without case.
  public static func patched(_ current: LiveActivity?, with patch: JSONValue) throws(CountdownError)
    -> LiveActivity?
  {
    guard case .object(var p) = patch else {
      if patch == .null { return nil }
      throw .payload("liveActivity must be an object, not \(patch.typeName)")
    }
    for member in ["pushTokens", "startTokens"] {
      if case .object(let t)? = p[member] {
        p[member] = .object(
          Dictionary(t.map { ($0.key.lowercased(), $0.value) }) { _, last in last })
      }
    }
    if let given = p["channelId"], given != (current?.channelId.map(JSONValue.string) ?? .null) {
      throw .payload(
        "liveActivity.channelId is set by the server (the channel APNs made for \"channel\": \"create\"), not by a request"
      )
    }
    if let given = p["channel"], given != (current?.channel.map(JSONValue.string) ?? .null) {
      throw .payload(
        "liveActivity.channel is given when the activity starts and cannot change (its channel is made, used and deleted with the activity); start another activity for another channel"
      )
    }
    var o = current?.object ?? [:]
    MergePatch.apply(p, to: &o)
    return try LiveActivity(object: o, stored: true)
  }
}
