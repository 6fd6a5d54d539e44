// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import CountdownLoop
import Foundation

/// Engine operations per second, and cross-thread submits per second into a loop.
struct OpsBench: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "ops",
    abstract: "Engine start/update/end per second; cross-thread submits per second.")

  @Option(help: "Activities started, updated and ended.")
  var count = 200_000

  @Option(help: "Commands submitted into the loop from other threads.")
  var submits = 200_000

  @Option(help: "Passes of the engine rows, each on a fresh engine; each row is their median.")
  var rounds = 5

  func validate() throws {
    guard (1...100).contains(rounds) else {
      throw ValidationError("--rounds must be 1…100, not \(rounds)")
    }
    guard count >= 1, submits >= 2 else {
      throw ValidationError("--count must be at least 1 and --submits at least 2")
    }
  }

  func run() async throws {
    for r in try await OpsBenchmark(count: count, submits: submits, rounds: rounds).run() {
      print(r.line)
    }
  }
}

struct OpsResult: Codable {
  var name: String
  var perSecond: Double
  var line: String { pad(name, 44) + String(format: "%14.0f /s", perSecond) }
}

struct OpsBenchmark {
  var count: Int
  var submits: Int
  var rounds = 5

  /// Each engine row's median over `rounds` passes, each on a fresh engine (one pass of 200k
  /// takes about 0.1 s, and a busy neighbour on the machine moves one pass by 20%).
  func run() async throws -> [OpsResult] {
    var passes: [[OpsResult]] = []
    for _ in 0..<max(1, rounds) { passes.append(try enginePass()) }
    var results = passes[0].indices.map { k in
      let rates = passes.map { $0[k].perSecond }.sorted()
      return OpsResult(name: passes[0][k].name, perSecond: rates[rates.count / 2])
    }
    results.append(try await submitPass())
    return results
  }

  /// Starts, updates, ends and starts again `count` activities on a fresh engine.
  func enginePass() throws -> [OpsResult] {
    var results: [OpsResult] = []
    let t0 = Instant(milliseconds: 1_795_248_000_000)
    var engine = ActivityEngine(now: t0)
    let ids = (0..<count).map { "op\($0)" }
    var rng = SystemRandomNumberGenerator()
    let ends = (0..<count).map { _ in
      t0.advanced(by: Int64.random(in: 60_000..<3_600_000, using: &rng))
    }
    let clock = ContinuousClock()
    func rate(_ d: Duration, _ n: Int) -> Double {
      Double(n) / (Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
    }
    let started = try clock.measure {
      for k in 0..<count {
        try engine.start(.countdown(id: ids[k], to: ends[k], title: "A"), at: t0)
      }
    }
    results.append(OpsResult(name: "engine start", perSecond: rate(started, count)))
    let updated = try clock.measure {
      for k in 0..<count {
        try engine.update(ids[k], ActivityUpdate(endDate: ends[(k + 1) % count]), at: t0)
      }
    }
    results.append(OpsResult(name: "engine update (endDate)", perSecond: rate(updated, count)))
    let ended = try clock.measure {
      for k in 0..<count { try engine.end(ids[k], ActivityEnding(dismissal: .immediate), at: t0) }
    }
    results.append(
      OpsResult(name: "engine end (immediate dismissal)", perSecond: rate(ended, count)))
    // A service in steady state starts into the slots that ended activities left: the arrays
    // no longer grow (the first start row includes their growth and first-touch page faults).
    let restarted = try clock.measure {
      for k in 0..<count {
        try engine.start(.countdown(id: ids[k], to: ends[k], title: "A"), at: t0)
      }
    }
    results.append(
      OpsResult(name: "engine start (reused slots)", perSecond: rate(restarted, count)))
    // What a Live Activity's update mostly is: new content, the dates as they were.
    let retitled = try clock.measure {
      for k in 0..<count {
        try engine.update(ids[k], ActivityUpdate(content: ["title": .string("B")]), at: t0)
      }
    }
    results.append(OpsResult(name: "engine update (title)", perSecond: rate(retitled, count)))
    // A service updates and ends whichever activity a client names, not the next one in start
    // order: the same commands in a random order, so each reaches an activity not in cache.
    // (Laid out in that order beforehand: the loop reads its own arrays in sequence.)
    let shuffled = (0..<count).shuffled(using: &rng)
    let randomIDs = shuffled.map { ids[$0] }
    let randomEnds = shuffled.map { ends[($0 + 1) % count] }
    let updatedAtRandom = try clock.measure {
      for k in 0..<count {
        try engine.update(randomIDs[k], ActivityUpdate(endDate: randomEnds[k]), at: t0)
      }
    }
    results.append(
      OpsResult(name: "engine update (random order)", perSecond: rate(updatedAtRandom, count)))
    let endedAtRandom = try clock.measure {
      for id in randomIDs { try engine.end(id, ActivityEnding(dismissal: .immediate), at: t0) }
    }
    results.append(
      OpsResult(name: "engine end (random order)", perSecond: rate(endedAtRandom, count)))
    return results
  }

  /// Two threads submit no-op commands as fast as they can; completions are counted.
  func submitPass() async throws -> OpsResult {
    let loop = try CountdownLoop()
    let done = DispatchSemaphore(value: 0)
    let threads = 2
    // What the threads submit (an odd count would otherwise leave the wait without its end).
    let total = submits / threads * threads
    let remaining = Counter(total)
    let t = monotonicNanoseconds()
    for _ in 0..<threads {
      Thread {
        for _ in 0..<(submits / threads) {
          loop.submit(
            { _ in }, completion: { _ in if remaining.decrement() == 0 { done.signal() } })
        }
      }.start()
    }
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
      Thread {
        done.wait()
        c.resume()
      }.start()
    }
    let seconds = Double(monotonicNanoseconds() - t) / 1e9
    loop.shutdown()
    return OpsResult(name: "cross-thread submits (2 threads)", perSecond: Double(total) / seconds)
  }
}

/// A count shared by threads. `@unchecked Sendable`: `value` is touched only under `lock`.
final class Counter: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Int
  init(_ v: Int) { value = v }
  func decrement() -> Int {
    lock.withLock {
      value -= 1
      return value
    }
  }
}
