// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// Random runs of engine commands, shared by the tests of the engine's snapshot and of the
/// state file: commands at increasing instants over a handful of ids, applied alike to
/// engines that are then compared.
package enum RandomCommands {
  /// One command of a random run, applied alike to two engines.
  package enum Command {
    case start(ActivityRequest)
    case update(String, ActivityUpdate)
    case pause(String)
    case resume(String)
    case end(String, DismissalPolicy)
    case enable(Bool)
  }

  /// A random run: commands at increasing instants over a handful of ids, with made ids too.
  package static func run(
    _ g: inout RandomRun, count: Int, ids: [String] = ["a", "b", "c", "d", "e"]
  ) -> [(at: Int64, command: Command)] {
    var out: [(Int64, Command)] = []
    for _ in 0..<count {
      g.step()
      let id = ids[Int(g.rand(0...Int64(ids.count - 1)))]
      let command: Command
      switch g.rand(0...99) {
      case 0..<32:
        var r: ActivityRequest
        let given: String? = g.chance(0.85) ? id : nil
        if g.chance(0.6) {
          r = .countdown(id: given, to: g.instant(-2_000...20_000), title: id)
          if g.chance(0.4) { r.startDate = g.instant(-10_000...0) }
          if g.chance(0.5) {
            r.endOnExpiry = g.policy()
          } else if g.chance(0.4) {
            r.overtime = true
          }
        } else {
          r = .elapsed(id: given, from: g.chance(0.5) ? g.instant(-5_000...5_000) : nil, title: id)
          if g.chance(0.3) { r.goalMs = g.rand(0...20_000) }
        }
        if g.chance(0.4) { r.staleDate = g.instant(-2_000...20_000) }
        if g.chance(0.3) { r.content.subtitle = "sub \(g.rand(0...9))" }
        if g.chance(0.2) { r.content.fields = ["gate": .string("B\(g.rand(1...20))")] }
        r.milestones = r.overtime ? g.overtimeMilestones() : g.milestones()
        if g.chance(0.3) { r.timestamp = g.instant(-5_000...5_000) }
        command = .start(r)
      case 32..<52:
        var u = ActivityUpdate()
        if g.chance(0.5) { u.endDate = g.instant(-3_000...15_000) }
        if g.chance(0.2) { u.startDate = g.chance(0.5) ? .set(g.instant(-10_000...0)) : .remove }
        if g.chance(0.3) {
          u.staleDate = g.chance(0.7) ? .set(g.instant(-2_000...10_000)) : .remove
        }
        if g.chance(0.3) { u.milestones = g.chance(0.8) ? .set(g.milestones()) : .remove }
        if g.chance(0.3) { u.content = ["title": .string("T\(g.rand(0...9))")] }
        if g.chance(0.3) { u.timestamp = g.instant(-5_000...5_000) }
        command = .update(id, u)
      case 52..<66: command = .pause(id)
      case 66..<80: command = .resume(id)
      case 80..<94: command = .end(id, g.policy())
      default: command = .enable(g.chance(0.7))
      }
      out.append((g.t, command))
    }
    return out
  }

  /// A random run of 60 commands from t0, and an engine that applied the first `cut` of them
  /// and then, half the time, moved its clock on alone by up to 3 s.
  package static func partlyRun(
    _ g: inout RandomRun, options: EngineOptions,
    onEvent: @escaping (ActivityEvent) -> Void = { _ in }
  ) throws -> (engine: ActivityEngine, commands: [(at: Int64, command: Command)], cut: Int) {
    g.t = t0.milliseconds
    let commands = run(&g, count: 60)
    let cut = Int(g.rand(0...Int64(commands.count)))
    var e = ActivityEngine(now: t0, options: options, onEvent: onEvent)
    for (at, c) in commands[..<cut] { _ = apply(c, at: at, to: &e) }
    if g.chance(0.5) { try e.advance(to: e.now.advanced(by: g.rand(0...3_000))) }
    return (e, commands, cut)
  }

  /// Applies `c` at `at` and returns its error code, if any.
  package static func apply(_ c: Command, at: Int64, to e: inout ActivityEngine) -> CountdownError
    .Code?
  {
    let now = Instant(milliseconds: at)
    do throws(CountdownError) {
      switch c {
      case .start(let r): _ = try e.start(r, at: now)
      case .update(let id, let u): try e.update(id, u, at: now)
      case .pause(let id): try e.pause(id, at: now)
      case .resume(let id): try e.resume(id, at: now)
      case .end(let id, let p): try e.end(id, ActivityEnding(dismissal: p), at: now)
      case .enable(let on): try e.setEnabled(on, at: now)
      }
      return nil
    } catch {
      return error.code
    }
  }
}
