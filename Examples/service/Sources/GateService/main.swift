// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

// gate-service ADDRESS [SECONDS]: opens a gate's boarding countdown on the server at ADDRESS
// (unix:PATH or tcp:HOST:PORT; the key in COUNTDOWN_KEY when the server wants one), follows
// its ticks, moves it on once, and closes the gate after SECONDS (default 3), printing each
// event. Exits 0 once the gate's `ended` and `dismissed` have come.

import Countdown
import CountdownClientNIO

#if canImport(Glibc)
  import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
  print("usage: gate-service unix:PATH|tcp:HOST:PORT [SECONDS]")
  exit(64)
}
let endpoint = try CountdownEndpoint(parsing: arguments[1])
let seconds = arguments.count > 2 ? Int64(arguments[2]) ?? 3 : 3
let key = getenv("COUNTDOWN_KEY").map { String(cString: $0) }

let countdown = try await CountdownConnection.connect(to: endpoint, key: key)
// The server's clock, so that the gate closes on its time, not this machine's.
let now = try await countdown.ping()
let boarding = now.advanced(by: 600_000)
let gate = try await countdown.start(
  .countdown(id: "gate-b12", to: boarding, title: "Gate B12"))
print("started \(gate), boarding at \(boarding.milliseconds)")

var ticks = 0
for try await update in countdown.subscribe(ids: [gate], ticks: true) {
  switch update {
  case .snapshot(let activities), .resynced(let activities):
    for a in activities { print("\(a.id): \(a.text) \(a.phase.rawValue) \(a.title ?? "")") }
  case .event(let e):
    print("\(e.event) \(e.id ?? "") \(e.text ?? "")")
    if e.event == "tick" {
      ticks += 1
      if ticks == 1 {
        try await countdown.update(gate, ActivityUpdate(content: ["subtitle": .string("Boarding")]))
      }
      if ticks == seconds {
        try await countdown.end(gate, ActivityEnding(dismissal: .immediate))
      }
    }
  }
  if case .event(let e) = update, e.event == "dismissed" { break }
}
let left = try await countdown.list()
print("\(left.count) activities left")
await countdown.close()
