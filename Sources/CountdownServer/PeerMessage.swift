// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

// Compiled twice: in CountdownServer, and alone with the core's sources in `make fuzz`
// (Fuzz/FuzzWire.swift), which has neither the Countdown module nor NIOCore: what writes into
// a ByteBuffer is left out there.
#if canImport(Countdown)
  import Countdown
#endif
#if canImport(NIOCore)
  import NIOCore
#endif

/// The nodes' own protocol (docs/cluster.md), encoded and decoded here and nowhere else: what
/// one node asks another beside the socket protocol's ordinary requests (relays of its
/// events, its part of a snapshot), the answers to them, the relay lines, and what a node
/// reads of another's replies (whether it said yes, which shards its part holds, where its
/// snapshot stands, an activity object or an error). Built on the core's `JSONParser` and
/// `JSONWriter`; a line that is not what it should be decodes to nil (or a typed error),
/// never a guess from a substring.
enum PeerMessage {
  // MARK: - Relays

  /// `{"op":"relay","incarnation":HEX|null,"after":N,"ticks":BOOL}`: a node asks another
  /// for its lifecycle events after delivery number `after` of its incarnation `incarnation`
  /// (nil: none met yet, so all it keeps), and for its ticks too when `ticks`.
  struct RelayRequest: Equatable, Sendable {
    var incarnation: UInt64?
    var after: UInt64
    var ticks: Bool

    /// The request line, with its newline.
    var line: [UInt8] {
      var w = JSONWriter()
      w.raw("{\"op\":\"relay\",\"incarnation\":")
      if let incarnation {
        w.write(string: String(incarnation, radix: 16))
      } else {
        w.raw("null")
      }
      w.raw(",\"after\":")
      w.write(int: Int64(clamping: after))
      w.raw(ticks ? ",\"ticks\":true}\n" : ",\"ticks\":false}\n")
      return w.bytes
    }

    /// The request in `bytes` (a line without its newline), or nil when the line is not one.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> Self? {
      guard bytes.starts(with: relayHead), let o = object(bytes) else { return nil }
      var incarnation: UInt64?
      switch o["incarnation"] {
      case .string(let hex)?:
        guard let v = UInt64(hex, radix: 16) else { return nil }
        incarnation = v
      case .null?, nil: incarnation = nil
      default: return nil
      }
      var after: UInt64 = 0
      switch o["after"] {
      case .int(let n)?: after = n > 0 ? UInt64(n) : 0
      case nil: after = 0
      default: return nil
      }
      return RelayRequest(incarnation: incarnation, after: after, ticks: o["ticks"] == .bool(true))
    }

    private static let relayHead = Array(#"{"op":"relay""#.utf8)
  }

  /// A node's answer to a ``RelayRequest``: its incarnation, and whether some of the events
  /// asked for are no longer kept (`gap`); or why it relays nothing.
  enum RelayAnswer: Equatable, Sendable {
    case accepted(incarnation: UInt64, gap: Bool)
    case refused(code: CountdownError.Code, message: String)

    /// The answer line, with its newline.
    var line: [UInt8] {
      switch self {
      case .accepted(let incarnation, let gap):
        Array(
          #"{"ok":true,"incarnation":"\#(String(incarnation, radix: 16))","gap":\#(gap)}"#.utf8)
          + [0x0A]
      case .refused(let code, let message):
        PeerMessage.errorLine(code, message)
      }
    }

    /// The answer in `bytes` (a line without its newline), or nil when it is not one.
    static func decode(_ bytes: some Collection<UInt8>) -> Self? {
      let text = Array(bytes)
      guard let o = text.withUnsafeBufferPointer({ object($0) }) else { return nil }
      switch o["ok"] {
      case .bool(true)?:
        guard case .string(let hex)? = o["incarnation"], let incarnation = UInt64(hex, radix: 16)
        else { return nil }
        return .accepted(incarnation: incarnation, gap: o["gap"] == .bool(true))
      case .bool(false)?:
        guard let (code, message) = error(o) else { return nil }
        return .refused(code: code, message: message)
      default:
        return nil
      }
    }
  }

  /// The head of a relay line, `[~SOURCE ]SEQUENCE DELIVERY [@GROUP ]` before the event's
  /// JSON: the event's sequence number at the node that made it, its delivery number at the
  /// relaying node (0: a tick, not numbered nor replayed), for an event another node
  /// committed and never relayed (recovered beside a shard's rows) that node's incarnation,
  /// and the group of the event's activity when it has one (what a subscriber whose key has
  /// groups is filtered by: docs/security.md, "Groups").
  struct RelayLine: Equatable, Sendable {
    var source: UInt64?
    var sequence: UInt64
    var delivery: UInt64
    var group: String? = nil

    #if canImport(NIOCore)
      /// Writes the head (the JSON and its newline follow).
      func writeHead(into buffer: inout ByteBuffer) {
        if let source {
          buffer.writeStaticString("~")
          buffer.writeString(String(source, radix: 16))
          buffer.writeStaticString(" ")
        }
        PeerMessage.writeDecimal(sequence, into: &buffer)
        buffer.writeStaticString(" ")
        PeerMessage.writeDecimal(delivery, into: &buffer)
        buffer.writeStaticString(" ")
        if let group {
          buffer.writeStaticString("@")
          buffer.writeString(group)
          buffer.writeStaticString(" ")
        }
      }
    #endif

    /// The head of the line in `bytes` and where its JSON starts, or nil when the line has no
    /// head (a malformed line).
    static func decode(_ bytes: UnsafeRawBufferPointer) -> (Self, json: Int)? {
      var source: UInt64?
      var start = 0
      if bytes.first == UInt8(ascii: "~") {
        guard let space = bytes.firstIndex(of: 0x20), space > 1, space <= 17,
          let hex = UInt64(String(decoding: bytes[1..<space], as: UTF8.self), radix: 16)
        else { return nil }
        source = hex
        start = space + 1
      }
      guard let (sequence, afterSequence) = number(bytes, from: start),
        let (delivery, jsonStart) = number(bytes, from: afterSequence), jsonStart < bytes.count
      else { return nil }
      var json = jsonStart
      var group: String?
      if bytes[json] == UInt8(ascii: "@") {
        guard let space = bytes[json...].firstIndex(of: 0x20), space < bytes.count - 1 else {
          return nil
        }
        let name = String(decoding: bytes[(json + 1)..<space], as: UTF8.self)
        guard ActivityGroup.isValid(name) else { return nil }
        group = name
        json = space + 1
      }
      return (
        RelayLine(source: source, sequence: sequence, delivery: delivery, group: group), json
      )
    }

    /// A decimal number at `start` followed by a space: the number and where the rest begins.
    private static func number(_ bytes: UnsafeRawBufferPointer, from start: Int) -> (UInt64, Int)? {
      var v: UInt64 = 0
      var i = start
      while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39, i - start < 20 {
        let (m, o1) = v.multipliedReportingOverflow(by: 10)
        let (s, o2) = m.addingReportingOverflow(UInt64(bytes[i] - 0x30))
        guard !o1, !o2 else { return nil }
        v = s
        i += 1
      }
      guard i > start, i < bytes.count, bytes[i] == 0x20 else { return nil }
      return (v, i + 1)
    }
  }

  // MARK: - Snapshots

  /// `{"op":"peerSnapshot","ids":[…],"groups":[…],"group":…}` (each optional): a node asks
  /// another for its part of a subscription's snapshot; `groups` and `group` are the
  /// subscription's scope (docs/security.md, "Groups"), which the part is held to.
  struct SnapshotRequest: Equatable, Sendable {
    var ids: [String]?
    var groups: Set<String>? = nil
    var group: String? = nil

    /// The request line, without its newline.
    var line: [UInt8] {
      var w = JSONWriter()
      w.raw("{\"op\":\"peerSnapshot\"")
      if let ids {
        w.raw(",\"ids\":[")
        for (k, id) in ids.enumerated() {
          if k > 0 { w.raw(",") }
          w.write(string: id)
        }
        w.raw("]")
      }
      if let groups { ScopedCommand.write(groups, into: &w) }
      if let group {
        w.raw(",\"group\":")
        w.write(string: group)
      }
      w.raw("}")
      return w.bytes
    }

    /// The request in `bytes`, or nil when the line is not one.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> Self? {
      guard bytes.starts(with: head), let o = object(bytes),
        case let groups? = ScopedCommand.groups(o["groups"])
      else { return nil }
      var group: String?
      switch o["group"] {
      case nil, .null?: break
      case .string(let g)? where ActivityGroup.isValid(g): group = g
      default: return nil
      }
      switch o["ids"] {
      case nil, .null?: return SnapshotRequest(ids: nil, groups: groups, group: group)
      case .array(let list)?:
        var ids: [String] = []
        for item in list {
          guard case .string(let s) = item else { return nil }
          ids.append(s)
        }
        return SnapshotRequest(ids: ids, groups: groups, group: group)
      default: return nil
      }
    }

    private static let head = Array(#"{"op":"peerSnapshot""#.utf8)
  }

  /// Where a node's part of a snapshot stands in its events (its `peerSnapshot` reply:
  /// `{"rid":null,"ok":true,"at":…,"incarnation":"HEX","from":N,…}`).
  struct SnapshotHead: Equatable, Sendable {
    var incarnation: UInt64
    var from: UInt64

    /// The head of `reply`, or nil when it is not a snapshot's reply (an error, or malformed).
    static func decode(_ reply: [UInt8]) -> Self? {
      guard let o = head(of: reply), o["ok"] == .bool(true),
        case .string(let hex)? = o["incarnation"], let incarnation = UInt64(hex, radix: 16),
        case .int(let from)? = o["from"], from >= 0
      else { return nil }
      return SnapshotHead(incarnation: incarnation, from: UInt64(from))
    }
  }

  // MARK: - Forwarded HTTP commands

  /// `{"op":"peerHTTP","method":M,"id":ID|null,"body":{…}}`: an HTTP command forwarded to
  /// the node that serves its activity, its `method`, `id` and `body` as they came, run
  /// there with HTTP's rules; the reply carries the `activity` object (``activity(in:)``).
  struct HTTPCommand: Equatable, Sendable {
    var method: String
    var id: String?
    /// The body as it came: a JSON object, or nothing (sent as `{}`).
    var body: [UInt8]
    /// The groups of the caller's key (docs/security.md, "Groups"), which the node that runs
    /// the command holds it to; nil for a key without groups.
    var groups: Set<String>? = nil

    /// The request line, without its newline.
    var line: [UInt8] {
      var w = JSONWriter()
      w.raw("{\"op\":\"peerHTTP\",\"method\":")
      w.write(string: method)
      w.raw(",\"id\":")
      if let id { w.write(string: id) } else { w.raw("null") }
      if let groups { ScopedCommand.write(groups, into: &w) }
      w.raw(",\"body\":")
      let trimmed = body.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
      if trimmed.isEmpty { w.raw("{}") } else { w.bytes.append(contentsOf: body) }
      w.raw("}")
      return w.bytes
    }

    /// The command in `bytes`, its body as an object (its canonical text is what the
    /// receiving node decodes), or nil when the line is not one.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> (
      method: String, id: String?, body: [String: JSONValue], groups: Set<String>?
    )? {
      guard bytes.starts(with: head), let o = object(bytes),
        case .string(let method)? = o["method"], case .object(let body)? = o["body"],
        let groups = ScopedCommand.groups(o["groups"])
      else { return nil }
      switch o["id"] {
      case .string(let s)?: return (method, s, body, groups)
      case .null?: return (method, nil, body, groups)
      default: return nil
      }
    }

    private static let head = Array(#"{"op":"peerHTTP""#.utf8)
  }

  /// A request line of the socket protocol that a node sends on for a key with groups (a
  /// command for another node's activity, a list gathered from every node): the node that
  /// runs it holds it to the key's groups (docs/security.md, "Groups").
  /// `{"op":"peerScoped","groups":[…],"line":{…}}`.
  struct ScopedCommand: Equatable, Sendable {
    var groups: Set<String>
    /// The request line as it came (a JSON object).
    var line: [UInt8]

    /// The wrapped line, without its newline.
    var wrapped: [UInt8] {
      var w = JSONWriter()
      w.raw("{\"op\":\"peerScoped\"")
      Self.write(groups, into: &w)
      w.raw(",\"line\":")
      w.bytes.append(contentsOf: line)
      w.raw("}")
      return w.bytes
    }

    /// `,"groups":[…]`, sorted.
    static func write(_ groups: Set<String>, into w: inout JSONWriter) {
      w.raw(",\"groups\":[")
      for (k, g) in groups.sorted().enumerated() {
        if k > 0 { w.raw(",") }
        w.write(string: g)
      }
      w.raw("]")
    }

    /// A `groups` member's value: `.some(nil)` when absent, nil when it is not an array of
    /// group names.
    static func groups(_ value: JSONValue?) -> Set<String>?? {
      guard let value else { return .some(nil) }
      guard case .array(let items) = value else { return nil }
      var out: Set<String> = []
      for item in items {
        guard case .string(let g) = item, ActivityGroup.isValid(g) else { return nil }
        out.insert(g)
      }
      return .some(out)
    }

    /// The wrapped command in `bytes` (its line re-encoded, canonical), or nil when the line
    /// is not one.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> ScopedCommand? {
      guard bytes.starts(with: head), let o = object(bytes), case .object(let line)? = o["line"],
        case let groups?? = groups(o["groups"])
      else { return nil }
      return ScopedCommand(groups: groups, line: Array(JSONValue.object(line).canonicalText.utf8))
    }

    private static let head = Array(#"{"op":"peerScoped""#.utf8)
  }

  // MARK: - Replies

  /// Whether `reply` (a reply line of the socket protocol) says `"ok":true`; nil when it is
  /// not a reply at all.
  static func isOK(_ reply: [UInt8]) -> Bool? {
    guard let o = head(of: reply), case .bool(let ok)? = o["ok"]
    else { return nil }
    return ok
  }

  /// The shards a node's part of a list or snapshot holds (its `servedShards` member); nil
  /// when the reply has none or is not a reply.
  static func servedShards(in reply: [UInt8]) -> [Int]? {
    guard let o = head(of: reply), case .array(let list)? = o["servedShards"]
    else { return nil }
    var shards: [Int] = []
    for item in list {
      guard case .int(let n) = item, let s = Int(exactly: n) else { return nil }
      shards.append(s)
    }
    return shards
  }

  /// The `activity` object of a peer's reply (its bytes, as the peer wrote them), or the
  /// error the reply carries, or `unavailable` when it is neither.
  static func activity(in reply: [UInt8]) -> Result<[UInt8], CountdownError> {
    // The object's bytes are taken as written (`"activity":` is a reply's last member): the
    // reply is decoded first, so that a member of that name inside a string is never taken.
    guard let o = reply.withUnsafeBufferPointer({ object($0) }) else {
      return .failure(notAReply(reply))
    }
    if o["ok"] == .bool(true), case .object? = o["activity"],
      let r = reply.firstRange(of: activityMember), reply.last == UInt8(ascii: "}")
    {
      return .success(Array(reply[r.upperBound..<(reply.count - 1)]))
    }
    if let (code, message) = error(o) { return .failure(CountdownError(code, message)) }
    return .failure(notAReply(reply))
  }

  private static let activityMember = Array(#","activity":"#.utf8)

  private static func notAReply(_ reply: [UInt8]) -> CountdownError {
    CountdownError(
      .unavailable,
      "the node serving the activity answered what is not a reply: \(String(decoding: reply.prefix(200), as: UTF8.self))"
    )
  }

  // MARK: - Lines

  /// Splits a peer connection's bytes into lines, keeping the start of a line that a read did
  /// not finish: the one splitter of both kinds of peer connection (forwarded replies and
  /// relays).
  struct LineSplitter {
    private var partial: [UInt8] = []

    #if canImport(NIOCore)
      /// Calls `line` with each whole line in `buffer`, in order, its newline included.
      mutating func split(_ buffer: ByteBuffer, _ line: (UnsafeRawBufferPointer) -> Void) {
        buffer.withUnsafeReadableBytes { split(bytes: $0, line) }
      }
    #endif

    /// Calls `line` with each whole line in `bytes` (what one read gave), in order, its
    /// newline included.
    mutating func split(bytes: UnsafeRawBufferPointer, _ line: (UnsafeRawBufferPointer) -> Void) {
      var start = 0
      while let nl = bytes[start...].firstIndex(of: 0x0A) {
        let piece = UnsafeRawBufferPointer(rebasing: bytes[start...nl])
        if partial.isEmpty {
          line(piece)
        } else {
          partial.append(contentsOf: piece)
          partial.withUnsafeBytes { line($0) }
          partial.removeAll(keepingCapacity: true)
        }
        start = nl + 1
      }
      partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start...]))
    }
  }

  // MARK: - Shared

  /// `{"ok":false,"code":CODE,"message":MESSAGE}` and its newline.
  static func errorLine(_ code: CountdownError.Code, _ message: String) -> [UInt8] {
    var w = JSONWriter()
    w.raw("{\"ok\":false,\"code\":")
    w.write(string: code.rawValue)
    w.raw(",\"message\":")
    w.write(string: message)
    w.raw("}\n")
    return w.bytes
  }

  /// The members of a reply's top-level object that come before its list (`activities` or
  /// `snapshot`), parsed without the list, so that a part's head costs its head and not its
  /// thousands of activities; the whole reply when it has no list. The cut is found by a scan
  /// that knows strings and nesting: a key of that name inside a string or a nested object is
  /// never taken. Nil when the reply is not an object.
  static func head(of reply: [UInt8]) -> JSONMembers? {
    var depth = 0
    var lastComma: Int?
    var cut: Int?
    JSONScan.walk(reply, from: 0) { token in
      switch token {
      case .string(let span):
        guard depth == 1 else { return true }
        var j = span.upperBound + 1
        while j < reply.count, reply[j] == 0x20 || reply[j] == 0x09 { j += 1 }
        guard j < reply.count, reply[j] == UInt8(ascii: ":") else { return true }
        let key = reply[(span.lowerBound + 1)..<span.upperBound]
        guard key.elementsEqual(activitiesKey) || key.elementsEqual(snapshotKey) else {
          return true
        }
        cut = lastComma ?? span.lowerBound
        return false
      case .byte(let i, let b):
        switch b {
        case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
        case UInt8(ascii: ",") where depth == 1: lastComma = i
        default: break
        }
        return true
      }
    }
    guard let cut else { return reply.withUnsafeBufferPointer { object($0) } }
    var head = Array(reply[..<cut])
    head.append(UInt8(ascii: "}"))
    return head.withUnsafeBufferPointer { object($0) }
  }

  private static let activitiesKey = Array("activities".utf8)
  private static let snapshotKey = Array("snapshot".utf8)

  /// The code and message of an error reply's object.
  private static func error(_ o: JSONMembers) -> (CountdownError.Code, String)? {
    guard o["ok"] == .bool(false), case .string(let code)? = o["code"],
      case .string(let message)? = o["message"]
    else { return nil }
    return (CountdownError.Code(rawValue: code), message)
  }

  /// The top-level object of a line, or nil when the line is not one.
  private static func object(_ bytes: UnsafeBufferPointer<UInt8>) -> JSONMembers? {
    guard case .object(let o)? = try? JSONParser.parseTopLevel(bytes: bytes) else { return nil }
    return o
  }

  #if canImport(NIOCore)
    /// `value` in decimal, without making a string.
    static func writeDecimal(_ value: UInt64, into buffer: inout ByteBuffer) {
      var unit: UInt64 = 1
      while unit <= value / 10 { unit *= 10 }
      var rest = value
      while unit > 0 {
        buffer.writeInteger(UInt8(0x30 + rest / unit))
        rest %= unit
        unit /= 10
      }
    }
  #endif
}
