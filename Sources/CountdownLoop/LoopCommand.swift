// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// A command on its way to the loop thread: what to run there, and how to fail it if the
/// loop shuts down first.
struct LoopCommand: Sendable {
  /// Runs on the loop thread with the engine, whose clock is the command's instant.
  var run: @Sendable (inout ActivityEngine) -> Void
  /// Completes the command with an error instead.
  var fail: @Sendable (CountdownError) -> Void
}

/// The multi-producer queue into the loop: a short lock around an array that the loop swaps
/// out whole, and one `uv_async_t` whose sends coalesce.
struct CommandQueueState {
  var pending: [LoopCommand] = []
  /// Set by `shutdown` or release; later submissions fail at once.
  var closing = false
  /// Set by the loop thread once the async handle is closed; no send may happen after it.
  var asyncClosed = false
}
