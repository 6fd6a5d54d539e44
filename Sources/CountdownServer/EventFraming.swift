// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import NIOCore

/// How a subscriber's events are framed.
enum EventFraming {
  /// JSON Lines (the socket protocol, docs/protocol.md).
  case lines
  /// Server-sent events (`GET /v1/events`, docs/http.md): `event:` the kind's name, `data:`
  /// the JSON, a blank line.
  case serverSentEvents

  /// Calls `append` with the bytes of an event of `kind` whose JSON line (with its newline)
  /// is `line`, framed this way.
  func frame(
    _ line: UnsafeBufferPointer<UInt8>, kind: ActivityEvent.Kind,
    into append: (UnsafeBufferPointer<UInt8>) -> Void
  ) {
    guard self == .serverSentEvents else {
      append(line)
      return
    }
    Self.eventHeads[kind]!.withUnsafeBufferPointer(append)
    append(UnsafeBufferPointer(rebasing: line.dropLast()))
    Self.messageEnd.withUnsafeBufferPointer(append)
  }

  /// The most bytes framing adds to one event's line.
  var overhead: Int { self == .lines ? 0 : Self.sseOverhead }

  /// `json` (one line, with or without its newline) as an SSE message named `name`: for the
  /// messages that are not events (the snapshot, an error).
  static func sse(_ name: String, _ json: [UInt8]) -> [UInt8] {
    var bytes = Array("event: \(name)\ndata: ".utf8)
    bytes += json.last == 0x0A ? json.dropLast() : json[...]
    bytes += messageEnd
    return bytes
  }

  /// `prefix`, then ``sse(_:_:)`` of `json`, in one buffer from `allocator` made for them and
  /// `room` more bytes: a snapshot of 100k activities is about 25 MB, and each copy of it (an
  /// array growing by doubling, a concatenation, a buffer of the result) costs as much again
  /// in the allocator's arenas of the thread that made it.
  static func sse(
    _ name: String, _ json: [UInt8], prefix: String, room: Int, allocator: ByteBufferAllocator
  ) -> ByteBuffer {
    let head = prefix + "event: \(name)\ndata: "
    let body = json.last == 0x0A ? json.dropLast() : json[...]
    var buffer = allocator.buffer(capacity: head.utf8.count + body.count + 2 + room)
    buffer.writeString(head)
    buffer.writeBytes(body)
    buffer.writeBytes(messageEnd)
    return buffer
  }

  /// Each kind's `event: NAME\ndata: `, derived from the kinds themselves.
  private static let eventHeads: [ActivityEvent.Kind: [UInt8]] = Dictionary(
    uniqueKeysWithValues: ActivityEvent.Kind.allCases.map {
      ($0, Array("event: \($0.rawValue)\ndata: ".utf8))
    })
  private static let messageEnd: [UInt8] = [0x0A, 0x0A]
  /// The head and the end less the line's own newline.
  private static let sseOverhead =
    eventHeads.values.map(\.count).max()! + messageEnd.count - 1
}
