// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Writes protocol events as JSON Lines (docs/events.md): `at`, `event`, `id`, then the event's keys.
public struct WireEventWriter {
  /// The formatter for every `text`.
  public var formatter: TimerFormatter
  /// Whether `tick` events are written.
  public var writesTicks: Bool
  /// The JSON Lines written so far.
  package var out = JSONWriter()

  public init(formatter: TimerFormatter = TimerFormatter(style: .timer), writesTicks: Bool = false)
  {
    self.formatter = formatter
    self.writesTicks = writesTicks
  }

  private mutating func head(_ at: Instant?, _ event: StaticString, _ id: String?) {
    out.raw("{\"at\":")
    if let at { out.write(int: at.milliseconds) } else { out.raw("null") }
    out.raw(",\"event\":\"")
    out.raw(event)
    out.raw("\",\"id\":")
    if let id { out.write(string: id) } else { out.raw("null") }
  }

  private mutating func valueAndText(_ value: Int64) {
    out.raw(",\"value\":")
    out.write(int: value)
    out.raw(",\"text\":\"")
    let f = formatter
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: TimerFormatter.maximumLength) { buf in
      let n = f.write(signedSeconds: value, into: buf)
      out.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buf[0..<n]))
    }
    out.raw("\"")
  }

  /// Appends one activity event (ticks only when `writesTicks`).
  public mutating func write(_ e: ActivityEvent) {
    switch e.kind {
    case .tick:
      guard writesTicks else { return }
      head(e.at, "tick", e.id)
      valueAndText(e.value)
    case .paused:
      head(e.at, "paused", e.id)
      valueAndText(e.value)
    case .milestone:
      head(e.at, "milestone", e.id)
      out.raw(",\"name\":")
      out.write(string: e.milestone ?? "")
      // The content it applied (canonical JSON already), when it changed it.
      if let content = e.content {
        out.raw(",\"content\":")
        out.bytes.append(contentsOf: content.utf8)
      }
    case .ended:
      head(e.at, "ended", e.id)
      out.raw(",\"reason\":\"")
      out.bytes.append(contentsOf: (e.reason ?? .requested).rawValue.utf8)
      out.raw("\"")
      valueAndText(e.value)
    case .started:
      head(e.at, "started", e.id)
      if let group = e.group {
        out.raw(",\"group\":")
        out.write(string: group)
      }
    case .updated: head(e.at, "updated", e.id)
    case .stale: head(e.at, "stale", e.id)
    case .expired: head(e.at, "expired", e.id)
    case .resumed: head(e.at, "resumed", e.id)
    case .dismissed: head(e.at, "dismissed", e.id)
    }
    out.raw("}\n")
  }

  /// Appends the `state` reply to `get`.
  public mutating func write(state s: ActivityState, at: Instant) {
    head(at, "state", s.id)
    out.raw(",\"phase\":\"")
    out.bytes.append(contentsOf: s.phase.rawValue.utf8)
    out.raw("\"")
    valueAndText(s.value)
    out.raw(",\"progress\":")
    if let p = s.progress { out.write(double: p) } else { out.raw("null") }
    out.raw(",\"stale\":")
    if s.stale { out.raw("true") } else { out.raw("false") }
    out.raw("}\n")
  }

  /// Appends an `error` event for input line `line` (1-based).
  public mutating func write(error: CountdownError, line: Int, at: Instant?, id: String?) {
    head(at, "error", id)
    out.raw(",\"line\":")
    out.write(int: Int64(line))
    out.raw(",")
    out.write(errorMembers: error)
    out.raw("}\n")
  }

  /// Hands over what was written and starts afresh (keeping the buffer's capacity).
  public mutating func take() -> [UInt8] {
    let b = out.bytes
    out.bytes.removeAll(keepingCapacity: true)
    return b
  }
}
