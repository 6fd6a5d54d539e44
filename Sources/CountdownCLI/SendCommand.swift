// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import CountdownClient
import CountdownClientNIO
import Foundation

struct SendCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "send",
    abstract:
      "Send requests to countdown serve and print the replies (and, with --follow, events).",
    discussion: """
      Requests come from the arguments, one JSON object each, or one per line on standard \
      input. They are sent at once (pipelined) and each reply is printed as it comes, in \
      order. Without --follow, send exits after the last reply: 0 when every reply was \
      "ok":true, 1 otherwise. With --follow it also subscribes and prints events until the \
      server closes the connection (--ticks includes ticks). With --key-file (or \
      COUNTDOWN_KEY), an auth request goes first and the connection has the key's role. \
      --connect reaches a server on another machine (tcp:HOST:PORT, its --listen), over TLS \
      with --tls or --tls-ca.
      """
  )

  @OptionGroup var connectOptions: ConnectOptions

  @Flag(help: "Subscribe after the requests and print events until the connection closes.")
  var follow = false

  @Flag(help: "With --follow, include tick events.")
  var ticks = false

  @Argument(help: "Requests, each a JSON object (default: one per line on standard input).")
  var requests: [String] = []

  @OptionGroup var keyOptions: KeyOptions

  func run() throws {
    var lines = requests
    if lines.isEmpty && !follow {
      var reader = LineReader(fd: 0)
      try reader.forEachLine { lines.append(String(decoding: $0, as: UTF8.self)) }
    }
    lines = lines.filter { !$0.allSatisfy { $0 == " " || $0 == "\t" || $0 == "\r" } }
    if follow { lines.append("{\"rid\":\"follow\",\"op\":\"subscribe\",\"ticks\":\(ticks)}") }
    // With a key, the connection first takes its role (its reply is printed as any other).
    if let key = try keyOptions.key() { lines.insert(KeyOptions.authLine(key), at: 0) }
    let fd = try connected(try connectOptions.endpoint())
    defer { CountdownClient.System.close(fd) }
    var out = Array(lines.joined(separator: "\n").utf8)
    out.append(0x0A)
    // Written from a thread of its own while replies are read here: a long stdin would
    // otherwise fill both directions of the socket and wait forever.
    let payload = out
    let writer = Thread { UnixSocket.sendAll(fd, payload) }
    writer.start()
    var replies = 0
    var failed = false
    var reader = LineReader(fd: fd)
    struct Done: Error {}
    do {
      try reader.forEachLine { line in
        print(String(decoding: line, as: UTF8.self))
        System.flushStandardOutput()
        // A line that does not decode is printed and counts as neither.
        if case .reply(let r)? = try? ServiceMessage(line: line) {
          replies += 1
          if !r.ok { failed = true }
        }
        if !follow && replies == lines.count { throw Done() }
      }
    } catch is Done {
    }
    if replies < lines.count {
      printError(
        "countdown send: the server closed the connection after \(replies) of \(lines.count) replies"
      )
      throw ExitCode.failure
    }
    if failed { throw ExitCode.failure }
  }

  /// A descriptor connected to the server, or a message saying why not.
  private func connected(_ endpoint: CountdownEndpoint) throws -> Int32 {
    do {
      return try endpoint.connectedDescriptor()
    } catch let error as CountdownError {
      printError("countdown send: \(error.message)")
      throw ExitCode.failure
    }
  }
}
