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

/// What a key may do (docs/security.md): its role, and the groups whose activities it sees
/// and commands (nil: every activity).
struct AccessGrant: Sendable, Equatable {
  let role: AccessRole
  let groups: Set<String>?

  /// `--token`'s, and a connection's that needs no key.
  static let admin = AccessGrant(role: .admin, groups: nil)
}

/// `--access FILE` (docs/security.md, "Roles", "Groups"): one key a line,
/// `ROLE KEY [GROUP,GROUP…]`, `#` comments.
///
/// A key is found by a hash of its bytes (Swift's `Hasher`, SipHash seeded at random per
/// process: what the lookup's time depends on cannot be aimed at a key), then compared as
/// bytes in constant time (``TokenCheck``). A file of 10,000 keys costs an HTTP request one
/// hash and one comparison, where comparing every key took each request tens of microseconds.
struct AccessList: Sendable {
  struct Key: Sendable {
    let grant: AccessGrant
    let bytes: [UInt8]
  }

  let keys: [Key]
  /// Each key's position in ``keys``, by its bytes.
  private let positions: [[UInt8]: Int]

  init(keys: [Key]) {
    self.keys = keys
    var positions: [[UInt8]: Int] = [:]
    for (k, key) in keys.enumerated() { positions[key.bytes] = k }
    self.positions = positions
  }

  /// The longest key, in bytes.
  static let maximumKeyLength = 512

  /// What `given` may do, nil when no key is `given`.
  func grant(of given: some Collection<UInt8>) -> AccessGrant? {
    guard given.count <= Self.maximumKeyLength, let k = positions[Array(given)] else {
      return nil
    }
    return TokenCheck.matches(given, keys[k].bytes) ? keys[k].grant : nil
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
      guard words.count <= 3 else {
        throw ServerStartError(
          "\(at): a line is ROLE KEY [GROUP,GROUP…], its groups one word with commas between them, not \(words.count) words"
        )
      }
      var groups: Set<String>?
      if words.count == 3 {
        groups = []
        for name in words[2].split(separator: ",", omittingEmptySubsequences: false) {
          guard ActivityGroup.isValid(name) else {
            throw ServerStartError(
              "\(at): \"\(name)\" is not a group: 1 to \(ActivityGroup.maximumLength) characters of A-Z, a-z, 0-9, '.', '_' or '-', groups separated by commas without spaces"
            )
          }
          groups!.insert(String(name))
        }
      }
      let key = Array(words[1].utf8)
      guard key.count <= maximumKeyLength, key.allSatisfy({ (0x21...0x7E).contains($0) }) else {
        throw ServerStartError(
          "\(at): a key is 1 to \(maximumKeyLength) printable ASCII characters without spaces")
      }
      guard seen.insert(key).inserted else {
        throw ServerStartError("\(at): this key is already on an earlier line; give each key once")
      }
      keys.append(Key(grant: AccessGrant(role: role, groups: groups), bytes: key))
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
