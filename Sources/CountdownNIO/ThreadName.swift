// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import NIOCore

extension EventLoop {
  /// Names the event loop's thread `name` (the kernel keeps 15 bytes), as `top -H`, `ps -L`
  /// and /proc/PID/task/TID/comm show it: `countdown-net`, `countdown-push`, …
  /// (docs/driver.md, "Threads"), from the loop itself through the core's
  /// `nameCurrentThread`. Best effort: a failure changes nothing.
  package func nameThread(_ name: String) {
    execute { nameCurrentThread(name) }
  }
}
