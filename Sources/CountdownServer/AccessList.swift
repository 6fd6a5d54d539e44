// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownProtocol

/// A key's role (docs/security.md, "Roles"), each including the one before: `view` looks,
/// `control` also runs activities, `admin` also configures the server and reads its metrics
/// and cluster.
public enum AccessRole: Int, Comparable, Sendable, CaseIterable {
  /// `GET` of activities, `/v1/time`, `/v1/events`, the board; the socket's `get`, `list`,
  /// `subscribe`, `unsubscribe`, `ping`.
  case view
  /// Also `start`, `update`, `pause`, `resume`, `end`.
  case control
  /// Also `configure`, `/metrics`, `/v1/cluster`, the socket's `cluster` and `advance`.
  case admin

  /// Its name in the access file and in errors.
  public var name: String {
    switch self {
    case .view: "view"
    case .control: "control"
    case .admin: "admin"
    }
  }

  public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

  /// The role a socket request needs.
  static func needed(_ request: ServerRequest) -> AccessRole {
    switch request {
    case .ping, .subscribe, .unsubscribe, .list, .auth: .view
    case .cluster: .admin
    case .command(let operation, _):
      switch operation {
      case .get: .view
      case .start, .update, .pause, .resume, .end: .control
      default: .admin
      }
    }
  }

  /// The role an HTTP request of `method` on `path` (its segments) needs.
  static func needed(method: String, path: [Substring]) -> AccessRole {
    if path == ["metrics"] || path == ["v1", "cluster"] { return .admin }
    if method == "GET" || method == "HEAD" || method == "OPTIONS" { return .view }
    return .control
  }
}

/// `--access FILE` (docs/security.md, "Roles"): one key a line, `ROLE KEY`, `#` comments.
/// Keys are compared as bytes in constant time (``TokenCheck``), every key of the list each
/// time, so that the time a check takes says nothing of which key is near.
struct AccessList: Sendable {
  struct Key: Sendable {
    let role: AccessRole
    let bytes: [UInt8]
  }

  let keys: [Key]

  /// The longest key, in bytes.
  static let maximumKeyLength = 512

  /// The role of `given`, nil when no key is `given`.
  func role(of given: some Collection<UInt8>) -> AccessRole? {
    var found: AccessRole?
    for key in keys where TokenCheck.matches(given, key.bytes) && found == nil {
      found = key.role
    }
    return found
  }

  /// Reads the file's text; an error names the line and what is wrong with it.
  static func parse(_ text: String, source: String) throws(ServerStartError) -> AccessList {
    var keys: [Key] = []
    var seen: Set<[UInt8]> = []
    for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let line =
        raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first
        ?? ""
      let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
      if words.isEmpty { continue }
      let at = "\(source) line \(n + 1)"
      guard let role = AccessRole.allCases.first(where: { $0.name == words[0] }) else {
        throw ServerStartError(
          "\(at): \"\(words[0])\" is not a role; a line is ROLE KEY, ROLE one of view, control, admin"
        )
      }
      guard words.count >= 2 else {
        throw ServerStartError("\(at): a \(role.name) line needs its key")
      }
      if words.count > 2 {
        throw ServerStartError(
          "\(at): groups (\(words[2...].joined(separator: " "))) are not enforced by this build; a key with groups would see every activity, so none is taken: give ROLE KEY only"
        )
      }
      let key = Array(words[1].utf8)
      guard key.count <= maximumKeyLength, key.allSatisfy({ (0x21...0x7E).contains($0) }) else {
        throw ServerStartError(
          "\(at): a key is 1 to \(maximumKeyLength) printable ASCII characters without spaces")
      }
      guard seen.insert(key).inserted else {
        throw ServerStartError("\(at): this key is already on an earlier line; give each key once")
      }
      keys.append(Key(role: role, bytes: key))
    }
    return AccessList(keys: keys)
  }

  /// Reads `path`: its mode must let neither its group nor others read it (0600 or stricter),
  /// as a key file's must.
  static func load(_ path: String) throws(ServerStartError) -> AccessList {
    if let problem = System.fileModeProblem(path) {
      throw ServerStartError("--access \(path): \(problem)")
    }
    let bytes = try System.readSmallFile(path).mapError {
      ServerStartError("--access: \($0.message)")
    }.get()
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw ServerStartError("--access \(path): not UTF-8 text")
    }
    return try parse(text, source: "--access \(path)")
  }
}
