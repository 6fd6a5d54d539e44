// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import CountdownClient

/// Secrets kept out of the process list: a token, a key or a webhook secret in a file.
enum SecretFile {
  /// The first line of the file at `path` (a secret kept out of the process list), not empty.
  static func firstLine(of path: String, _ what: String, _ name: String) throws -> String {
    let fd = try System.openInput(path)
    defer { System.close(fd) }
    var reader = LineReader(fd: fd)
    var first: [UInt8]?
    try reader.forEachLine { line in if first == nil { first = Array(line) } }
    var bytes = first ?? []
    if bytes.last == 0x0D { bytes.removeLast() }
    guard !bytes.isEmpty, let text = String(validating: bytes, as: UTF8.self) else {
      throw IOFailure(
        message: "\(what) \(path) has no \(name): its first line is the \(name) (UTF-8)")
    }
    return text
  }
}

/// `--key-file` of the clients (`countdown send`, `countdown board`): the key the connection
/// authenticates with (docs/security.md, "Roles"), so that it has the key's role.
struct KeyOptions: ParsableArguments {
  @Option(
    name: .customLong("key-file"),
    help: ArgumentHelp(
      "Authenticate with the key in FILE (its first line): the connection has its role. COUNTDOWN_KEY in the environment also gives it.",
      valueName: "FILE"))
  var keyFile: String?

  /// The key from `--key-file` or `COUNTDOWN_KEY`; nil when neither gives one.
  func key() throws -> String? {
    if let keyFile { return try SecretFile.firstLine(of: keyFile, "the key file", "key") }
    if let key = System.environment("COUNTDOWN_KEY"), !key.isEmpty { return key }
    return nil
  }

  /// The `auth` request that gives the connection `key`'s role, as a line.
  static func authLine(_ key: String, rid: String = "auth") -> String {
    #"{"rid":"\#(rid)","op":"auth","token":\#(JSONValue.string(key).canonicalText)}"#
  }
}
