// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import CountdownClient
import CountdownServer
import Foundation
import Histogram
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
  import Glibc
#endif

/// `countdown-bench sse`: server-sent events fan-out (`GET /v1/events`, docs/http.md) from a real
/// server child over real TCP connections: the lateness of each event at the clients (receipt
/// time − `at`) and the server's CPU.
struct SSEBench: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "sse",
    abstract: "Server-sent events fan-out: lateness at the clients and the server's CPU.")

  @Option(help: "Seconds measured per run (after 1.5 s of warm-up).")
  var seconds: Double = 5

  @Option(help: "Updates a second in the lifecycle run (each goes to every client).")
  var updatesPerSecond = 100

  @Option(
    help: ArgumentHelp(
      "Seconds after the clients connect before measuring.",
      discussion:
        "Each client's snapshot comes first: with ticks, 100 snapshots of 10k activities are 150 MB, which the clients take a few seconds to read while ticks queue behind them. The measurement is of the steady state after that."
    ))
  var warmup: Double = 5

  @Flag(
    help:
      "Each run over plain HTTP and over HTTPS (--tls-cert), alternating, with the CPU ratio.")
  var tls = false

  @Option(help: "Alternating rounds of plain and TLS with --tls.")
  var rounds = 3

  func run() throws {
    raiseDescriptorLimit()
    if tls { return try sideBySide() }
    print("| run | p50 | p99 | max | server CPU | events/s at the clients |")
    print("|---|---|---|---|---|---|")
    let lifecycle = try measure(activities: 1_000, clients: 1_000, ticks: false)
    print(
      "| lifecycle events: 1000 activities, \(updatesPerSecond) updates/s, 1000 clients | \(lifecycle.row) |"
    )
    let ticking = try measure(activities: 10_000, clients: 100, ticks: true)
    print("| ticks: 10k activities, 100 clients (ticks=1) | \(ticking.row) |")
  }

  /// The same runs over plain HTTP and over TLS, alternating `rounds` times, then the medians
  /// and the ratio of the server's CPU (TLS / plain).
  func sideBySide() throws {
    let dir = try TestIdentity.make()
    let tlsClients = try TLSEventStreams(caFile: dir + "/ca.pem")
    defer { tlsClients.shutdown() }
    print("| run | transport | p50 | p99 | max | server CPU | events/s at the clients |")
    print("|---|---|---|---|---|---|---|")
    let runs: [(String, Int, Int, Bool)] = [
      (
        "lifecycle: 1000 activities, \(updatesPerSecond) updates/s, 1000 clients", 1_000, 1_000,
        false
      ),
      ("ticks: 10k activities, 100 clients", 10_000, 100, true),
    ]
    for (name, activities, clients, ticks) in runs {
      var cpu: [String: [Double]] = ["plain": [], "TLS": []]
      for _ in 0..<rounds {
        for transport in ["plain", "TLS"] {
          let r = try measure(
            activities: activities, clients: clients, ticks: ticks,
            tls: transport == "TLS" ? (dir, tlsClients) : nil)
          cpu[transport]!.append(r.cpu)
          print("| \(name) | \(transport) | \(r.row) |")
        }
      }
      func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
      let plain = median(cpu["plain"]!)
      let secure = median(cpu["TLS"]!)
      print(
        "| \(name) | median server CPU | plain \(String(format: "%.1f%%", plain * 100)), TLS \(String(format: "%.1f%%", secure * 100)): **\(String(format: "%.2f", secure / plain))x** | | | | |"
      )
    }
  }

  func measure(
    activities: Int, clients: Int, ticks: Bool,
    tls: (dir: String, clients: TLSEventStreams)? = nil
  ) throws -> ServeBench.LatenessResult {
    let child = try Child(
      http: true, tls: tls.map { ($0.dir + "/server.pem", $0.dir + "/server.key") })
    defer { child.stop() }
    guard let port = child.httpPort else { throw ValidationError("the child did not serve HTTP") }
    try ServeBench.startCountdowns(child, activities)
    let query = ticks ? "?ticks=1" : ""
    let streams: [any EventStreamReadable] =
      if let tls {
        try (0..<clients).map { _ in try tls.clients.open(port: port, query: query) }
      } else {
        try (0..<clients).map { _ in try EventStreamClient(port: port, query: query) }
      }
    let recorder = LatencyBox()
    let stop = StopFlag()
    let warmUpUntil = monotonicNanoseconds() + Int64(warmup * 1e9)
    var threads: [Thread] = []
    // Readers: one thread per 50 clients (two cores: the readers share them with the server).
    for start in stride(from: 0, to: streams.count, by: 50) {
      let group = Array(streams[start..<min(start + 50, streams.count)])
      let t = Thread {
        EventStreamClient.read(group, recorder: recorder, stop: stop, after: warmUpUntil)
      }
      t.start()
      threads.append(t)
    }
    if !ticks {
      threads += try ServeBench.streamUpdates(
        child, activities: activities, perSecond: updatesPerSecond, until: stop)
    }
    return ServeBench.measure(
      child, seconds: seconds, threads: threads, stop: stop, recorder: recorder,
      warmup: warmup)
  }
}

/// A stream the readers poll: a descriptor with the events' bytes in plain text.
protocol EventStreamReadable: Sendable {
  var fd: Int32 { get }
}

/// One `GET /v1/events` connection over TCP.
final class EventStreamClient: EventStreamReadable, @unchecked Sendable {
  // @unchecked Sendable: read by one thread at a time.
  let fd: Int32

  init(port: Int, query: String) throws {
    fd = try UnixSocket.connect(loopbackPort: port)
    let request = "GET /v1/events\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    _ = Array(request.utf8).withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count, 0) }
  }

  deinit { close(fd) }

  /// Records the lateness of every `data:` line of an event received after `after` (monotonic
  /// ns), until `stop` (the snapshot's comes before).
  static func read(
    _ clients: [any EventStreamReadable], recorder: LatencyBox, stop: StopFlag, after: Int64
  ) {
    Client.recordLateness(
      clients.map(\.fd), linePrefix: Array(#"data: {"at":"#.utf8), recorder: recorder,
      stop: stop, after: after)
  }
}

/// A CA and a server certificate for 127.0.0.1, made with the openssl command in a fresh
/// directory (ca.pem, server.pem, server.key).
enum TestIdentity {
  static func make() throws -> String {
    let dir = "/tmp/cdb-tls-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    try "subjectAltName=IP:127.0.0.1\n".write(
      toFile: dir + "/san.ext", atomically: true, encoding: .utf8)
    for arguments in [
      ["req", "-x509"] + ec + [
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=bench CA",
      ],
      ["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
      [
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext",
      ],
    ] {
      try openssl(arguments, in: dir)
    }
    return dir
  }

  /// Runs the openssl command with `arguments` in `dir`; a failure is an error naming it.
  static func openssl(_ arguments: [String], in dir: String) throws {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    p.arguments = arguments
    p.currentDirectoryURL = URL(fileURLWithPath: dir)
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else {
      throw ValidationError("openssl \(arguments.first!) failed (is openssl installed?)")
    }
  }
}

/// `GET /v1/events` over TLS: SwiftNIO with swift-nio-ssl on a thread of its own decrypts each
/// stream and writes its plain bytes into a socket pair, whose other end the same readers as
/// the plain streams poll (so both transports are read and timed by one code path).
final class TLSEventStreams: Sendable {
  let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
  let context: NIOSSLContext

  init(caFile: String) throws {
    var configuration = TLSConfiguration.makeClientConfiguration()
    configuration.trustRoots = .file(caFile)
    context = try NIOSSLContext(configuration: configuration)
  }

  func shutdown() { try? group.syncShutdownGracefully() }

  /// One stream: the reader's end of its socket pair.
  final class Stream: EventStreamReadable, @unchecked Sendable {
    // @unchecked Sendable: `fd` is read by one reader thread; `channel` is NIO's.
    let fd: Int32
    let channel: any Channel
    init(fd: Int32, channel: any Channel) {
      self.fd = fd
      self.channel = channel
    }
    deinit {
      channel.close(promise: nil)
      close(fd)
    }
  }

  func open(port: Int, query: String) throws -> Stream {
    var pair: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
      throw ValidationError("socketpair failed")
    }
    var size: Int32 = 4 << 20
    setsockopt(pair[1], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    // Never blocks the event loop: once the readers have stopped, what does not fit is dropped.
    _ = fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK)
    let writeEnd = pair[1]
    let context = self.context
    let request = "GET /v1/events\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    let channel = try ClientBootstrap(group: group)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          let tls = try NIOSSLClientHandler(context: context, serverHostname: nil)
          try channel.pipeline.syncOperations.addHandlers(tls, Relay(fd: writeEnd))
        }
      }
      .connect(host: "127.0.0.1", port: port).wait()
    try channel.writeAndFlush(ByteBuffer(string: request)).wait()
    return Stream(fd: pair[0], channel: channel)
  }

  /// Writes what the stream decrypts into the socket pair; closes it with the connection.
  final class Relay: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked Sendable: used on its channel's event loop only.
    typealias InboundIn = ByteBuffer
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      let buffer = unwrapInboundIn(data)
      buffer.withUnsafeReadableBytes { raw in
        var off = 0
        while off < raw.count {
          let n = send(fd, raw.baseAddress! + off, raw.count - off, Int32(MSG_NOSIGNAL))
          if n < 0 && errno == EINTR { continue }
          if n <= 0 { return }
          off += n
        }
      }
    }
    func channelInactive(context: ChannelHandlerContext) {
      close(fd)
      context.fireChannelInactive()
    }
  }
}
