// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// A JSON value as the wire carries it. Integers that fit `Int64` stay exact; other numbers are
/// `Double`. Objects keep the last value of a repeated key.
public enum JSONValue: Hashable, Sendable {
  case null
  case bool(Bool)
  case int(Int64)
  case double(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])

  /// The value's JSON type name, for messages.
  public var typeName: String {
    switch self {
    case .null: "null"
    case .bool: "boolean"
    case .int, .double: "number"
    case .string: "string"
    case .array: "array"
    case .object: "object"
    }
  }

  /// The object's members, or nil when this is not an object.
  public var objectValue: [String: JSONValue]? {
    if case .object(let o) = self { return o }
    return nil
  }

  /// Compact JSON with object keys sorted by their UTF-8 bytes.
  public var canonicalText: String {
    var out = JSONWriter()
    out.write(self)
    return out.string
  }
}

extension JSONValue: CustomStringConvertible {
  public var description: String { canonicalText }
}
