// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownAPNs
import CountdownLoop
import CountdownNIO
import CountdownPostgres
import CountdownProtocol
import CountdownPush
import CountdownStore
import Logging
import NIOCore
import NIOPosix

extension CountdownServer {
  /// Binds the socket (and TCP), starts the loop thread and the network threads.
  ///
  /// First what was asked is checked (nothing is set up); then each part comes up as a stage
  /// of ``StartStages``: the network threads, the store and its writer, the push and webhook
  /// senders, the loop, a cluster node's lease driver. A stage that fails undoes the ones
  /// before it, last first; once the parts are whole, ``stop()`` owns their teardown (the
  /// listeners bind after that, and a failure there stops the server).
  /// - Throws: ``ServerStartError`` when another server is live on the socket, an address
  ///   cannot be bound, or `listen` is not loopback and there is no token.
  public func start() throws {
    // A socket handed over by the service manager replaces its flag's bind (docs/systemd.md).
    let handed = options.serviceManager.sockets
    let listenText = handed.listen?.hostPort ?? options.listen
    let tcp = try listenText.map { text in try Self.parseHostPort(text, option: "--listen") }
    let keys = options.token != nil || options.accessPath != nil
    if let tcp, let listenText, !Self.isLoopback(tcp.host), !keys {
      throw ServerStartError(
        "--listen \(listenText) is not a loopback address: give a --token (or --access keys), which each TCP connection must send first"
      )
    }
    let httpText = handed.http?.hostPort ?? options.http
    let http = try httpText.map { text in try Self.parseHostPort(text, option: "--http") }
    if let http, let httpText, !Self.isLoopback(http.host), !keys {
      throw ServerStartError(
        "--http \(httpText) is not a loopback address: give a --token (or --access keys), which each HTTP request must send as \"Authorization: Bearer TOKEN\""
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
    let access = try options.accessPath.map { path throws(ServerStartError) in
      try AccessList.load(path)
    }
    let apns = try options.apns.map { o throws(ServerStartError) in
      guard options.keepsState else {
        throw ServerStartError(
          "Live Activity pushes need a state file (--state FILE, not :memory:) or --postgres: each push is written with the change that made it, and sent after a restart"
        )
      }
      if o.reconcileChannels, options.cluster != nil {
        throw ServerStartError(
          "--apns-channels-reconcile deletes every channel of the app that this server's activities do not hold: a cluster node holds only its shards' (docs/pushes.md, \"Broadcast channels\")"
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
      if let address, !System.isLoopback(address.host), keys, !options.allowPlainToken,
        identity == nil
      {
        throw ServerStartError(
          "\(option) \(address.host):\(address.port) is not a loopback address, and the token would cross the network in plain text, readable by anyone on the way: serve TLS (--tls-cert and --tls-key), or give --allow-plain-token if that network is trusted"
        )
      }
    }
    if handed.socket == nil { try Self.clearStaleSocket(options.socketPath) }
    let connectionLimit = try Self.connectionLimit(options.maxConnections, logger: logger)

    var stages = StartStages()
    let parts:
      (
        group: MultiThreadedEventLoopGroup, hub: Hub, loop: CountdownLoop, durable: Durable?,
        cluster: ClusterNode?
      )
    do {
      parts = try startParts(apns: apns, notifier: notifier, stages: &stages)
    } catch {
      stages.unwind()
      throw error
    }
    let (group, hub, loop, durable, cluster) = parts
    let metrics = hub.metrics
    let core = ServerCore(
      options: options, loop: loop, hub: hub, logger: logger, durable: durable, group: group,
      metrics: metrics, connectionLimit: connectionLimit, cluster: cluster, access: access)
    state.withLock {
      $0.group = group
      $0.core = core
      $0.identity = identity
    }
    // From here ``stop()`` takes down what the stages set up.
    stages.handOver()
    do {
      if let socket = handed.socket {
        // The manager owns the file (its mode is SocketMode= in the unit) and keeps it.
        let unix = try bootstrap(group, core, tcp: false, identity: nil)
          .withBoundSocket(socket.fd).wait()
        state.withLock { $0.listeners.append(unix) }
      } else {
        // Mode 0600 from the start: the socket file is created under umask 0177.
        let unix = try System.withFileModeMask(0o177) {
          try bootstrap(group, core, tcp: false, identity: nil)
            .bind(unixDomainSocketPath: options.socketPath).wait()
        }
        state.withLock {
          $0.listeners.append(unix)
          $0.socketBound = true
        }
      }
      if let tcp {
        let tcpBootstrap = bootstrap(group, core, tcp: true, identity: identity)
        let channel =
          try handed.listen.map { try tcpBootstrap.withBoundSocket($0.fd).wait() }
          ?? tcpBootstrap.bind(host: tcp.host, port: tcp.port).wait()
        state.withLock { $0.listeners.append(channel) }
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
        state.withLock { $0.http = front }
      } catch {
        stop()
        throw error
      }
    }
    state.withLock { $0.notifier = notifier }
  }

  /// Gives freed memory back to the system every `ms` on a thread of its own, counting what it
  /// gave (docs/protocol.md, "Memory"): glibc returns an arena's memory only from its top. A
  /// call took 2.3 ms, at most 10, at 100k activities under the soak's load; no network thread
  /// waits for it.
  private static func startTrimming(
    every ms: Int64, on eventLoop: any EventLoop, metrics: ServerMetrics,
    stages: inout StartStages
  ) {
    let thread = NIOThreadPool(numberOfThreads: 1)
    thread.start()
    let task = eventLoop.scheduleRepeatedTask(
      initialDelay: .milliseconds(ms), delay: .milliseconds(ms)
    ) { _ in
      thread.submit { state in
        guard case .active = state else { return }
        metrics.memoryReturned.increment(by: Int64(System.returnFreedMemory()))
      }
    }
    stages.add("memory trims") {
      task.cancel()
      try? thread.syncShutdownGracefully()
    }
  }

  /// The stages of start-up that set something up, each added to `stages` with its teardown
  /// as it comes up: the network threads and the hub; then the loop alone, or with a state
  /// the store, its writer, the senders, the loop restored from the store and, for a cluster
  /// node, its lease driver.
  private func startParts(
    apns: (APNsEndpoint, APNsEndpoint?, ProviderToken)?, notifier: ServiceNotifier?,
    stages: inout StartStages
  ) throws(ServerStartError) -> (
    group: MultiThreadedEventLoopGroup, hub: Hub, loop: CountdownLoop, durable: Durable?,
    cluster: ClusterNode?
  ) {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, options.networkThreads))
    stages.add("network threads") { try? group.syncShutdownGracefully() }
    // The network threads carry ticks to subscribers: they take the CPU as soon as they wake,
    // as the loop thread does (`PromptWakeups`).
    for eventLoop in group.makeIterator() {
      eventLoop.nameThread("countdown-net")
      eventLoop.execute { PromptWakeups.request() }
    }
    let metrics = ServerMetrics()
    if options.trimMemoryMilliseconds > 0 {
      Self.startTrimming(
        every: options.trimMemoryMilliseconds, on: group.next(), metrics: metrics,
        stages: &stages)
    }
    let hub = Hub(
      eventLoop: group.next(), formatter: TimerFormatter(style: options.style),
      bound: options.subscriberBufferBytes,
      slowConsumerAfter: .milliseconds(options.slowConsumerMilliseconds),
      outputBudget: options.outputBudgetBytes, metrics: metrics)
    let loopOptions = LoopOptions(precision: options.precision, engine: options.engine)
    guard options.keepsState else {
      let loop: CountdownLoop
      do {
        loop = try CountdownLoop(
          options: loopOptions,
          onBatch: { first, events in
            hub.eventLoop.execute { hub.publish(first: first, events) }
          })
      } catch {
        throw ServerStartError("cannot start the timer loop: \(error)")
      }
      stages.add("loop") { loop.shutdown() }
      return (group, hub, loop, nil, nil)
    }
    let (store, snapshot) = try Self.openStore(options)
    // The groups of the activities restored, before any of their events (docs/security.md).
    if let restored = snapshot?.activities, restored.contains(where: { $0.group != nil }) {
      hub.eventLoop.execute { hub.replaceGroups(restored) }
    }
    stages.add("store") { store.close() }
    let journal = Journal(
      storedOptions: StoredOptions(snapshot?.options ?? options.engine), pushes: apns != nil,
      webhooks: options.webhooks != nil, unsettled: options.cluster?.relaysEvents ?? false)
    let logger = self.logger
    let options = self.options
    // The writer is made before the loop and the senders it calls back: they are handed to
    // it once they are up.
    let loopBox = Locked<CountdownLoop?>(nil)
    let clusterBox = Locked<ClusterNode?>(nil)
    let deliveryBox = Locked<PushDelivery?>(nil)
    let webhookBox = Locked<WebhookDelivery?>(nil)
    var pushHooks: PushHooks?
    var webhookHooks: WebhookHooks?
    var pending: [(seq: Int64, item: PushItem)] = []
    var pendingWebhooks: [(seq: Int64, item: WebhookItem)] = []
    do throws(StoreError) {
      if apns != nil {
        let outbox = try store.loadPushes()
        var planner = PushPlanner(channels: options.apns?.channels ?? false)
        planner.restore(rows: snapshot?.activities ?? [], budget: outbox.budget)
        pending = outbox.pending
        pushHooks = PushHooks(
          planner: planner, now: { SystemWallClock.now().milliseconds },
          committed: { pushes in deliveryBox.withLock { $0 }?.committed(pushes) })
      }
      if let w = options.webhooks {
        pendingWebhooks = try store.loadWebhooks()
        let formatter = TimerFormatter(style: options.style)
        webhookHooks = WebhookHooks(
          urls: w.urls,
          body: { event, state in
            var out = ReplyWriter(formatter: formatter)
            out.webhook(event, state)
            return out.take()
          },
          committed: { deliveries in webhookBox.withLock { $0 }?.committed(deliveries) })
      }
    } catch {
      throw ServerStartError(error.message)
    }
    let writer = StoreWriter(
      store: store,
      reload: { snapshot, epoch in
        if let cluster = clusterBox.withLock({ $0 }) {
          cluster.reload(epoch: epoch)
          return
        }
        guard let loop = loopBox.withLock({ $0 }) else { return }
        Self.reload(
          snapshot, epoch: epoch, loop: loop, journal: journal, hub: hub, options: options,
          logger: logger)
      },
      onError: { error in
        logger.error(
          "storageFailed: \(error.message); \(error.mayHaveCommitted ? "the state is read back from the database" : "the changes of this commit were not made")"
        )
      }, pushes: pushHooks, webhooks: webhookHooks)
    stages.add("store writer", takingOver: "store") { writer.close() }
    var delivery: PushDelivery?
    if let (endpoint, channels, token) = apns {
      // --apns-channels-reconcile: the channels the activities hold at start are kept.
      let holding: Set<String>? =
        options.apns?.reconcileChannels == true
        ? Set((snapshot?.activities ?? []).compactMap { $0.liveActivity?.channelId }) : nil
      let sender = try PushDelivery(
        endpoint: endpoint, channels: channels, reconcile: holding, token: token, writer: writer,
        loop: loopBox, metrics: metrics.pushes, logger: logger,
        held: { notifier?.pushes(heldFor: $0) })
      stages.add("push sender") { sender.stop() }
      deliveryBox.withLock { $0 = sender }
      // Before the loop runs: what a restored engine does at once (deadlines that passed
      // while the server was down) pushes after what was pending.
      sender.restore(pending)
      delivery = sender
    }
    var webhooks: WebhookDelivery?
    if let w = options.webhooks {
      let sender = try WebhookDelivery(
        options: w, writer: writer, metrics: metrics.webhooks, logger: logger)
      stages.add("webhook sender") { sender.stop() }
      webhookBox.withLock { $0 = sender }
      sender.restore(pendingWebhooks)
      webhooks = sender
    }
    let loop: CountdownLoop
    do {
      loop = try CountdownLoop(
        options: loopOptions, restoring: snapshot,
        onWake: { engine, first, events in
          journal.wake(engine, first: first, events, writer: writer, hub: hub)
        })
    } catch {
      throw ServerStartError("cannot restore the state in \(options.statePlace): \(error)")
    }
    stages.add("loop") { loop.shutdown() }
    loopBox.withLock { $0 = loop }
    var cluster: ClusterNode?
    if let c = options.cluster, let nodeStore = store as? PostgresStore {
      // The node serves nothing until the driver says which shards (docs/cluster.md).
      let node = ClusterNode(
        options: c, store: nodeStore, writer: writer, loop: loopBox, journal: journal,
        logger: logger, group: group, hub: hub, delivery: delivery,
        webhooks: webhooks)
      clusterBox.withLock { $0 = node }
      do throws(StoreError) {
        let driver = try LeaseDriver(
          node: c.node, shardCount: c.shards, timing: .init(leaseMs: c.leaseMs),
          location: nodeStore.location, advertise: c.advertise, onChange: node.changed,
          onObserve: node.observed)
        node.driver.withLock { $0 = driver }
      } catch {
        throw ServerStartError(error.message)
      }
      cluster = node
    }
    restoredCount = snapshot?.activities.count ?? 0
    return (
      group, hub, loop,
      Durable(writer: writer, journal: journal, delivery: delivery, webhooks: webhooks), cluster
    )
  }

  private func bootstrap(
    _ group: EventLoopGroup, _ core: ServerCore, tcp: Bool, identity: TLSIdentity?
  ) -> ServerBootstrap {
    let needsAuth = tcp && core.needsKeys
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
          if core.connectionOpened(channel, unix: !tcp) {
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
}
