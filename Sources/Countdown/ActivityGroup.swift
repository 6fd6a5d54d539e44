// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// The rule for an activity's group (``ActivityRequest/group``) and an access key's groups
/// (docs/security.md): 1–64 bytes of `A–Z`, `a–z`, `0–9`, `.`, `_` and `-`, so that a group
/// name is safe in a query string, a file of keys and a log line as it stands.
public enum ActivityGroup {
  /// The longest group name, in bytes.
  public static let maximumLength = 64

  /// Whether `name` is a group name.
  public static func isValid(_ name: some StringProtocol) -> Bool {
    let utf8 = name.utf8
    guard !utf8.isEmpty, utf8.count <= maximumLength else { return false }
    return utf8.allSatisfy { b in
      (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
        || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
    }
  }

  /// `name`, checked.
  /// - Throws: `invalidPayload` naming `field` and the rule when `name` is not a group name.
  public static func validated(_ name: String, field: String = "group") throws(CountdownError)
    -> String
  {
    guard isValid(name) else {
      throw .payload(
        "\(field) must be 1–\(maximumLength) characters of A–Z, a–z, 0–9, '.', '_' or '-', not \(JSONValue.string(name).canonicalText)"
      )
    }
    return name
  }
}
