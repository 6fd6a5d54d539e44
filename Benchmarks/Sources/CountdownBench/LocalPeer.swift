// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Histogram
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
  import Glibc
#endif

/// A local stand-in for a server the child sends to (`push`'s APNs gateway, `webhook`'s
/// receiver), on loopback with one event loop: what it saw. It counts requests, notes the
/// first and last arrival, and with `timing` reads `"sent":MICROSECONDS` from each body to
/// record the delay from the command to the request's arrival; `refusing` plays a peer that
/// is down. Subclasses bind with ``listen(_:)`` and call ``accepted()`` for each connection
/// and ``received(_:)`` for each request.
class LocalPeer: @unchecked Sendable {
  // @unchecked Sendable: the counters are locked; the rest is set once at start.
  let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
  private(set) var port = 0
  private var channel: Channel?
  private let state = NIOLockedValueBox(State())
  private let timingFlag = NIOLockedValueBox(false)
  private let refusingFlag = NIOLockedValueBox(false)

  struct State {
    var count = 0
    var first: Int64 = 0
    var last: Int64 = 0
    var connections = 0
    var histogram = Histogram<UInt64>(
      highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
  }

  var timing: Bool {
    get { timingFlag.withLockedValue { $0 } }
    set { timingFlag.withLockedValue { $0 = newValue } }
  }

  /// Closes every connection at once (a peer that is down), so that what the child sends
  /// waits in its outbox.
  var refusing: Bool {
    get { refusingFlag.withLockedValue { $0 } }
    set { refusingFlag.withLockedValue { $0 = newValue } }
  }

  /// Binds `bootstrap` to a free loopback port.
  func listen(_ bootstrap: ServerBootstrap) throws {
    let channel = try bootstrap.serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .bind(host: "127.0.0.1", port: 0).wait()
    self.channel = channel
    port = channel.localAddress?.port ?? 0
  }

  /// A new connection: false while refusing (close it), else counted.
  func accepted() -> Bool {
    if refusing { return false }
    state.withLockedValue { $0.connections += 1 }
    return true
  }

  func reset() {
    state.withLockedValue {
      $0.count = 0
      $0.first = 0
      $0.last = 0
      $0.connections = 0
      $0.histogram.reset()
    }
  }

  var count: Int { state.withLockedValue { $0.count } }
  var connections: Int { state.withLockedValue { $0.connections } }

  /// Waits up to 120 s for `n` requests: how many came, the first's and the last's arrival;
  /// nil when fewer than two came in that time, or all at once (a stall).
  func waitFor(_ n: Int) -> (count: Int, first: Int64, last: Int64)? {
    let deadline = monotonicNanoseconds() + 120_000_000_000
    while count < n, monotonicNanoseconds() < deadline { usleep(1000) }
    let (count, first, last) = state.withLockedValue { ($0.count, $0.first, $0.last) }
    return count > 1 && last > first ? (count, first, last) : nil
  }

  func latencies() -> Histogram<UInt64> { state.withLockedValue { $0.histogram } }

  /// One request, with its body.
  func received(_ body: ByteBuffer) {
    let now = wallNanoseconds()
    var sent: Int64?
    if timing, let text = body.getString(at: body.readerIndex, length: body.readableBytes),
      let r = text.range(of: "\"sent\":")
    {
      sent = Int64(text[r.upperBound...].prefix { $0.isNumber })
    }
    state.withLockedValue { s in
      s.count += 1
      if s.first == 0 { s.first = now }
      s.last = now
      if let sent { s.histogram.record(UInt64(max(0, now - sent * 1000))) }
    }
  }

  func stop() {
    try? channel?.close().wait()
    try? group.syncShutdownGracefully()
  }
}
