// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import NIOCore

/// The output budget (docs/security.md): what all subscribers together leave unread.
extension Hub {
  /// Checks the output budget soon (once for the changes of the next 50 ms).
  func scheduleBudgetCheck() {
    guard !budgetCheckScheduled else { return }
    budgetCheckScheduled = true
    eventLoop.scheduleTask(in: .milliseconds(50)) { [weak self] in self?.checkOutputBudget() }
  }

  /// The bound of one subscriber bounds each alone; this bounds them together
  /// (docs/security.md): each subscriber's unwritten bytes (those waiting here and those in
  /// its connection's buffer) are summed, and while the sum is over ``outputBudget`` the
  /// subscribers holding the most are cut off with `slowConsumer`, the largest first.
  private func checkOutputBudget() {
    budgetCheckScheduled = false
    let subs = Array(subscribers.values)
    guard !subs.isEmpty else { return }
    let held = subs.map { $0.sink.unwrittenBytes().hop(to: eventLoop) }
    EventLoopFuture.whenAllComplete(held, on: eventLoop).assumeIsolated().whenSuccess {
      [weak self] answers in
      guard let self else { return }
      var each: [(sub: Subscriber, bytes: Int)] = []
      var total = 0
      for (sub, answer) in zip(subs, answers) where self.subscribers[sub.sink.key] === sub {
        let bytes = ((try? answer.get()) ?? 0) + sub.output.byteCount
        each.append((sub, bytes))
        total += bytes
      }
      guard total > self.outputBudget else { return }
      for (sub, bytes) in each.sorted(by: { $0.bytes > $1.bytes }) {
        guard total > self.outputBudget else { break }
        total -= bytes
        self.metrics.budgetCutOffs.increment()
        self.cutOff(
          sub,
          "the server's output budget is spent (\(self.outputBudget) bytes unwritten to all subscribers together, --output-budget-bytes), and this subscriber held the most: \(bytes) bytes it did not read; read faster, reconnect and subscribe again"
        )
      }
      self.checkInvariants()
    }
  }
}
