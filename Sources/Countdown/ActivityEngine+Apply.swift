// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// What applying one protocol operation gave (see ``ActivityEngine/apply(_:id:at:)``).
public enum Applied: Sendable, Hashable {
  /// The operation was carried out and answers with nothing more.
  case done
  /// An activity was started, with this id (given or generated).
  case started(id: String)
  /// `get`: the activity as it stands.
  case state(ActivityState)
}

extension ActivityEngine {
  /// Applies one protocol operation at `t`: the one place where an operation of the protocol
  /// (docs/protocol.md) becomes engine calls, for `countdown replay`'s session, the service's
  /// batches and HTTP, and the C ABI's requests.
  ///
  /// `id` is the activity for every operation but `advance`, `configure` and (optionally)
  /// `start`. `configure` moves the clock to `t` first, then applies `maxActivities`,
  /// `maxActiveDurationMs` and `enabled` in that order; each left at `.keep` (or nil) is
  /// unchanged.
  /// - Throws: ``CountdownError`` as the operation's own method throws it; `invalidPayload`
  ///   when an operation that needs an id has none.
  public mutating func apply(_ operation: WireCommand.Operation, id: String?, at t: Instant)
    throws(CountdownError) -> Applied
  {
    func needed() throws(CountdownError) -> String {
      guard let id else { throw .payload("this operation needs an \"id\"") }
      return id
    }
    switch operation {
    case .start(var r):
      r.id = id
      return .started(id: try start(r, at: t))
    case .update(let u): try update(needed(), u, at: t)
    case .pause(let ts): try pause(needed(), at: t, timestamp: ts)
    case .resume(let ts): try resume(needed(), at: t, timestamp: ts)
    case .end(let e): try end(needed(), e, at: t)
    case .get: return .state(try state(of: needed(), at: t))
    case .advance: try advance(to: t)
    case .configure(let enabled, let maxActivities, let maxDuration):
      try advance(to: t)
      switch maxActivities {
      case .keep: break
      case .set(let n): setMaxActivities(n)
      case .remove: setMaxActivities(nil)
      }
      switch maxDuration {
      case .keep: break
      case .set(let ms): try setMaxActiveDuration(ms, at: t)
      case .remove: try setMaxActiveDuration(nil, at: t)
      }
      if let enabled { try setEnabled(enabled, at: t) }
    }
    return .done
  }
}

extension WireCommand.Operation {
  /// Whether the operation can change the engine (all but `get`): the loop moves the engine
  /// to the wall clock before it.
  public var changesEngine: Bool {
    if case .get = self { return false }
    return true
  }
}
