// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownClient
import CountdownLoop
import CountdownNIO
import CountdownPostgres
import CountdownProtocol
import CountdownPush
import CountdownStore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// What the connections of one server share.
///
/// `@unchecked Sendable`: its fields are immutable but `connections`, which is locked.
final class ServerCore: @unchecked Sendable {
  let options: ServerOptions
  let formatter: TimerFormatter
  let loop: CountdownLoop
  let hub: Hub
  let logger: Logger
  /// The state file's writer and the loop's journal; nil for `:memory:`.
  let durable: Durable?
  let group: MultiThreadedEventLoopGroup
  let metrics: ServerMetrics
  /// Connections of every transport at once: `maxConnections`, or less where the file limit
  /// leaves fewer descriptors.
  let connectionLimit: Int
  let connections = Locked([ObjectIdentifier: Channel]())
  private let activities = Atomic<Int>(0)
  /// A cluster node's (docs/cluster.md): what it does with shards, and the gate every
  /// command passes; nil for a single server.
  let cluster: ClusterNode?
  let gate: ShardGate?
  /// A cluster node's: the shard each activity object names.
  let shardOf: (@Sendable (String) -> Int)?
  /// `--access`'s keys as last read (nil without `--access`).
  let access: Locked<AccessList?>
  private let accessReads = Atomic<Int>(0)
  /// How many times the keys were read again (SIGHUP): a connection that sees it move looks
  /// its key up again.
  var accessGeneration: Int { accessReads.load(ordering: .relaxed) }

  /// Takes `list` as the keys from now on, and closes the connections whose key it no
  /// longer has (a socket subscriber or an event stream would otherwise go on receiving).
  func replaceAccess(_ list: AccessList) {
    access.withLock { $0 = list }
    accessReads.add(1, ordering: .relaxed)
    let open = keyed.withLock { Array($0.values) }
    for entry in open where grant(ofKey: entry.key) == nil {
      logger.notice("a connection's key is no longer in --access: closing it")
      entry.channel.close(promise: nil)
    }
  }

  /// The open connections that gave a key (a TCP connection's `auth`, an event stream's
  /// request), for ``replaceAccess(_:)``.
  private let keyed = Locked([ObjectIdentifier: (channel: any Channel, key: [UInt8])]())

  /// `channel` gave `key`; closed when a new `--access` no longer has it.
  func keyGiven(_ key: [UInt8], on channel: any Channel) {
    keyed.withLock { $0[ObjectIdentifier(channel)] = (channel, key) }
  }

  /// `channel` is closed (or gave no key after all).
  func keyGone(from channel: any Channel) {
    _ = keyed.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
  }

  /// Whether clients must give a key (`--token` or `--access`): TCP and HTTP clients then
  /// have the role of theirs; without, loopback is open to all (`admin`).
  var needsKeys: Bool { options.token != nil || options.accessPath != nil }

  /// What a client that gave `key` may do: its `--access` role and groups, `admin` of every
  /// activity for `--token`; nil for a key that is neither. Both are compared in constant
  /// time, whatever matches.
  func grant(ofKey key: some Collection<UInt8>) -> AccessGrant? {
    let listed = access.withLock { $0?.grant(of: key) }
    let token = options.token.map { TokenCheck.matches(key, $0) } ?? false
    return token ? .admin : listed
  }

  /// The role of a client that gave `key` (``grant(ofKey:)``'s).
  func role(ofKey key: some Collection<UInt8>) -> AccessRole? { grant(ofKey: key)?.role }

  /// How many activities the engine held after the last batch (set on the loop thread after
  /// each batch, read by connections to estimate listings before they are built).
  var activityCount: Int {
    get { activities.load(ordering: .relaxed) }
    set { activities.store(newValue, ordering: .relaxed) }
  }

  init(
    options: ServerOptions, loop: CountdownLoop, hub: Hub, logger: Logger, durable: Durable?,
    group: MultiThreadedEventLoopGroup, metrics: ServerMetrics, connectionLimit: Int,
    cluster: ClusterNode? = nil, access: AccessList? = nil
  ) {
    self.access = Locked(access)
    self.cluster = cluster
    self.gate = cluster?.gate
    if let cluster {
      self.shardOf = { @Sendable id in cluster.shard(of: id) }
    } else {
      self.shardOf = nil
    }
    self.connectionLimit = connectionLimit
    self.group = group
    self.metrics = metrics
    self.options = options
    self.formatter = TimerFormatter(style: options.style)
    self.loop = loop
    self.hub = hub
    self.logger = logger
    self.durable = durable
  }

  /// Counts a new connection in (socket, TCP or HTTP); false when the server is at its limit.
  /// The Unix socket has ``CountdownServer/operatorRoom`` connections beyond the limit, so that the
  /// operator's `countdown send` gets in while remote clients hold every other one
  /// (docs/security.md).
  func connectionOpened(_ channel: Channel, unix: Bool = false) -> Bool {
    connections.withLock { c in
      guard c.count < connectionLimit + (unix ? CountdownServer.operatorRoom : 0) else {
        return false
      }
      c[ObjectIdentifier(channel)] = channel
      return true
    }
  }

  func connectionClosed(_ channel: Channel) {
    _ = connections.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
  }

  /// HTTP connections over the limit that wait for their request head to be answered 429
  /// (at most a second); one more is closed at once, so that connections that send nothing
  /// cannot take the descriptors the server keeps for itself.
  static let refusedWaitingAtMost = 8
  private let refusedWaiting = Atomic<Int>(0)

  /// An HTTP connection over the limit asks to wait for its head (to be answered 429): true
  /// while fewer than ``refusedWaitingAtMost`` do; each true is given back with
  /// ``refusedDone()``.
  func refusedMayWait() -> Bool {
    if refusedWaiting.add(1, ordering: .relaxed).newValue <= Self.refusedWaitingAtMost {
      return true
    }
    refusedWaiting.subtract(1, ordering: .relaxed)
    return false
  }

  /// An HTTP connection over the limit that waited is gone.
  func refusedDone() { refusedWaiting.subtract(1, ordering: .relaxed) }

  /// On the loop thread, in a command's completion: hands `result` to `deliver` now (in
  /// memory) or once the wake it ran in is committed, as `storageFailed` if the commit failed.
  func release(
    _ result: Result<BatchResult, CountdownError>,
    _ deliver: @escaping @Sendable (Result<BatchResult, CountdownError>) -> Void
  ) {
    guard let journal = durable?.journal else {
      deliver(result)
      return
    }
    journal.releases.append { failure in
      var result = result
      if let failure, case .success(let r) = result {
        result = .success(
          r.storageFailed(
            failure.message, mayHaveCommitted: failure.mayHaveCommitted,
            lostShard: failure.lostShard))
      }
      deliver(result)
    }
  }

  /// Runs `body` on the loop and returns its result once it may be told (committed).
  func perform(
    _ body: @escaping @Sendable (borrowing LoopEngine) -> BatchResult
  ) async -> Result<BatchResult, CountdownError> {
    await withCheckedContinuation { continuation in
      loop.submit(
        { engine in body(engine) },
        completion: { [self] result in
          release(result) { continuation.resume(returning: $0) }
        })
    }
  }
}

/// `countdown serve`: the engine as a service on a Unix socket and, optionally, TCP and HTTP
/// (docs/protocol.md, docs/http.md).
///
/// Three kinds of thread: the loop thread (``CountdownLoop``) runs the engine and nothing else;
/// SwiftNIO's threads frame and decode lines, send each read's requests to the loop as one
/// batch, encode replies and events, and hold each subscriber's bounded output; the store's
/// thread writes each wake's changes to the SQLite state file (``ServerOptions/statePath``;
/// docs/state-file.md) with group commit before that wake's replies and events go out. With
/// `:memory:` as the state path nothing is kept across a restart.
///
/// Run it under a `ServiceGroup` (SIGTERM and SIGINT shut it down gracefully), or call
/// ``start()`` and ``stop()``.
public final class CountdownServer: Service, @unchecked Sendable {
  // @unchecked Sendable: `state` is locked; everything else is immutable.
  public let options: ServerOptions
  let logger: Logger
  let state = Locked(RunState())

  /// How many activities the state file gave back at start (nil for `:memory:`).
  public internal(set) var restoredCount: Int? {
    get { state.withLock { $0.restored } }
    set { state.withLock { $0.restored = newValue } }
  }

  struct RunState {
    var restored: Int?
    var group: MultiThreadedEventLoopGroup?
    var core: ServerCore?
    var http: HTTPFrontEnd?
    var listeners: [Channel] = []
    var socketBound = false
    var identity: TLSIdentity?
    var notifier: ServiceNotifier?
  }

  /// Holds glibc's mmap threshold at 128 KiB for the whole process, unless the environment
  /// sets one (`MALLOC_MMAP_THRESHOLD_`, `GLIBC_TUNABLES`), so that the megabytes of a large
  /// listing or event-stream snapshot go back to the system when freed instead of staying in
  /// the allocator's arenas (docs/protocol.md, "Memory"). `countdown serve` calls it first; a
  /// process that embeds the server decides for itself. Whether it was set.
  @discardableResult
  public static func holdAllocatorMmapThreshold() -> Bool { System.holdMmapThreshold() }

  public init(options: ServerOptions, logger: Logger = Logger(label: "countdown.serve")) {
    self.options = options
    self.logger = logger
  }

  /// The TCP address actually bound (its port when `listen` asked for port 0), once started.
  public var tcpAddress: SocketAddress? {
    state.withLock { $0.listeners.dropFirst().first?.localAddress }
  }

  /// The HTTP address actually bound (its port when `http` asked for port 0), once started.
  public var httpAddress: SocketAddress? {
    state.withLock { $0.http?.address }
  }

  /// What runs while the server is started (nil before and after).
  var core: ServerCore? { state.withLock { $0.core } }

  /// Whether HTTP and TCP are served over TLS.
  public var usesTLS: Bool { options.tlsCertificatePath != nil }

  /// Reads `--access` again (SIGHUP; docs/security.md, "Roles"): every request from then on,
  /// on a connection open or new, has the role of its key in the new file, and a connection
  /// whose key is gone is refused at its next request and closed. On an error (the file's
  /// mode, a bad line) the old keys stay in use.
  public func reloadAccess() throws(ServerStartError) {
    guard let path = options.accessPath, let core = state.withLock({ $0.core }) else {
      throw ServerStartError("the server has no --access file")
    }
    core.replaceAccess(try AccessList.load(path))
  }

  /// Reads `--tls-cert` and `--tls-key` again (SIGHUP): new connections present the new
  /// certificate; those open keep theirs. On an error the old pair stays in use.
  public func reloadTLS() throws(ServerStartError) {
    guard let identity = state.withLock({ $0.identity }) else {
      throw ServerStartError("the server does not serve TLS (no --tls-cert and --tls-key)")
    }
    try identity.reload()
  }

  /// The identity of `--tls-cert` and `--tls-key`, both or neither.
  static func tlsIdentity(_ options: ServerOptions) throws(ServerStartError) -> TLSIdentity? {
    switch (options.tlsCertificatePath, options.tlsKeyPath) {
    case (nil, nil): return nil
    case (let cert?, let key?): return try TLSIdentity(certificatePath: cert, keyPath: key)
    default: throw ServerStartError("give --tls-cert and --tls-key together")
    }
  }

  /// Stops accepting, answers every request already read, closes the connections, stops the
  /// loop and removes the socket file. Safe to call more than once.
  public func stop() {
    let (group, core, listeners, socketBound, http, notifier) = state.withLock { s in
      defer {
        s.group = nil
        s.core = nil
        s.http = nil
        s.listeners = []
        s.socketBound = false
        s.notifier = nil
      }
      return (s.group, s.core, s.listeners, s.socketBound, s.http, s.notifier)
    }
    notifier?.stopping()
    if let http, let core {
      // Event streams never end by themselves: end them, then let HTTP finish what it has.
      try? core.hub.eventLoop.submit { core.hub.closeStreams() }.wait()
      http.stop()
    }
    for l in listeners { try? l.close().wait() }
    if let core {
      // Every batch read so far is ahead of this one in the loop's queue; once it is done, their
      // replies are queued on the connections' event loops, ahead of the closes below.
      let drained = Locked(false)
      core.loop.submit({ _ in }, completion: { _ in drained.withLockWaking { $0 = true } })
      drained.wait(until: { $0 })
      // With a state file, those replies go out once their wakes are committed.
      core.durable?.writer.flush()
      // A cluster node hands its shards over: the others take them at their next look.
      core.cluster?.leave()
      core.durable?.writer.flush()
      let channels = core.connections.withLock { Array($0.values) }
      for c in channels {
        try? c.eventLoop.submit {}.wait()
        try? c.close().wait()
      }
      core.loop.shutdown()
      // Pushes not answered yet stay in the outbox for the next start.
      core.durable?.delivery?.stop()
      core.durable?.webhooks?.stop()
      // The wakes after the last command (time-driven changes) are written before closing.
      core.durable?.writer.close()
    }
    if socketBound { System.remove(options.socketPath) }
    try? group?.syncShutdownGracefully()
  }

  /// Starts (unless ``start()`` was called already), tells the service manager it is ready
  /// (``ServerOptions/serviceManager``), runs until graceful shutdown (SIGTERM or SIGINT in a
  /// `ServiceGroup`), then stops.
  public func run() async throws {
    if state.withLock({ $0.core == nil }) { try start() }
    // READY=1 once signals are trapped (the group does that before its services run): a
    // manager that stops the service the moment it is ready gets a graceful stop.
    notifyReady()
    try? await gracefulShutdown()
    stop()
  }

  /// Sends `READY=1` to the service manager and begins the watchdog's beats (nothing without
  /// ``ServerOptions/serviceManager``'s notify socket). ``run()`` calls it.
  func notifyReady() {
    let (notifier, core) = state.withLock { ($0.notifier, $0.core) }
    if let notifier, let core {
      notifier.ready(activities: restoredCount ?? 0, loop: core.loop, on: core.hub.eventLoop)
    }
  }

  // MARK: - Addresses

  static func parseHostPort(_ text: String, option: String = "--listen") throws -> (
    host: String, port: Int
  ) {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
      (0...65535).contains(port)
    else {
      throw ServerStartError(
        "\(option) \(text) is not HOST:PORT (like 127.0.0.1:7000 or [::1]:7000)")
    }
    var host = String(text[..<colon])
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    guard !host.isEmpty else { throw ServerStartError("\(option) \(text) has no host") }
    return (host, port)
  }

  /// `localhost` or a loopback address, parsed as an address (never matched by prefix).
  static func isLoopback(_ host: String) -> Bool { System.isLoopback(host) }

  /// Descriptors kept free of connections for the state file, listeners, the loop and the
  /// event loops: a full house of connections still leaves the server its own.
  static let reservedDescriptors = 64
  /// Connections over the limit that the Unix socket still takes, out of the descriptors the
  /// server keeps for itself: the operator's `countdown send` gets in while remote clients
  /// hold every other connection.
  static let operatorRoom = 4

  /// `asked`, or less where the process's file limit (raised to its hard limit first) leaves
  /// fewer descriptors than that beside ``reservedDescriptors``; said in the log.
  static func connectionLimit(_ asked: Int, logger: Logger) throws(ServerStartError) -> Int {
    guard let files = System.raiseFileLimit() else { return asked }
    let room = files - reservedDescriptors
    guard room >= 1 else {
      throw ServerStartError(
        "the file limit (ulimit -n) is \(files): too few for a server, which keeps \(reservedDescriptors) for itself; raise it"
      )
    }
    if asked > room {
      logger.notice(
        "--max-connections \(asked) lowered to \(room): the file limit (ulimit -n) is \(files) and the server keeps \(reservedDescriptors) descriptors for itself"
      )
      return room
    }
    return asked
  }

  /// Replaces a stale socket file; a live server on it is an error.
  static func clearStaleSocket(_ path: String) throws {
    guard let isSocket = System.isSocket(path) else { return }
    guard isSocket else {
      throw ServerStartError(
        "\(path) exists and is not a socket; remove it or choose another --socket")
    }
    if SocketProbe.accepts(path) {
      throw ServerStartError(
        "another server is listening on \(path); stop it first or choose another --socket")
    }
    System.remove(path)
  }
}

/// Connects to a Unix socket to see whether a server accepts on it.
enum SocketProbe {
  static func accepts(_ path: String) -> Bool {
    guard let fd = try? UnixSocket.connect(path) else { return false }
    CountdownClient.System.close(fd)
    return true
  }
}
