// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CPrefetch

/// Names the calling thread `name` (at most 15 bytes, the kernel's limit), as `top -H`, `ps -L`
/// and /proc/PID/task/TID/comm show it: `countdown-loop`, `countdown-net`, `countdown-store`, …
/// (docs/driver.md, "Threads"). The one way every target names its threads (`prctl`, through
/// CPrefetch's thread.h). Best effort: false when it could not, and nothing else changes.
@discardableResult
package func nameCurrentThread(_ name: String) -> Bool {
  cd_set_thread_name(String(decoding: name.utf8.prefix(15), as: UTF8.self)) == 0
}
