// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import Countdown
import CountdownClient
import CountdownPostgres
import CountdownServer
import Dispatch
import Logging
import NIOCore
import ServiceLifecycle

struct ServeCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "serve",
    abstract:
      "Run the engine on the real clock as a service on a Unix socket (and TCP, and HTTP).",
    discussion: """
      Requests are JSON lines: the commands of replay without "at" (the server stamps them), \
      plus subscribe, unsubscribe, list and ping; each gets one reply line, in order. Runs \
      until SIGTERM or SIGINT, then answers what it has read, removes the socket file and \
      exits 0. State is kept in an SQLite file (--state, WAL): a reply with "ok":true is sent \
      only once its change is committed, and a restart on the same file (after any stop, kill \
      -9 included) has every activity back, with what fell due meanwhile applied once. \
      --postgres keeps the same state in a PostgreSQL database instead (one server per \
      database; with --node, one node of a cluster that shares the activities by shard: \
      docs/cluster.md). --http adds the HTTP API, server-sent events, /metrics and the kiosk board page at /.
      """
  )

  @Option(help: "The Unix domain socket (mode 0600).")
  var socket = "countdown.sock"

  @Option(
    help: "The SQLite state file (default countdown.db); :memory: keeps nothing across restarts."
  )
  var state: String?

  @Option(
    help: ArgumentHelp(
      "Keep the state in this PostgreSQL database instead of a file (one server per database, or the nodes of a cluster with --node).",
      valueName: "postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|require]"))
  var postgres: String?

  @Option(
    help: """
      Run as a node of a cluster on --postgres, with this name (unique among the live nodes):       the activities are shared among the nodes by shard (docs/cluster.md).
      """)
  var node: String?

  @Option(
    help: ArgumentHelp(
      "Where the other nodes reach this one (its --listen).", valueName: "HOST:PORT"))
  var advertise: String?

  @Option(help: "The cluster's shard count, fixed at the database's first use (with --node).")
  var shards = 64

  @Option(help: "How long a shard's lease lasts, in ms; renewed every fifth of it (with --node).")
  var leaseMs: Int64 = 5000

  @Option(
    help: """
      How long a commit to --postgres may go unanswered, in ms: then its connection is dropped \
      and its commands are answered storageFailed, saying they may or may not have been \
      carried out (default: --lease-ms for a node, 10000 otherwise).
      """)
  var commitTimeoutMs: Int64?

  @Option(
    help: """
      The token the nodes of a cluster authenticate to each other with over --listen: with it, \
      a command for another node's shard is forwarded there (with --node; or the \
      COUNTDOWN_CLUSTER_TOKEN environment variable).
      """)
  var clusterToken: String?

  @Option(
    help: ArgumentHelp(
      "normal: each commit survives a crash of the process; full: also a power loss (slower).",
      valueName: "normal|full"))
  var sync = "normal"

  @Option(help: "Also listen on TCP, HOST:PORT. Anything but loopback needs --token.")
  var listen: String?

  @Option(
    help: """
      Also serve HTTP on HOST:PORT: the API, server-sent events, /metrics and the kiosk board \
      at /. Anything but loopback needs --token.
      """)
  var http: String?

  @Option(
    help: """
      The token each TCP connection sends first ({"op":"auth","token":…}) and each HTTP \
      request as "Authorization: Bearer TOKEN" (or ?token=TOKEN for the board page).
      """)
  var token: String?

  @Option(
    name: .customLong("token-file"),
    help: ArgumentHelp(
      "Read the token from FILE (its first line), so that it is not seen in the process list. COUNTDOWN_TOKEN in the environment also gives it.",
      valueName: "FILE"))
  var tokenFile: String?

  @Option(
    name: .customLong("access"),
    help: ArgumentHelp(
      "Keys with roles, one a line: ROLE KEY (view, control or admin; # comments), mode 0600 or stricter. SIGHUP reads it again. --token is one more admin key.",
      valueName: "FILE"))
  var access: String?

  @Option(
    name: .customLong("tls-cert"),
    help: ArgumentHelp(
      "Serve HTTPS on --http and TLS on --listen with this certificate chain (PEM); with --tls-key. SIGHUP reads both again.",
      valueName: "FILE"))
  var tlsCert: String?

  @Option(
    name: .customLong("tls-key"),
    help: ArgumentHelp("The certificate's private key (PEM).", valueName: "FILE"))
  var tlsKey: String?

  @Flag(
    name: .customLong("allow-plain-token"),
    help:
      "Allow a token over plain TCP or HTTP on an address other than loopback: only on a network trusted not to be read."
  )
  var allowPlainToken = false

  @Option(
    name: .customLong("public-host"),
    help: ArgumentHelp(
      "A host name browsers use for this server besides its address and localhost (repeatable); any other Host gets 421.",
      valueName: "NAME"))
  var publicHosts: [String] = []

  @Option(
    name: .customLong("cors-origin"),
    help: ArgumentHelp(
      "An origin (https://app.example) whose pages may call the HTTP API, with CORS headers (repeatable). None by default.",
      valueName: "ORIGIN"))
  var corsOrigins: [String] = []

  @Option(
    name: .customLong("header-timeout-ms"),
    help: "How long an HTTP client may take to send a request head (and an idle connection stays).")
  var headerTimeoutMs: Int64 = 10_000

  @Option(
    name: .customLong("body-timeout-ms"),
    help: "How long an HTTP client may take to send a request body, from its head.")
  var bodyTimeoutMs: Int64 = 30_000

  @Option(
    name: .customLong("line-timeout-ms"),
    help:
      "How long a socket or TCP client may take to finish a line it began, or to send its token."
  )
  var lineTimeoutMs: Int64 = 30_000

  @Option(
    name: .customLong("reply-buffer-bytes"),
    help: "Bytes of replies one socket or TCP connection may have waiting before it is not read.")
  var replyBufferBytes = 1 << 20

  @OptionGroup var styleOptions: StyleOptions

  @OptionGroup var limits: EngineLimitOptions

  @Option(name: .customLong("max-connections"), help: "Connections at once.")
  var maxConnections = 1024

  @Option(
    name: .customLong("subscriber-buffer-bytes"),
    help: "Bytes of events that may wait for one subscriber before ticks coalesce.")
  var subscriberBufferBytes = 8 << 20

  @Option(
    name: .customLong("output-budget-bytes"),
    help:
      "Bytes all subscribers together may leave unread before those holding the most are cut off (slowConsumer)."
  )
  var outputBudgetBytes = 64 << 20

  @Option(
    name: .customLong("slow-consumer-ms"),
    help: "How long a subscriber may stay over its buffer before slowConsumer and a disconnect.")
  var slowConsumerMs: Int64 = 10_000

  @Option(
    name: .customLong("trim-memory-ms"),
    help:
      "How often to give freed memory's pages back to the system (glibc's malloc_trim, on a thread of its own); 0 never."
  )
  var trimMemoryMs: Int64 = 30_000

  @Option(
    name: .customLong("board-controls"),
    help: ArgumentHelp(
      "The board page's buttons when its address does not say (?controls=0 or 1): none for screens facing the public.",
      valueName: "all|none"))
  var boardControls = "all"

  @Option(
    name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
  var logLevel = "info"

  @OptionGroup(title: "Live Activity pushes (docs/pushes.md)") var apns: APNsFlags

  @OptionGroup(title: "Webhooks (docs/webhooks.md)") var webhooks: WebhookFlags

  func validate() throws {
    guard Logger.Level(rawValue: logLevel) != nil else {
      throw ValidationError(
        "--log-level must be one of trace, debug, info, notice, warning, error, critical")
    }
    for (value, name) in [
      (headerTimeoutMs, "--header-timeout-ms"), (bodyTimeoutMs, "--body-timeout-ms"),
      (lineTimeoutMs, "--line-timeout-ms"),
    ] where value <= 0 {
      throw ValidationError("\(name) must be ≥ 1")
    }
    guard (tlsCert == nil) == (tlsKey == nil) else {
      throw ValidationError("give --tls-cert and --tls-key together")
    }
    guard replyBufferBytes > 0 else { throw ValidationError("--reply-buffer-bytes must be ≥ 1") }
    guard token == nil || tokenFile == nil else {
      throw ValidationError("give the token once: --token or --token-file, not both")
    }
    for origin in corsOrigins {
      guard origin.hasPrefix("http://") || origin.hasPrefix("https://"),
        !origin.dropFirst(origin.hasPrefix("https://") ? 8 : 7).contains("/")
      else {
        throw ValidationError(
          "--cors-origin \(origin) is not an origin: give scheme://host[:port], like https://app.example"
        )
      }
    }
    guard maxConnections > 0 else { throw ValidationError("--max-connections must be ≥ 1") }
    guard outputBudgetBytes > 0 else {
      throw ValidationError("--output-budget-bytes must be ≥ 1")
    }
    guard subscriberBufferBytes > 0 else {
      throw ValidationError("--subscriber-buffer-bytes must be ≥ 1")
    }
    guard slowConsumerMs > 0 else { throw ValidationError("--slow-consumer-ms must be ≥ 1") }
    guard trimMemoryMs >= 0 else {
      throw ValidationError("--trim-memory-ms must be ≥ 0 (0: never)")
    }
    guard BoardControls(rawValue: boardControls) != nil else {
      throw ValidationError("--board-controls must be all or none, not \(boardControls)")
    }
    guard StoreSync(rawValue: sync) != nil else {
      throw ValidationError("--sync must be normal or full, not \(sync)")
    }
    guard state?.isEmpty != true else {
      throw ValidationError("--state must name a file or :memory:")
    }
    if let postgres {
      guard state == nil else {
        throw ValidationError(
          "give --state or --postgres, not both: the state is kept in one place")
      }
      do {
        _ = try PostgresStore.Location.parse(postgres)
      } catch {
        throw ValidationError(error.message)
      }
    }
    _ = try apns.options()
    if let commitTimeoutMs {
      guard postgres != nil else {
        throw ValidationError("--commit-timeout-ms bounds a commit to --postgres: give --postgres")
      }
      guard commitTimeoutMs >= 100, commitTimeoutMs <= 600_000 else {
        throw ValidationError("--commit-timeout-ms must be 100 to 600000, not \(commitTimeoutMs)")
      }
    }
    if let node {
      guard postgres != nil else {
        throw ValidationError("--node runs a cluster node on PostgreSQL: give --postgres too")
      }
      guard !node.isEmpty, node.utf8.count <= 200,
        node.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
      else {
        throw ValidationError("--node must be a name of 1 to 200 bytes without control characters")
      }
      if resolvedClusterToken != nil, listen == nil {
        throw ValidationError(
          "--cluster-token: the other nodes forward to this one over --listen; give --listen (and --advertise where they reach it)"
        )
      }
      guard (1...4096).contains(shards) else {
        throw ValidationError("--shards must be 1 to 4096, not \(shards)")
      }
      guard leaseMs >= 500, leaseMs <= 600_000 else {
        throw ValidationError("--lease-ms must be 500 to 600000, not \(leaseMs)")
      }
    } else if advertise != nil || shards != 64 || leaseMs != 5000 || clusterToken != nil {
      throw ValidationError(
        "--advertise, --shards, --lease-ms and --cluster-token are a cluster node's: give --node")
    }
  }

  func run() async throws {
    let level = Logger.Level(rawValue: logLevel)!
    LoggingSystem.bootstrap { label in
      var handler = StreamLogHandler.standardError(label: label)
      handler.logLevel = level
      return handler
    }
    let logger = Logger(label: "countdown.serve")
    let token: String?
    do {
      token = try resolvedToken()
    } catch {
      printError("countdown serve: \(error)")
      throw ExitCode.failure
    }
    var options = ServerOptions(
      socketPath: socket, listen: listen, http: http, token: token,
      style: styleOptions.timerStyle,
      engine: limits.engineOptions,
      maxConnections: maxConnections, subscriberBufferBytes: subscriberBufferBytes,
      slowConsumerMilliseconds: slowConsumerMs, statePath: state ?? "countdown.db",
      sync: StoreSync(rawValue: sync)!)
    options.postgres = postgres
    options.commitTimeoutMs = commitTimeoutMs
    options.trimMemoryMilliseconds = trimMemoryMs
    options.cluster = node.map {
      ClusterOptions(
        node: $0, advertise: advertise ?? listen, shards: shards, leaseMs: leaseMs,
        token: resolvedClusterToken)
    }
    #if DEBUG
      // The tests' fault (docs/cluster.md, "A node killed between a commit and its relay").
      options.cluster?.stallAfterCommitOf = System.environment(
        "COUNTDOWN_FAULT_STALL_AFTER_COMMIT_OF")
    #endif
    options.publicHosts = publicHosts
    options.boardControls = BoardControls(rawValue: boardControls)!
    options.corsOrigins = corsOrigins
    options.allowPlainToken = allowPlainToken
    options.accessPath = access
    options.outputBudgetBytes = outputBudgetBytes
    options.headerTimeoutMilliseconds = headerTimeoutMs
    options.bodyTimeoutMilliseconds = bodyTimeoutMs
    options.lineTimeoutMilliseconds = lineTimeoutMs
    options.replyBufferBytes = replyBufferBytes
    options.tlsCertificatePath = tlsCert
    options.tlsKeyPath = tlsKey
    options.apns = try apns.options()
    do {
      options.webhooks = try webhooks.options()
    } catch {
      printError("countdown serve: \(error)")
      throw ExitCode.failure
    }
    // systemd's socket activation and notify socket (docs/systemd.md).
    do {
      options.serviceManager = try ServiceManagerEnvironment.read(
        System.takeEnvironment(ServiceManagerEnvironment.variables), pid: System.processID)
    } catch {
      printError("countdown serve: \(error)")
      throw ExitCode.failure
    }
    // A write past a file-size limit (ulimit -f) is an error to report, not a signal to die of.
    System.ignoreFileSizeSignal()
    // Before the threads that allocate are made (docs/protocol.md, "Memory").
    CountdownServer.holdAllocatorMmapThreshold()
    let server = CountdownServer(options: options, logger: logger)
    do {
      try server.start()
    } catch {
      printError("countdown serve: \(error)")
      throw ExitCode.failure
    }
    var line = "countdown serve: pid \(System.processID), socket \(socket)"
    line += options.serviceManager.sockets.socket == nil ? " (mode 0600)" : " (from systemd)"
    if let address = server.tcpAddress { line += ", tcp \(Self.hostPort(address))" }
    if let address = server.httpAddress {
      let scheme = server.usesTLS ? "https" : "http"
      line += ", http \(scheme)://\(Self.hostPort(address))/"
    }
    if server.usesTLS { line += " (TLS; SIGHUP reloads the certificate)" }
    if let c = options.cluster {
      line +=
        ", cluster node \(c.node) on \(options.statePlace) (\(c.shards) shards, lease \(c.leaseMs) ms: it serves the shards its leases give it)"
    } else if let restored = server.restoredCount {
      line +=
        ", state \(options.statePlace)\(postgres == nil ? " (sync \(sync), " : " (")\(restored) \(restored == 1 ? "activity" : "activities") restored)"
    } else {
      line += ", state in memory only (activities are lost when the server stops)"
    }
    // The line is printed once the group traps SIGTERM and SIGINT: a supervisor that signals
    // as soon as it reads it gets a graceful stop, not the default death.
    // With TLS, SIGHUP reads the certificate and key again; a pair that fails to load is
    // logged and the old one kept.
    // With --access, SIGHUP reads the keys again; a file that cannot be read, with a mode
    // too open or a bad line, is logged and the old keys kept.
    var hangup: (any DispatchSourceSignal)?
    if server.usesTLS || access != nil {
      let source = DispatchSource.makeSignalSource(signal: System.takeHangupSignal())
      source.setEventHandler {
        if server.usesTLS {
          do {
            try server.reloadTLS()
            logger.notice("SIGHUP: TLS certificate and key reloaded")
          } catch {
            logger.error("SIGHUP: \(error); the previous certificate stays in use")
          }
        }
        if access != nil {
          do {
            try server.reloadAccess()
            logger.notice("SIGHUP: --access keys read again")
          } catch {
            logger.error("SIGHUP: \(error); the previous keys stay in use")
          }
        }
      }
      source.resume()
      hangup = source
    }
    defer { hangup?.cancel() }
    let announce = Announce(line: line, logger: logger, socket: socket)
    let group = ServiceGroup(
      services: [server, announce], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    try await group.run()
  }
}

extension ServeCommand {
  /// The token from `--token`, `--token-file` (its first line) or `COUNTDOWN_TOKEN`, in that
  /// order; nil when none gives one.
  /// `--cluster-token`, or the environment's `COUNTDOWN_CLUSTER_TOKEN` (kept out of `ps`).
  var resolvedClusterToken: String? {
    if let clusterToken { return clusterToken.isEmpty ? nil : clusterToken }
    return System.environment("COUNTDOWN_CLUSTER_TOKEN").flatMap { $0.isEmpty ? nil : $0 }
  }

  func resolvedToken() throws -> String? {
    if let token {
      guard !token.isEmpty else { throw IOFailure(message: "--token is empty") }
      return token
    }
    if let tokenFile {
      return try SecretFile.firstLine(of: tokenFile, "the token file", "token")
    }
    if let token = System.environment("COUNTDOWN_TOKEN") {
      return token.isEmpty ? nil : token
    }
    return nil
  }

  /// `127.0.0.1:8080` or `[::1]:8080`.
  static func hostPort(_ address: SocketAddress) -> String {
    let ip = address.ipAddress ?? "localhost"
    let host = ip.contains(":") ? "[\(ip)]" : ip
    return "\(host):\(address.port ?? 0)"
  }
}

/// Prints the start-up line from inside the service group, then waits for shutdown.
struct Announce: Service {
  let line: String
  let logger: Logger
  let socket: String

  func run() async throws {
    print(line)
    System.flushStandardOutput()
    logger.info("serving", metadata: ["socket": "\(socket)", "pid": "\(System.processID)"])
    try? await gracefulShutdown()
  }
}

/// `--webhook*`: where to post lifecycle events (docs/webhooks.md).
struct WebhookFlags: ParsableArguments {
  @Option(
    name: .customLong("webhook"),
    help: ArgumentHelp(
      "Post every lifecycle event (never ticks) to URL as JSON, at least once and in order per activity; repeat for more receivers.",
      valueName: "URL"))
  var urls: [String] = []

  @Option(
    name: .customLong("webhook-secret"),
    help: "Sign each delivery: Countdown-Signature: t=UNIX,v1=hex HMAC-SHA256 of \"t.body\".")
  var secret: String?

  @Option(
    name: .customLong("webhook-secret-file"),
    help: "Read the secret from FILE (its first line), so that it is not seen in the process list.")
  var secretFile: String?

  @Option(
    name: .customLong("webhook-ca"),
    help: "Extra trusted CA certificates (PEM) for https:// receivers, beside the system's.")
  var ca: String?

  @Option(
    name: .customLong("webhook-timeout-ms"),
    help: "How long a delivery may wait for its answer before it is tried again.")
  var timeoutMs: Int64 = 10_000

  /// The flags' own checks (before anything is read). Its errors end `countdown serve` with
  /// status 1 and the message (docs/webhooks.md), not a usage error.
  func check() throws {
    for url in urls {
      if let problem = WebhookOptions.problem(with: url) {
        throw ValidationError("--webhook \(url) \(problem)")
      }
    }
    if let dup = Dictionary(grouping: urls, by: { $0 }).first(where: { $0.value.count > 1 })?.key {
      throw ValidationError("--webhook \(dup) is given twice: each URL once")
    }
    guard secret == nil || secretFile == nil else {
      throw ValidationError(
        "give the webhook secret once: --webhook-secret or --webhook-secret-file, not both")
    }
    if secret != nil || secretFile != nil, urls.isEmpty {
      throw ValidationError(
        "\(secret != nil ? "--webhook-secret" : "--webhook-secret-file") is given without a --webhook to sign for"
      )
    }
    if secret == "" { throw ValidationError("--webhook-secret is empty") }
    if ca != nil, urls.isEmpty {
      throw ValidationError("--webhook-ca is given without a --webhook")
    }
    guard timeoutMs > 0 else { throw ValidationError("--webhook-timeout-ms must be ≥ 1") }
  }

  /// The settings, nil without `--webhook`; the secret file is read here.
  func options() throws -> WebhookOptions? {
    try check()
    guard !urls.isEmpty else { return nil }
    var text = secret
    if let secretFile {
      text = try SecretFile.firstLine(of: secretFile, "the webhook secret file", "secret")
    }
    var o = WebhookOptions(urls: urls, secret: text.map { Array($0.utf8) })
    o.requestTimeoutMilliseconds = timeoutMs
    o.caPath = ca
    return o
  }
}
