// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// The APNs payloads of an activity's Live Activity pushes (docs/pushes.md): its content-state,
/// built from the activity at the push's instant as ActivityKit will decode it, and the `aps`
/// dictionary around it. Pure: instants and the activity come in, JSON bytes go out.
public enum LiveActivityPush {
  /// The `aps.event` of a push.
  public enum Event: String, Sendable, Hashable, CaseIterable {
    /// To a push-to-start token: starts the Live Activity on the phone.
    case start
    /// To an update token: new content-state.
    case update
    /// To an update token: the Live Activity ends (and is dismissed at `dismissal-date`).
    case end
  }

  /// What a push says of its activity: the activity as it stands at the push's instant.
  public struct Subject: Sendable, Hashable {
    public var kind: ActivityKind
    public var phase: ActivityPhase
    /// The content's members (`title`, `subtitle`, `alertMessage`, `color`, `fields`,
    /// `relevance`).
    public var content: [String: JSONValue]
    /// A countdown's current end (ms since 1970).
    public var endDate: Int64?
    /// An elapsed timer's origin moved by pauses (ms since 1970).
    public var startDate: Int64?
    /// When it was paused, while it is.
    public var pausedAt: Int64?
    /// The last milestone passed.
    public var milestone: String?
    public var staleDate: Int64?
    /// A countdown that runs on past its end (the content-state says so: `"overtime": true`).
    public var overtime: Bool

    public init(
      kind: ActivityKind, phase: ActivityPhase, content: [String: JSONValue],
      endDate: Int64? = nil, startDate: Int64? = nil, pausedAt: Int64? = nil,
      milestone: String? = nil, staleDate: Int64? = nil, overtime: Bool = false
    ) {
      self.kind = kind
      self.phase = phase
      self.content = content
      self.endDate = endDate
      self.startDate = startDate
      self.pausedAt = pausedAt
      self.milestone = milestone
      self.staleDate = staleDate
      self.overtime = overtime
    }

    /// The activity a stored row describes (as the state file and a snapshot keep it). Nil
    /// when its content is not a JSON object (never for a row an engine wrote).
    public init?(_ row: StoredActivity) {
      guard let content = try? JSONParser.parse(row.content).objectValue else { return nil }
      self.init(
        kind: row.kind, phase: row.phase, content: content, endDate: row.currentEndDate,
        startDate: row.elapsedOrigin, pausedAt: row.pausedAt, milestone: row.lastMilestone,
        staleDate: row.staleDate, overtime: row.overtime)
    }
  }

  /// The priority of a push: 10 for `start`, `end` and for updates that pause, resume or pass a
  /// milestone (`urgent`); the activity's own (5 by default) for content-only updates.
  /// - Parameters:
  ///   - event: The push's event.
  ///   - urgent: Whether the update pauses, resumes or passes a milestone.
  ///   - config: The activity's Live Activity settings.
  public static func priority(_ event: Event, urgent: Bool, _ config: LiveActivity) -> Int {
    event == .update && !urgent ? config.priority : 10
  }

  /// The content-state (docs/pushes.md): the content's `fields`, then `title`, `subtitle`,
  /// `color`, `alertMessage` where set, then `endDate` (a countdown), `startDate` (an elapsed
  /// timer), `pausedAt` (null while running), `isPaused`, `phase` and `milestone` (null when
  /// none passed), `overtime` (true, only for a countdown with overtime), dates in the
  /// activity's encoding; later keys win; then `keys` renames.
  /// - Parameters:
  ///   - s: The activity at the push's instant.
  ///   - config: The activity's Live Activity settings (date encoding, key renames).
  public static func contentState(_ s: Subject, _ config: LiveActivity) -> [String: JSONValue] {
    var state: [String: JSONValue] = [:]
    if case .object(let fields)? = s.content["fields"] { state = fields }
    for key in ["title", "subtitle", "color", "alertMessage"] {
      if let v = s.content[key], v != .null { state[key] = v }
    }
    if let end = s.endDate { state["endDate"] = date(end, config.dateEncoding) }
    if let start = s.startDate { state["startDate"] = date(start, config.dateEncoding) }
    state["pausedAt"] = s.pausedAt.map { date($0, config.dateEncoding) } ?? .null
    state["isPaused"] = .bool(s.phase == .paused)
    state["phase"] = .string(s.phase.rawValue)
    state["milestone"] = s.milestone.map(JSONValue.string) ?? .null
    if s.overtime { state["overtime"] = .bool(true) }
    guard !config.keys.isEmpty else { return state }
    var renamed = state
    // Every rename reads the state before renaming, so that swaps work.
    for from in config.keys.keys.sorted() where state[from] != nil { renamed[from] = nil }
    for (from, to) in config.keys.sorted(by: { $0.key < $1.key }) {
      if let v = state[from] { renamed[to] = v }
    }
    return renamed
  }

  /// `,"sound":NAME` inside an alert (between `body` and `title`, in sorted order), when the
  /// activity has a sound.
  private static func writeSound(_ config: LiveActivity, to out: inout JSONWriter) {
    guard let sound = config.sound else { return }
    out.raw(",\"sound\":")
    out.write(string: sound)
  }

  /// The whole payload of a push, compact JSON:
  /// `{"aps":{"timestamp":…,"event":…,"content-state":{…},…}}`.
  /// - Parameters:
  ///   - event: The push's event (`aps.event`).
  ///   - s: The activity at the event's instant.
  ///   - config: The activity's Live Activity settings.
  ///   - at: the event's instant; `aps.timestamp` is its whole seconds (rounded down).
  ///   - alert: whether an update carries an alert (its content's `alertMessage` was set);
  ///     a start always does.
  ///   - dismissal: an end's `dismissal-date` (ms since 1970), nil for the default.
  public static func payload(
    _ event: Event, _ s: Subject, _ config: LiveActivity, at: Int64, alert: Bool = false,
    dismissal: Int64? = nil
  ) -> [UInt8] {
    // Written straight into bytes with the members in the order a JSON object's sorted keys
    // take (JSONWriter's), so that the bytes are those of `{"aps": …}` as a JSONValue: the
    // writer thread builds one or more of these for every push.
    var out = JSONWriter()
    out.bytes.reserveCapacity(320)
    out.raw("{\"aps\":{")
    let title = s.content["title"] ?? .string("")
    switch event {
    case .start:
      let body = s.content["alertMessage"] ?? s.content["subtitle"] ?? .string("")
      out.raw("\"alert\":{\"body\":")
      out.write(body)
      writeSound(config, to: &out)
      out.raw(",\"title\":")
      out.write(title)
      out.raw("},\"attributes\":")
      out.write(.object(config.attributes ?? [:]))
      out.raw(",\"attributes-type\":")
      if let type = config.attributesType { out.write(string: type) } else { out.raw("null") }
      out.raw(",")
    case .update:
      if alert, let body = s.content["alertMessage"] {
        out.raw("\"alert\":{\"body\":")
        out.write(body)
        writeSound(config, to: &out)
        out.raw(",\"title\":")
        out.write(title)
        out.raw("},")
      }
    case .end: break
    }
    out.raw("\"content-state\":")
    writeContentState(s, config, to: &out)
    if event == .end, let dismissal {
      out.raw(",\"dismissal-date\":")
      out.write(int: floorSeconds(dismissal))
    }
    out.raw(",\"event\":")
    out.write(string: event.rawValue)
    if event == .start {
      // A phone started remotely joins the activity's broadcast channel when it has one
      // (docs/pushes.md, "Broadcast channels"), else sends back its update token.
      if let channel = config.channelId {
        out.raw(",\"input-push-channel\":")
        out.write(string: channel)
      } else {
        out.raw(",\"input-push-token\":1")
      }
    }
    if let r = s.content["relevance"], r != .null {
      out.raw(",\"relevance-score\":")
      out.write(r)
    }
    if let stale = s.staleDate {
      out.raw(",\"stale-date\":")
      out.write(int: floorSeconds(stale))
    }
    out.raw(",\"timestamp\":")
    out.write(int: floorSeconds(at))
    out.raw("}}")
    return out.bytes
  }

  /// ``contentState(_:_:)`` written as a JSON object: straight into bytes, in sorted key order,
  /// when the content has no `fields` and the keys no renames (a push's usual case); through
  /// the dictionary otherwise.
  static func writeContentState(_ s: Subject, _ config: LiveActivity, to out: inout JSONWriter) {
    guard config.keys.isEmpty, s.content["fields"] == nil else {
      out.write(.object(contentState(s, config)))
      return
    }
    let encoding = config.dateEncoding
    out.raw("{")
    // The keys as a JSON object sorts them: alertMessage, color, endDate, isPaused,
    // milestone, overtime, pausedAt, phase, startDate, subtitle, title.
    if let v = s.content["alertMessage"], v != .null {
      out.raw("\"alertMessage\":")
      out.write(v)
      out.raw(",")
    }
    if let v = s.content["color"], v != .null {
      out.raw("\"color\":")
      out.write(v)
      out.raw(",")
    }
    if let end = s.endDate {
      out.raw("\"endDate\":")
      write(date: end, encoding, to: &out)
      out.raw(",")
    }
    out.raw(
      s.phase == .paused ? "\"isPaused\":true,\"milestone\":" : "\"isPaused\":false,\"milestone\":")
    if let m = s.milestone { out.write(string: m) } else { out.raw("null") }
    if s.overtime { out.raw(",\"overtime\":true") }
    out.raw(",\"pausedAt\":")
    if let p = s.pausedAt { write(date: p, encoding, to: &out) } else { out.raw("null") }
    out.raw(",\"phase\":")
    out.write(string: s.phase.rawValue)
    if let start = s.startDate {
      out.raw(",\"startDate\":")
      write(date: start, encoding, to: &out)
    }
    if let v = s.content["subtitle"], v != .null {
      out.raw(",\"subtitle\":")
      out.write(v)
    }
    if let v = s.content["title"], v != .null {
      out.raw(",\"title\":")
      out.write(v)
    }
    out.raw("}")
  }

  /// ``date(_:_:)`` written.
  static func write(date ms: Int64, _ encoding: LiveActivity.DateEncoding, to out: inout JSONWriter)
  {
    switch encoding {
    case .reference, .unix:
      let v = encoding == .reference ? ms - referenceDateMs : ms
      if v % 1000 == 0 { out.write(int: v / 1000) } else { out.write(double: Double(v) / 1000) }
    case .unixMs: out.write(int: ms)
    case .iso8601: out.write(string: iso8601(floorSeconds(ms)))
    }
  }

  /// The largest APNs payload, in bytes.
  public static let maximumPayloadSize = 4096

  /// The largest payload any push of an activity can have until its content, milestones or
  /// `liveActivity` change: each event's payload built with the widest values its dates,
  /// phase and milestone can take. Checked when a command sets them, so that no push is
  /// refused for its size later.
  public static func largestPayload(
    kind: ActivityKind, content: [String: JSONValue], milestones: [Milestone],
    staleDate: Int64?, overtime: Bool = false, _ config: LiveActivity
  ) -> Int {
    // The widest instants: 13 digits of milliseconds with a fraction of a second.
    let wide: Int64 = 253_402_300_799_999
    let longest = milestones.max { $0.name.utf8.count < $1.name.utf8.count }?.name
    let s = Subject(
      kind: kind, phase: .paused, content: content, endDate: kind == .countdown ? wide : nil,
      startDate: kind == .elapsed ? wide : nil, pausedAt: wide, milestone: longest,
      staleDate: staleDate.map { _ in wide }, overtime: overtime)
    var largest = payload(.update, s, config, at: wide, alert: true).count
    largest = max(largest, payload(.end, s, config, at: wide, dismissal: wide).count)
    if !config.startTokens.isEmpty {
      largest = max(largest, payload(.start, s, config, at: wide).count)
    }
    return largest
  }

  /// Whole seconds of an instant in milliseconds, rounded down: an `aps.timestamp`.
  public static func floorSeconds(_ ms: Int64) -> Int64 { Instant.floorDivision(ms, by: 1000) }

  /// Milliseconds between 1970-01-01 and 2001-01-01, ActivityKit's reference date.
  static let referenceDateMs: Int64 = 978_307_200_000

  /// An instant (ms since 1970) written in `encoding`.
  static func date(_ ms: Int64, _ encoding: LiveActivity.DateEncoding) -> JSONValue {
    func seconds(_ ms: Int64) -> JSONValue {
      ms % 1000 == 0 ? .int(ms / 1000) : .double(Double(ms) / 1000)
    }
    switch encoding {
    case .reference: return seconds(ms - referenceDateMs)
    case .unix: return seconds(ms)
    case .unixMs: return .int(ms)
    case .iso8601: return .string(iso8601(floorSeconds(ms)))
    }
  }

  /// `YYYY-MM-DDTHH:MM:SSZ` for whole seconds since 1970 (the proleptic Gregorian calendar,
  /// UTC; years 1 to 9999, which every wire instant is within).
  static func iso8601(_ seconds: Int64) -> String {
    let days = Instant.floorDivision(seconds, by: 86_400)
    let secondOfDay = seconds - days * 86_400
    // Days since 1970 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
    let y = String(year)
    let paddedYear = String(repeating: "0", count: max(0, 4 - y.count)) + y
    return
      "\(paddedYear)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
  }
}
