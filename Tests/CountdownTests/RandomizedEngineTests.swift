import Testing

@testable import Countdown

@Suite("Randomized: the wheel engine against a brute-force reference")
struct RandomizedEngineTests {
  @Test("Thousands of random commands and instants give the same events", arguments: 1...12)
  func matchesReference(seed: UInt64) throws {
    var rng = SplitMix64(state: seed)
    let maxActivities: Int? = seed % 3 == 0 ? 4 : nil
    let maxDuration: Int64? = seed % 4 == 1 ? 25_000 : nil
    let recorder = Recorder()
    var engine = ActivityEngine(
      now: t0,
      options: EngineOptions(maxActivities: maxActivities, maxActiveDurationMs: maxDuration)
    ) { recorder.events.append($0) }
    let reference = ReferenceModel(
      now: t0.milliseconds, maxActivities: maxActivities, maxDuration: maxDuration)
    let ids = ["a", "b", "c", "d", "e", "f"]
    var t = t0.milliseconds
    var commands = 0

    func rand(_ r: ClosedRange<Int64>) -> Int64 { Int64.random(in: r, using: &rng) }
    func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    func instant(_ r: ClosedRange<Int64>) -> Instant { Instant(milliseconds: t + rand(r)) }
    func policy() -> DismissalPolicy {
      switch rand(0...2) {
      case 0: .immediate
      case 1: .after(instant(-1_000...30_000))
      default: .default
      }
    }
    func milestones() -> [Milestone] {
      (0..<rand(0...3)).map { k in Milestone(name: "m\(k)", atMs: rand(0...12_000)) }
    }
    func code(_ body: () throws -> Void) -> CountdownError.Code? { errorCode(body) }

    for _ in 0..<400 {
      // Mostly small steps, sometimes none (same-instant commands), sometimes longer.
      t += chance(0.2) ? 0 : chance(0.9) ? rand(1...1_500) : rand(2_000...8_000)
      let now = Instant(milliseconds: t)
      let id = ids[Int(rand(0...Int64(ids.count - 1)))]
      let kindOf = engine.handle(for: id).flatMap { engine.state(of: $0) }?.kind
      var got: CountdownError.Code?
      var want: CountdownError.Code?
      switch rand(0...99) {
      case 0..<30:
        var r: ActivityRequest
        if chance(0.6) {
          r = .countdown(id: id, to: instant(-2_000...20_000), title: id)
          if chance(0.4) { r.startDate = instant(-10_000...0) }
          if chance(0.5) { r.endOnExpiry = policy() }
        } else {
          r = .elapsed(id: id, from: chance(0.5) ? instant(-5_000...5_000) : nil, title: id)
          if chance(0.3) { r.goalMs = rand(0...20_000) }
        }
        if chance(0.4) { r.staleDate = instant(-2_000...20_000) }
        r.milestones = milestones()
        if chance(0.3) { r.timestamp = instant(-5_000...5_000) }
        got = code { try engine.start(r, at: now) }
        want = reference.start(r, at: t)
      case 30..<50:
        var u = ActivityUpdate()
        if kindOf == .countdown {
          if chance(0.5) { u.endDate = instant(-3_000...15_000) }
          if chance(0.2) { u.startDate = chance(0.5) ? .set(instant(-10_000...0)) : .remove }
          if chance(0.3) { u.endOnExpiry = chance(0.7) ? .set(policy()) : .remove }
        } else if kindOf == .elapsed, chance(0.3) {
          u.startDate = .set(instant(-5_000...5_000))
        }
        if chance(0.3) { u.staleDate = chance(0.7) ? .set(instant(-2_000...10_000)) : .remove }
        if chance(0.3) { u.milestones = chance(0.8) ? .set(milestones()) : .remove }
        if chance(0.3) { u.timestamp = instant(-5_000...5_000) }
        got = code { try engine.update(id, u, at: now) }
        want = reference.update(id, u, at: t)
      case 50..<62:
        got = code { try engine.pause(id, at: now) }
        want = reference.pause(id, at: t)
      case 62..<74:
        got = code { try engine.resume(id, at: now) }
        want = reference.resume(id, at: t)
      case 74..<84:
        let p = policy()
        got = code { try engine.end(id, ActivityEnding(dismissal: p), at: now) }
        want = reference.end(id, p, at: t)
      case 84..<97:
        let w = reference.state(id, at: t)
        do {
          let s = try engine.state(of: id, at: now)
          #expect(w != nil, "seed \(seed): engine has \(id), reference does not")
          if let w {
            #expect(
              s.phase == w.0 && s.value == w.1 && s.stale == w.2 && s.expired == w.3,
              "seed \(seed) state of \(id) at \(t - t0.milliseconds): \(s) vs \(w)")
          }
        } catch {
          #expect(w == nil && error.code == .notFound, "seed \(seed): \(error)")
        }
      default:
        let on = chance(0.5)
        try engine.setEnabled(on, at: now)
        reference.setEnabled(on, at: t)
      }
      commands += 1
      // The wheel, the heap and the id index stay consistent after every command (a broken
      // invariant stops the run with its message).
      engine.checkInvariants()
      #expect(got == want, "seed \(seed) command \(commands) at \(t - t0.milliseconds) on \(id)")
      if got != want || recorder.lines != reference.events { break }
    }
    try engine.advance(to: Instant(milliseconds: t + 30_000))
    engine.checkInvariants()
    reference.advance(to: t + 30_000)
    let mine = recorder.lines
    let theirs = reference.events
    if mine != theirs {
      let k =
        (0..<min(mine.count, theirs.count)).first { mine[$0] != theirs[$0] }
        ?? min(mine.count, theirs.count)
      Issue.record(
        "seed \(seed): first difference at event \(k): engine \(mine.dropFirst(k).prefix(4)) vs reference \(theirs.dropFirst(k).prefix(4))"
      )
    }
    #expect(mine.count > 100, "the run should exercise many events")
  }
}
