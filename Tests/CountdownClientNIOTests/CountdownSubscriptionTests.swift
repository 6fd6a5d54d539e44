// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import CountdownClientNIO
import CountdownServerTestSupport
import Foundation
import Testing

/// What a subscription yielded, gathered by the task that iterates it.
actor Gathered {
  var updates: [CountdownSubscription.Update] = []
  var failure: (any Error)?
  var finished = false

  func add(_ u: CountdownSubscription.Update) { updates.append(u) }
  func end(_ error: (any Error)?) {
    failure = error
    finished = true
  }

  /// Waits (up to `timeout` seconds) until `ready` holds of what was gathered.
  func wait(
    _ timeout: Double = 10, until ready: ([CountdownSubscription.Update]) -> Bool
  ) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !ready(updates) {
      if Date() > deadline { return false }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return true
  }

  func waitFinished(_ timeout: Double = 15) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !finished {
      if Date() > deadline { return false }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return true
  }
}

/// Iterates `subscription` in a task of its own into a ``Gathered``.
func gather(_ subscription: CountdownSubscription) -> (Gathered, Task<Void, Never>) {
  let gathered = Gathered()
  let task = Task {
    do {
      for try await u in subscription { await gathered.add(u) }
      await gathered.end(nil)
    } catch {
      await gathered.end(error)
    }
  }
  return (gathered, task)
}

/// The phases a board keeps from a subscription: a snapshot or a resync replaces them, events
/// change them (docs/events.md).
func phases(_ updates: [CountdownSubscription.Update]) -> [String: String] {
  var model: [String: String] = [:]
  for u in updates {
    switch u {
    case .snapshot(let list), .resynced(let list):
      model = Dictionary(uniqueKeysWithValues: list.map { ($0.id, $0.phase.rawValue) })
    case .event(let e):
      guard let id = e.id else { continue }
      switch e.event {
      case "started", "resumed": model[id] = "active"
      case "paused": model[id] = "paused"
      case "ended": model[id] = "ended"
      case "dismissed": model[id] = nil
      default: break
      }
    }
  }
  return model
}

@Suite("CountdownSubscription and cancellation against real servers")
struct CountdownSubscriptionTests {
  func later(_ s: Int64) -> Instant { Instant(milliseconds: (nowMs() / 1000 + s) * 1000) }

  @Test("A subscription across a server restart: resynced, and nothing lost between the cuts")
  func acrossRestart() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let arguments = ["--socket", "c.sock", "--state", "s.db"]
    var server: ServerProcess? = try ServerProcess(arguments, in: dir)
    let endpoint = CountdownEndpoint.unix(dir.appendingPathComponent("c.sock").path)
    let c1 = try await CountdownConnection.connect(to: endpoint)
    try await c1.start(.countdown(id: "a", to: later(600), title: "A"))
    try await c1.start(.countdown(id: "b", to: later(600), title: "B"))
    let (gathered, task) = gather(c1.subscribe())
    #expect(await gathered.wait { $0.count == 1 })
    try await c1.pause("a")
    try await c1.start(.countdown(id: "c", to: later(600), title: "C"))
    #expect(await gathered.wait { phases($0) == ["a": "paused", "b": "active", "c": "active"] })
    // Stopped and started again on the same state file.
    server?.process.terminate()
    #expect(server?.exitStatus(within: 10) == 0)
    server = nil
    server = try ServerProcess(arguments, in: dir)
    let c2 = try await CountdownConnection.connect(to: endpoint)
    // Changes while the subscription finds its way back and after: in the new snapshot or
    // its events.
    try await c2.resume("a")
    try await c2.end("b", ActivityEnding(dismissal: .immediate))
    try await c2.start(.countdown(id: "d", to: later(600), title: "D"))
    #expect(await gathered.wait { $0.contains { if case .resynced = $0 { true } else { false } } })
    try await c2.pause("d")
    let want = Dictionary(
      uniqueKeysWithValues: try await c2.list().map { ($0.id, $0.phase.rawValue) })
    #expect(want == ["a": "active", "c": "active", "d": "paused"])
    let caughtUp = await gathered.wait { phases($0) == want }
    let seen = await gathered.updates
    #expect(caughtUp, "\(phases(seen)) after \(seen.count) updates")
    #expect(seen.filter { if case .resynced = $0 { true } else { false } }.count == 1)
    if case .snapshot(let first) = seen.first {
      #expect(first.map(\.id) == ["a", "b"])
    } else {
      Issue.record("the first update is not the snapshot: \(String(describing: seen.first))")
    }
    task.cancel()
    #expect(await gathered.waitFinished())
    #expect(await gathered.failure == nil)
    await c1.close()
    await c2.close()
  }

  @Test("A cancelled call throws at once; its reply, when it comes, is no other call's")
  func cancelWaitingCall() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let server = try ServerProcess(["--socket", "c.sock"], in: dir)
    let c = try await CountdownConnection.connect(
      to: .unix(dir.appendingPathComponent("c.sock").path))
    try await c.start(.countdown(id: "a", to: later(600), title: "A"))
    #expect(server.stop())
    let waiting = Task { try await c.get("nobody") }
    try await Task.sleep(for: .milliseconds(200))
    let began = Date()
    waiting.cancel()
    let result = await waiting.result
    #expect(Date().timeIntervalSince(began) < 1)
    #expect(throws: CancellationError.self) { try result.get() }
    kill(server.pid, SIGCONT)
    // The cancelled get's reply (notFound) comes first and is dropped.
    #expect(try await c.get("a").id == "a")
    #expect(try await c.start(.countdown(id: "b", to: later(600), title: "B")) == "b")
    await c.close()
  }

  @Test("A cancelled subscription ends its loop and closes its connection")
  func cancelSubscription() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let server = try ServerProcess(["--socket", "c.sock"], in: dir)
    let c = try await CountdownConnection.connect(
      to: .unix(dir.appendingPathComponent("c.sock").path))
    // The server's sockets, by inode (/proc/PID/fd): the subscription's is the one that
    // comes with it, whatever else the server opens meanwhile.
    func sockets() -> Set<String> {
      let fds =
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.pid)/fd")) ?? []
      return Set(
        fds.compactMap {
          try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(server.pid)/fd/\($0)")
        }.filter { $0.hasPrefix("socket:") })
    }
    // Answered: the server has accepted the connection (a connect completes before that).
    _ = try await c.ping()
    let before = sockets()
    let (gathered, task) = gather(c.subscribe(ticks: true))
    #expect(await gathered.wait { $0.count == 1 })
    let added = sockets().subtracting(before)
    #expect(!added.isEmpty)
    task.cancel()
    #expect(await gathered.waitFinished())
    let deadline = Date().addingTimeInterval(5)
    while !sockets().isDisjoint(with: added) && Date() < deadline { usleep(20_000) }
    #expect(sockets().isDisjoint(with: added), "the subscription's socket is still open")
    #expect(try await c.ping().milliseconds > 0)
    await c.close()
  }

  @Test("A server's bad lines: a typed error, the connection closed, nothing traps")
  func badServer() async throws {
    // Not JSON, in answer to a request.
    let notJSON = try ScriptedPeer(reply: "hello\n")
    let c = try await CountdownConnection.connect(to: .tcp(host: "127.0.0.1", port: notJSON.port))
    let first = await #expect(throws: CountdownError.self) { _ = try await c.get("a") }
    #expect(first?.code == .unexpectedReply && first?.message.contains("not JSON") == true)
    let after = await #expect(throws: CountdownError.self) { _ = try await c.get("a") }
    #expect(after?.code == .unexpectedReply || after?.code == .connectionClosed)
    // A reply before any request.
    let early = try ScriptedPeer(greeting: #"{"rid":null,"ok":true,"at":1}"# + "\n", reply: "")
    let d = try await CountdownConnection.connect(to: .tcp(host: "127.0.0.1", port: early.port))
    try await Task.sleep(for: .milliseconds(200))
    let unasked = await #expect(throws: CountdownError.self) { _ = try await d.get("a") }
    #expect(unasked?.code == .unexpectedReply || unasked?.code == .connectionClosed)
    // A subscription's reply, then a line that is not JSON.
    let sub = try ScriptedPeer(reply: #"{"rid":null,"ok":true,"at":1,"snapshot":[]}"# + "\nnope\n")
    let e = try await CountdownConnection.connect(to: .tcp(host: "127.0.0.1", port: sub.port))
    let (gathered, _) = gather(e.subscribe())
    #expect(await gathered.waitFinished())
    let failure = await gathered.failure as? CountdownError
    #expect(failure?.code == .unexpectedReply, "\(String(describing: failure))")
    #expect(await gathered.updates == [.snapshot([])])
  }
}

/// A TCP peer on loopback that writes `greeting` on each connection, then `reply` after the
/// first line it reads, and holds the connection until the client closes it.
final class ScriptedPeer: Sendable {
  let port: Int
  private let listener: Int32

  init(greeting: String = "", reply: String) throws {
    let (fd, port) = try loopbackSocket(listening: true)
    listener = fd
    self.port = port
    let greeting = Array(greeting.utf8)
    let reply = Array(reply.utf8)
    Thread {
      while true {
        let conn = accept(fd, nil, nil)
        if conn < 0 { return }
        Thread {
          defer { close(conn) }
          if !greeting.isEmpty {
            _ = greeting.withUnsafeBytes { write(conn, $0.baseAddress, $0.count) }
          }
          var byte: UInt8 = 0
          var answered = false
          while read(conn, &byte, 1) == 1 {
            if byte == 0x0A && !answered {
              answered = true
              if !reply.isEmpty {
                _ = reply.withUnsafeBytes { write(conn, $0.baseAddress, $0.count) }
              }
            }
          }
        }.start()
      }
    }.start()
  }

  deinit {
    shutdown(listener, Int32(SHUT_RDWR))
    close(listener)
  }
}
