import Countdown
import CountdownLoop
import Testing

/// One test body, run against the virtual clock and the real loop (timerfd and uv_timer_t).
@Suite("Shared bodies: virtual clock and real loop", .serialized)
struct SharedTimerTests {
  @Test(
    "A countdown ticks once per change, in order, never early; then expires",
    arguments: HarnessKind.allCases)
  func countdown(_ kind: HarnessKind) async throws {
    let h = try kind.make()
    let base = await h.now()
    var r = ActivityRequest.countdown(id: "c", to: base.advanced(by: 2_500), title: "C")
    r.milestones = [Milestone(name: "one-left", atMs: 1_000)]
    _ = try await h.start(r)
    try await h.wait(until: base.advanced(by: 2_600))
    let d = await h.delivered()
    #expect(
      d.lines("c", base: base) == [
        "500 tick 2", "1500 tick 1", "1500 milestone one-left", "2500 tick 0", "2500 expired",
      ])
    #expect(d.early.isEmpty)
    await h.shutdown()
  }

  @Test(
    "Pause freezes an elapsed timer; resume continues from the frozen value",
    arguments: HarnessKind.allCases)
  func pauseResume(_ kind: HarnessKind) async throws {
    let h = try kind.make()
    let base = await h.now()
    _ = try await h.start(.elapsed(id: "e", from: base, title: "E"))
    try await h.wait(until: base.advanced(by: 1_300))
    try await h.pause("e")
    try await h.wait(until: base.advanced(by: 2_800))
    try await h.resume("e")
    let resumedAt = await h.now()
    let waited = resumedAt.advanced(by: 1_000)
    try await h.wait(until: waited)
    let d = await h.delivered()
    // What was due by the instant waited for: a late read may also hold the tick 1.7 s after
    // the resume.
    let kinds = d.filter { $0.event.id == "e" && $0.event.at <= waited }.map {
      "\($0.event.kind.rawValue) \($0.event.value)"
    }
    #expect(kinds == ["started 0", "tick 1", "paused 1", "resumed 1", "tick 2"])
    #expect(d.early.isEmpty)
    await h.shutdown()
  }

  @Test("Stale and immediate dismissal at their instants", arguments: HarnessKind.allCases)
  func staleAndEnd(_ kind: HarnessKind) async throws {
    let h = try kind.make()
    let base = await h.now()
    var r = ActivityRequest.countdown(id: "s", to: base.advanced(by: 1_200), title: "S")
    r.staleDate = base.advanced(by: 700)
    r.endOnExpiry = .immediate
    _ = try await h.start(r)
    try await h.wait(until: base.advanced(by: 1_300))
    let d = await h.delivered()
    #expect(
      d.lines("s", base: base) == [
        "200 tick 1", "700 stale", "1200 tick 0", "1200 expired", "1200 ended 0 expired",
        "1200 dismissed",
      ])
    #expect(d.early.isEmpty)
    await h.shutdown()
  }
}
