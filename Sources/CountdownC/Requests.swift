// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CCountdownABI
import Countdown
import CountdownLoop
import CountdownProtocol

// Commands from C: JSON request lines (docs/protocol.md's request and reply forms) and typed calls.

/// The longest request line, as on the service's socket (docs/protocol.md).
let maximumLineBytes = 65_536

/// Decodes one request line from C, on the caller's thread. Requests that belong to a socket
/// connection (subscribe, unsubscribe, auth) are refused: a loop's events reach its callback.
func decodeRequest(_ line: UnsafePointer<CChar>?, _ length: Int) -> ServerRequest.Decoded {
  // A size_t past Int.max arrives negative: too long as well.
  guard length >= 0, length <= maximumLineBytes else {
    return ServerRequest.Decoded(
      rid: nil,
      request: .failure(
        CountdownError(
          .lineTooLong,
          "the request is \(UInt(bitPattern: length)) bytes; the limit is \(maximumLineBytes)")))
  }
  var n = length
  let bytes = line.map { UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) }
  // One trailing newline (or CR LF) is the line's end, not its content.
  if let bytes, n > 0, bytes[n - 1] == 0x0A {
    n -= 1
    if n > 0, bytes[n - 1] == 0x0D { n -= 1 }
  }
  var decoded = ServerRequest.decode(UnsafeBufferPointer(start: bytes, count: n))
  switch decoded.request {
  case .success(.subscribe), .success(.unsubscribe), .success(.auth):
    decoded.request = .failure(
      CountdownError(
        .invalidPayload,
        "subscribe, unsubscribe and auth belong to socket connections; a cd_loop's events reach the callback given to cd_loop_create"
      ))
  default: break
  }
  return decoded
}

/// The reply line (without its newline) and status for one request's outcome.
func encodeReply(
  _ formatter: TimerFormatter, _ rid: RequestID?, _ outcome: Outcome, at: Instant
) -> ([UInt8], cd_status) {
  var writer = ReplyWriter(formatter: formatter)
  writer.reply(rid, outcome, at: at)
  var bytes = writer.take()
  if bytes.last == 0x0A { bytes.removeLast() }
  if case .failed(let e) = outcome { return (bytes, cd_status(e.code)) }
  return (bytes, CD_OK)
}

/// Runs one JSON request line and writes its reply.
@c(cd_loop_request)
public func cdLoopRequest(
  _ handle: OpaquePointer?, _ line: UnsafePointer<CChar>?, _ lineLength: Int,
  _ reply: UnsafeMutablePointer<CChar>?, _ replyCapacity: Int,
  _ replyLength: UnsafeMutablePointer<Int>?
) -> cd_status {
  guard let c = CLoop.from(handle), let replyLength, line != nil || lineLength == 0 else {
    return LastError.fail(
      CD_ERR_INVALID_ARGUMENT, "cd_loop_request needs a loop, a line (or length 0) and reply_length"
    )
  }
  let decoded = decodeRequest(line, lineLength)
  let item = BatchItem(rid: decoded.rid, request: decoded.request)
  switch c.run("cd_loop_request", { engine in engine.run([item]) }) {
  case .failure(let f): return f.record()
  case .success(let result):
    let (bytes, status) = encodeReply(
      c.formatter, result.items[0].rid, result.items[0].outcome, at: result.at)
    let copied = bytes.withUnsafeBufferPointer {
      copyOut($0, to: reply, capacity: replyCapacity, length: replyLength)
    }
    guard copied == CD_OK else { return copied }
    if status != CD_OK, case .failed(let e) = result.items[0].outcome {
      return LastError.fail(e)
    }
    return status
  }
}

/// The host's reply callback and context. `@unchecked Sendable`: used once, on the loop
/// thread, as the header says.
struct ReplySink: @unchecked Sendable {
  let function: cd_reply_fn?
  let context: UnsafeMutableRawPointer?

  func deliver(_ bytes: [UInt8], _ status: cd_status) {
    guard let function else { return }
    bytes.withUnsafeBufferPointer { function(context, status, chars($0), $0.count) }
  }
}

/// Queues one JSON request line; its reply goes to `done` on the loop thread.
@c(cd_loop_request_async)
public func cdLoopRequestAsync(
  _ handle: OpaquePointer?, _ line: UnsafePointer<CChar>?, _ lineLength: Int,
  _ done: cd_reply_fn?, _ context: UnsafeMutableRawPointer?
) -> cd_status {
  guard let c = CLoop.from(handle), line != nil || lineLength == 0 else {
    return LastError.fail(
      CD_ERR_INVALID_ARGUMENT, "cd_loop_request_async needs a loop and a line (or length 0)")
  }
  let decoded = decodeRequest(line, lineLength)
  let item = BatchItem(rid: decoded.rid, request: decoded.request)
  let sink = ReplySink(function: done, context: context)
  let formatter = c.formatter
  c.loop.submit(
    { engine in engine.run([item]) },
    completion: { result in
      switch result {
      case .success(let r):
        let (bytes, status) = encodeReply(formatter, r.items[0].rid, r.items[0].outcome, at: r.at)
        sink.deliver(bytes, status)
      case .failure(let e):
        // The loop is gone, so its clock with it: the wall clock's now.
        let now = SystemWallClock.now()
        let (bytes, status) = encodeReply(formatter, item.rid, .failed(e), at: now)
        sink.deliver(bytes, status)
      }
    })
  return CD_OK
}

// MARK: - Typed commands

/// Runs `body` on the loop, waiting for it, and maps a failure to its status and message.
func typed(
  _ handle: OpaquePointer?, _ what: String,
  _ prepare: () throws(CountdownError) ->
    @Sendable (borrowing LoopEngine) throws(CountdownError)
    -> Void
) -> cd_status {
  guard let c = CLoop.from(handle) else {
    return LastError.fail(CD_ERR_INVALID_ARGUMENT, "\(what) needs a loop, not NULL")
  }
  let body: @Sendable (borrowing LoopEngine) throws(CountdownError) -> Void
  do throws(CountdownError) {
    body = try prepare()
  } catch {
    return LastError.fail(error)
  }
  switch c.run(what, body) {
  case .success: return CD_OK
  case .failure(let f): return f.record()
  }
}

/// An activity request from a `cd_start`.
func activityRequest(_ s: cd_start, kind: ActivityKind) throws(CountdownError) -> ActivityRequest {
  let content = ActivityContent(
    title: try string("title", s.title, s.title_length),
    subtitle: try optionalString("subtitle", s.subtitle, s.subtitle_length),
    color: try optionalString("color", s.color, s.color_length))
  if s.title == nil { throw CountdownError(.invalidPayload, "title is required") }
  return ActivityRequest(
    id: try optionalString("id", s.id, s.id_length), kind: kind,
    endDate: try optionalInstant("end_date", s.end_date),
    startDate: try optionalInstant("start_date", s.start_date),
    goalMs: s.goal_ms == 0 ? nil : s.goal_ms, content: content,
    staleDate: try optionalInstant("stale_date", s.stale_date), overtime: s.overtime != 0,
    group: try optionalString("group", s.group, s.group_length))
}

func start(
  _ handle: OpaquePointer?, _ s: UnsafePointer<cd_start>?, _ kind: ActivityKind,
  _ idOut: UnsafeMutablePointer<CChar>?, _ idCapacity: Int, _ idLength: UnsafeMutablePointer<Int>?
) -> cd_status {
  let what = kind == .countdown ? "cd_loop_start_countdown" : "cd_loop_start_elapsed"
  guard let c = CLoop.from(handle), let s else {
    return LastError.fail(CD_ERR_INVALID_ARGUMENT, "\(what) needs a loop and a cd_start")
  }
  let request: ActivityRequest
  do throws(CountdownError) {
    request = try activityRequest(s.pointee, kind: kind)
  } catch {
    return LastError.fail(error)
  }
  switch c.run(what, { engine throws(CountdownError) in try engine.start(request) }) {
  case .failure(let f): return f.record()
  case .success(var id):
    guard idOut != nil || idLength != nil else { return CD_OK }
    return id.withUTF8 { copyOut($0, to: idOut, capacity: idCapacity, length: idLength) }
  }
}

/// Starts a countdown.
@c(cd_loop_start_countdown)
public func cdLoopStartCountdown(
  _ handle: OpaquePointer?, _ s: UnsafePointer<cd_start>?, _ idOut: UnsafeMutablePointer<CChar>?,
  _ idCapacity: Int, _ idLength: UnsafeMutablePointer<Int>?
) -> cd_status {
  start(handle, s, .countdown, idOut, idCapacity, idLength)
}

/// Starts an elapsed timer.
@c(cd_loop_start_elapsed)
public func cdLoopStartElapsed(
  _ handle: OpaquePointer?, _ s: UnsafePointer<cd_start>?, _ idOut: UnsafeMutablePointer<CChar>?,
  _ idCapacity: Int, _ idLength: UnsafeMutablePointer<Int>?
) -> cd_status {
  start(handle, s, .elapsed, idOut, idCapacity, idLength)
}

/// Updates an activity.
@c(cd_loop_update)
public func cdLoopUpdate(
  _ handle: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ idLength: Int,
  _ update: UnsafePointer<cd_update>?
) -> cd_status {
  guard let update else {
    return LastError.fail(CD_ERR_INVALID_ARGUMENT, "cd_loop_update needs a cd_update, not NULL")
  }
  return typed(handle, "cd_loop_update") { () throws(CountdownError) in
    let u = update.pointee
    let id = try string("id", id, idLength)
    var patch: [String: JSONValue] = [:]
    if let t = try optionalString("title", u.title, u.title_length) { patch["title"] = .string(t) }
    if let t = try optionalString("subtitle", u.subtitle, u.subtitle_length) {
      patch["subtitle"] = .string(t)
    }
    var change = ActivityUpdate(content: patch)
    change.endDate = try optionalInstant("end_date", u.end_date)
    if let stale = try optionalInstant("stale_date", u.stale_date) {
      change.staleDate = .set(stale)
    }
    let ready = change
    return { engine throws(CountdownError) in try engine.update(id, ready) }
  }
}

/// Pauses an activity.
@c(cd_loop_pause)
public func cdLoopPause(
  _ handle: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ idLength: Int
) -> cd_status {
  typed(handle, "cd_loop_pause") { () throws(CountdownError) in
    let id = try string("id", id, idLength)
    return { engine throws(CountdownError) in try engine.pause(id) }
  }
}

/// Resumes an activity.
@c(cd_loop_resume)
public func cdLoopResume(
  _ handle: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ idLength: Int
) -> cd_status {
  typed(handle, "cd_loop_resume") { () throws(CountdownError) in
    let id = try string("id", id, idLength)
    return { engine throws(CountdownError) in try engine.resume(id) }
  }
}

/// Ends an activity.
@c(cd_loop_end)
public func cdLoopEnd(
  _ handle: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ idLength: Int,
  _ dismissal: cd_dismissal, _ after: Int64
) -> cd_status {
  guard (CD_DISMISS_DEFAULT.rawValue...CD_DISMISS_AFTER.rawValue).contains(dismissal.rawValue)
  else {
    return LastError.fail(
      CD_ERR_INVALID_ARGUMENT, "dismissal \(dismissal.rawValue) is not a cd_dismissal (0 to 2)")
  }
  return typed(handle, "cd_loop_end") { () throws(CountdownError) in
    let id = try string("id", id, idLength)
    let policy: DismissalPolicy
    switch dismissal {
    case CD_DISMISS_DEFAULT: policy = .default
    case CD_DISMISS_IMMEDIATE: policy = .immediate
    default: policy = .after(try Instant(milliseconds: after).validated("after"))
    }
    return { engine throws(CountdownError) in try engine.end(id, ActivityEnding(dismissal: policy))
    }
  }
}
