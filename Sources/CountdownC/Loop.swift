// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CCountdownABI
import Countdown
import CountdownLoop

/// What a `cd_loop *` points to: the loop, the style of event texts, and the host's callback.
final class CLoop: Sendable {
  let loop: CountdownLoop
  let formatter: TimerFormatter

  init(loop: CountdownLoop, formatter: TimerFormatter) {
    self.loop = loop
    self.formatter = formatter
  }

  /// The loop behind a handle from C.
  static func from(_ p: OpaquePointer?) -> CLoop? {
    guard let p else { return nil }
    return Unmanaged<CLoop>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue()
  }

  /// Runs `body` on the loop and waits for it. From the loop thread, where waiting would never
  /// end, it fails with `CD_ERR_WRONG_THREAD` without running anything.
  func run<T: Sendable>(
    _ what: String, _ body: @escaping @Sendable (borrowing LoopEngine) throws(CountdownError) -> T
  ) -> Result<T, CLoopFailure> {
    if loop.isCurrentThread {
      return .failure(
        CLoopFailure(
          status: CD_ERR_WRONG_THREAD,
          message:
            "\(what) waits for the loop, and this is the loop's own thread (an event callback); use cd_loop_request_async"
        ))
    }
    let answer = Locked<Result<T, CountdownError>?>(nil)
    loop.submit(body) { result in answer.withLockWaking { $0 = result } }
    answer.wait(until: { $0 != nil })
    return answer.withLock { $0! }.mapError {
      CLoopFailure(status: cd_status($0.code), message: $0.message)
    }
  }
}

/// A failure to hand back to C: a status and its message.
struct CLoopFailure: Error {
  var status: cd_status
  var message: String

  /// Records the message for `cd_last_error_message` and returns the status.
  func record() -> cd_status { LastError.fail(status, message) }
}

/// The host's event callback and its context. `@unchecked Sendable`: the context is the
/// host's, used only on the loop thread as the header says.
struct EventSink: @unchecked Sendable {
  let function: cd_event_fn
  let context: UnsafeMutableRawPointer?
  /// The style of `cd_event.text`, or nil when the host asked for no text.
  let formatter: TimerFormatter?
  #if _pointerBitWidth(_64) && _endian(little)
    /// Whether short ids may be read straight from a small string's words.
    let smallStrings = TimerFormatter.smallStringLayoutHolds
  #endif

  /// Hands `e` to the host as a `cd_event` whose strings point into this frame's memory:
  /// no allocation for an event with a native or small id.
  func deliver(_ e: borrowing ActivityEvent) {
    #if _pointerBitWidth(_64) && _endian(little)
      // A short ASCII id (most are) is read from the string's two words onto the stack: no
      // retain, release or call into the standard library per event. The layout is the one
      // the formatter checked once per process (`TimerFormatter.smallStringLayoutHolds`).
      if smallStrings {
        var words = TimerFormatter.words(of: e.id)
        if TimerFormatter.isSmallASCII(words) {
          let count = Int((words.1 >> 56) & 0x0F)
          return withUnsafeBytes(of: &words) { raw in
            deliver(
              e,
              id: UnsafeBufferPointer(
                start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count))
          }
        }
      }
    #endif
    var id = e.id
    id.withUTF8 { deliver(e, id: $0) }
  }

  @inline(__always)
  private func deliver(_ e: borrowing ActivityEvent, id: UnsafeBufferPointer<UInt8>) {
    var event = cd_event(
      at: e.at.milliseconds, kind: e.kind.cValue,
      activity_kind: e.activityKind == .countdown ? CD_KIND_COUNTDOWN : CD_KIND_ELAPSED,
      id: chars(id), id_length: id.count, value: e.value, text: nil, text_length: 0,
      milestone: nil, milestone_length: 0, reason: e.reason.cValue)
    guard let formatter else { return call(&event, e) }
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: TimerFormatter.maximumLength) {
      text in
      event.text_length = formatter.write(signedSeconds: e.value, into: text)
      event.text = chars(UnsafeBufferPointer(text))
      call(&event, e)
    }
  }

  /// Calls the host, with the milestone's name when there is one.
  @inline(__always)
  private func call(_ event: inout cd_event, _ e: borrowing ActivityEvent) {
    guard e.kind == .milestone, var milestone = e.milestone else {
      function(context, &event)
      return
    }
    milestone.withUTF8 { m in
      event.milestone = chars(m)
      event.milestone_length = m.count
      function(context, &event)
    }
  }
}

/// A byte buffer's start as a C string pointer (a valid pointer even for an empty buffer).
func chars(_ b: UnsafeBufferPointer<UInt8>) -> UnsafePointer<CChar>? {
  guard let base = b.baseAddress else { return staticCString("") }
  return UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)
}

/// A static string's bytes, which end in NUL, as a C string.
func staticCString(_ s: StaticString) -> UnsafePointer<CChar> {
  UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
}

extension ActivityEvent.Kind {
  var cValue: cd_event_kind {
    switch self {
    case .started: CD_EVENT_STARTED
    case .updated: CD_EVENT_UPDATED
    case .tick: CD_EVENT_TICK
    case .milestone: CD_EVENT_MILESTONE
    case .stale: CD_EVENT_STALE
    case .expired: CD_EVENT_EXPIRED
    case .paused: CD_EVENT_PAUSED
    case .resumed: CD_EVENT_RESUMED
    case .ended: CD_EVENT_ENDED
    case .dismissed: CD_EVENT_DISMISSED
    }
  }
}

extension Optional where Wrapped == EndReason {
  var cValue: cd_end_reason {
    switch self {
    case nil: CD_END_NONE
    case .requested?: CD_END_REQUESTED
    case .expired?: CD_END_EXPIRED
    case .maxDuration?: CD_END_MAX_DURATION
    case .disabled?: CD_END_DISABLED
    }
  }
}

extension cd_loop_options {
  /// The loop's Swift options and the formatter of event texts, or what is wrong with them.
  func swiftOptions() throws(CountdownError) -> (LoopOptions, TimerFormatter) {
    let precision: TimerPrecision
    if precise != 0 {
      precision = .precise
    } else {
      let q = quantum_ms == 0 ? 1 : Int64(quantum_ms)
      guard (1...1000).contains(q) else {
        throw CountdownError(
          .invalidPayload, "quantum_ms \(quantum_ms) must be 1 to 1000 (0 means 1)")
      }
      precision = .quantum(milliseconds: q)
    }
    var engine = EngineOptions(deliversTicks: deliver_ticks != 0)
    switch max_activities {
    case -1: break
    case 0...Int64(Int32.max): engine.maxActivities = Int(max_activities)
    default:
      throw CountdownError(
        .invalidPayload,
        "max_activities \(max_activities) must be -1 (no limit) or 0 to \(Int32.max)")
    }
    switch max_active_duration_ms {
    case -1: break
    case 1...Instant.wireMaximum.milliseconds: engine.maxActiveDurationMs = max_active_duration_ms
    default:
      throw CountdownError(
        .invalidPayload,
        "max_active_duration_ms \(max_active_duration_ms) must be -1 (no limit) or a positive number of milliseconds"
      )
    }
    return (
      LoopOptions(precision: precision, engine: engine),
      TimerFormatter(style: try format.timerStyle())
    )
  }
}

/// The default loop options.
@c(cd_loop_options_default)
public func cdLoopOptionsDefault() -> cd_loop_options {
  cd_loop_options(
    precise: 0, quantum_ms: 1, max_activities: -1, max_active_duration_ms: -1, deliver_ticks: 1,
    event_text: 1, format: cdFormatOptionsDefault(CD_STYLE_TIMER))
}

/// Starts a loop.
@c(cd_loop_create)
public func cdLoopCreate(
  _ options: UnsafePointer<cd_loop_options>?, _ onEvent: cd_event_fn?,
  _ context: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> cd_status {
  guard let out else { return LastError.fail(CD_ERR_INVALID_ARGUMENT, "cd_loop_create needs loop") }
  out.pointee = nil
  let given = options?.pointee ?? cdLoopOptionsDefault()
  let loopOptions: LoopOptions
  let formatter: TimerFormatter
  do throws(CountdownError) {
    (loopOptions, formatter) = try given.swiftOptions()
  } catch {
    return LastError.fail(CD_ERR_INVALID_ARGUMENT, error.message)
  }
  let sink = onEvent.map {
    EventSink(function: $0, context: context, formatter: given.event_text != 0 ? formatter : nil)
  }
  let loop: CountdownLoop
  do throws(CountdownError) {
    if let sink {
      loop = try CountdownLoop(options: loopOptions, onEvent: { sink.deliver($0) })
    } else {
      loop = try CountdownLoop(options: loopOptions)
    }
  } catch {
    return LastError.fail(error)
  }
  let c = CLoop(loop: loop, formatter: formatter)
  out.pointee = OpaquePointer(Unmanaged.passRetained(c).toOpaque())
  return CD_OK
}

/// Stops and frees a loop.
@c(cd_loop_destroy)
public func cdLoopDestroy(_ handle: OpaquePointer?) -> cd_status {
  guard let handle, let c = CLoop.from(handle) else {
    return LastError.fail(CD_ERR_INVALID_ARGUMENT, "cd_loop_destroy needs a loop, not NULL")
  }
  if c.loop.isCurrentThread {
    return LastError.fail(
      CD_ERR_WRONG_THREAD,
      "cd_loop_destroy joins the loop's thread, and this is that thread (an event callback)")
  }
  c.loop.shutdown()
  Unmanaged<CLoop>.fromOpaque(UnsafeRawPointer(handle)).release()
  return CD_OK
}
