// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import NIOCore

/// One NIO timer armed for the earliest instant something is due: a queue's next delivery, the
/// next lease deadline. Arming it for an instant no earlier than the one it is armed for keeps
/// it; an earlier one re-arms it; `nil` cancels it. Confined to its event loop (every method
/// is called there, and the timer fires there).
package final class DeadlineTimer: @unchecked Sendable {
  // @unchecked Sendable: `task` and `armedFor` are touched on `eventLoop` only.
  private let eventLoop: any EventLoop
  private var task: Scheduled<Void>?
  /// The instant the timer is armed for, if it is (nil exactly when `task` is).
  private(set) package var armedFor: Int64?

  /// A timer on `eventLoop`, not armed.
  package init(on eventLoop: any EventLoop) {
    self.eventLoop = eventLoop
  }

  /// Runs `fire` on the event loop at `due` (milliseconds on the clock `now` was read from),
  /// unless the timer is already armed for that instant or an earlier one; `nil` cancels it.
  package func arm(at due: Int64?, now: Int64, _ fire: @escaping @Sendable () -> Void) {
    eventLoop.assertInEventLoop()
    guard let due else { return cancel() }
    if let armed = armedFor, armed <= due { return }
    task?.cancel()
    armedFor = due
    task = eventLoop.scheduleTask(in: .milliseconds(max(0, due - now))) { [self] in
      task = nil
      armedFor = nil
      fire()
    }
  }

  /// Cancels the timer if it is armed.
  package func cancel() {
    eventLoop.assertInEventLoop()
    task?.cancel()
    task = nil
    armedFor = nil
  }
}
