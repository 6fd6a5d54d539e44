// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import CountdownClientNIO

/// Where the clients (`countdown send`, `countdown board`) reach the server: its Unix socket
/// (`--socket`, the default) or any address (`--connect`), over TLS with `--tls` or
/// `--tls-ca`.
struct ConnectOptions: ParsableArguments {
  @Option(help: "The server's Unix domain socket (when --connect is not given).")
  var socket = "countdown.sock"

  @Option(
    help: ArgumentHelp(
      "The server: unix:PATH, or tcp:HOST:PORT (its --listen; an IPv6 host in brackets).",
      valueName: "ADDRESS"))
  var connect: String?

  @Flag(help: "Use TLS to a tcp: address, trusting the system's certificates.")
  var tls = false

  @Option(
    name: .customLong("tls-ca"),
    help: ArgumentHelp(
      "Use TLS to a tcp: address, also trusting the certificates in FILE (PEM).",
      valueName: "FILE"))
  var tlsCA: String?

  /// The endpoint the options name.
  /// - Throws: a validation error naming the option at fault.
  func endpoint() throws -> CountdownEndpoint {
    let secure = tls || tlsCA != nil ? CountdownTLS(caFile: tlsCA) : nil
    guard let connect else {
      if secure != nil {
        throw ValidationError("--tls and --tls-ca are for a tcp: address given with --connect")
      }
      return .unix(socket)
    }
    do {
      return try CountdownEndpoint(parsing: connect, tls: secure)
    } catch {
      throw ValidationError("--connect: \(error.message)")
    }
  }
}
