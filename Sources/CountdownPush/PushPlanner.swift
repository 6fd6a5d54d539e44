// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// One push to send: to one token, for one activity, with its whole payload.
public struct PushItem: Sendable, Hashable {
  public var activity: String
  public var token: String
  public var event: LiveActivityPush.Event
  /// `apns-priority`: 10 or 5.
  public var priority: Int
  /// `aps.timestamp`, whole seconds.
  public var timestamp: Int64
  /// Not to be sent before this instant (ms since 1970): the budget's answer.
  public var notBefore: Int64
  /// The instant of the event that caused it (for the latency from event to answer).
  public var eventAt: Int64
  /// The JSON payload.
  public var payload: [UInt8]
  /// `apns-id`: the item's own UUID, the same on every retry and in every log line about it
  /// (docs/pushes.md, "Tracing"), so that one push can be followed through APNs's delivery
  /// log. Empty for a row stored before it had one: APNs then makes its own.
  public var apnsID: String
  /// `apns-expiration`, seconds since 1970 (docs/pushes.md, "Expiry"): 0 asks APNs to try
  /// once and keep nothing; `nil` (a row stored before expiry was kept) sends no header.
  public var expiration: Int64?

  public init(
    activity: String, token: String, event: LiveActivityPush.Event, priority: Int,
    timestamp: Int64, notBefore: Int64, eventAt: Int64, payload: [UInt8], apnsID: String = "",
    expiration: Int64? = nil
  ) {
    self.activity = activity
    self.token = token
    self.event = event
    self.priority = priority
    self.timestamp = timestamp
    self.notBefore = notBefore
    self.eventAt = eventAt
    self.payload = payload
    self.apnsID = apnsID
    self.expiration = expiration
  }
}

/// Where an outbox push goes, as its `token` says (docs/pushes.md, "Broadcast channels"): a
/// device token (hex), a broadcast on a channel (`channel:ID`), or a request to APNs's channel
/// management API (`create-channel`, `delete-channel:ID`). Hex tokens and base64 ids hold no
/// `:` and no `-`, so the forms cannot be mistaken for each other.
public enum PushTarget: Sendable, Hashable {
  /// A push to one device's token.
  case device(String)
  /// One push on a broadcast channel, which APNs fans out to every phone subscribed.
  case channel(String)
  /// Make the activity's channel (`POST /1/apps/{bundleId}/channels`).
  case createChannel
  /// Delete the channel `id` (`DELETE /1/apps/{bundleId}/channels`).
  case deleteChannel(String)

  /// The target as an outbox row's `token` keeps it.
  public init(column: String) {
    if column.hasPrefix("channel:") {
      self = .channel(String(column.dropFirst("channel:".count)))
    } else if column == "create-channel" {
      self = .createChannel
    } else if column.hasPrefix("delete-channel:") {
      self = .deleteChannel(String(column.dropFirst("delete-channel:".count)))
    } else {
      self = .device(column)
    }
  }

  /// The `token` form.
  public var column: String {
    switch self {
    case .device(let t): t
    case .channel(let id): "channel:" + id
    case .createChannel: "create-channel"
    case .deleteChannel(let id): "delete-channel:" + id
    }
  }

  /// Whether it goes to the channel management API rather than the push gateway.
  public var isManagement: Bool {
    switch self {
    case .createChannel, .deleteChannel: true
    case .device, .channel: false
    }
  }
}

extension PushItem {
  /// Where the push goes (``PushTarget``).
  public var target: PushTarget { PushTarget(column: token) }
}

/// What the outbox does with a planned push.
public enum PushOperation: Equatable, Sendable {
  /// A new push.
  case add(PushItem)
  /// The unsent push of the same activity and token with the same timestamp takes this one's
  /// place (the latest state of that second).
  case replace(PushItem)

  public var item: PushItem {
    switch self {
    case .add(let i), .replace(let i): i
    }
  }
}

/// Turns a wake's events into pushes (docs/pushes.md, "Which events push"): from the events
/// and each activity's stored row after the wake (the rows the store writes in the same
/// commit), through the budget, into payloads. Pure: no clock, no I/O; the store's writer
/// thread runs it and writes its operations with the wake's commit.
public struct PushPlanner: Sendable {
  /// An event as the planner needs it.
  public struct Event: Sendable, Hashable {
    public var kind: ActivityEvent.Kind
    public var at: Int64
    public var id: String
    public init(kind: ActivityEvent.Kind, at: Int64, id: String) {
      self.kind = kind
      self.at = at
      self.id = id
    }
  }

  public private(set) var budget = PushBudget()
  /// Per activity with a Live Activity: its last row (an immediate dismissal leaves no row
  /// after the wake; its end push is built from this one, ended at the event's instant), and
  /// the alert message last pushed (an update alerts when it changes).
  private var known: [String: (row: StoredActivity, alert: String?)] = [:]
  /// Per activity, then token: what the waiting push carries, so that one replacing it keeps
  /// its urgency and its alert (by activity, so that a dismissal forgets its activity's in one
  /// step, not a pass over every waiting push).
  private var waiting: [String: [String: (urgent: Bool, alert: Bool, end: Bool)]] = [:]
  /// Per activity: what its last push showed (``shows(_:_:)``), so that an update that
  /// changes none of it pushes nothing.
  private var shown: [String: [UInt8]?] = [:]
  /// Per activity: its update tokens as of the last `started` or `updated` planned (the rows
  /// are those after the wake, so an earlier event of the same wake, a tick, already has the
  /// new ones): a token not among them joins late.
  private var tokens: [String: [String]] = [:]
  /// Each push's `apns-id`, drawn when it is planned (and so stored with it).
  private var apnsIDs: SplitMix64
  /// Whether broadcast channels are on (`--apns-channels`): without, `liveActivity.channel`
  /// is kept and nothing is made or broadcast.
  public let channels: Bool

  /// A planner whose pushes' `apns-id`s are drawn from `seed` (random by default; a test
  /// fixes it); `channels` turns broadcast channels on.
  public init(seed: UInt64 = .random(in: .min ... .max), channels: Bool = false) {
    apnsIDs = SplitMix64(state: seed)
    self.channels = channels
  }

  /// The pushes of `events` (one wake's, in order), given the rows after the wake by id,
  /// decided at `now` (ms).
  public mutating func plan(
    _ events: [Event], rows: [String: StoredActivity], now: Int64
  ) -> [PushOperation] {
    var out: [PushOperation] = []
    for e in events {
      if e.kind == .dismissed {
        if let item = deleteChannel(of: e, now: now) { out.append(.add(item)) }
        known[e.id] = nil
        shown[e.id] = nil
        tokens[e.id] = nil
        budget.forget(activity: e.id)
        waiting[e.id] = nil
        continue
      }
      guard var row = rows[e.id] ?? known[e.id]?.row, let live = row.liveActivity else {
        // The Live Activity was removed: a channel the server made goes with it.
        if let item = deleteChannel(of: e, now: now) { out.append(.add(item)) }
        known[e.id] = nil
        shown[e.id] = nil
        tokens[e.id] = nil
        continue
      }
      if rows[e.id] == nil, e.kind == .ended {
        // Dismissed at once in this wake: the row before it, ended now.
        row.phase = .ended
        row.frozenAt = e.at
        row.endedAt = e.at
        row.dismissAt = e.at
      }
      let previousAlert = known[e.id]?.alert
      let subject = LiveActivityPush.Subject(row)
      var alertMessage: String?
      if case .string(let m)? = subject?.content["alertMessage"] { alertMessage = m }
      known[e.id] = (row, alertMessage ?? previousAlert)
      guard let subject else { continue }
      let showing = Self.shows(subject, live)
      var tokens: [String]
      var event: LiveActivityPush.Event
      var urgent = true
      var alert = false
      switch e.kind {
      case .started:
        tokens = live.startTokens
        event = .start
        self.tokens[e.id] = updateTargets(live)
        if channels, live.ownsChannel, live.channelId == nil {
          out.append(.add(createChannel(for: e, now: now)))
        }
      case .updated:
        tokens = live.pushTokens
        event = .update
        urgent = false
        alert = alertMessage != nil && alertMessage != previousAlert
        // An update that changes nothing a phone shows (a token added or removed, an option)
        // pushes nothing to the tokens that had it; a token added late gets the activity as
        // it is now, whatever changed before it came (docs/pushes.md, "A token that joins
        // late"): the app sends its token after starting its Live Activity.
        // The update tokens before this event (none for an activity that had no Live
        // Activity): one added since gets the catch-up push.
        let previousTokens = self.tokens[e.id] ?? []
        tokens = updateTargets(live)
        self.tokens[e.id] = tokens
        if !alert, let shown = shown[e.id], shown == showing {
          // A channel APNs has just made joins late too: the phones that subscribe to it
          // get the activity as it is now (and APNs keeps it for those that come later).
          tokens = tokens.filter { !previousTokens.contains($0) }
          guard !tokens.isEmpty else { continue }
          urgent = true
          if row.phase == .ended { event = .end }
        }
      case .paused, .resumed, .milestone:
        tokens = updateTargets(live)
        event = .update
      case .ended:
        tokens = updateTargets(live)
        event = .end
      case .tick, .stale, .expired, .dismissed:
        continue
      }
      shown[e.id] = showing
      for token in tokens {
        let key = PushBudget.Key(activity: e.id, token: token)
        let decision = budget.admit(key, at: e.at, now: now)
        var finalEvent = event
        switch decision {
        case .new:
          waiting[e.id, default: [:]][token] = (urgent, alert, event == .end)
        case .replace:
          let before = waiting[e.id]?[token] ?? (false, false, false)
          urgent = urgent || before.urgent
          alert = alert || before.alert
          if before.end { finalEvent = .end }
          waiting[e.id, default: [:]][token] = (urgent, alert, finalEvent == .end)
        }
        let (timestamp, notBefore) =
          switch decision {
          case .new(let t, let n), .replace(let t, let n): (t, n)
          }
        let item = PushItem(
          activity: e.id, token: token, event: finalEvent,
          priority: LiveActivityPush.priority(finalEvent, urgent: urgent, live),
          timestamp: timestamp, notBefore: notBefore, eventAt: e.at,
          payload: LiveActivityPush.payload(
            finalEvent, subject, live, at: timestamp * 1000, alert: alert,
            dismissal: Self.dismissal(row)),
          apnsID: apnsIDs.uuid(),
          expiration: Self.expiration(finalEvent, row, subject, timestamp: timestamp))
        switch decision {
        case .new: out.append(.add(item))
        case .replace: out.append(.replace(item))
        }
      }
    }
    return out
  }

  /// Where an activity's `update` and `end` pushes go: its update tokens, and its broadcast
  /// channel once it has one (`channel:ID`, a budget and a waiting line of its own).
  func updateTargets(_ live: LiveActivity) -> [String] {
    guard channels, let channel = live.channelId else { return live.pushTokens }
    return live.pushTokens + [PushTarget.channel(channel).column]
  }

  /// The request that makes `e`'s activity a broadcast channel (docs/pushes.md, "Broadcast
  /// channels"): stored in the outbox like a push, sent to the channel management API.
  mutating func createChannel(for e: Event, now: Int64) -> PushItem {
    PushItem(
      activity: e.id, token: PushTarget.createChannel.column, event: .start, priority: 10,
      timestamp: e.at / 1000, notBefore: now, eventAt: e.at,
      payload: Array(Self.channelRequestBody.utf8), apnsID: apnsIDs.uuid(), expiration: nil)
  }

  /// The body of a channel's creation: the most recent message kept for phones offline
  /// (`message-storage-policy` 1), for Live Activities.
  public static let channelRequestBody = #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#

  /// The deletion of the channel the server made for `e`'s activity, if it has one (its
  /// activity dismissed, or its Live Activity removed); nil otherwise. A channel the caller
  /// made is the caller's to delete.
  mutating func deleteChannel(of e: Event, now: Int64) -> PushItem? {
    guard channels, let live = known[e.id]?.row.liveActivity, live.ownsChannel,
      let channel = live.channelId
    else { return nil }
    return PushItem(
      activity: e.id, token: PushTarget.deleteChannel(channel).column, event: .end,
      priority: 10, timestamp: e.at / 1000, notBefore: now, eventAt: e.at, payload: [],
      apnsID: apnsIDs.uuid(), expiration: nil)
  }

  /// After a restart: the activities' rows as the state file has them, and the budget it
  /// kept (``PushBudget/restore(_:timestamp:notBefore:)``).
  public mutating func restore(
    rows: [StoredActivity], budget: [(key: PushBudget.Key, timestamp: Int64, notBefore: Int64)]
  ) {
    for row in rows {
      guard let live = row.liveActivity else { continue }
      let subject = LiveActivityPush.Subject(row)
      var alert: String?
      if case .string(let m)? = subject?.content["alertMessage"] { alert = m }
      known[row.id] = (row, alert)
      shown[row.id] = subject.map { Self.shows($0, live) }
      tokens[row.id] = updateTargets(live)
    }
    for b in budget { self.budget.restore(b.key, timestamp: b.timestamp, notBefore: b.notBefore) }
  }

  /// Forgets the activities `forget` takes, their budget included (a cluster node stopped
  /// serving their shard; a node that takes it again restores them, ``restore(rows:budget:)``).
  public mutating func forget(where forget: (String) -> Bool) {
    known = known.filter { !forget($0.key) }
    waiting = waiting.filter { !forget($0.key) }
    shown = shown.filter { !forget($0.key) }
    tokens = tokens.filter { !forget($0.key) }
    budget.forget(where: forget)
  }

  /// What an update push of `subject` would show (its payload at a fixed instant, no alert).
  static func shows(_ subject: LiveActivityPush.Subject, _ live: LiveActivity) -> [UInt8] {
    LiveActivityPush.payload(.update, subject, live, at: 0, alert: false, dismissal: nil)
  }

  /// A push's `apns-expiration` (docs/pushes.md, "Expiry"), in seconds: a `start` or an
  /// `update` expires at the activity's stale date, else a running countdown's current end (a
  /// paused one has none yet), else 8 hours after the push's timestamp; an `end` at its dismissal instant. An instant already
  /// past at the push's timestamp gives 0: APNs tries once and stores nothing.
  static func expiration(
    _ event: LiveActivityPush.Event, _ row: StoredActivity, _ subject: LiveActivityPush.Subject,
    timestamp: Int64
  ) -> Int64 {
    let ms: Int64
    switch event {
    case .end:
      ms = row.dismissAt
    case .start, .update:
      if let stale = subject.staleDate {
        ms = stale
      } else if subject.kind == .countdown, subject.phase == .active, let end = subject.endDate {
        ms = end
      } else {
        ms = timestamp * 1000 + 8 * 3_600_000
      }
    }
    // Rounded up: a push never expires before the instant it stands for.
    let seconds = ms >= 0 ? (ms + 999) / 1000 : ms / 1000
    return seconds > timestamp ? seconds : 0
  }

  /// An end's `dismissal-date`: the end instant for an immediate dismissal, the instant given
  /// for `{"after":…}`, none for the default (four hours, which the phone applies itself).
  static func dismissal(_ row: StoredActivity) -> Int64? {
    guard row.phase == .ended else { return nil }
    if row.dismissAt - row.endedAt == DismissalPolicy.maximumDelayMs { return nil }
    return row.dismissAt
  }
}

extension PushItem: OutboxItem {
  /// Pushes of one activity to one token go in order, one at a time.
  public var lane: PushBudget.Key { PushBudget.Key(activity: activity, token: token) }
}
