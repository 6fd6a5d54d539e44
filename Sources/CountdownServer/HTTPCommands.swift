// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop
import CountdownProtocol

extension LoopEngine {
  /// Runs one HTTP request (docs/http.md) as a one-request batch, with HTTP's own rule: a
  /// command that succeeds (`start`, `update`, `pause`, `resume`, `end`) answers with the
  /// activity object as it stands after it, read in the same step, so the reply is the
  /// engine's own view. An `end` that dismisses at once answers with the activity as it
  /// ended.
  ///
  /// With a cluster node's `gate`, a command of another node's shard is to be forwarded there
  /// (``Outcome/forward(node:otherwise:)``) when `forwarding`, else refused (`unavailable`).
  func runForHTTP(
    _ request: Result<ServerRequest, CountdownError>, keyGroups: Set<String>? = nil,
    gate: ShardGate?, forwarding: Bool = false
  ) -> BatchResult {
    if case .success(.command(.end(let e), let id?)) = request {
      let outcome: Outcome
      do throws(CountdownError) {
        if case .forward(let node, let otherwise) = try gate?.admission(id) {
          guard forwarding else { throw otherwise }
          return BatchResult(at: now, items: [(nil, .forward(node: node, otherwise: otherwise))])
        }
        // An activity outside the key's groups is as if absent.
        if keyGroups != nil { try check(id, in: GroupScope(keyGroups: keyGroups)) }
        outcome = .activity(try ending(id, e))
      } catch {
        outcome = .failed(error)
      }
      return BatchResult(at: now, items: [(nil, outcome)])
    }
    var result = run(
      [BatchItem(rid: nil, request: request, keyGroups: keyGroups)], gate: gate,
      forwarding: forwarding)
    if case .forward = result.items[0].outcome { return result }
    guard case .success(.command(let op, let commandID)) = request else { return result }
    let id: String?
    switch result.items[0].outcome {
    case .started(let started): id = started
    case .ok where op.isActivityCommand: id = commandID
    default: id = nil
    }
    if let id {
      do throws(CountdownError) {
        result.items[0].outcome = .activity(try state(of: id))
      } catch {
        result.items[0].outcome = .failed(error)
      }
    }
    return result
  }
}

extension WireCommand.Operation {
  /// Whether the operation changes one activity (`update`, `pause`, `resume`; `end` apart).
  fileprivate var isActivityCommand: Bool {
    switch self {
    case .update, .pause, .resume: return true
    default: return false
    }
  }
}
