// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownTestSupport

/// A brute-force model of docs/activities.md, docs/events.md for the randomized test: it visits every millisecond and
/// asks each activity, in start order, whether its displayed value changed and which deadline
/// is due, straight from the definitions. Slow and obviously correct; no wheel, no heap.
final class ReferenceModel {
  final class Activity {
    let id: String
    let seq: Int
    let kind: ActivityKind
    var phase: ActivityPhase = .active
    var anchor: Int64
    var paused: Int64 = 0
    var frozenAt: Int64 = 0
    var countdownStart: Int64?
    var goal: Int64?
    var staleDate: Int64?
    var stale = false
    var expired = false
    /// In firing order.
    var milestones: [Milestone] = []
    var nextMilestone = 0
    var endOnExpiry: DismissalPolicy?
    /// Runs on past its end: once expired, its value is the time since the end, negated.
    var overtime = false
    /// The content's `fields.phase`, set by milestones' patches (the content is otherwise its
    /// title, the id).
    var phaseField: String?
    let startedAt: Int64
    var endedAt: Int64 = 0
    var dismissAt: Int64 = 0
    var lastTimestamp: Int64?

    init(id: String, seq: Int, kind: ActivityKind, anchor: Int64, startedAt: Int64) {
      self.id = id
      self.seq = seq
      self.kind = kind
      self.anchor = anchor
      self.startedAt = startedAt
    }

    func exact(_ t: Int64) -> Int64 {
      let n = phase == .active ? t : frozenAt
      if kind == .countdown, expired { return overtime ? min(0, anchor - n) : 0 }
      return max(0, kind == .countdown ? anchor - n : n - anchor - paused)
    }

    /// Whole seconds shown: the quantity rounded toward +infinity for a countdown (so −n from
    /// n whole seconds past an overtime countdown's end), toward −infinity for an elapsed one.
    func value(_ t: Int64) -> Int64 {
      let ms = exact(t)
      let q = ms / 1000
      let r = ms % 1000
      if kind == .countdown { return r > 0 ? q + 1 : q }
      return q
    }

    func milestoneInstant(_ k: Int) -> Int64 {
      kind == .countdown ? anchor - milestones[k].atMs : anchor + paused + milestones[k].atMs
    }

    func skipPassedMilestones(_ now: Int64) {
      while nextMilestone < milestones.count, milestoneInstant(nextMilestone) <= now {
        nextMilestone += 1
      }
    }
  }

  var now: Int64
  var activities: [Activity] = []  // in start order
  var nextSeq = 0
  var enabled = true
  var maxActivities: Int?
  var maxDuration: Int64?
  var events: [String] = []

  init(now: Int64, maxActivities: Int?, maxDuration: Int64?) {
    self.now = now
    self.maxActivities = maxActivities
    self.maxDuration = maxDuration
  }

  private func log(_ t: Int64, _ kind: String, _ a: Activity, _ extra: String = "") {
    events.append("\(t - t0.milliseconds) \(kind) \(a.id)\(extra.isEmpty ? "" : " " + extra)")
  }

  private func find(_ id: String) -> Activity? { activities.first { $0.id == id } }

  private func finish(_ a: Activity, _ reason: EndReason, _ policy: DismissalPolicy, _ t: Int64) {
    if a.phase == .active { a.frozenAt = t }
    a.phase = .ended
    a.endedAt = t
    a.dismissAt = policy.dismissal(endedAt: Instant(milliseconds: t)).milliseconds
    log(t, "ended", a, "\(a.value(t)) \(reason.rawValue)")
  }

  /// Deadlines due at `t` (all but ticks), for one activity, in the order of docs/events.md.
  private func deadlines(_ a: Activity, _ t: Int64) {
    if a.phase == .active {
      while a.nextMilestone < a.milestones.count, a.milestoneInstant(a.nextMilestone) == t {
        let m = a.milestones[a.nextMilestone]
        var line = m.name
        if case .object(let f)? = m.content["fields"], case .string(let p)? = f["phase"] {
          a.phaseField = p
          line += #" {"fields":{"phase":"\#(p)"},"title":"\#(a.id)"}"#
        }
        log(t, "milestone", a, line)
        a.nextMilestone += 1
      }
    }
    if a.phase != .ended, !a.stale, let d = a.staleDate, d <= t {
      a.stale = true
      log(t, "stale", a)
    }
    if a.phase == .active, a.kind == .countdown, !a.expired, a.anchor <= t {
      a.expired = true
      log(t, "expired", a)
      if let p = a.endOnExpiry { finish(a, .expired, p, t) }
    }
    if a.phase != .ended, let m = maxDuration, a.startedAt + m <= t {
      finish(a, .maxDuration, .default, t)
    }
    if a.phase == .ended, a.dismissAt <= t {
      log(t, "dismissed", a)
      activities.removeAll { $0 === a }
    }
  }

  /// Visits every millisecond up to `t`.
  func advance(to t: Int64) {
    while now < t {
      now += 1
      for a in activities {
        if a.phase == .active, a.startedAt < now, a.value(now - 1) != a.value(now) {
          log(now, "tick", a, "\(a.value(now))")
        }
        deadlines(a, now)
      }
    }
  }

  private func flush() {
    for a in activities { deadlines(a, now) }
  }

  // MARK: - Commands (the same validation as the engine, for valid payloads)

  func start(_ r: ActivityRequest, at t: Int64) -> CountdownError.Code? {
    advance(to: t)
    guard enabled else { return .disabled }
    if find(r.id!) != nil { return .duplicateID }
    if let m = maxActivities, activities.count >= m { return .limitReached }
    let a = Activity(
      id: r.id!, seq: nextSeq, kind: r.kind,
      anchor: r.kind == .countdown ? r.endDate!.milliseconds : (r.startDate?.milliseconds ?? t),
      startedAt: t)
    nextSeq += 1
    a.countdownStart = r.kind == .countdown ? r.startDate?.milliseconds : nil
    a.goal = r.goalMs
    a.staleDate = r.staleDate?.milliseconds
    a.milestones = r.milestones.enumerated().sorted {
      $0.element.atMs != $1.element.atMs
        ? (r.kind == .countdown
          ? $0.element.atMs > $1.element.atMs : $0.element.atMs < $1.element.atMs)
        : $0.offset < $1.offset
    }.map(\.element)
    a.endOnExpiry = r.endOnExpiry
    a.overtime = r.overtime
    a.lastTimestamp = r.timestamp?.milliseconds
    activities.append(a)
    log(t, "started", a)
    a.skipPassedMilestones(t)
    flush()
    return nil
  }

  private func running(_ id: String) -> (Activity?, CountdownError.Code?) {
    guard let a = find(id) else { return (nil, .notFound) }
    if a.phase == .ended { return (nil, .activityEnded) }
    return (a, nil)
  }

  private func timestampOK(_ a: Activity, _ ts: Instant?) -> Bool {
    guard let ts, let last = a.lastTimestamp else { return true }
    return ts.milliseconds >= last
  }

  func update(_ id: String, _ u: ActivityUpdate, at t: Int64) -> CountdownError.Code? {
    advance(to: t)
    let (found, error) = running(id)
    guard let a = found else { return error }
    guard timestampOK(a, u.timestamp) else { return .outOfOrder }
    // Overtime excludes endOnExpiry, and only overtime allows negative milestones, as they
    // stand after the update.
    let overtime = u.overtime ?? a.overtime
    if overtime, u.endOnExpiry.applied(to: a.endOnExpiry) != nil { return .invalidPayload }
    if !overtime, u.milestones.applied(to: a.milestones)?.contains(where: { $0.atMs < 0 }) == true {
      return .invalidPayload
    }
    a.overtime = overtime
    var moves = u.endDate != nil
    if case .set = u.startDate, a.kind == .elapsed { moves = true }
    if a.phase == .paused, moves { a.frozenAt = t }
    if let e = u.endDate {
      a.anchor = e.milliseconds
      a.expired = false
    }
    switch (u.startDate, a.kind) {
    case (.set(let d), .countdown): a.countdownStart = d.milliseconds
    case (.remove, .countdown): a.countdownStart = nil
    case (.set(let d), .elapsed): a.anchor = d.milliseconds
    default: break
    }
    switch u.staleDate {
    case .keep: break
    case .set(let d):
      a.staleDate = d.milliseconds
      if d.milliseconds > t { a.stale = false }
    case .remove:
      a.staleDate = nil
      a.stale = false
    }
    switch u.milestones {
    case .keep: break
    case .set(let m):
      a.milestones = m.enumerated().sorted {
        $0.element.atMs != $1.element.atMs
          ? (a.kind == .countdown
            ? $0.element.atMs > $1.element.atMs : $0.element.atMs < $1.element.atMs)
          : $0.offset < $1.offset
      }.map(\.element)
      a.nextMilestone = 0
    case .remove:
      a.milestones = []
      a.nextMilestone = 0
    }
    switch u.endOnExpiry {
    case .keep: break
    case .set(let p): a.endOnExpiry = p
    case .remove: a.endOnExpiry = nil
    }
    if let ts = u.timestamp { a.lastTimestamp = ts.milliseconds }
    log(t, "updated", a)
    if a.phase == .active { a.skipPassedMilestones(t) }
    flush()
    return nil
  }

  func pause(_ id: String, at t: Int64) -> CountdownError.Code? {
    advance(to: t)
    let (found, error) = running(id)
    guard let a = found else { return error }
    guard a.phase == .active else { return nil }
    a.phase = .paused
    a.frozenAt = t
    log(t, "paused", a, "\(a.value(t))")
    flush()
    return nil
  }

  func resume(_ id: String, at t: Int64) -> CountdownError.Code? {
    advance(to: t)
    let (found, error) = running(id)
    guard let a = found else { return error }
    guard a.phase == .paused else { return nil }
    let d = t - a.frozenAt
    a.paused += d
    if a.kind == .countdown { a.anchor += d }
    a.phase = .active
    log(t, "resumed", a)
    a.skipPassedMilestones(t)
    flush()
    return nil
  }

  func end(_ id: String, _ policy: DismissalPolicy, at t: Int64) -> CountdownError.Code? {
    advance(to: t)
    let (found, error) = running(id)
    guard let a = found else { return error }
    finish(a, .requested, policy, t)
    flush()
    return nil
  }

  func state(_ id: String, at t: Int64) -> (ActivityPhase, Int64, Bool, Bool)? {
    advance(to: t)
    guard let a = find(id) else { return nil }
    return (a.phase, a.value(t), a.stale, a.expired)
  }

  func setEnabled(_ on: Bool, at t: Int64) {
    advance(to: t)
    let was = enabled
    enabled = on
    guard was, !on else { return }
    for a in activities {
      if a.phase != .ended { finish(a, .disabled, .immediate, t) }
      log(t, "dismissed", a)
    }
    activities.removeAll()
  }
}
