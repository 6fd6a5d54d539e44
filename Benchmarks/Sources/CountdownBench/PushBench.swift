// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Foundation
import Histogram
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

#if canImport(Glibc)
  import Glibc
#endif

/// `countdown-bench push`: Live Activity pushes from a `countdown serve` child (state file,
/// `--apns-url` pointing here) to a local HTTP/2 gateway over TLS that answers 200 at once.
/// Pushes per second over the child's one connection; from a command to its push's request
/// on the wire at 1,000 pushes/s; and the tick lateness of 100k ticking activities with and
/// without 1,000 pushes/s flowing, in alternating rounds.
struct PushBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "push",
    abstract: "Live Activity pushes: pushes/s, command-to-wire latency, ticks beside pushes.")

  @OptionGroup var options: OutboxBenchOptions
  var burst: Int { options.burst }
  var seconds: Double { options.seconds }
  var rounds: Int { options.rounds }
  var activities: Int { options.activities }
  var only: String? { options.only }

  func run() throws {
    let tls = try TestIdentity.make()
    let key = tls + "/apns.p8"
    try TestIdentity.openssl(
      [
        "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-out", key,
      ], in: tls)
    let gateway = try Gateway(certificate: tls + "/server.pem", key: tls + "/server.key")
    defer { gateway.stop() }
    let apns = [
      "--apns-url", "https://127.0.0.1:\(gateway.port)", "--apns-ca", tls + "/ca.pem",
      "--apns-key", key,
    ]
    print("| run | figure |")
    print("|---|---|")
    if only == nil || only == "throughput" {
      try sender(gateway, apns)
      try throughput(gateway, apns)
    }
    if only == nil || only == "wire" { try wire(gateway, apns) }
    if only == nil || only == "latency" { try latency(gateway, apns) }
    if only == nil || only == "ticks" { try ticks(gateway, apns) }
  }

  /// Requests on the wire per change of one activity (docs/pushes.md, "Broadcast channels"):
  /// with 1 update token, with 100, and with a broadcast channel (`--apns-channels`, made
  /// through this gateway as the channel management API), which costs one request whatever
  /// the audience. Five changes a second apart (the budget's pace), after the start's own
  /// requests (the channel's creation and its first broadcast) have gone.
  func wire(_ gateway: Gateway, _ apns: [String]) throws {
    let changes = 5
    let many = (0..<100).map { #""\#(Self.token($0))":true"# }.joined(separator: ",")
    let audiences = [
      ("1 update token", #"{"pushTokens":{"\#(Self.token(0))":true}}"#),
      ("100 update tokens", #"{"pushTokens":{\#(many)}}"#),
      ("1 broadcast channel, whatever the audience", #"{"channel":"create"}"#),
    ]
    let channels = ["--apns-channels", "--apns-manage-url", "https://127.0.0.1:\(gateway.port)"]
    for (label, live) in audiences {
      let state = Self.stateFile()
      defer { Self.removeState(state) }
      let child = try Child(state: state, extra: apns + channels)
      defer { child.stop() }
      let control = try Client(child.socket)
      let end = wallNanoseconds() / 1_000_000 + 3_600_000
      control.sendWhileReading(
        Array(
          #"{"op":"start","id":"w","kind":"countdown","endDate":\#(end),"title":"W","liveActivity":\#(live)}"#
            .utf8) + [0x0A], replies: 1)
      usleep(1_500_000)
      gateway.reset()
      for k in 0..<changes {
        control.sendWhileReading(
          Array(#"{"op":"update","id":"w","subtitle":"s\#(k)"}"#.utf8) + [0x0A], replies: 1)
        usleep(1_050_000)
      }
      usleep(500_000)
      print(
        "| requests on the wire per change, \(label) | \(String(format: "%.1f", Double(gateway.count) / Double(changes))) |"
      )
    }
  }

  static func stateFile() -> String {
    "/tmp/cdb-push-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).db"
  }

  static func removeState(_ path: String) {
    for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
  }

  /// The token of activity `k`: 32 bytes of hex, distinct per activity.
  static func token(_ k: Int) -> String {
    let hex = String(k, radix: 16)
    return String(repeating: "0", count: 64 - hex.count) + hex
  }

  /// Starts `n` countdowns `p0`…, ending in an hour, each with its own update token.
  static func startWithTokens(_ child: Child, _ n: Int, prefix: String = "p") {
    let control = try! Client(child.socket)
    var batch = [UInt8]()
    let base = wallNanoseconds() / 1_000_000 + 3_600_000
    for k in 0..<n {
      batch += Array(
        #"{"op":"start","id":"\#(prefix)\#(k)","kind":"countdown","endDate":\#(base + Int64(k % 1000)),"title":"P","liveActivity":{"pushTokens":{"\#(token(k))":true}}}"#
          .utf8)
      batch.append(0x0A)
    }
    control.sendWhileReading(batch, replies: n)
  }

  /// One `update` of each of `p0`…`p(n-1)` (a new subtitle: each pushes once), as lines.
  static func updates(_ n: Int) -> [UInt8] {
    var batch = [UInt8]()
    for k in 0..<n {
      batch += Array(#"{"op":"update","id":"p\#(k)","subtitle":"u"}"#.utf8)
      batch.append(0x0A)
    }
    return batch
  }

  /// The sender alone: `burst` pushes waiting in the outbox when the server starts (written
  /// by a first child while the gateway refused every connection), sent over one connection:
  /// pushes per second from the first request at the gateway to the last.
  func sender(_ gateway: Gateway, _ apns: [String]) throws {
    let state = Self.stateFile()
    defer { Self.removeState(state) }
    gateway.refusing = true
    do {
      let child = try Child(state: state, extra: apns)
      defer { child.stop() }
      Self.startWithTokens(child, burst)
      let client = try Client(child.socket)
      client.sendWhileReading(Self.updates(burst), replies: burst)
    }
    gateway.refusing = false
    gateway.reset()
    let t0 = monotonicNanoseconds()
    let child = try Child(state: state, extra: apns)
    defer { child.stop() }
    guard let span = gateway.waitFor(burst) else {
      print(
        "| \(burst) pushes in the outbox at start | only \(gateway.count) answered within 120 s: stalled |"
      )
      return
    }
    let (count, first, last) = span
    print(
      "| sender alone: \(burst) pushes in the outbox at start, \(count) answered, first within | \(String(format: "%.2f s", Double(monotonicNanoseconds() - t0) / 1e9 - Double(last - first) / 1e9)) |"
    )
    print(
      "| sender alone: pushes/s over one connection (first request to last) | \(Int(Double(count) / (Double(last - first) / 1e9))) |"
    )
  }

  /// A burst of `burst` updates, one per activity, pipelined: pushes per second from the
  /// first request at the gateway to the last, and from the burst's start to the last.
  func throughput(_ gateway: Gateway, _ apns: [String]) throws {
    let state = Self.stateFile()
    defer { Self.removeState(state) }
    let child = try Child(state: state, extra: apns)
    defer { child.stop() }
    Self.startWithTokens(child, burst)
    try burstOfUpdates(child, gateway, burst: burst, noun: "push", nouns: "pushes")
  }

  /// 1,000 updates a second over 5,000 activities (each once every 5 s, so none waits for
  /// the budget), each carrying its send instant: the gateway times each request's arrival,
  /// and the streamer each reply (sent after the commit that wrote the push). The same
  /// stream to a child without `--apns-*` first, for the commit's own share.
  func latency(_ gateway: Gateway, _ apns: [String]) throws {
    for pushes in [false, true] {
      let state = Self.stateFile()
      defer { Self.removeState(state) }
      let child = try Child(state: state, extra: pushes ? apns : [])
      defer { child.stop() }
      let n = 5000
      Self.startWithTokens(child, n)
      gateway.reset()
      gateway.timing = true
      defer { gateway.timing = false }
      let stop = StopFlag()
      let replies = LatencyBox()
      let threads = try Self.streamTimedUpdates(
        child, activities: n, perSecond: 1000, until: stop, replies: replies)
      usleep(UInt32((1.5 + seconds) * 1_000_000))
      stop.set()
      while threads.contains(where: { !$0.isFinished }) { usleep(10_000) }
      let r = Latency(replies.histogram())
      print(
        "| 1,000 updates/s, pushes \(pushes ? "on" : "off"): command to reply (after its commit), p50 / p99 / max | \(fmt(r.p50)) / \(fmt(r.p99)) / \(fmt(r.max)) |"
      )
      guard pushes else { continue }
      let h = gateway.latencies()
      let l = Latency(h)
      print(
        "| command to its push's request on the wire at 1,000 pushes/s, \(h.totalCount) pushes: p50 / p99 / max | \(fmt(l.p50)) / \(fmt(l.p99)) / \(fmt(l.max)) |"
      )
    }
  }

  /// Updates `p0`… `perSecond` a second in 10 ms batches, each with `rid` and `fields.sent`
  /// = its wall-clock microseconds (ServeBench's streamer), replies timed into `replies`.
  static func streamTimedUpdates(
    _ child: Child, activities: Int, perSecond: Int, until stop: StopFlag, prefix: String = "p",
    replies: LatencyBox? = nil
  ) throws -> [Thread] {
    try ServeBench.streamUpdates(
      child, activities: activities, perSecond: perSecond, until: stop,
      drain: { client, stop in timeReplies(client, into: replies, until: stop) },
      line: { a, _, sent in
        #"{"rid":\#(sent),"op":"update","id":"\#(prefix)\#(a)","fields":{"sent":\#(sent)}}"#
      })
  }

  /// Reads replies until `stop`, recording for each the delay from its command (`rid`, the
  /// command's wall-clock microseconds) to now: the commit the push waited for.
  static func timeReplies(_ client: Client, into box: LatencyBox?, until stop: StopFlag) {
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    var p = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
    var h = Histogram<UInt64>(
      highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    let key = Array(#""rid":"#.utf8)
    while !stop.isSet {
      guard poll(&p, 1, 100) > 0 else { continue }
      let n = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, 1 << 16, 0) }
      if n <= 0 { break }
      guard box != nil else { continue }
      let now = wallNanoseconds()
      var i = 0
      while i + key.count < n {
        if chunk[i] == key[0], Array(chunk[i..<i + key.count]) == key {
          var j = i + key.count
          var v: Int64 = 0
          while j < n, chunk[j] >= 0x30, chunk[j] <= 0x39 {
            v = v * 10 + Int64(chunk[j] - 0x30)
            j += 1
          }
          h.record(UInt64(max(0, now - v * 1000)))
          i = j
        } else {
          i += 1
        }
      }
    }
    box?.merge(h)
  }

  /// `activities` ticking countdowns beside 1,000 updates a second to 5,000 activities that
  /// have tokens; the child with `--apns-*` (the updates push) and without (the same
  /// updates, nothing sent), alternating.
  func ticks(_ gateway: Gateway, _ apns: [String]) throws {
    try TicksBeside.run(
      what: "pushes", noiseFloor: options.noiseFloor, pin: options.pin, answered: "pushes answered",
      peer: gateway, extra: apns,
      activities: activities, seconds: seconds, rounds: rounds
    ) { child, _ in Self.startWithTokens(child, 5000) }
  }
}

/// A local stand-in for APNs: HTTP/2 over TLS (swift-nio-http2, swift-nio-ssl), answering
/// every request 200 at once (``LocalPeer`` counts and times them).
final class Gateway: LocalPeer, @unchecked Sendable {
  init(certificate: String, key: String) throws {
    var tls = TLSConfiguration.makeServerConfiguration(
      certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
      privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
    tls.applicationProtocols = ["h2"]
    let context = try NIOSSLContext(configuration: tls)
    super.init()
    try listen(
      ServerBootstrap(group: group)
        .childChannelInitializer { [self] channel in
          guard accepted() else {
            return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
          }
          // As APNs: up to 1,000 streams at once on a connection.
          let settings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
            HTTP2Setting(
              parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
          ]
          return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
            // Frames on the connection, no channel per stream: the gateway costs as little
            // per request as it can, so that the sender is what is measured.
            try channel.pipeline.syncOperations.addHandler(
              NIOHTTP2Handler(mode: .server, initialSettings: settings))
            try channel.pipeline.syncOperations.addHandler(Answers(gateway: self))
          }
        })
  }

  /// The requests of one connection: gathers each stream's body (when timing), answers
  /// 200 with an `apns-id` at its end, flushing once per read.
  final class Answers: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame
    let gateway: Gateway
    var bodies: [HTTP2StreamID: ByteBuffer] = [:]
    /// Streams that ask for a channel (`POST …/channels`): answered 201 with its id.
    var creating: Set<HTTP2StreamID> = []
    var wrote = false
    /// Bytes of DATA taken since the last connection WINDOW_UPDATE (without a stream
    /// multiplexer, the connection's window is ours to give back).
    var unacknowledged = 0
    static let headers: HPACKHeaders = [
      ":status": "200", "apns-id": "00000000-0000-0000-0000-000000000000",
    ]
    static let channelMade: HPACKHeaders = [
      ":status": "201", "apns-channel-id": "QkVOQ0hDSEFOTkVM",
    ]
    init(gateway: Gateway) { self.gateway = gateway }

    /// A connection window of 4 MiB from the start, as large servers give (the default 64 KiB
    /// would hold a client's requests back in its flow control buffer).
    func channelActive(context: ChannelHandlerContext) {
      context.fireChannelActive()
      let update = HTTP2Frame(
        streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: 4 << 20))
      context.writeAndFlush(wrapOutboundOut(update), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      let frame = unwrapInboundIn(data)
      switch frame.payload {
      case .headers(let h):
        if h.headers.first(name: ":method") == "POST",
          h.headers.first(name: ":path")?.hasSuffix("/channels") == true
        {
          creating.insert(frame.streamID)
        }
        if h.endStream { answer(context, frame.streamID) }
      case .data(let d):
        if case .byteBuffer(var b) = d.data {
          bodies[frame.streamID, default: ByteBuffer()].writeBuffer(&b)
        }
        unacknowledged += d.paddingBytes.map { $0 + 1 } ?? 0
        if case .byteBuffer(let b) = d.data { unacknowledged += b.readableBytes }
        if unacknowledged >= 32_768 {
          let update = HTTP2Frame(
            streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledged))
          context.write(wrapOutboundOut(update), promise: nil)
          unacknowledged = 0
          wrote = true
        }
        if d.endStream { answer(context, frame.streamID) }
      default: break
      }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
      if wrote {
        wrote = false
        context.flush()
      }
      context.fireChannelReadComplete()
    }

    private func answer(_ context: ChannelHandlerContext, _ stream: HTTP2StreamID) {
      gateway.received(bodies.removeValue(forKey: stream) ?? ByteBuffer())
      let headers = creating.remove(stream) == nil ? Self.headers : Self.channelMade
      let frame = HTTP2Frame(
        streamID: stream, payload: .headers(.init(headers: headers, endStream: true)))
      context.write(wrapOutboundOut(frame), promise: nil)
      wrote = true
    }
  }
}
