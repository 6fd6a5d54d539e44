// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownClient

// The client library alone (no SwiftNIO): the boards' time model on plain instants, and the
// socket's typed error for a server that is not there.
let t0: Int64 = 1_795_248_000_000
let clock = ActivityClock(kind: .countdown, phase: .active, value: 10, endDate: t0 + 10_000)
var lines = [
  "\(clock.value(at: t0 + 1))", "\(clock.nextChange(after: t0 + 1) ?? -1)",
  "\(clock.value(at: t0 + 10_000))",
]
do {
  _ = try UnixSocket.connect("/nonexistent/countdown.sock")
  lines.append("connected")
} catch {
  lines.append("refused")
}
let expected = ["10", "\(t0 + 1_000)", "0", "refused"]
guard lines == expected else {
  fatalError("ClientOnly: got \(lines), expected \(expected)")
}
print("ClientOnly ok: \(lines.joined(separator: ", "))")
