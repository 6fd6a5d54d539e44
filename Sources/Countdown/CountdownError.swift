// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// The one error type of Countdown: a code from the protocol's list and a message a person can
/// act on, naming the field and the value at fault.
public struct CountdownError: Error, Hashable, Sendable, CustomStringConvertible {
  /// A protocol error code (docs/errors.md). Its raw value is the name used on the wire.
  public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The payload is malformed: bad JSON, a wrong type, a missing or unknown field.
    public static let invalidPayload = Code(rawValue: "invalidPayload")
    /// An instant is out of range (looks like seconds, or beyond the year 9999).
    public static let invalidDate = Code(rawValue: "invalidDate")
    /// The content's JSON encoding is over 4096 bytes.
    public static let attributesTooLarge = Code(rawValue: "attributesTooLarge")
    /// An activity with that id is already running (not yet dismissed).
    public static let duplicateID = Code(rawValue: "duplicateID")
    /// No activity has that id (it never existed or was dismissed).
    public static let notFound = Code(rawValue: "notFound")
    /// The activity has ended; only queries are accepted.
    public static let activityEnded = Code(rawValue: "activityEnded")
    /// The update's `timestamp` is older than the last applied one.
    public static let outOfOrder = Code(rawValue: "outOfOrder")
    /// `maxActivities` activities already exist.
    public static let limitReached = Code(rawValue: "limitReached")
    /// The engine is disabled; nothing can start.
    public static let disabled = Code(rawValue: "disabled")
    /// A command's instant is earlier than the clock.
    public static let timeWentBackwards = Code(rawValue: "timeWentBackwards")
    /// A line of the service protocol is over 65536 bytes (docs/protocol.md); it was skipped.
    public static let lineTooLong = Code(rawValue: "lineTooLong")
    /// The connection must authenticate first, or the token is wrong (docs/protocol.md).
    public static let unauthorized = Code(rawValue: "unauthorized")
    /// HTTP only: a browser page on another origin tried to change state (docs/security.md); 403.
    public static let forbidden = Code(rawValue: "forbidden")
    /// HTTP only: the `Host` header names another server (DNS rebinding); 421.
    public static let misdirected = Code(rawValue: "misdirected")
    /// A subscriber stayed over its output bound too long and is disconnected (docs/protocol.md).
    public static let slowConsumer = Code(rawValue: "slowConsumer")
    /// The service could not store the command's change (disk full, I/O error): the command
    /// is not in effect, and nothing acknowledged before it is lost (docs/state-file.md).
    public static let storageFailed = Code(rawValue: "storageFailed")
    /// The driver was shut down before the command ran.
    public static let shutdown = Code(rawValue: "shutdown")
    /// A cluster node does not serve the activity's shard now: the message names the shard
    /// and, when known, the node that does (docs/cluster.md). Nothing changed; try again.
    public static let unavailable = Code(rawValue: "unavailable")
    /// The operating system refused what the driver needs (a descriptor, a thread, a timer);
    /// the message names the call and the error.
    public static let systemError = Code(rawValue: "systemError")

    public var description: String { rawValue }

    /// Every code, in the order above.
    package static let allCases: [Code] = [
      .invalidPayload, .invalidDate, .attributesTooLarge, .duplicateID, .notFound, .activityEnded,
      .outOfOrder, .limitReached, .disabled, .timeWentBackwards, .lineTooLong, .unauthorized,
      .slowConsumer, .storageFailed, .shutdown, .systemError, .forbidden, .misdirected,
      .unavailable,
    ]
  }

  /// What kind of error this is.
  public var code: Code
  /// What went wrong, naming the field and value.
  public var message: String

  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  public var description: String { "\(code.rawValue): \(message)" }

  package static func payload(_ message: String) -> CountdownError {
    .init(.invalidPayload, message)
  }
}
