// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// The board's two time models held equal: the web page's script (`BoardPage`: `valueAt`,
/// `nextChange`, `inOvertime`, `progressAt`, `sortKey`, `format`) run in Chromium against
/// `ActivityClock` and `TimerFormatter` (what the terminal board and the server use), on
/// thousands of random activity objects and instants: countdowns and elapsed timers, active,
/// paused and ended, with and without overtime, a start, a goal, at and beside each second's
/// boundary, in every style. Every answer must be equal.
///
/// Needs Chromium: `make browser` installs it and runs this suite by itself with
/// `COUNTDOWN_BOARD_DIFF=1` (a missing Chromium is then a failure). The whole suite's run leaves
/// it out: headless Chromium started beside hundreds of tests on two cores sometimes exited 5
/// without a page, eight times in a row over half a minute (twice in six full runs here, once
/// in a fresh-clone CI), and never did in a run of this suite alone.
@Suite(
  "The board page's time model beside ActivityClock",
  .enabled(
    if: BoardScript.required,
    "runs by itself in make browser (COUNTDOWN_BOARD_DIFF=1), which installs Chromium"))
struct BoardPageTimeModelTests {
  static let styles: [TimerStyle] = [
    .compact, .remaining, .positional, .minuteSecond, .timer, .timerWithoutHours,
    .units(maxUnits: 1), .units(maxUnits: 2), .units(maxUnits: 3), .units(maxUnits: 4),
  ]

  /// One activity object (the keys the page reads), an instant and a style.
  struct Case {
    var clock: ActivityClock
    var now: Int64
    var style: TimerStyle

    /// The object as the page gets it.
    var json: String {
      func n(_ v: Int64?) -> String { v.map(String.init) ?? "null" }
      let progress = clock.progress.map { "\($0)" } ?? "null"
      return
        #"{"a":{"kind":"\#(clock.kind.rawValue)","phase":"\#(clock.phase.rawValue)","value":\#(clock.value),"progress":\#(progress),"endDate":\#(n(clock.endDate)),"startDate":\#(n(clock.startDate)),"goalMs":\#(n(clock.goalMs)),"overtime":\#(clock.overtime)},"now":\#(now),"style":\#(BoardPage.config(style))}"#
    }

    /// What ActivityClock and TimerFormatter answer, as the script's answers are written.
    var expected: [String] {
      let v = clock.value(at: now)
      let key = clock.sortKey(at: now)
      return [
        "\(v)", clock.nextChange(after: now).map(String.init) ?? "null",
        "\(clock.isInOvertime(at: now))", clock.progress(at: now).map { "\($0)" } ?? "null",
        "\(key.group)", "\(key.instant)", TimerFormatter(style: style).string(signedSeconds: v),
      ]
    }

    /// Whether the page's answers are these; progress compared as numbers (the script writes
    /// `1` where Swift writes `1.0`, and small values without an exponent).
    func matches(_ got: [String]) -> Bool {
      let want = expected
      guard got.count == want.count else { return false }
      for i in want.indices where got[i] != want[i] {
        guard i == 3, let a = Double(got[i]), let b = Double(want[i]), a == b else { return false }
      }
      return true
    }
  }

  /// A random object as a server would make it: a countdown has an end, an elapsed timer a
  /// start; progress is null exactly when there is nothing to measure it by; a frozen value
  /// is negative only on an overtime countdown.
  static func randomCase(_ rng: inout SplitMix64) -> Case {
    func pick(_ range: ClosedRange<Int64>) -> Int64 { Int64.random(in: range, using: &rng) }
    func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    let now = 1_795_248_000_000 + pick(0...10_000_000)
    let phases: [ActivityPhase] = [.active, .active, .active, .paused, .ended]
    let phase = phases[Int(pick(0...4))]
    // Near a second's boundary (on it or a millisecond either side) half the time.
    func near(_ base: Int64, _ spread: ClosedRange<Int64>) -> Int64 {
      chance(0.5)
        ? base + pick(spread) * 1000 + pick(-1...1) : base + pick(spread) * 1000 + pick(0...999)
    }
    if chance(0.6) {
      let overtime = chance(0.35)
      let end = near(now, -5_000...200_000)
      let start: Int64? = chance(0.5) ? nil : end - pick(-2_000...100_000_000)
      let progress: Double? = start == nil ? nil : Double(pick(0...1000)) / 1000
      let frozen = overtime ? pick(-90_000...1_000_000) : pick(0...1_000_000)
      return Case(
        clock: ActivityClock(
          kind: .countdown, phase: phase, value: phase == .active ? 0 : frozen,
          progress: progress, endDate: end, startDate: start, overtime: overtime),
        now: now, style: styles[Int(pick(0...Int64(styles.count - 1)))])
    }
    let start = near(now, -400_000...2)
    let goal: Int64? = chance(0.5) ? nil : pick(1...10_000_000)
    let progress: Double? = goal == nil ? nil : Double(pick(0...1000)) / 1000
    return Case(
      clock: ActivityClock(
        kind: .elapsed, phase: phase, value: phase == .active ? 0 : pick(0...10_000_000),
        progress: progress, startDate: start, goalMs: goal),
      now: now, style: styles[Int(pick(0...Int64(styles.count - 1)))])
  }

  @Test("Value, next change, overtime, progress, order and text agree on 5000 random cases")
  func agree() throws {
    let chromium = try #require(BoardScript.chromium, "Chromium is not installed")
    let seed = testSeed()
    var rng = SplitMix64(state: seed)
    let cases = (0..<5000).map { _ in Self.randomCase(&rng) }
    let answers = try BoardScript.run(cases.map(\.json), chromium: chromium)
    #expect(answers.count == cases.count, "seed \(seed)")
    var differing: [String] = []
    for (c, got) in zip(cases, answers) where !c.matches(got) {
      differing.append("\(c.json)\n  page: \(got)\n  Swift: \(c.expected)")
    }
    let agree = differing.isEmpty
    #expect(
      agree,
      "seed \(seed): \(differing.count) of \(cases.count) differ, first:\n\(differing.prefix(5).joined(separator: "\n"))"
    )
  }
}

/// What the Chromium suite above runs, cut from the page: checked in every run, Chromium or not.
@Suite("The board page's time model: the script cut from the page")
struct BoardPageScriptTests {
  @Test("The script's functions are the page's: the extract is found and holds each one")
  func extractIsThePages() throws {
    let script = try BoardScript.functions(style: .timer)
    for name in [
      "function format(", "function valueAt(", "function inOvertime(",
      "function nextChange(", "function progressAt(", "function sortKey(",
    ] {
      #expect(script.contains(name), "\(name) missing from the extract")
    }
  }
}

/// The board page's pure functions, cut from the page the server serves, run in headless
/// Chromium over a list of cases.
enum BoardScript {
  static let required = ProcessInfo.processInfo.environment["COUNTDOWN_BOARD_DIFF"] == "1"

  /// The browser itself where Debian keeps it (its `/usr/bin/chromium` is a shell wrapper that
  /// sources `/etc/chromium.d`, whose shared-memory check prints a shell error on every run),
  /// else the wrapper.
  static let chromium: String? = [
    "/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser",
  ]
  .first { FileManager.default.isExecutableFile(atPath: $0) }

  struct Missing: Error, CustomStringConvertible {
    var description: String
    /// Chromium wrote no page at all (it did not run the script).
    var noPage = false
  }

  /// From the page's `const pad2` to just before `function remember(`: the formatter and the
  /// time model, nothing that touches the document or the network.
  static func functions(style: TimerStyle) throws -> String {
    let page = String(decoding: BoardPage.html(style: style), as: UTF8.self)
    guard let from = page.range(of: "const pad2"),
      let to = page.range(of: "function remember(", range: from.upperBound..<page.endIndex),
      let styleLine = page.range(of: "const STYLE = ")
    else { throw Missing(description: "the page no longer has the functions this test cuts") }
    let styleEnd = page[styleLine.lowerBound...].firstIndex(of: "\n")!
    return String(page[styleLine.lowerBound..<styleEnd]) + "\nlet offset = 0;\n"
      + String(page[from.lowerBound..<to.lowerBound])
  }

  /// Runs the cases (JSON objects `{"a":…,"now":…,"style":…}`) and returns, for each, the
  /// page's answers as strings: value, next change, overtime, progress, the sort key's two
  /// parts and the text.
  static func run(_ cases: [String], chromium: String) throws -> [[String]] {
    // Headless Chromium sometimes exits with status 5 and an empty page when the machine is
    // loaded (the whole suite running beside it on two cores), having written nothing: a
    // browser that gave no page is started again, a little later each time, up to eight times
    // over about half a minute; any page it gives is checked in full.
    var attempt = 1
    while true {
      do {
        return try runOnce(cases, chromium: chromium)
      } catch let e as Missing where e.noPage && attempt < 8 {
        Thread.sleep(forTimeInterval: Double(attempt))
        attempt += 1
      }
    }
  }

  /// One run of Chromium over `cases` (see ``run(_:chromium:)``).
  static func runOnce(_ cases: [String], chromium: String) throws -> [[String]] {
    let dir = FileManager.default.temporaryDirectory
      .appendingPathComponent("board-diff-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let html = """
      <!doctype html><html><body><script>
      "use strict";
      \(try functions(style: .timer))
      const cases = [\(cases.joined(separator: ",\n"))];
      const s = (x) => x === null ? "null" : String(x);
      const out = cases.map((c) => {
        const v = valueAt(c.a, c.now), k = sortKey(c.a, c.now);
        return [s(v), s(nextChange(c.a, c.now)), s(inOvertime(c.a, c.now)),
                s(progressAt(c.a, c.now)), s(k[0]), s(k[1]), format(v, c.style)];
      });
      document.body.textContent = "ANSWERS" + JSON.stringify(out) + "END";
      </script></body></html>
      """
    let file = dir.appendingPathComponent("diff.html")
    try html.write(to: file, atomically: true, encoding: .utf8)
    let p = Process()
    p.executableURL = URL(fileURLWithPath: chromium)
    p.arguments = [
      // No zygote: the runs that exited 5 had their zygotes' writes fail (a broken pipe).
      "--headless", "--no-sandbox", "--no-zygote", "--disable-gpu", "--disable-dev-shm-usage",
      "--disable-extensions", "--disable-background-networking", "--no-first-run",
      "--enable-logging=stderr",
      "--user-data-dir=\(dir.appendingPathComponent("profile").path)", "--dump-dom",
      file.absoluteString,
    ]
    let out = Pipe()
    p.standardOutput = out
    p.standardInput = FileHandle.nullDevice
    // Its complaints go to a file, read only when it gave no answers (a pipe left unread
    // could fill and stop it).
    let errFile = dir.appendingPathComponent("stderr.txt")
    _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
    let err = try FileHandle(forWritingTo: errFile)
    defer { try? err.close() }
    p.standardError = err
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let dom = String(decoding: data, as: UTF8.self)
    // Its last lines, less the complaints of every run here (no D-Bus on these machines).
    let complaints = {
      ((try? String(contentsOf: errFile, encoding: .utf8)) ?? "").split(separator: "\n")
        .filter { !$0.contains("dbus") }.suffix(8).joined(separator: " | ")
    }
    guard let a = dom.range(of: "ANSWERS"), let b = dom.range(of: "END", options: .backwards),
      a.upperBound <= b.lowerBound
    else {
      throw Missing(
        description:
          "Chromium (exit \(p.terminationStatus)) gave no answers: \(dom.prefix(500)); its standard error ends: \(complaints())",
        noPage: dom.isEmpty)
    }
    let json = String(dom[a.upperBound..<b.lowerBound])
      .replacingOccurrences(of: "&amp;", with: "&").replacingOccurrences(of: "&lt;", with: "<")
      .replacingOccurrences(of: "&gt;", with: ">")
    guard let rows = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String]] else {
      throw Missing(description: "the page's answers are not rows of strings: \(json.prefix(300))")
    }
    return rows
  }
}
