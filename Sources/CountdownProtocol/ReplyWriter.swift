// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// Writes the service's JSON lines: replies (`"ok"`), activity objects, and the connection
/// errors that are not replies. Runs on network threads.
package struct ReplyWriter {
  package let formatter: TimerFormatter
  package var out = JSONWriter()
  /// A cluster node's (docs/cluster.md): the shard of an activity, written in its object as `shard`.
  package var shardOf: (@Sendable (String) -> Int)?
  /// A cluster node's list or snapshot holds only these shards' activities (those the engine
  /// held in full when it ran: ``BatchResult/served``); nil, every activity.
  package var onlyShards: Set<Int>?
  /// Set when writing for another node: a list's or snapshot's reply says which shards it
  /// holds (``servedShards(_:)``), right after its head.
  package var announcedShards: [Int]?

  package init(formatter: TimerFormatter, shardOf: (@Sendable (String) -> Int)? = nil) {
    self.formatter = formatter
    self.shardOf = shardOf
  }

  private mutating func head(_ rid: RequestID?, ok: Bool, at: Instant) {
    out.raw("{\"rid\":")
    switch rid {
    case nil: out.raw("null")
    case .string(let s)?: out.write(string: s)
    case .int(let n)?: out.write(int: n)
    }
    out.raw(ok ? ",\"ok\":true,\"at\":" : ",\"ok\":false,\"at\":")
    out.write(int: at.milliseconds)
  }

  /// Appends the reply to one request.
  package mutating func reply(_ rid: RequestID?, _ outcome: Outcome, at: Instant) {
    switch outcome {
    case .failed(let e), .forward(_, let e):
      failure(rid, e, at: at)
      return
    case .ok, .authenticated, .unsubscribed:
      head(rid, ok: true, at: at)
    case .started(let id):
      head(rid, ok: true, at: at)
      out.raw(",\"id\":")
      out.write(string: id)
    case .activity(let s):
      head(rid, ok: true, at: at)
      out.raw(",\"activity\":")
      activity(s)
    case .activities(let list):
      head(rid, ok: true, at: at)
      if let only = announcedShards { servedShards(only) }
      out.raw(",\"activities\":")
      activities(list.states())
    case .subscribed(let snapshot, _, _, _, _):
      head(rid, ok: true, at: at)
      if let only = announcedShards { servedShards(only) }
      out.raw(",\"snapshot\":")
      activities(snapshot.states())
    case .cluster(let view):
      head(rid, ok: true, at: at)
      out.raw(",")
      clusterMembers(view)
    }
    out.raw("}\n")
  }

  /// Appends an error reply.
  package mutating func failure(_ rid: RequestID?, _ e: CountdownError, at: Instant) {
    head(rid, ok: false, at: at)
    out.raw(",")
    out.write(errorMembers: e)
    out.raw("}\n")
  }

  /// Appends `{"event":"error",…}`: a connection error that answers no request
  /// (`slowConsumer`).
  package mutating func eventError(_ e: CountdownError, at: Instant) {
    out.raw("{\"at\":")
    out.write(int: at.milliseconds)
    out.raw(",\"event\":\"error\",\"id\":null,")
    out.write(errorMembers: e)
    out.raw("}\n")
  }

  /// `{"at":…,"activities":[…]}`: an HTTP listing or event-stream snapshot (docs/http.md).
  package mutating func listing(_ list: [ActivityState], at: Instant) {
    out.raw("{\"at\":")
    out.write(int: at.milliseconds)
    if let only = announcedShards { servedShards(only) }
    out.raw(",\"activities\":")
    activities(list)
    out.raw("}")
  }

  package mutating func activities(_ list: [ActivityState]) {
    out.raw("[")
    var first = true
    for s in list {
      if let only = onlyShards, let shardOf, !only.contains(shardOf(s.id)) { continue }
      if !first { out.raw(",") }
      first = false
      activity(s)
    }
    out.raw("]")
  }

  /// `,"servedShards":[…]`: in a node's part of a list or snapshot for another node, which
  /// shards it holds (the gathering node checks that every shard is someone's part).
  package mutating func servedShards(_ shards: [Int]) {
    out.raw(",\"servedShards\":[")
    for (k, s) in shards.enumerated() {
      if k > 0 { out.raw(",") }
      out.write(int: Int64(s))
    }
    out.raw("]")
  }

  /// An activity object (docs/protocol.md): id, kind, phase, value, text, progress, stale,
  /// overtime, content, endDate, startDate, pausedAt, goalMs, milestone,
  /// nextMilestone, liveActivity, group.
  package mutating func activity(_ s: ActivityState) {
    out.raw("{\"id\":")
    out.write(string: s.id)
    out.raw(
      s.kind == .countdown
        ? ",\"kind\":\"countdown\",\"phase\":\"" : ",\"kind\":\"elapsed\",\"phase\":\"")
    out.bytes.append(contentsOf: s.phase.rawValue.utf8)
    out.raw("\",\"value\":")
    out.write(int: s.value)
    out.raw(",\"text\":\"")
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: TimerFormatter.maximumLength) { buf in
      let n = formatter.write(signedSeconds: s.value, into: buf)
      out.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buf[0..<n]))
    }
    out.raw("\",\"progress\":")
    if let p = s.progress { out.write(double: p) } else { out.raw("null") }
    out.raw(s.stale ? ",\"stale\":true," : ",\"stale\":false,")
    // Every object has the same keys: an elapsed timer (no end to run past) says false.
    out.raw(s.overtime ? "\"overtime\":true,\"content\":" : "\"overtime\":false,\"content\":")
    out.bytes.append(contentsOf: s.contentJSON.utf8)
    instant("endDate", s.endDate)
    instant("startDate", s.startDate)
    instant("pausedAt", s.pausedAt)
    out.raw(",\"goalMs\":")
    if let g = s.goalMs { out.write(int: g) } else { out.raw("null") }
    out.raw(",\"milestone\":")
    if let m = s.lastMilestone { out.write(string: m) } else { out.raw("null") }
    out.raw(",\"nextMilestone\":")
    if let m = s.nextMilestone {
      out.raw("{\"name\":")
      out.write(string: m.name)
      out.raw(",\"at\":")
      out.write(int: m.at.milliseconds)
      out.raw("}")
    } else {
      out.raw("null")
    }
    out.raw(",\"liveActivity\":")
    if let live = s.liveActivity { out.write(.object(live.object)) } else { out.raw("null") }
    out.raw(",\"group\":")
    if let g = s.group { out.write(string: g) } else { out.raw("null") }
    if let shardOf {
      out.raw(",\"shard\":")
      out.write(int: Int64(shardOf(s.id)))
    }
    out.raw("}")
  }

  /// `{"node":…,"nodes":[…],"shards":[…]}`: `GET /v1/cluster`'s body.
  package mutating func cluster(_ view: ClusterView) {
    out.raw("{")
    clusterMembers(view)
    out.raw("}")
  }

  private mutating func clusterMembers(_ view: ClusterView) {
    out.raw("\"node\":")
    if let n = view.node { out.write(string: n) } else { out.raw("null") }
    out.raw(",\"nodes\":[")
    for (k, n) in view.nodes.enumerated() {
      out.raw(k == 0 ? "{\"name\":" : ",{\"name\":")
      out.write(string: n.name)
      out.raw(",\"advertise\":")
      if let a = n.advertise { out.write(string: a) } else { out.raw("null") }
      out.raw(n.alive ? ",\"alive\":true}" : ",\"alive\":false}")
    }
    out.raw("],\"shards\":[")
    for (k, s) in view.shards.enumerated() {
      out.raw(k == 0 ? "{\"shard\":" : ",{\"shard\":")
      out.write(int: Int64(s.shard))
      out.raw(",\"owner\":")
      if let o = s.owner { out.write(string: o) } else { out.raw("null") }
      out.raw(",\"epoch\":")
      out.write(int: s.epoch)
      if let why = s.unrestorable {
        out.raw(",\"unrestorable\":")
        out.write(string: why)
      }
      out.raw("}")
    }
    out.raw("]")
  }

  /// A webhook's body (docs/webhooks.md): `{"event": <the event object>, "activity": <the
  /// activity object after it, or null once it is gone>}`.
  package mutating func webhook(_ e: ActivityEvent, _ s: ActivityState?) {
    out.raw("{\"event\":")
    var events = WireEventWriter(formatter: formatter)
    events.write(e)
    var line = events.take()
    if line.last == UInt8(ascii: "\n") { line.removeLast() }
    out.bytes.append(contentsOf: line)
    out.raw(",\"activity\":")
    if let s { activity(s) } else { out.raw("null") }
    out.raw("}")
  }

  private mutating func instant(_ key: StaticString, _ t: Instant?) {
    out.raw(",\"")
    out.raw(key)
    out.raw("\":")
    if let t { out.write(int: t.milliseconds) } else { out.raw("null") }
  }

  /// Hands over the bytes written and starts afresh, with room for as many again up to 64 KiB
  /// (the bytes handed over keep their buffer: keeping its capacity here would allocate as
  /// much again, 32 MB after a listing of 100k activities).
  package mutating func take() -> [UInt8] {
    var b: [UInt8] = []
    swap(&b, &out.bytes)
    out.bytes.reserveCapacity(Swift.min(b.count, 1 << 16))
    return b
  }
}
