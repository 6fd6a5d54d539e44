// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import Foundation

/// Where an activity's bytes go: N countdowns started on one engine as the tick runs start
/// them (an hour away, at random milliseconds, titled "A"), then the engine's own account of
/// its storage part by part (``ActivityEngine/footprint``) beside the process's resident
/// memory before and after.
struct MemoryBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "memory",
    abstract: "Bytes per activity, part by part, beside the process's RSS.")

  enum IDs: String, ExpressibleByArgument, CaseIterable {
    /// The tick runs' ids ("a123.0": inline in a String, no allocation of their own).
    case short
    /// Ids the engine generates (UUID text, 36 bytes: out of line).
    case generated
  }

  @Option(help: "Activities to start.")
  var activities = 1_000_000

  @Option(help: "Whose ids: short (the tick runs') or generated (the engine's UUIDs).")
  var ids: IDs = .short

  @Flag(inversion: .prefixedNo, help: "Reserve room for them first, as the tick runs do.")
  var reserve = true

  func validate() throws {
    guard (1...50_000_000).contains(activities) else {
      throw ValidationError("--activities must be 1…50000000, not \(activities)")
    }
  }

  func run() throws {
    let now = Instant(milliseconds: wallNanoseconds() / 1_000_000)
    let before = residentBytes()
    var engine = ActivityEngine(
      now: now, options: EngineOptions(reservedActivities: reserve ? activities : 0))
    var rng = SplitMix64(state: 0x5EED)
    let base = (now.milliseconds / 1_000 + 2) * 1_000 + 3_600_000
    for k in 0..<activities {
      let end = Instant(
        milliseconds: base + Int64(k % 600) * 1_000 + Int64.random(in: 0..<1_000, using: &rng))
      let id = ids == .short ? CountdownPeer.id(k, 0) : nil
      _ = try engine.start(.countdown(id: id, to: end, title: "A"), at: now)
    }
    let after = residentBytes()
    let f = engine.footprint
    let n = Double(f.activities)
    print(
      "\(f.activities) activities, ids \(ids.rawValue), \(reserve ? "reserved" : "not reserved")")
    print("\n| part | used, B/activity | allocated, B/activity |\n|---|---|---|")
    for p in f.parts where p.allocated > 0 || p.used > 0 {
      print(
        "| \(p.name) | "
          + String(format: "%.1f", Double(p.used) / n) + " | "
          + String(format: "%.1f", Double(p.allocated) / n) + " |")
    }
    print(
      "| **all parts** | **" + String(format: "%.1f", Double(f.used) / n) + "** | **"
        + String(format: "%.1f", Double(f.allocated) / n) + "** |")
    print(
      "\nRSS: " + String(format: "%.0f", Double(before) / 1e6) + " MB before, "
        + String(format: "%.0f", Double(after) / 1e6) + " MB after: "
        + String(format: "%.1f", Double(after - before) / n) + " B an activity")
    withExtendedLifetime(engine) {}
  }
}
