// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL
import Synchronization

/// A connection to a running `countdown serve`, for a Swift service: typed requests, sent
/// pipelined on one connection, each answered by its own reply (docs/protocol.md).
///
/// ```swift
/// let countdown = try await CountdownConnection.connect(to: .unix("/run/kiosk/countdown.sock"))
/// let id = try await countdown.start(.countdown(id: "gate-b12", to: boarding, title: "Gate B12"))
/// let gate = try await countdown.get(id)          // an ActivityObject
/// try await countdown.end(id)
/// await countdown.close()
/// ```
///
/// Calls may be made from many tasks at once: each is written as it comes and the server
/// answers in request order, so replies are matched without ids. A call whose task is
/// cancelled throws `CancellationError` at once (its request may already have been carried
/// out: it was sent). A request the server refuses throws `CountdownError` with the
/// server's code (`notFound`, `duplicateID`, …) and message; a connection that closes fails
/// every waiting call with `CountdownError.Code.connectionClosed`. The connection does not
/// reconnect by itself (a call that failed so may or may not have been carried out);
/// ``subscribe(ids:ticks:group:)`` does.
public final class CountdownConnection: Sendable {
  /// Where it is connected.
  public let endpoint: CountdownEndpoint
  /// The key it authenticated with (docs/security.md, "Roles").
  let key: String?
  let channel: any Channel
  private let handler: NIOLoopBound<ReplyHandler>
  private let nextCall = Atomic<UInt64>(0)
  private let staged = StagedCalls()
  let group: any EventLoopGroup

  private init(
    endpoint: CountdownEndpoint, key: String?, channel: any Channel,
    handler: NIOLoopBound<ReplyHandler>, group: any EventLoopGroup
  ) {
    self.endpoint = endpoint
    self.key = key
    self.channel = channel
    self.handler = handler
    self.group = group
  }

  /// Connects to `endpoint`; with `key`, authenticates first (the connection then has the
  /// key's role; a server with `--token` takes its token here).
  /// - Throws: `CountdownError`: `connectionClosed` when the server cannot be reached (the
  ///   message names the endpoint and the system's error), `unauthorized` for a wrong key.
  public static func connect(
    to endpoint: CountdownEndpoint, key: String? = nil,
    eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
  ) async throws -> CountdownConnection {
    let (channel, handler) = try await ClientChannel.make(to: endpoint, group: eventLoopGroup) {
      channel in
      let handler = ReplyHandler(endpoint: endpoint)
      try channel.pipeline.syncOperations.addHandler(handler)
      return NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }.get()
    let connection = CountdownConnection(
      endpoint: endpoint, key: key, channel: channel, handler: handler, group: eventLoopGroup)
    if let key {
      do {
        _ = try await connection.request(RequestEncoding.auth(key))
      } catch {
        await connection.close()
        throw error
      }
    }
    return connection
  }

  /// Closes the connection: waiting calls fail with `connectionClosed`.
  public func close() async {
    let handler = self.handler
    channel.eventLoop.execute {
      handler.value.close(
        CountdownError(.connectionClosed, "the connection was closed by its owner"))
    }
    try? await channel.closeFuture.get()
  }

  // MARK: - Requests

  /// Sends one request object (without `rid`: replies are matched by their order) and
  /// returns its reply, `ok` or not: the way to an op or a member this type has no method
  /// for.
  /// - Throws: `CountdownError` when the connection fails, `CancellationError`.
  public func send(_ request: [String: JSONValue]) async throws -> ServiceReply {
    try await call(RequestEncoding.objects([request]))
  }

  /// Sends `line` (a request and its newline) and waits for its reply.
  ///
  /// Calls made at about the same time are staged together and handed to the event loop in
  /// one hop, written in one buffer and flushed once (``StagedCalls``).
  func call(_ line: [UInt8]) async throws -> ServiceReply {
    try Task.checkCancellation()
    let id = nextCall.add(1, ordering: .relaxed).newValue
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { c in
        stage(StagedCalls.Item(id: id, count: 1, waiter: .one(c), bytes: line))
      }
    } onCancel: {
      cancel(id: id, count: 1)
    }
  }

  /// Sends `count` request lines (in `bytes`, one after another) together and waits for all
  /// their replies, in order: one task resumed once for the lot (a batch costs what one call
  /// does, and its requests go out at once).
  func call(count: Int, bytes: [UInt8]) async throws -> [ServiceReply] {
    try Task.checkCancellation()
    if count == 0 { return [] }
    let id = nextCall.add(UInt64(count), ordering: .relaxed).newValue - UInt64(count - 1)
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { c in
        stage(StagedCalls.Item(id: id, count: count, waiter: .many(c), bytes: bytes))
      }
    } onCancel: {
      cancel(id: id, count: count)
    }
  }

  private func stage(_ item: StagedCalls.Item) {
    if staged.add(item) {
      let handler = self.handler
      let staged = self.staged
      channel.eventLoop.execute { handler.value.send(staged.take()) }
    }
  }

  /// Not written yet: taken back, never sent. Else its replies are dropped when they come.
  private func cancel(id: UInt64, count: Int) {
    if let waiter = staged.remove(id: id) {
      waiter.fail(CancellationError())
    } else {
      let handler = self.handler
      channel.eventLoop.execute { handler.value.cancel(id: id, count: count) }
    }
  }

  /// ``call(_:)``, throwing the server's error when the reply is not `ok`.
  @discardableResult
  func request(_ line: [UInt8]) async throws -> ServiceReply {
    let reply = try await call(line)
    if let failure = reply.failure { throw failure.error }
    return reply
  }

  /// Sends request objects together, pipelined, and returns their replies in order, `ok` or
  /// not: one await for the lot, the cheapest way to send many.
  public func send(_ requests: [[String: JSONValue]]) async throws -> [ServiceReply] {
    try await call(count: requests.count, bytes: RequestEncoding.objects(requests))
  }

  /// Starts activities together, pipelined: each one's id, or the server's error for it (one
  /// refused does not stop the others).
  public func start(_ activities: [ActivityRequest]) async throws -> [Result<
    String, CountdownError
  >] {
    let replies = try await call(
      count: activities.count, bytes: RequestEncoding.start(activities))
    return replies.map(started)
  }

  /// Starts an activity; its id (generated by the server when the request has none).
  @discardableResult
  public func start(_ activity: ActivityRequest) async throws -> String {
    try started(try await call(RequestEncoding.start(activity))).get()
  }

  /// A start's reply: the id, or the server's error.
  private func started(_ reply: ServiceReply) -> Result<String, CountdownError> {
    if let failure = reply.failure { return .failure(failure.error) }
    guard let id = reply.id else {
      return .failure(
        CountdownError(.unexpectedReply, "\(endpoint) answered a start without an id"))
    }
    return .success(id)
  }

  /// Changes a running activity (content as a merge patch).
  public func update(_ id: String, _ change: ActivityUpdate) async throws {
    try await request(RequestEncoding.update(id, change))
  }

  public func pause(_ id: String, timestamp: Instant? = nil) async throws {
    try await request(RequestEncoding.named("pause", id, timestamp: timestamp))
  }

  public func resume(_ id: String, timestamp: Instant? = nil) async throws {
    try await request(RequestEncoding.named("resume", id, timestamp: timestamp))
  }

  /// Ends an activity (by default it stays, ended, for four hours before its dismissal).
  public func end(_ id: String, _ ending: ActivityEnding = ActivityEnding()) async throws {
    try await request(RequestEncoding.end(id, ending))
  }

  /// The activity as it stands.
  /// - Throws: `notFound` when no activity has that id (or the key's groups do not show it).
  public func get(_ id: String) async throws -> ActivityObject {
    let reply = try await request(RequestEncoding.named("get", id))
    guard let activity = reply.activity else {
      throw CountdownError(.unexpectedReply, "\(endpoint) answered a get without an activity")
    }
    return activity
  }

  /// Which activities ``list(_:group:)`` returns.
  public enum Selection: Sendable, Hashable {
    /// Every activity, in start order.
    case all
    /// The `k` countdowns ending soonest.
    case soonest(Int)
    /// The activities that ended within the last so many milliseconds.
    case endedWithin(milliseconds: Int64)
  }

  /// Activities, every node's on a cluster node; `group` narrows them to one group.
  public func list(_ selection: Selection = .all, group: String? = nil) async throws
    -> [ActivityObject]
  {
    let reply = try await request(RequestEncoding.list(selection, group: group))
    return reply.activities ?? []
  }

  /// Changes the engine-wide settings (docs/protocol.md, `configure`).
  public func configure(
    enabled: Bool? = nil, maxActivities: Change<Int> = .keep,
    maxActiveDurationMs: Change<Int64> = .keep
  ) async throws {
    try await request(
      RequestEncoding.configure(
        enabled: enabled, maxActivities: maxActivities, maxActiveDurationMs: maxActiveDurationMs))
  }

  /// The cluster as the node last read it (a single server: no node, no nodes, no shards).
  public func cluster() async throws -> ClusterState {
    let reply = try await request(RequestEncoding.bare("cluster"))
    return reply.cluster ?? ClusterState(node: nil, nodes: [], shards: [])
  }

  /// The server's clock (ms since 1970) when it answered.
  public func ping() async throws -> Instant {
    Instant(milliseconds: try await request(RequestEncoding.bare("ping")).at)
  }
}
