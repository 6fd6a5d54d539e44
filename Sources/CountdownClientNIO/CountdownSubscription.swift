// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import NIOCore

/// A subscription to a server's events (docs/events.md) that outlives the server's restarts:
/// the snapshot of the activities it covers, then their events as they happen.
///
/// ```swift
/// for try await update in countdown.subscribe(ids: ["gate-b12"]) {
///   switch update {
///   case .snapshot(let activities), .resynced(let activities): board.show(activities)
///   case .event(let e): board.apply(e)
///   }
/// }
/// ```
///
/// It has a connection of its own. When that connection goes (the server restarts, the
/// network drops), it connects again, 0.1 s after the loss and up to 2 s apart while the
/// server is away, subscribes again and yields ``Update/resynced(_:)`` with the new snapshot:
/// the events in between are not replayed, so what the caller drew from the old snapshot and
/// its events is replaced by the new one. A first connection that fails throws; a key the
/// server refuses throws at any time. The events wait in the socket while the caller is
/// busy: past 1,024 taken and not yet asked for, the subscription stops reading, and the
/// server holds (or, for a consumer too slow for too long, drops) the rest (docs/protocol.md,
/// "Backpressure"). Leaving the loop, or cancelling its task, closes the connection.
public struct CountdownSubscription: AsyncSequence, Sendable {
  /// What a subscription yields.
  public enum Update: Sendable, Equatable {
    /// The activities it covers as they stood when it began (the first element).
    case snapshot([ActivityObject])
    /// An event of one of them, or a `started` of a new one (without `ids`).
    case event(ServiceEvent)
    /// The activities as they stand after a reconnection: draw them afresh; the events that
    /// came while the connection was away are in them.
    case resynced([ActivityObject])
  }

  let endpoint: CountdownEndpoint
  let key: String?
  /// The `subscribe` request's line.
  let request: [UInt8]
  let group: any EventLoopGroup

  public func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(subscription: self)
  }

  /// The subscription's iterator: one connection at a time.
  public struct AsyncIterator: AsyncIteratorProtocol {
    let subscription: CountdownSubscription
    var messages: SubscriptionFeed.Messages.AsyncIterator?
    var subscribed = false
    var finished = false

    /// The next update; nil once the task is cancelled.
    /// - Throws: `CountdownError` when the first connection cannot be made, when the server
    ///   refuses the key or the subscription, or a line it sent is not an event.
    public mutating func next() async throws -> Update? {
      var delay: Int64 = 100
      while !finished {
        if Task.isCancelled {
          finish()
          return nil
        }
        if messages == nil {
          do {
            let snapshot = try await connect()
            defer { subscribed = true }
            return subscribed ? .resynced(snapshot) : .snapshot(snapshot)
          } catch is CancellationError {
            finish()
            return nil
          } catch let error as CountdownError
            where !subscribed || error.code != .connectionClosed
          {
            finish()
            throw error
          } catch  where !subscribed {
            finish()
            throw CountdownError(
              .connectionClosed, "the subscription to \(subscription.endpoint) failed: \(error)")
          } catch {
            // The server is away: try again, later each time.
            do {
              try await Task.sleep(for: .milliseconds(delay))
            } catch {
              finish()
              return nil
            }
            delay = Swift.min(delay * 2, 2000)
            continue
          }
        }
        let message: ServiceMessage?
        do {
          message = try await messages?.next()
        } catch let error as CountdownError where error.code == .unexpectedReply {
          finish()
          throw error
        } catch {
          message = nil
        }
        switch message {
        case .event(let event)?:
          if event.failure != nil {
            // slowConsumer: the server dropped this subscriber; a new one starts afresh.
            messages = nil
            continue
          }
          return .event(event)
        case .reply?:
          finish()
          throw CountdownError(
            .unexpectedReply,
            "\(subscription.endpoint) sent a reply to no request on a subscription's connection")
        case nil:
          // The connection went: subscribe again.
          messages = nil
          delay = 100
          if Task.isCancelled { continue }
          try? await Task.sleep(for: .milliseconds(delay))
        }
      }
      return nil
    }

    private mutating func finish() {
      finished = true
      messages = nil
    }

    /// A new connection: authenticated, subscribed; the subscription's snapshot.
    private mutating func connect() async throws -> [ActivityObject] {
      let feed = try await SubscriptionFeed.open(
        to: subscription.endpoint, group: subscription.group)
      var lines = 1
      var bytes: [UInt8] = []
      if let key = subscription.key {
        bytes = RequestEncoding.auth(key)
        lines += 1
      }
      bytes += subscription.request
      try await feed.send(bytes)
      let iterator = feed.messages.makeAsyncIterator()
      // One reply a line: the key's, then the subscription's, with its snapshot.
      var snapshot: [ActivityObject] = []
      for _ in 0..<lines {
        guard let message = try await iterator.next() else {
          throw CountdownError(
            .connectionClosed, "\(subscription.endpoint) closed the connection before it answered")
        }
        guard case .reply(let reply) = message else {
          // An `unauthorized` error event, say, before the connection closes.
          if case .event(let e) = message, let failure = e.failure { throw failure.error }
          throw CountdownError(
            .unexpectedReply, "\(subscription.endpoint) sent an event before its reply")
        }
        if let failure = reply.failure { throw failure.error }
        snapshot = reply.activities ?? []
      }
      messages = iterator
      return snapshot
    }
  }
}

extension CountdownConnection {
  /// A subscription to the events of `ids` (every activity, those started later included,
  /// when nil), with ticks when `ticks`, narrowed to `group` when given; on its own
  /// connection to the same server with the same key (``CountdownSubscription``).
  public func subscribe(ids: [String]? = nil, ticks: Bool = false, group: String? = nil)
    -> CountdownSubscription
  {
    CountdownSubscription(
      endpoint: endpoint, key: key,
      request: RequestEncoding.subscribe(ids: ids, ticks: ticks, group: group),
      group: self.group)
  }
}
