// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop
import CountdownPostgres

@_exported import enum CountdownStore.StoreSync

/// Settings of a ``CountdownServer``.
public struct ServerOptions: Sendable {
  /// The Unix domain socket (mode 0600). Default `countdown.sock` in the working directory.
  public var socketPath: String
  /// TCP as `HOST:PORT` (`127.0.0.1:7000`, `[::1]:7000`, `0.0.0.0:7000`), or nil for none.
  public var listen: String?
  /// HTTP as `HOST:PORT` (docs/http.md): the API, the event stream, `/metrics` and the board page;
  /// nil for none. Needs `token` when not a loopback address.
  public var http: String?
  /// The token a TCP connection sends first (`{"op":"auth","token":…}`). Required when
  /// `listen` is not a loopback address.
  public var token: String?
  /// `--access FILE` (docs/security.md, "Roles"): keys with roles, `ROLE KEY` a line, mode
  /// 0600 or stricter; read at start and again by ``CountdownServer/reloadAccess()``
  /// (SIGHUP). `token` is one more `admin` key beside them.
  public var accessPath: String?
  /// Host names besides its address and loopback names under which HTTP clients reach this
  /// server (`--public-host`): a request whose `Host` is none of them gets 421.
  public var publicHosts: [String] = []
  /// Origins (`https://app.example`) whose pages may call the HTTP API across origins, with
  /// CORS headers (`--cors-origin`). None by default.
  public var corsOrigins: [String] = []
  /// Whether a token may be sent over plain TCP to a non-loopback address
  /// (`--allow-plain-token`): only on a network trusted not to be read.
  public var allowPlainToken = false
  /// Bytes of replies one socket or TCP connection may have waiting, estimated before they are
  /// built; past it the connection is not read until they are written.
  public var replyBufferBytes = 1 << 20
  /// How long an HTTP client may take to send a whole request head, from its connection or
  /// the previous response (also how long an idle keep-alive connection stays open).
  public var headerTimeoutMilliseconds: Int64 = 10_000
  /// How long an HTTP client may take to send a request body, from its head.
  public var bodyTimeoutMilliseconds: Int64 = 30_000
  /// How long a socket or TCP client may take to finish a line it has begun, and a TCP client
  /// that needs the token to send it.
  public var lineTimeoutMilliseconds: Int64 = 30_000
  /// The certificate chain (PEM) served over TLS on HTTP and `listen` (`--tls-cert`); with
  /// `tlsKeyPath`. Nil for plain TCP.
  public var tlsCertificatePath: String?
  /// The certificate's private key (PEM, `--tls-key`).
  public var tlsKeyPath: String?
  /// The text style of `text` in events and activity objects.
  public var style: TimerStyle
  /// Whether the board page (`GET /`) shows pause, resume and end buttons when its address does
  /// not say (`?controls=0` or `1`): `none` for screens facing the public
  /// (`--board-controls`). The page's default, not an access rule: the API takes commands
  /// either way (a token keeps them to those who have it).
  public var boardControls = BoardControls.all
  /// The engine's limits (`maxActivities`, `maxActiveDurationMs`).
  public var engine: EngineOptions
  /// The loop's timer precision.
  public var precision: TimerPrecision
  /// Connections at once; past it a new one gets `limitReached` and is closed.
  public var maxConnections: Int
  /// Bytes of events that may wait for one subscriber (docs/protocol.md: 8 MiB).
  public var subscriberBufferBytes: Int
  /// How long a subscriber may stay over its bound before `slowConsumer` (docs/protocol.md: 10 s).
  public var slowConsumerMilliseconds: Int64
  /// The bytes all subscribers together may leave unread (waiting in the server or in their
  /// connections' buffers) before those holding the most are cut off with `slowConsumer`
  /// (`--output-budget-bytes`, docs/security.md: 64 MiB).
  public var outputBudgetBytes = 64 << 20
  /// How often the server gives the pages of freed memory back to the system, on a thread of
  /// its own (`--trim-memory-ms`, docs/protocol.md "Memory": every 30 s); 0 never does.
  public var trimMemoryMilliseconds: Int64 = 30_000
  /// The longest request line (docs/protocol.md: 65536 bytes); longer ones get `lineTooLong`.
  public var maxLineBytes: Int
  /// NIO threads for the sockets (default 1: the loop thread has the other core).
  public var networkThreads: Int
  /// The SQLite state file (docs/state-file.md), or `:memory:` (the default here) to keep
  /// nothing across restarts. `countdown serve` defaults to `countdown.db`.
  public var statePath: String
  /// How hard each commit presses to the disk (see ``StoreSync``).
  public var sync: StoreSync
  /// A PostgreSQL database that keeps the state instead of ``statePath``
  /// (`postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|require]`;
  /// docs/cluster.md): one server per database, unless ``cluster`` makes it a node.
  public var postgres: String?
  /// A node of a cluster on ``postgres`` (docs/cluster.md), nil for a single server.
  public var cluster: ClusterOptions?
  /// How long a commit (or a read, or connecting) may wait for ``postgres`` to answer, in
  /// ms: then the connection is dropped and the commit's commands are answered
  /// `storageFailed`, saying they may or may not have been carried out
  /// (`--commit-timeout-ms`; nil: a node's lease, 10 s for a single server).
  public var commitTimeoutMs: Int64?
  /// ``commitTimeoutMs`` as it applies.
  public var commitTimeout: Int64 { commitTimeoutMs ?? cluster?.leaseMs ?? 10_000 }

  /// Whether the state outlives the process (a state file or PostgreSQL).
  public var keepsState: Bool { postgres != nil || statePath != ":memory:" }

  /// Where the state is kept, for messages: the file's path or the database (its password
  /// hidden).
  public var statePlace: String {
    postgres.map { PostgresStore.Location.redacted($0) } ?? statePath
  }
  /// Live Activity pushes through APNs (docs/pushes.md), nil for none. Needs a state file:
  /// each push is written with the change that made it.
  public var apns: APNsOptions?
  /// Webhooks (docs/webhooks.md), nil for none. Needs a state file: each delivery is
  /// written with the change that made it.
  public var webhooks: WebhookOptions?
  /// What systemd gave the process (docs/systemd.md): listening sockets that replace the binds
  /// of `socketPath`, `listen` and `http`, and the notify socket for readiness and the
  /// watchdog. Empty by default; `countdown serve` reads it from its environment.
  public var serviceManager = ServiceManagerEnvironment()

  public init(
    socketPath: String = "countdown.sock", listen: String? = nil, http: String? = nil,
    token: String? = nil,
    style: TimerStyle = .timer, engine: EngineOptions = EngineOptions(),
    precision: TimerPrecision = .default, maxConnections: Int = 1024,
    subscriberBufferBytes: Int = 8 << 20, slowConsumerMilliseconds: Int64 = 10_000,
    maxLineBytes: Int = 65536, networkThreads: Int = 1, statePath: String = ":memory:",
    sync: StoreSync = .normal
  ) {
    self.statePath = statePath
    self.sync = sync
    self.socketPath = socketPath
    self.listen = listen
    self.http = http
    self.token = token
    self.style = style
    self.engine = engine
    self.precision = precision
    self.maxConnections = maxConnections
    self.subscriberBufferBytes = subscriberBufferBytes
    self.slowConsumerMilliseconds = slowConsumerMilliseconds
    self.maxLineBytes = maxLineBytes
    self.networkThreads = networkThreads
  }
}

/// The board page's buttons (``ServerOptions/boardControls``).
public enum BoardControls: String, Sendable, CaseIterable {
  /// Pause, resume and end on each tile.
  case all
  /// The same tiles without buttons.
  case none
}

/// Why a server could not start: a message a person can act on.
public struct ServerStartError: Error, CustomStringConvertible, Sendable {
  public var message: String
  public var description: String { message }
  init(_ message: String) { self.message = message }
}

/// The `--webhook*` settings (docs/webhooks.md).
public struct WebhookOptions: Sendable {
  /// The receivers' URLs (`http://` or `https://`), each given its own queue and connections.
  public var urls: [String]
  /// The key of `Countdown-Signature` (HMAC-SHA256), nil to send none.
  public var secret: [UInt8]?
  /// How long a delivery may wait for its answer before it is tried again.
  public var requestTimeoutMilliseconds: Int64 = 10_000
  /// Extra trusted CA certificates (PEM file) for `https://` receivers, beside the system's.
  public var caPath: String?

  public init(urls: [String], secret: [UInt8]? = nil) {
    self.urls = urls
    self.secret = secret
  }

  /// Why `url` cannot be a webhook's address (said after the URL), or nil when it can:
  /// `http://` or `https://`, a host, an optional port, no user and password, no fragment.
  public static func problem(with url: String) -> String? {
    if case .failure(let p) = WebhookURL.parse(url) { return p.message }
    return nil
  }
}

/// The `--apns-*` settings (docs/pushes.md, "Configuration"). Files are read when the server
/// starts; a missing piece, an unreadable key or one that is not P-256 stops it there.
public struct APNsOptions: Sendable {
  /// Apple's `.p8` key file: a PKCS#8 PEM P-256 private key.
  public var keyPath: String
  public var keyID: String
  public var teamID: String
  /// The app's bundle id (sent as `apns-topic: BUNDLE_ID.push-type.liveactivity`).
  public var bundleID: String
  /// `api.push.apple.com` (true) or `api.sandbox.push.apple.com`.
  public var production: Bool
  /// Another gateway, `https://HOST[:PORT]` (a staging or test stand-in), instead of Apple's.
  public var url: String?
  /// Extra trusted CA certificates (PEM file).
  public var caPath: String?
  /// How long a request may wait for its answer before the connection is given up.
  public var requestTimeoutMilliseconds: Int64 = 10_000
  /// `--apns-channels`: broadcast channels (docs/pushes.md, "Broadcast channels").
  public var channels = false
  /// `--apns-manage-url`: another channel management API, `https://HOST[:PORT]`.
  public var manageURL: String?
  /// `--apns-channels-reconcile`: at start, delete the app's channels no activity holds.
  public var reconcileChannels = false

  public init(
    keyPath: String, keyID: String, teamID: String, bundleID: String, production: Bool,
    url: String? = nil, caPath: String? = nil
  ) {
    self.keyPath = keyPath
    self.keyID = keyID
    self.teamID = teamID
    self.bundleID = bundleID
    self.production = production
    self.url = url
    self.caPath = caPath
  }
}

/// What makes `countdown serve --postgres` a cluster node (docs/cluster.md).
public struct ClusterOptions: Sendable, Equatable {
  /// `--node`: this node's name, unique among the live nodes.
  public var node: String
  /// `--advertise`: where the other nodes reach this one (HOST:PORT of its `--listen`).
  public var advertise: String?
  /// `--shards`: the cluster's shard count, fixed at the database's first use (default 64).
  public var shards: Int
  /// `--lease-ms`: how long a shard's lease lasts; renewed every fifth of it (default 5000).
  public var leaseMs: Int64
  /// `--cluster-token`: what the nodes authenticate to each other with over `--listen`; a
  /// command for another node's shard is forwarded to it only with one.
  public var token: String?
  /// Whether the node relays its events to the other nodes (it has a cluster token to reach
  /// them with), and so keeps each committed event beside its row until its hub has relayed it
  /// (docs/cluster.md): the journal writes them, the node settles them.
  var relaysEvents: Bool { token != nil }
  /// Debug builds, for the tests: once the hub has an event of an activity whose id begins
  /// with this committed, it delivers and relays nothing committed from then on, as a node
  /// killed between a commit and its relay (`COUNTDOWN_FAULT_STALL_AFTER_COMMIT_OF`).
  package var stallAfterCommitOf: String?

  public init(
    node: String, advertise: String? = nil, shards: Int = 64, leaseMs: Int64 = 5000,
    token: String? = nil
  ) {
    self.node = node
    self.advertise = advertise
    self.shards = shards
    self.leaseMs = leaseMs
    self.token = token
  }
}
