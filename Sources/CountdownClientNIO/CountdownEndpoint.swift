// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// Where a `countdown serve` listens: its Unix socket, or its TCP address (`--listen`),
/// plain or over TLS.
public enum CountdownEndpoint: Sendable, Hashable, CustomStringConvertible {
  /// The server's Unix domain socket (`--socket`).
  case unix(String)
  /// The server's TCP listener (`--listen HOST:PORT`), over TLS when `tls` is given (a server
  /// started with `--tls-cert` and `--tls-key`).
  case tcp(host: String, port: Int, tls: CountdownTLS? = nil)

  /// Reads `unix:PATH` or `tcp:HOST:PORT` (an IPv6 host in brackets: `tcp:[::1]:7400`), as
  /// the CLI's `--connect` takes it; `tls` applies to a TCP address.
  /// - Throws: `invalidPayload` naming what is wrong.
  public init(parsing text: String, tls: CountdownTLS? = nil) throws(CountdownError) {
    if text.hasPrefix("unix:") {
      let path = String(text.dropFirst(5))
      guard !path.isEmpty else {
        throw CountdownError(.invalidPayload, "\(text): unix: needs the socket's path after it")
      }
      guard tls == nil else {
        throw CountdownError(
          .invalidPayload, "\(text): TLS is for a TCP address; a Unix socket is guarded by its mode"
        )
      }
      self = .unix(path)
      return
    }
    guard text.hasPrefix("tcp:") else {
      throw CountdownError(
        .invalidPayload, "\(text) is neither unix:PATH nor tcp:HOST:PORT")
    }
    let rest = text.dropFirst(4)
    var host: Substring
    var portText: Substring
    if rest.hasPrefix("[") {
      guard let close = rest.firstIndex(of: "]"),
        rest[rest.index(after: close)...].hasPrefix(":")
      else {
        throw CountdownError(.invalidPayload, "\(text): an IPv6 host is written [ADDRESS]:PORT")
      }
      host = rest[rest.index(after: rest.startIndex)..<close]
      portText = rest[rest.index(close, offsetBy: 2)...]
    } else {
      guard let colon = rest.lastIndex(of: ":") else {
        throw CountdownError(.invalidPayload, "\(text): tcp: needs HOST:PORT")
      }
      host = rest[..<colon]
      portText = rest[rest.index(after: colon)...]
    }
    guard !host.isEmpty else { throw CountdownError(.invalidPayload, "\(text) has no host") }
    guard let port = Int(portText), (1...65535).contains(port) else {
      throw CountdownError(
        .invalidPayload, "\(text): the port \"\(portText)\" is not a number from 1 to 65535")
    }
    self = .tcp(host: String(host), port: port, tls: tls)
  }

  public var description: String {
    switch self {
    case .unix(let path): "unix:\(path)"
    case .tcp(let host, let port, let tls):
      (host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)")
        + (tls == nil ? "" : " (TLS)")
    }
  }
}

/// TLS to a server's TCP listener: the system's trusted certificates, and a CA file's.
public struct CountdownTLS: Sendable, Hashable {
  /// A PEM file of certificates trusted beside the system's (a kiosk LAN's own CA).
  public var caFile: String?
  /// The name the server's certificate must carry (default: the host connected to).
  public var serverName: String?

  public init(caFile: String? = nil, serverName: String? = nil) {
    self.caFile = caFile
    self.serverName = serverName
  }
}

extension CountdownError.Code {
  /// Client only: the connection to the server could not be made, or the server closed it or
  /// was cut off while a call waited; the message says which. A call that failed so may or
  /// may not have been carried out: a `get` tells.
  public static let connectionClosed = CountdownError.Code(rawValue: "connectionClosed")
  /// Client only: the server sent a line that is not a reply or an event, or a reply when no
  /// request waited; the connection is closed.
  public static let unexpectedReply = CountdownError.Code(rawValue: "unexpectedReply")
}
