// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

// The clock-free engine on a virtual clock, and the formatter: the core library alone.
let t0 = Instant(milliseconds: 1_795_248_000_000)
var lines: [String] = []
var engine = ActivityEngine(now: t0) { event in
  lines.append("\(event.kind.rawValue) \(event.id) \(event.value)")
}
do {
  try engine.start(.countdown(id: "gate", to: t0.advanced(by: 2_500), title: "Gate"), at: t0)
  try engine.advance(to: t0.advanced(by: 3_000))
} catch {
  fatalError("engine error: \(error)")
}
let text = TimerFormatter(style: .compact).string(milliseconds: 90_061_000, rounding: .down)
lines.append(text)
// started, two ticks, expired, then the formatted text.
let expected = [
  "started gate 3", "tick gate 2", "tick gate 1", "tick gate 0", "expired gate 0", "1d 1h",
]
print(lines.joined(separator: "\n"))
// No Glibc here on purpose: it would link libm itself and hide a core that does not.
if lines != expected {
  fatalError("unexpected output; expected:\n\(expected.joined(separator: "\n"))")
}
