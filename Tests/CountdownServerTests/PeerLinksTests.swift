// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import CountdownServer

/// A node's link to another node (``PeerLinks``): what the answer to its cluster token makes
/// of the requests waiting on it.
@Suite("PeerLinks: the cluster token's answer")
struct PeerLinksTests {
  @Test(
    "Only unauthorized is a refused token; another error is passed on as the peer said it; ok is none"
  )
  func authFailures() {
    let at = "127.0.0.1:7"
    #expect(PeerLinks.authFailure(Array(#"{"ok":true,"at":5}"#.utf8), from: at) == nil)
    let refused = PeerLinks.authFailure(
      PeerMessage.errorLine(.unauthorized, "this server has no such key").dropLast(), from: at)
    #expect(
      refused == "node at 127.0.0.1:7 refused the cluster token (this server has no such key)")
    let other = PeerLinks.authFailure(
      PeerMessage.errorLine(.unavailable, "shard 4 changed hands while this request ran")
        .dropLast(), from: at)
    #expect(
      other
        == "node at 127.0.0.1:7 answered the cluster token with unavailable: shard 4 changed hands while this request ran"
    )
    let garbage = PeerLinks.authFailure(Array("HTTP/1.1 400 Bad Request".utf8), from: at)
    #expect(garbage?.contains("what is not a reply: HTTP/1.1 400") == true, "\(garbage ?? "nil")")
  }

  /// A peer on a real socket that reads the token and its request, then answers the token
  /// with `reply` (one line) and closes.
  static func peer(answering reply: String) throws -> Int {
    let listener = try loopbackSocket(listening: true)
    let thread = Thread {
      defer { close(listener.fd) }
      let fd = accept(listener.fd, nil, nil)
      guard fd >= 0 else { return }
      defer { close(fd) }
      var got: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 4096)
      while got.count(where: { $0 == 0x0A }) < 2 {
        let n = read(fd, &buffer, buffer.count)
        guard n > 0 else { return }
        got.append(contentsOf: buffer[..<n])
      }
      let line = Array((reply + "\n").utf8)
      _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      usleep(200_000)
    }
    thread.start()
    return listener.port
  }

  @Test(
    "A peer that answers the token with its own error: the request waiting fails with that error, not with a refused token"
  )
  func waitingRequestGetsThePeersReason() throws {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? group.syncShutdownGracefully() }
    for (reply, expected) in [
      (
        #"{"ok":false,"at":5,"code":"limitReached","message":"the server has 2 connections, its limit"}"#,
        "answered the cluster token with limitReached: the server has 2 connections, its limit"
      ),
      (
        #"{"ok":false,"at":5,"code":"unauthorized","message":"no such key"}"#,
        "refused the cluster token (no such key)"
      ),
    ] {
      let port = try Self.peer(answering: reply)
      let links = PeerLinks(group: group, token: "ct-1", answerTimeout: .seconds(10))
      defer { links.close() }
      let answer = links.send(
        Array(#"{"op":"list"}"#.utf8), to: "c", at: "127.0.0.1:\(port)")
      let failure: String
      do {
        let line = try answer.wait()
        failure = "answered: \(String(decoding: line, as: UTF8.self))"
      } catch {
        failure = "\(error)"
      }
      #expect(failure.contains(expected), "\(failure)")
    }
  }
}
