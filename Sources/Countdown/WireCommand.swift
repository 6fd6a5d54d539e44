// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// One command of the JSON Lines protocol (docs/activities.md, "countdown replay"; docs/protocol.md), decoded and checked.
public struct WireCommand: Sendable, Hashable {
  /// What the command does.
  public enum Operation: Sendable, Hashable {
    case start(ActivityRequest)
    case update(ActivityUpdate)
    case pause(timestamp: Instant?)
    case resume(timestamp: Instant?)
    case end(ActivityEnding)
    case get
    /// Only moves the clock.
    case advance
    /// Engine-wide options; each is left alone when nil (`maxActivities` and
    /// `maxActiveDurationMs` may be set to `null` with `.remove`).
    case configure(enabled: Bool?, maxActivities: Change<Int>, maxActiveDurationMs: Change<Int64>)
  }

  /// The instant the command applies at.
  public var at: Instant
  /// The activity, for every operation but `advance` and `configure` (and an optional one for
  /// `start`).
  public var id: String?
  public var operation: Operation

  /// The operation names the protocol knows.
  public static let operations = [
    "start", "update", "pause", "resume", "end", "get", "advance", "configure",
  ]
}

/// A line the codec could not turn into a command: the error, and whatever of the line was
/// readable for the error event.
public struct WireDecodingFailure: Error, Sendable {
  public var error: CountdownError
  /// The line's `at`, when it was a valid instant.
  public var at: Instant?
  /// The line's `id`, when it was a string.
  public var id: String?
}

extension WireCommand {
  /// Decodes one JSON line. Unknown keys are rejected so that a misspelt optional field is
  /// reported instead of silently ignored.
  /// Decodes one JSON line from raw bytes, as they come from a file or a socket. Bytes that
  /// are not UTF-8 are rejected with `invalidPayload` naming the first bad byte, never
  /// replaced: a corrupt byte must not silently change an id or a title.
  public static func decode(
    bytes: UnsafeBufferPointer<UInt8>
  ) -> Result<WireCommand, WireDecodingFailure> {
    let top: JSONTopLevel
    do throws(CountdownError) {
      try UTF8Validation.check(bytes)
      top = try JSONParser.parseTopLevel(bytes: bytes)
    } catch {
      return .failure(WireDecodingFailure(error: error, at: nil, id: nil))
    }
    switch top {
    case .object(let members): return decode(members)
    case .other(let json): return decode(json)
    }
  }

  /// Decodes one JSON line.
  public static func decode(line: some StringProtocol) -> Result<WireCommand, WireDecodingFailure> {
    let json: JSONValue
    do {
      json = try JSONParser.parse(line)
    } catch {
      return .failure(WireDecodingFailure(error: error, at: nil, id: nil))
    }
    return decode(json)
  }

  /// Decodes a parsed JSON command.
  public static func decode(_ json: JSONValue) -> Result<WireCommand, WireDecodingFailure> {
    guard case .object(let o) = json else {
      return .failure(
        WireDecodingFailure(
          error: .payload("a command must be a JSON object, not \(json.typeName)"), at: nil, id: nil
        ))
    }
    return decode(JSONMembers(o))
  }

  /// Decodes a command from the members of its object, checking `at` like any other field.
  private static func decode(_ o: JSONMembers) -> Result<WireCommand, WireDecodingFailure> {
    var id: String?
    if case .string(let s)? = o["id"] { id = s }
    var at: Instant?
    do throws(CountdownError) {
      guard let rawAt = o["at"] else { throw CountdownError.payload("at is required") }
      at = try WireFields.instant("at", rawAt)
      let command = try decodeBody(o, at: at!)
      return .success(command)
    } catch {
      return .failure(WireDecodingFailure(error: error, at: at, id: id))
    }
  }

  /// Decodes a command whose instant is given rather than read: the service runs each
  /// command at its own clock and rejects a request's `at` before it gets here.
  package static func decode(
    members o: JSONMembers, at: Instant
  ) throws(CountdownError) -> WireCommand {
    try decodeBody(o, at: at)
  }

  private static func decodeBody(
    _ o: JSONMembers, at: Instant
  ) throws(CountdownError) -> WireCommand {
    guard let opValue = o["op"] else {
      throw .payload("op is required: one of \(operations.joined(separator: ", "))")
    }
    guard case .string(let op) = opValue else {
      throw .payload("op must be a string, not \(opValue.typeName)")
    }
    var f = WireFields(o)
    f.take("at")
    f.take("op")
    let operation: Operation
    var id: String?
    switch op {
    case "start":
      id = try f.string("id")
      operation = .start(try f.startRequest(id: id))
    case "update":
      id = try f.requiredID()
      operation = .update(try f.update())
    case "pause":
      id = try f.requiredID()
      operation = .pause(timestamp: try f.optionalInstant("timestamp"))
    case "resume":
      id = try f.requiredID()
      operation = .resume(timestamp: try f.optionalInstant("timestamp"))
    case "end":
      id = try f.requiredID()
      operation = .end(try f.ending())
    case "get":
      id = try f.requiredID()
      operation = .get
    case "advance":
      operation = .advance
    case "configure":
      operation = try f.configure()
    default:
      throw .payload(
        "unknown op \(JSONValue.string(op)); expected one of \(operations.joined(separator: ", "))")
    }
    try f.rejectUnknown(op: op)
    return WireCommand(at: at, id: id, operation: operation)
  }
}
