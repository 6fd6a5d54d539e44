// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CCountdownABI
import Countdown
import CountdownC
import CountdownLoop

/// Our loop driven through the C ABI (`include/countdown.h`), as a C host would: created with
/// `cd_loop_create`, activities started with JSON requests, every tick handed to a C function
/// pointer as a `cd_event` (id and text as pointer + length, the text formatted in the loop's
/// style). Beside `countdown`, it shows what the C boundary costs per tick.
final class CABIPeer: TickPeer {
  let precision: TimerPrecision
  /// Whether each `cd_event` carries its text (the loop formats every tick).
  let eventText: Bool
  var loop: OpaquePointer?
  var recorder: TickRecorder?
  /// Each index's current id generation, for churn.
  var generations = IDGenerations()

  init(precision: TimerPrecision, eventText: Bool) {
    self.precision = precision
    self.eventText = eventText
  }

  /// The C callback: records each tick's lateness. `context` is the recorder, borrowed
  /// without a retain (a C host's context pointer is not reference counted either).
  static let onEvent: cd_event_fn = { context, event in
    guard let context, let event, event.pointee.kind == CD_EVENT_TICK else { return }
    let at = event.pointee.at
    Unmanaged<TickRecorder>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.record(atMs: at) }
  }

  /// A reply callback that resumes a waiting task. `context` is a retained `ReplyWaiter`.
  static let onReply: cd_reply_fn = { context, status, _, _ in
    guard let context else { return }
    let w = Unmanaged<ReplyWaiter>.fromOpaque(context).takeRetainedValue()
    w.body?()
    w.continuation?.resume(returning: status)
  }

  final class ReplyWaiter: @unchecked Sendable {
    // @unchecked Sendable: set before the request is queued, used once on the loop thread.
    var body: (@Sendable () -> Void)?
    var continuation: CheckedContinuation<cd_status, Never>?
  }

  /// Queues `lines` as asynchronous requests, then waits for a final ping (replies come in
  /// order), running `body` on the loop thread when it is answered.
  func send(_ lines: [String], then body: (@Sendable () -> Void)? = nil) async throws {
    for var line in lines {
      let status = line.withUTF8 { u in
        u.withMemoryRebound(to: CChar.self) {
          cd_loop_request_async(loop, $0.baseAddress, $0.count, nil, nil)
        }
      }
      guard status == CD_OK else { throw CountdownError(.systemError, "request: \(status)") }
    }
    let waiter = ReplyWaiter()
    waiter.body = body
    let status = await withCheckedContinuation { (c: CheckedContinuation<cd_status, Never>) in
      waiter.continuation = c
      var ping = #"{"op":"ping"}"#
      let context = Unmanaged.passRetained(waiter).toOpaque()
      _ = ping.withUTF8 { u in
        u.withMemoryRebound(to: CChar.self) {
          cd_loop_request_async(loop, $0.baseAddress, $0.count, Self.onReply, context)
        }
      }
    }
    guard status == CD_OK else { throw CountdownError(.systemError, "ping: \(status)") }
  }

  static func startLine(_ index: Int, _ generation: Int, _ end: Int64) -> String {
    #"{"op":"start","id":"a\#(index).\#(generation)","kind":"countdown","endDate":\#(end),"title":"A"}"#
  }

  func start(ends: [Int64], recorder: TickRecorder) async throws {
    var options = cd_loop_options_default()
    options.event_text = eventText ? 1 : 0
    switch precision {
    case .precise: options.precise = 1
    case .quantum(let ms): options.quantum_ms = Int32(ms)
    }
    self.recorder = recorder
    let context = Unmanaged.passUnretained(recorder).toOpaque()
    var handle: OpaquePointer?
    let status = cd_loop_create(&options, Self.onEvent, context, &handle)
    guard status == CD_OK else {
      throw CountdownError(.systemError, String(cString: cd_last_error_message()))
    }
    loop = handle
    generations.count = ends.count
    // In slices, so that the queue of pending requests stays small.
    for slice in stride(from: 0, to: ends.count, by: 50_000) {
      let upper = min(slice + 50_000, ends.count)
      try await send((slice..<upper).map { Self.startLine($0, 0, ends[$0]) })
    }
  }

  func barrier(_ body: @escaping @Sendable () -> Void) async throws {
    try await send([], then: body)
  }

  func replace(_ items: [(index: Int, end: Int64)]) async throws {
    var lines: [String] = []
    for (index, end) in items {
      let g = generations.advance(index)
      lines.append(#"{"op":"end","id":"a\#(index).\#(g.old)","dismissal":"immediate"}"#)
      lines.append(Self.startLine(index, g.new, end))
    }
    try await send(lines)
  }

  func note(seconds: Double) async throws -> String {
    eventText ? "C callback, text formatted" : "C callback, no text"
  }

  func stop() async {
    if let loop { _ = cd_loop_destroy(loop) }
    loop = nil
  }
}
