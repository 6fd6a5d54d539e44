// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import NIOCore

extension ServiceMessage {
  /// A line a connection read (its newline gone), decoded; one that is neither a reply nor an
  /// event is `unexpectedReply`, naming `endpoint`: the connection that read it closes.
  init(_ line: ByteBuffer, from endpoint: CountdownEndpoint) throws(CountdownError) {
    do {
      self = try line.withUnsafeReadableBytes { raw throws(ServiceMessageError) in
        try ServiceMessage(line: raw.bindMemory(to: UInt8.self))
      }
    } catch {
      throw CountdownError(
        .unexpectedReply,
        "\(endpoint) sent a line that is not a reply or an event (\(error.message)); the connection is closed"
      )
    }
  }
}

extension ServiceFailure {
  /// The error the server answered with, as the client throws it.
  var error: CountdownError { CountdownError(CountdownError.Code(rawValue: code), message) }
}
