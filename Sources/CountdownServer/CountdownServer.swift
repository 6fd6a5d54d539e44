// Over 600 lines: start-up is still one function wiring every part; it becomes ordered
// stages, each owning its teardown, in a file of their own.

import Countdown
import CountdownClient
import CountdownLoop
import CountdownNIO
import CountdownPostgres
import CountdownProtocol
import CountdownPush
import CountdownStore
import Dispatch
import Logging
import NIOConcurrencyHelpers
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
  let connections = NIOLockedValueBox([ObjectIdentifier: Channel]())
  private let activities = Atomic<Int>(0)
  /// A cluster node's (docs/cluster.md): what it does with shards, and the gate every
  /// command passes; nil for a single server.
  let cluster: ClusterNode?
  let gate: ShardGate?
  /// A cluster node's: the shard each activity object names.
  let shardOf: (@Sendable (String) -> Int)?

  /// How many activities the engine held after the last batch (set on the loop thread after
  /// each batch, read by connections to estimate listings before they are built).
  var activityCount: Int {
    get { activities.load(ordering: .relaxed) }
    set { activities.store(newValue, ordering: .relaxed) }
  }

  init(
    options: ServerOptions, loop: CountdownLoop, hub: Hub, logger: Logger, durable: Durable?,
    group: MultiThreadedEventLoopGroup, metrics: ServerMetrics, connectionLimit: Int,
    cluster: ClusterNode? = nil
  ) {
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
  func connectionOpened(_ channel: Channel) -> Bool {
    connections.withLockedValue { c in
      guard c.count < connectionLimit else { return false }
      c[ObjectIdentifier(channel)] = channel
      return true
    }
  }

  func connectionClosed(_ channel: Channel) {
    _ = connections.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(channel)) }
  }

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
          r.storageFailed(failure.message, mayHaveCommitted: failure.mayHaveCommitted))
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
  private let logger: Logger
  private let state = NIOLockedValueBox(RunState())

  /// How many activities the state file gave back at start (nil for `:memory:`).
  public private(set) var restoredCount: Int? {
    get { state.withLockedValue { $0.restored } }
    set { state.withLockedValue { $0.restored = newValue } }
  }

  private struct RunState {
    var restored: Int?
    var group: MultiThreadedEventLoopGroup?
    var core: ServerCore?
    var http: HTTPFrontEnd?
    var listeners: [Channel] = []
    var socketBound = false
    var identity: TLSIdentity?
    var notifier: ServiceNotifier?
  }

  public init(options: ServerOptions, logger: Logger = Logger(label: "countdown.serve")) {
    self.options = options
    self.logger = logger
  }

  /// The TCP address actually bound (its port when `listen` asked for port 0), once started.
  public var tcpAddress: SocketAddress? {
    state.withLockedValue { $0.listeners.dropFirst().first?.localAddress }
  }

  /// The HTTP address actually bound (its port when `http` asked for port 0), once started.
  public var httpAddress: SocketAddress? {
    state.withLockedValue { $0.http?.address }
  }

  /// What runs while the server is started (nil before and after).
  var core: ServerCore? { state.withLockedValue { $0.core } }

  /// Binds the socket (and TCP), starts the loop thread and the network threads.
  /// - Throws: ``ServerStartError`` when another server is live on the socket, an address
  ///   cannot be bound, or `listen` is not loopback and there is no token.
  public func start() throws {
    // A socket handed over by the service manager replaces its flag's bind (docs/systemd.md).
    let handed = options.serviceManager.sockets
    let listenText = handed.listen?.hostPort ?? options.listen
    let tcp = try listenText.map { text in try Self.parseHostPort(text, option: "--listen") }
    if let tcp, let listenText, !Self.isLoopback(tcp.host), options.token == nil {
      throw ServerStartError(
        "--listen \(listenText) is not a loopback address: give a --token, which each TCP connection must send first"
      )
    }
    let httpText = handed.http?.hostPort ?? options.http
    let http = try httpText.map { text in try Self.parseHostPort(text, option: "--http") }
    if let http, let httpText, !Self.isLoopback(http.host), options.token == nil {
      throw ServerStartError(
        "--http \(httpText) is not a loopback address: give a --token, which each HTTP request must send as \"Authorization: Bearer TOKEN\""
      )
    }
    let notifier = options.serviceManager.notifySocket.map {
      ServiceNotifier(
        path: $0, watchdogMicroseconds: options.serviceManager.watchdogMicroseconds,
        logger: logger)
    }
    if options.cluster != nil {
      guard options.postgres != nil else {
        throw ServerStartError("a cluster node keeps its state in PostgreSQL: give --postgres")
      }
    }
    let identity = try Self.tlsIdentity(options)
    let apns = try options.apns.map { o throws(ServerStartError) in
      guard options.keepsState else {
        throw ServerStartError(
          "Live Activity pushes need a state file (--state FILE, not :memory:) or --postgres: each push is written with the change that made it, and sent after a restart"
        )
      }
      return try APNsTransport.prepare(o)
    }
    if let w = options.webhooks {
      guard options.keepsState else {
        throw ServerStartError(
          "webhooks need a state file (--state FILE, not :memory:) or --postgres: each delivery is written with the change that made it, and sent after a restart"
        )
      }
      for url in w.urls {
        if let problem = WebhookOptions.problem(with: url) {
          throw ServerStartError("--webhook \(url) \(problem)")
        }
      }
    }
    for (address, option) in [(tcp, "--listen"), (http, "--http")] {
      if let address, !System.isLoopback(address.host), options.token != nil,
        !options.allowPlainToken, identity == nil
      {
        throw ServerStartError(
          "\(option) \(address.host):\(address.port) is not a loopback address, and the token would cross the network in plain text, readable by anyone on the way: serve TLS (--tls-cert and --tls-key), or give --allow-plain-token if that network is trusted"
        )
      }
    }
    if handed.socket == nil { try Self.clearStaleSocket(options.socketPath) }
    let connectionLimit = try Self.connectionLimit(options.maxConnections, logger: logger)

    let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, options.networkThreads))
    // The network threads carry ticks to subscribers: they take the CPU as soon as they wake,
    // as the loop thread does (`PromptWakeups`).
    for eventLoop in group.makeIterator() {
      eventLoop.nameThread("countdown-net")
      eventLoop.execute { PromptWakeups.request() }
    }
    let metrics = ServerMetrics()
    let hub = Hub(
      eventLoop: group.next(), formatter: TimerFormatter(style: options.style),
      bound: options.subscriberBufferBytes,
      slowConsumerAfter: .milliseconds(options.slowConsumerMilliseconds), metrics: metrics)
    let loop: CountdownLoop
    var durable: Durable?
    var cluster: ClusterNode?
    let loopOptions = LoopOptions(precision: options.precision, engine: options.engine)
    if !options.keepsState {
      do {
        loop = try CountdownLoop(
          options: loopOptions,
          onBatch: { first, events in
            hub.eventLoop.execute { hub.publish(first: first, events) }
          })
      } catch {
        try? group.syncShutdownGracefully()
        throw ServerStartError("cannot start the timer loop: \(error)")
      }
    } else {
      let store: any DurableStore
      let snapshot: EngineSnapshot?
      do {
        (store, snapshot) = try Self.openStore(options)
      } catch {
        try? group.syncShutdownGracefully()
        throw error
      }
      let journal = Journal(
        storedOptions: StoredOptions(snapshot?.options ?? options.engine), pushes: apns != nil,
        webhooks: options.webhooks != nil, unsettled: options.cluster?.relaysEvents ?? false)
      let logger = self.logger
      let options = self.options
      let loopBox = NIOLockedValueBox<CountdownLoop?>(nil)
      let clusterBox = NIOLockedValueBox<ClusterNode?>(nil)
      let deliveryBox = NIOLockedValueBox<PushDelivery?>(nil)
      let webhookBox = NIOLockedValueBox<WebhookDelivery?>(nil)
      var pushHooks: PushHooks?
      var webhookHooks: WebhookHooks?
      var pending: [(seq: Int64, item: PushItem)] = []
      var pendingWebhooks: [(seq: Int64, item: WebhookItem)] = []
      if apns != nil {
        do throws(StoreError) {
          let outbox = try store.loadPushes()
          var planner = PushPlanner()
          planner.restore(rows: snapshot?.activities ?? [], budget: outbox.budget)
          pending = outbox.pending
          pushHooks = PushHooks(
            planner: planner, now: { SystemWallClock.now().milliseconds },
            committed: { pushes in deliveryBox.withLockedValue { $0 }?.committed(pushes) })
        } catch {
          store.close()
          try? group.syncShutdownGracefully()
          throw ServerStartError(error.message)
        }
      }
      if let w = options.webhooks {
        do throws(StoreError) {
          pendingWebhooks = try store.loadWebhooks()
        } catch {
          store.close()
          try? group.syncShutdownGracefully()
          throw ServerStartError(error.message)
        }
        let formatter = TimerFormatter(style: options.style)
        webhookHooks = WebhookHooks(
          urls: w.urls,
          body: { event, state in
            var out = ReplyWriter(formatter: formatter)
            out.webhook(event, state)
            return out.take()
          },
          committed: { deliveries in webhookBox.withLockedValue { $0 }?.committed(deliveries) })
      }
      let writer = StoreWriter(
        store: store,
        reload: { snapshot, epoch in
          if let cluster = clusterBox.withLockedValue({ $0 }) {
            cluster.reload(epoch: epoch)
            return
          }
          guard let loop = loopBox.withLockedValue({ $0 }) else { return }
          Self.reload(
            snapshot, epoch: epoch, loop: loop, journal: journal, options: options, logger: logger)
        },
        onError: { error in
          logger.error(
            "storageFailed: \(error.message); \(error.mayHaveCommitted ? "the state is read back from the database" : "the changes of this commit were not made")"
          )
        }, pushes: pushHooks, webhooks: webhookHooks)
      var delivery: PushDelivery?
      if let (endpoint, token) = apns {
        do {
          delivery = try PushDelivery(
            endpoint: endpoint, token: token, writer: writer, loop: loopBox,
            metrics: metrics.pushes, logger: logger)
        } catch {
          writer.close()
          try? group.syncShutdownGracefully()
          throw error
        }
        deliveryBox.withLockedValue { $0 = delivery }
        // Before the loop runs: what a restored engine does at once (deadlines that passed
        // while the server was down) pushes after what was pending.
        delivery?.committed(pending)
      }
      var webhooks: WebhookDelivery?
      if let w = options.webhooks {
        do {
          webhooks = try WebhookDelivery(
            options: w, writer: writer, metrics: metrics.webhooks, logger: logger)
        } catch {
          delivery?.stop()
          writer.close()
          try? group.syncShutdownGracefully()
          throw error
        }
        webhookBox.withLockedValue { $0 = webhooks }
        webhooks?.restore(pendingWebhooks)
      }
      do {
        loop = try CountdownLoop(
          options: loopOptions, restoring: snapshot,
          onWake: { engine, first, events in
            journal.wake(engine, first: first, events, writer: writer, hub: hub)
          })
      } catch {
        delivery?.stop()
        webhooks?.stop()
        writer.close()
        try? group.syncShutdownGracefully()
        throw ServerStartError("cannot restore the state in \(options.statePlace): \(error)")
      }
      loopBox.withLockedValue { $0 = loop }
      if let c = options.cluster, let nodeStore = store as? PostgresStore {
        // The node serves nothing until the driver says which shards (docs/cluster.md).
        let node = ClusterNode(
          options: c, store: nodeStore, writer: writer, loop: loopBox, journal: journal,
          logger: logger, group: group, hub: hub, delivery: delivery,
          webhooks: webhooks)
        clusterBox.withLockedValue { $0 = node }
        do throws(StoreError) {
          let driver = try LeaseDriver(
            node: c.node, shardCount: c.shards, timing: .init(leaseMs: c.leaseMs),
            location: nodeStore.location, advertise: c.advertise, onChange: node.changed,
            onObserve: node.observed)
          node.driver.withLockedValue { $0 = driver }
        } catch {
          loop.shutdown()
          writer.close()
          try? group.syncShutdownGracefully()
          throw ServerStartError(error.message)
        }
        cluster = node
      }
      durable = Durable(
        writer: writer, journal: journal, delivery: delivery, webhooks: webhooks)
      restoredCount = snapshot?.activities.count ?? 0
    }
    let core = ServerCore(
      options: options, loop: loop, hub: hub, logger: logger, durable: durable, group: group,
      metrics: metrics, connectionLimit: connectionLimit, cluster: cluster)
    state.withLockedValue {
      $0.group = group
      $0.core = core
      $0.identity = identity
    }
    do {
      if let socket = handed.socket {
        // The manager owns the file (its mode is SocketMode= in the unit) and keeps it.
        let unix = try bootstrap(group, core, tcp: false, identity: nil)
          .withBoundSocket(socket.fd).wait()
        state.withLockedValue { $0.listeners.append(unix) }
      } else {
        // Mode 0600 from the start: the socket file is created under umask 0177.
        let unix = try System.withFileModeMask(0o177) {
          try bootstrap(group, core, tcp: false, identity: nil)
            .bind(unixDomainSocketPath: options.socketPath).wait()
        }
        state.withLockedValue {
          $0.listeners.append(unix)
          $0.socketBound = true
        }
      }
      if let tcp {
        let tcpBootstrap = bootstrap(group, core, tcp: true, identity: identity)
        let channel =
          try handed.listen.map { try tcpBootstrap.withBoundSocket($0.fd).wait() }
          ?? tcpBootstrap.bind(host: tcp.host, port: tcp.port).wait()
        state.withLockedValue { $0.listeners.append(channel) }
      }
    } catch {
      stop()
      throw ServerStartError("cannot listen: \(error)")
    }
    if let http {
      do {
        let front = try HTTPFrontEnd(
          core: core, host: http.host, port: http.port, handed: handed.http?.fd,
          identity: identity, logger: logger)
        state.withLockedValue { $0.http = front }
      } catch {
        stop()
        throw error
      }
    }
    state.withLockedValue { $0.notifier = notifier }
  }

  private func bootstrap(
    _ group: EventLoopGroup, _ core: ServerCore, tcp: Bool, identity: TLSIdentity?
  ) -> ServerBootstrap {
    let needsAuth = tcp && options.token != nil
    let limit = core.connectionLimit
    return ServerBootstrap(group: group)
      // Out of descriptors (EMFILE), accept again a second later instead of at once, forever.
      .serverChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler())
        }
      }
      .serverChannelOption(.backlog, value: 256)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelOption(.maxMessagesPerRead, value: 16)
      .childChannelOption(
        .writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024)
      )
      .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          if let identity {
            try channel.pipeline.syncOperations.addHandler(identity.handler())
          }
          if core.connectionOpened(channel) {
            try channel.pipeline.syncOperations.addHandler(
              ConnectionHandler(core: core, needsAuth: needsAuth))
          } else {
            var w = ReplyWriter(formatter: core.formatter)
            w.failure(
              nil,
              CountdownError(
                .limitReached,
                "the server has \(limit) connections, its limit (--max-connections); close one or try again later"
              ), at: SystemWallClock.now())
            try channel.pipeline.syncOperations.addHandler(RefusingHandler(message: w.take()))
          }
        }
      }
  }

  /// Whether HTTP and TCP are served over TLS.
  public var usesTLS: Bool { options.tlsCertificatePath != nil }

  /// Reads `--tls-cert` and `--tls-key` again (SIGHUP): new connections present the new
  /// certificate; those open keep theirs. On an error the old pair stays in use.
  public func reloadTLS() throws(ServerStartError) {
    guard let identity = state.withLockedValue({ $0.identity }) else {
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
    let (group, core, listeners, socketBound, http, notifier) = state.withLockedValue { s in
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
      let semaphore = DispatchSemaphore(value: 0)
      core.loop.submit({ _ in }, completion: { _ in semaphore.signal() })
      semaphore.wait()
      // With a state file, those replies go out once their wakes are committed.
      core.durable?.writer.flush()
      // A cluster node hands its shards over: the others take them at their next look.
      core.cluster?.leave()
      core.durable?.writer.flush()
      let channels = core.connections.withLockedValue { Array($0.values) }
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
    if state.withLockedValue({ $0.core == nil }) { try start() }
    // READY=1 once signals are trapped (the group does that before its services run): a
    // manager that stops the service the moment it is ready gets a graceful stop.
    notifyReady()
    try? await gracefulShutdown()
    stop()
  }

  /// Sends `READY=1` to the service manager and begins the watchdog's beats (nothing without
  /// ``ServerOptions/serviceManager``'s notify socket). ``run()`` calls it.
  func notifyReady() {
    let (notifier, core) = state.withLockedValue { ($0.notifier, $0.core) }
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
