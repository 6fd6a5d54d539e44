// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// A request's `rid`, copied verbatim into its reply: a string of at most 128 bytes, or an
/// integer.
package enum RequestID: Sendable, Hashable {
  case string(String)
  case int(Int64)
}

/// What a `list` request asks for.
package enum ListQuery: Sendable, Hashable {
  case all
  case soonest(Int)
  case endedWithin(milliseconds: Int64)
}

/// One request line of the service protocol (docs/protocol.md), decoded on a network thread.
package enum ServerRequest: Sendable {
  /// A §5 command, run at the loop's now.
  case command(WireCommand.Operation, id: String?)
  /// `group`: only that group's activities (docs/security.md, "Groups").
  case subscribe(ids: [String]?, ticks: Bool, group: String? = nil)
  case unsubscribe
  /// `group`: only that group's activities.
  case list(ListQuery, group: String? = nil)
  case ping
  case auth(token: String)
  /// A cluster's nodes and shards as this node sees them (docs/cluster.md).
  case cluster

  /// A request line's `rid` (when it was readable) and what it asks, or why it cannot be run.
  package struct Decoded: Sendable {
    package var rid: RequestID?
    package var request: Result<ServerRequest, CountdownError>
    /// The groups of the key the request came with (docs/security.md, "Groups"); nil for a
    /// key without groups, and for a connection that needs no key.
    package var keyGroups: Set<String>?

    package init(
      rid: RequestID?, request: Result<ServerRequest, CountdownError>,
      keyGroups: Set<String>? = nil
    ) {
      self.rid = rid
      self.request = request
      self.keyGroups = keyGroups
    }
  }

  /// The ops a request may name.
  package static let operations = [
    "start", "update", "pause", "resume", "end", "get", "configure", "subscribe", "unsubscribe",
    "list", "ping", "auth", "cluster",
  ]

  /// Decodes one line (without its newline). Never throws: a bad line is a `Decoded` whose
  /// request is the error to reply with.
  package static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> Decoded {
    let top: JSONTopLevel
    do throws(CountdownError) {
      try UTF8Validation.check(bytes)
      top = try JSONParser.parseTopLevel(bytes: bytes)
    } catch {
      return Decoded(rid: nil, request: .failure(error))
    }
    var o: JSONMembers
    switch top {
    case .object(let members): o = members
    case .other(let json):
      return Decoded(
        rid: nil,
        request: .failure(.payload("a request must be a JSON object, not \(json.typeName)")))
    }
    var rid: RequestID?
    if let raw = o.removeValue(forKey: "rid") {
      switch raw {
      case .string(let s) where s.utf8.count <= 128: rid = .string(s)
      case .int(let n): rid = .int(n)
      default:
        return Decoded(
          rid: nil,
          request: .failure(
            .payload("rid must be a string of at most 128 bytes or an integer, not \(raw)")))
      }
    }
    return Decoded(rid: rid, request: Result { () throws(CountdownError) in try request(o) })
  }

  /// Decodes an HTTP request (docs/http.md) as the §6 request `op`: the JSON object `body` (none
  /// or empty: no fields) with the path's `id`. The body may name neither `op` nor `at`, nor an
  /// `id` when the path has one.
  package static func decode(
    op: String, id: String?, body: UnsafeBufferPointer<UInt8>?
  ) -> Result<ServerRequest, CountdownError> {
    Result { () throws(CountdownError) in
      var o = JSONMembers()
      if let body, body.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) {
        try UTF8Validation.check(body)
        switch try JSONParser.parseTopLevel(bytes: body) {
        case .object(let members): o = members
        case .other(let json):
          throw .payload("the request body must be a JSON object, not \(json.typeName)")
        }
      }
      // (`at` is refused by `request(_:)`, as on the socket.)
      if o["op"] != nil {
        throw .payload("the body has no \"op\": the method and path say what to do")
      }
      if let id {
        if o["id"] != nil { throw .payload("the body has no \"id\": the path names the activity") }
        o["id"] = .string(id)
      }
      o["op"] = .string(op)
      return try request(o)
    }
  }

  /// Decodes the query of an HTTP `GET` (docs/http.md) as the request `op` (`list` from
  /// `GET /v1/activities`, `subscribe` from `GET /v1/events`): each parameter the operation
  /// takes becomes the JSON member a socket request would carry, and is checked by the same
  /// decoder, so a parameter means the same and fails alike on both. `query` gives a
  /// parameter's text; other parameters (`token`) are not looked at.
  package static func decode(op: String, query: (String) -> Substring?) -> Result<
    ServerRequest, CountdownError
  > {
    Result { () throws(CountdownError) in
      var o = JSONMembers()
      o["op"] = .string(op)
      for name in queryParameters[op] ?? [] {
        guard let text = query(name) else { continue }
        o[name] =
          if name == "ids" {
            .array(text.split(separator: ",").map { .string(String($0)) })
          } else if name == "group" {
            .string(String(text))
          } else if text == "true" || text == "false" {
            .bool(text == "true")
          } else if let n = Int64(text) {
            .int(n)
          } else {
            .string(String(text))
          }
      }
      return try request(o)
    }
  }

  /// The parameters an HTTP query may give, by operation (`ids` is a comma-separated list).
  private static let queryParameters = [
    "list": ["soonest", "endedWithinMs", "group"], "subscribe": ["ids", "ticks", "group"],
  ]

  private static func request(_ o: JSONMembers) throws(CountdownError) -> ServerRequest {
    if o["at"] != nil {
      throw .payload("a request has no \"at\": the server stamps each request with its own clock")
    }
    guard case .string(let op)? = o["op"] else {
      throw .payload("op is required: one of \(operations.joined(separator: ", "))")
    }
    func only(_ keys: Set<String>) throws(CountdownError) {
      for key in o.allKeys.sorted() where key != "op" && !keys.contains(key) {
        throw .payload("unknown field \(JSONValue.string(key)) for op \(op)")
      }
    }
    func count(_ field: String) throws(CountdownError) -> Int64 {
      guard case .int(let n)? = o[field], n >= 0 else {
        throw .payload(
          "\(field) must be a whole number ≥ 0, not \(o[field]?.canonicalText ?? "null")")
      }
      return n
    }
    func group() throws(CountdownError) -> String? {
      switch o["group"] {
      case nil, .null?: return nil
      case .string(let g)?: return try ActivityGroup.validated(g)
      case let other?: throw .payload("group must be a string, not \(other.canonicalText)")
      }
    }
    switch op {
    case "start", "update", "pause", "resume", "end", "get", "configure":
      // The §5 decoder, at a placeholder instant: the loop runs the command at its own now.
      let c = try WireCommand.decode(members: o, at: Instant.wireMinimum)
      return .command(c.operation, id: c.id)
    case "advance":
      throw .payload(
        "advance moves replay's virtual clock; the server runs on the real clock, so there is nothing to advance"
      )
    case "subscribe":
      try only(["ids", "ticks", "group"])
      var ids: [String]?
      switch o["ids"] {
      case nil, .null?: ids = nil
      case .array(let items)?:
        ids = []
        for item in items {
          guard case .string(let s) = item else {
            throw .payload("ids must be an array of strings")
          }
          ids!.append(s)
        }
      default: throw .payload("ids must be an array of strings")
      }
      var ticks = false
      switch o["ticks"] {
      case nil, .null?: break
      case .bool(let b)?: ticks = b
      case .int(let n)? where n == 0 || n == 1: ticks = n == 1
      case let other?:
        throw .payload("ticks must be true or false (or 1 or 0), not \(other.canonicalText)")
      }
      return .subscribe(ids: ids, ticks: ticks, group: try group())
    case "unsubscribe":
      try only([])
      return .unsubscribe
    case "ping":
      try only([])
      return .ping
    case "cluster":
      try only([])
      return .cluster
    case "list":
      try only(["soonest", "endedWithinMs", "group"])
      let g = try group()
      switch (o["soonest"], o["endedWithinMs"]) {
      case (nil, nil): return .list(.all, group: g)
      case (_?, nil): return .list(.soonest(Int(clamping: try count("soonest"))), group: g)
      case (nil, _?):
        return .list(.endedWithin(milliseconds: try count("endedWithinMs")), group: g)
      default: throw .payload("list takes soonest or endedWithinMs, not both")
      }
    case "auth":
      try only(["token"])
      guard case .string(let token)? = o["token"] else {
        throw .payload("auth needs a token string")
      }
      return .auth(token: token)
    default:
      throw .payload(
        "unknown op \(JSONValue.string(op)); expected one of \(operations.joined(separator: ", "))")
    }
  }
}
