// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

// Over 600 lines: the routes, the event streams and the listeners' set-up of the HTTP side;
// the event streams are the part that moves to a file of its own next.

import Countdown
import CountdownLoop
import CountdownProtocol
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOHTTPTypes
import NIOPosix
import Synchronization

/// `--http HOST:PORT` (docs/http.md): HummingbirdCore's HTTP/1.1 channel on the server's own NIO
/// event loops, in front of the same engine, hub and state file as the socket protocol.
///
/// Each request is decoded here into the §6 request it stands for and run on the loop like a
/// one-request batch; its answer, and the events it causes, wait for the commit as a socket
/// reply does. `GET /v1/events` is a hub subscriber like a socket's `subscribe`, framed as
/// server-sent events, with the same bound, coalescing and cut-off.
///
/// The listener is bound here (or handed over by systemd's socket activation, which
/// Hummingbird's `Application` cannot take), and its connections served as `Application` serves
/// them: the routes answer, an error they throw is a 500, every answer carries `Date`.
final class HTTPFrontEnd: Sendable {
  private let task: Task<Void, Never>
  private let finished: Locked<Bool>
  /// Released by `stop()`, while the event loops run: its deinit completes a promise on one.
  private let quiescing: Locked<ServerQuiescingHelper?>
  private let serverChannel: Locked<(any Channel)?>
  /// The address bound (its real port when the port asked for was 0).
  let address: SocketAddress?

  /// Binds `host:port`, or takes the listening descriptor `handed`, and starts serving; throws
  /// when the address cannot be bound.
  init(
    core: ServerCore, host: String, port: Int, handed: Int32? = nil, identity: TLSIdentity?,
    logger: Logger
  ) throws(ServerStartError) {
    let routes = HTTPRoutes(
      core: core,
      guardrail: WebGuard(
        listenHost: host, publicHosts: core.options.publicHosts,
        corsOrigins: core.options.corsOrigins, tls: identity != nil))
    let http1 = HTTP1Channel(
      responder: { request, writer, channel in
        let context = HTTPContext(
          source: ApplicationRequestContextSource(channel: channel, logger: logger))
        var response: Response
        do {
          response = try await routes.respond(to: request, context: context)
        } catch let error as HTTPParserError {
          throw error
        } catch {
          logger.debug("unexpected error answering \(request.uri.path): \(error)")
          response = Response(status: .internalServerError)
        }
        response.headers[.date] = System.httpDate()
        try await writer.write(response: response.head, body: response.body)
      },
      configuration: HTTP1Channel.Configuration(
        additionalChannelHandlers: [HTTPConnectionGuard(core: core)]))
    let quiescing = ServerQuiescingHelper(group: core.group)
    let bootstrap = ServerBootstrap(group: core.group)
      .serverChannelOption(.backlog, value: 256)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelOption(.allowRemoteHalfClosure, value: true)
      .serverChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandler(
            quiescing.makeServerChannelHandler(channel: channel))
        }
      }
    let ready = Locked(false)
    let failure = Locked<(any Error)?>(nil)
    let serverChannel = Locked<(any Channel)?>(nil)
    let finished = Locked(false)
    let tls = identity.map { ReloadingTLSChannel(base: http1, identity: $0) }
    task = Task.detached {
      do {
        @Sendable func setup(_ channel: any Channel) -> EventLoopFuture<HTTP1Channel.Value> {
          tls?.setup(channel: channel, logger: logger)
            ?? http1.setup(channel: channel, logger: logger)
        }
        let server: NIOAsyncChannel<HTTP1Channel.Value, Never>
        if let handed {
          server = try await bootstrap.bind(handed) { setup($0) }
        } else {
          server = try await bootstrap.bind(host: host, port: port) { setup($0) }
        }
        serverChannel.withLock { $0 = server.channel }
        ready.withLockWaking { $0 = true }
        await withDiscardingTaskGroup { group in
          do {
            try await server.executeThenClose { inbound in
              for try await connection in inbound {
                group.addTask { await http1.handle(value: connection, logger: logger) }
              }
            }
          } catch {
            logger.error("HTTP stopped accepting: \(error)")
          }
        }
      } catch {
        failure.withLock { $0 = error }
        ready.withLockWaking { $0 = true }
      }
      finished.withLockWaking { $0 = true }
    }
    self.quiescing = Locked(quiescing)
    self.serverChannel = serverChannel
    self.finished = finished
    // A bind that fails answers at once; only a server whose task has not run yet waits here.
    // That task needs a thread of Swift's cooperative pool (two on two cores), which other
    // work in the process can hold for long (a test run's synchronous suites held both for
    // over 30 s): wait up to two minutes rather than fail a server that would start.
    ready.wait(until: { $0 }, deadline: Lock.deadline(after: 120))
    address = serverChannel.withLock { $0?.localAddress }
    if address == nil {
      let error = failure.withLock { $0 }
      stop()
      throw ServerStartError(
        "cannot listen for HTTP on \(host):\(port): \(error.map { "\($0)" } ?? "it did not start within 120 s")"
      )
    }
  }

  /// Stops accepting, lets the requests in progress finish (event streams are ended first by
  /// the hub) and idle connections close, and waits for the server to be gone (at most 5 s,
  /// then it is cancelled).
  func stop() {
    let quiescing = self.quiescing.withLock { q in
      defer { q = nil }
      return q
    }
    if let quiescing, let channel = serverChannel.withLock({ $0 }) {
      // Done once the listener is closed and every connection with it.
      let promise = channel.eventLoop.makePromise(of: Void.self)
      let quiet = Locked(false)
      promise.futureResult.whenComplete { _ in quiet.withLockWaking { $0 = true } }
      quiescing.initiateShutdown(promise: promise)
      quiet.wait(until: { $0 }, deadline: Lock.deadline(after: 5))
    }
    if !finished.wait(until: { $0 }, deadline: Lock.deadline(after: 5)) {
      task.cancel()
      finished.wait(until: { $0 }, deadline: Lock.deadline(after: 5))
    }
  }
}

/// A request's context: Hummingbird's, and the connection (an event stream that is cut off
/// closes it).
struct HTTPContext: RequestContext {
  var coreContext: CoreRequestContextStorage
  let channel: any Channel

  init(source: ApplicationRequestContextSource) {
    coreContext = .init(source: source)
    channel = source.channel
  }
}

/// The routes of docs/http.md.
struct HTTPRoutes: HTTPResponder {
  typealias Context = HTTPContext
  let core: ServerCore
  let guardrail: WebGuard

  /// docs/http.md: bodies over 64 KiB get 413.
  static let maxBodyBytes = 65536

  /// Web safety first (the Host, another origin's state change, CORS), then the route; every
  /// answer says it may not be framed.
  func respond(to request: Request, context: Context) async throws -> Response {
    let origin = request.headers[.origin]
    var response: Response
    switch guardrail.check(
      method: request.method.rawValue, host: request.head.authority, origin: origin,
      fetchSite: request.headers[Self.secFetchSite])
    {
    case .misdirected(let message):
      response = failure(CountdownError(.misdirected, message))
    case .forbidden(let message):
      response = failure(CountdownError(.forbidden, message))
    case .pass:
      if request.method == .options, guardrail.allowsCORS(from: origin) {
        response = Response(
          status: .noContent,
          headers: [
            Self.allowMethods: "GET, POST, PATCH, OPTIONS",
            Self.allowHeaders: "Authorization, Content-Type", Self.maxAge: "600",
          ])
      } else {
        response = try await route(request, context: context)
      }
    }
    if guardrail.allowsCORS(from: origin), let origin {
      response.headers[.accessControlAllowOrigin] = origin
      response.headers[.vary] = "Origin"
    }
    response.headers[Self.frameOptions] = "DENY"
    response.headers[Self.contentTypeOptions] = "nosniff"
    response.headers[Self.referrerPolicy] = "no-referrer"
    if response.headers[.contentSecurityPolicy] == nil {
      response.headers[.contentSecurityPolicy] = "frame-ancestors 'none'"
    }
    return response
  }

  static let frameOptions = HTTPField.Name("X-Frame-Options")!
  static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
  static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
  static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
  static let allowMethods = HTTPField.Name("Access-Control-Allow-Methods")!
  static let allowHeaders = HTTPField.Name("Access-Control-Allow-Headers")!
  static let maxAge = HTTPField.Name("Access-Control-Max-Age")!

  /// The board page's policy: its own script and styles inline, requests to this server only,
  /// never framed.
  static let pagePolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

  private func route(_ request: Request, context: Context) async throws -> Response {
    let path = request.uri.path.split(separator: "/", omittingEmptySubsequences: true)
    let query = request.uri.queryParameters
    // The client's role (docs/security.md, "Roles"): its key's, or `admin` without keys.
    var role = AccessRole.admin
    // Its key's groups (docs/security.md, "Groups"): nil sees every activity.
    var keyGroups: Set<String>?
    if core.needsKeys {
      // The board with a key: `GET /?key=KEY` keeps it in a cookie and drops it from the
      // address (docs/security.md, "Roles"), so that a screen holds it.
      if path.isEmpty, request.method == .get, let key = query["key"] {
        guard core.role(ofKey: key.utf8) != nil else {
          return failure(
            CountdownError(.unauthorized, "?key= is not a key of this server (--token or --access)")
          )
        }
        return boardCookie(key: key, query: query)
      }
      guard let key = Self.key(of: request), let grant = core.grant(ofKey: key.utf8) else {
        return failure(
          CountdownError(
            .unauthorized,
            "this server needs a key: send the header \"Authorization: Bearer KEY\" (or ?token=KEY in the page's address) with --token or one of --access's keys"
          ))
      }
      role = grant.role
      keyGroups = grant.groups
      let needs = AccessRole.needed(method: request.method.rawValue, path: path)
      guard role >= needs else {
        return failure(
          CountdownError(
            .forbidden,
            "this key has the role \(role.name); \(request.method) \(request.uri.path) needs \(needs.name) (docs/security.md, \"Roles\")"
          ))
      }
    }
    let method = request.method
    switch path.count {
    case 0:
      guard method == .get || method == .head else { return notAllowed("GET", request) }
      return page(query, role: role)
    case 1 where path[0] == "metrics":
      guard method == .get else { return notAllowed("GET", request) }
      let text = await core.metrics.render(loop: core.loop, cluster: core.cluster)
      return Response(
        status: .ok,
        headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: text)))
    case 1 where path[0] == "openapi.json":
      guard method == .get else { return notAllowed("GET", request) }
      return json(.ok, Array(OpenAPIDocument.json.utf8))
    case 2 where path[0] == "v1" && path[1] == "time":
      guard method == .get else { return notAllowed("GET", request) }
      var w = JSONWriter()
      w.raw("{\"now\":")
      w.write(int: SystemWallClock.now().milliseconds)
      w.raw("}")
      return json(.ok, w.bytes)
    case 2 where path[0] == "v1" && path[1] == "cluster":
      guard method == .get else { return notAllowed("GET", request) }
      var w = ReplyWriter(formatter: core.formatter)
      w.cluster(core.cluster?.view ?? .single)
      return json(.ok, w.out.bytes)
    case 2 where path[0] == "v1" && path[1] == "events":
      guard method == .get else { return notAllowed("GET", request) }
      return await events(request, channel: context.channel, keyGroups: keyGroups)
    case 2 where path[0] == "v1" && path[1] == "activities":
      switch method {
      case .get:
        return await run(
          ServerRequest.decode(op: "list") { query[Substring($0)] }, keyGroups: keyGroups,
          created: false)
      case .post:
        return await command("start", id: nil, request, keyGroups: keyGroups, created: true)
      default: return notAllowed("GET, POST", request)
      }
    case 3 where path[0] == "v1" && path[1] == "activities":
      guard let id = Self.percentDecoded(path[2]) else { return badID(path[2]) }
      switch method {
      case .get: return await command("get", id: id, request, keyGroups: keyGroups, created: false)
      case .patch:
        return await command("update", id: id, request, keyGroups: keyGroups, created: false)
      default: return notAllowed("GET, PATCH", request)
      }
    case 4
    where path[0] == "v1" && path[1] == "activities"
      && ["pause", "resume", "end"].contains(path[3]):
      guard method == .post else { return notAllowed("POST", request) }
      guard let id = Self.percentDecoded(path[2]) else { return badID(path[2]) }
      return await command(
        String(path[3]), id: id, request, keyGroups: keyGroups, created: false)
    default:
      return failure(
        CountdownError(
          .notFound,
          "no route \(request.method) \(request.uri.path): see GET /v1/activities, /v1/events, /v1/time, /v1/cluster, /metrics, /openapi.json or the board at /"
        ))
    }
  }

  // MARK: - Commands

  private func command(
    _ op: String, id: String?, _ request: Request, keyGroups: Set<String>?, created: Bool
  ) async -> Response {
    let body: ByteBuffer
    do {
      body = try await request.body.collect(upTo: Self.maxBodyBytes)
    } catch {
      return failure(
        CountdownError(
          .attributesTooLarge,
          "the request body is over \(Self.maxBodyBytes) bytes (64 KiB), the limit; the content itself may have at most 4096"
        ), status: .contentTooLarge)
    }
    let decoded = body.withUnsafeReadableBytes { raw in
      ServerRequest.decode(
        op: op, id: id, body: raw.isEmpty ? nil : raw.bindMemory(to: UInt8.self))
    }
    // A cluster node sends a command of another node's shard there as it came (docs/cluster.md).
    let forward = core.cluster?.links == nil ? nil : (op, id, Array(body.readableBytesView))
    return await run(decoded, keyGroups: keyGroups, created: created, forward: forward)
  }

  /// Runs one request on the loop and returns its outcome once it is committed (a loop that
  /// is shutting down gives `shutdown`); counted for `/metrics`.
  /// `served`: a cluster node's shards held in full when a list or subscription ran.
  private func outcome(
    of request: Result<ServerRequest, CountdownError>, keyGroups: Set<String>?,
    forwarding: Bool = false
  ) async -> (at: Instant, outcome: Outcome, served: [Int]?) {
    switch await core.perform({ [core] engine in
      engine.runForHTTP(request, keyGroups: keyGroups, gate: core.gate, forwarding: forwarding)
    }) {
    case .success(let batch):
      core.metrics.answered(batch.items[0].outcome)
      return (batch.at, batch.items[0].outcome, batch.served)
    case .failure(let e):
      core.metrics.refused(e.code)
      return (SystemWallClock.now(), .failed(e), nil)
    }
  }

  /// Runs one request and answers with its outcome; with `forward` (a cluster node's command:
  /// its op, id and body as they came), a command of another node's shard is answered there.
  private func run(
    _ request: Result<ServerRequest, CountdownError>, keyGroups: Set<String>?, created: Bool,
    forward: (op: String, id: String?, body: [UInt8])? = nil
  ) async -> Response {
    let (at, outcome, served) = await outcome(
      of: request, keyGroups: keyGroups, forwarding: forward != nil)
    var w = ReplyWriter(formatter: core.formatter, shardOf: core.shardOf)
    w.onlyShards = served.map(Set.init)
    if core.cluster?.links == nil { w.announcedShards = served }
    switch outcome {
    case .failed(let e): return failure(e)
    case .forward(let node, let otherwise):
      guard let forward, let cluster = core.cluster else { return failure(otherwise) }
      let answer: Result<[UInt8], CountdownError>
      do {
        answer = try await cluster.forwardHTTP(
          op: forward.op, id: forward.id, body: forward.body, groups: keyGroups, to: node,
          otherwise: otherwise
        ).get()
      } catch {
        answer = .failure(otherwise)  // forwardHTTP gives its failures as values
      }
      switch answer {
      case .success(let activity): return json(created ? .created : .ok, activity)
      case .failure(let e): return failure(e)
      }
    case .activity(let s):
      w.activity(s)
      return json(created ? .created : .ok, w.out.bytes)
    case .activities(let list):
      w.listing(list.states(), at: at)
      guard let cluster = core.cluster, cluster.links != nil,
        case .success(.list(let query, let group)) = request
      else { return json(.ok, w.out.bytes) }
      // A list spans every node: the others' own activities, gathered (docs/cluster.md).
      var line = JSONWriter()
      line.raw("{\"op\":\"list\"")
      var soonest: Int?
      switch query {
      case .all: break
      case .soonest(let k):
        soonest = k
        line.raw(",\"soonest\":")
        line.write(int: Int64(k))
      case .endedWithin(let ms):
        line.raw(",\"endedWithinMs\":")
        line.write(int: ms)
      }
      if let group {
        line.raw(",\"group\":")
        line.write(string: group)
      }
      line.raw("}")
      // The other nodes hold it to the key's groups.
      let asked =
        keyGroups.map { PeerMessage.ScopedCommand(groups: $0, line: line.bytes).wrapped }
        ?? line.bytes
      let gathered: Result<[[UInt8]], CountdownError>
      do {
        gathered = try await cluster.gatherList(
          asked, served: served, on: core.group.next()
        ).get()
      } catch {
        gathered = .failure(
          CountdownError(.unavailable, "the list could not be gathered: \(error)"))
      }
      switch gathered {
      case .success(let peers):
        return json(.ok, GatheredList.merge(w.out.bytes, peers: peers, soonest: soonest))
      case .failure(let e): return failure(e)
      }
    default:
      w.out.raw("{\"at\":")
      w.out.write(int: at.milliseconds)
      w.out.raw("}")
      return json(.ok, w.out.bytes)
    }
  }

  // MARK: - Server-sent events

  private func events(_ request: Request, channel: any Channel, keyGroups: Set<String>?) async
    -> Response
  {
    let query = request.uri.queryParameters
    let ids: [String]?
    let ticks: Bool
    let group: String?
    switch ServerRequest.decode(op: "subscribe", query: { query[Substring($0)] }) {
    case .success(.subscribe(let wanted, let withTicks, let narrowed)):
      (ids, ticks, group) = (wanted, withTicks, narrowed)
    case .success: return failure(.payload("not a subscription"))
    case .failure(let e): return failure(e)
    }
    let sink = StreamSink(hub: core.hub, channel: channel)
    // A stream opened with a key ends when a new --access no longer has it.
    if core.needsKeys, let key = Self.key(of: request) {
      core.keyGiven(Array(key.utf8), on: channel)
      channel.closeFuture.whenComplete { [core] _ in core.keyGone(from: channel) }
    }
    let hub = core.hub
    let formatter = core.formatter
    // Registered on the hub before the request runs, so that every event after the snapshot
    // reaches the stream (the hub keeps them until the snapshot is written).
    let (wanted, withTicks) = (ids, ticks)
    let scope = GroupScope(keyGroups: keyGroups, narrowed: group)
    let registered = try? await hub.eventLoop.submit {
      hub.subscribePending(sink, ids: wanted, ticks: withTicks, scope: scope)
    }.get()
    guard registered == true else {
      return failure(
        CountdownError(
          .shutdown, "the server is stopping; connect again once it is back"))
    }
    let (at, outcome, served) = await outcome(
      of: .success(.subscribe(ids: ids, ticks: ticks, group: group)), keyGroups: keyGroups)
    guard case .subscribed(let snapshot, let from, _, _, _) = outcome else {
      hub.eventLoop.execute { hub.unsubscribe(sink.key) }
      if case .failed(let e) = outcome { return failure(e) }
      return failure(CountdownError(.systemError, "the subscription did not start"))
    }
    var w = ReplyWriter(formatter: formatter, shardOf: core.shardOf)
    w.onlyShards = served.map(Set.init)
    if core.cluster?.links == nil { w.announcedShards = served }
    w.listing(snapshot.states(), at: at)
    var listing = w.take()
    var cuts: [UInt64: UInt64] = [:]
    if let cluster = core.cluster, cluster.links != nil {
      // A subscription spans every node: the others' snapshots, and where each stands in
      // that node's events (docs/cluster.md, "Subscriptions across nodes").
      let gathered: Result<[ClusterNode.PeerSnapshot], CountdownError>
      do {
        gathered = try await cluster.gatherSnapshots(
          ids: ids, scope: scope, served: served, on: core.group.next()
        ).get()
      } catch {
        gathered = .failure(
          CountdownError(.unavailable, "the subscription could not be gathered: \(error)"))
      }
      switch gathered {
      case .success(let parts):
        (listing, cuts) = ClusterNode.PeerSnapshot.merge(listing, parts)
      case .failure(let e):
        hub.eventLoop.execute { hub.unsubscribe(sink.key) }
        return failure(e)
      }
    }
    // `retry`: the browser reconnects after 1 s when the server goes away.
    // The snapshot and, in the same buffer, the events that came while it was built; held
    // only until it is handed to the connection: the body's closure lives as long as the
    // stream, and five streams each keeping a 30 MB snapshot of 100k activities were most of
    // a server's memory (docs/protocol.md, "Memory").
    let first = Locked<ByteBuffer?>(
      EventFraming.sse(
        "snapshot", listing, prefix: "retry: 1000\n\n", room: 64 << 10, allocator: sink.allocator))
    listing = []
    let peerCuts = cuts
    // A comment every 15 s keeps proxies from closing a quiet stream and finds gone clients.
    let heartbeat = hub.eventLoop.scheduleRepeatedTask(
      initialDelay: .seconds(15), delay: .seconds(15)
    ) { _ in
      if sink.isWritable && !sink.isClosed { sink.write(ByteBuffer(string: ": keep-alive\n\n")) }
    }
    // However the stream ends, even before its body runs (a client gone before the head was
    // written): no heartbeat, no subscription left behind.
    channel.closeFuture.whenComplete { _ in
      heartbeat.cancel()
      hub.eventLoop.execute { hub.unsubscribe(sink.key) }
    }
    let body = ResponseBody { writer in
      // The response head is in the connection's queue by now (Hummingbird wrote it before
      // calling this), so what the hub writes to the connection from here on follows it.
      await sink.run {
        hub.eventLoop.execute {
          let snapshot = first.withLock { b in
            defer { b = nil }
            return b ?? ByteBuffer()
          }
          hub.activate(sink.key, first: snapshot, fromSequence: from, cuts: peerCuts)
        }
      }
      heartbeat.cancel()
      hub.eventLoop.execute { hub.unsubscribe(sink.key) }
      try await writer.finish(nil)
    }
    return Response(
      status: .ok,
      headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
      body: body)
  }

  // MARK: - Answers

  /// The board; `?controls=0` or `1` (also `none`, `all`) says whether it has buttons, else
  /// the server's `--board-controls`; a key whose role is `view` gets none either way.
  private func page(_ query: FlatDictionary<Substring, Substring>, role: AccessRole) -> Response {
    var controls = core.options.boardControls
    if let value = query["controls"] {
      switch value {
      case "1", "all": controls = .all
      case "0", "none": controls = .none
      default:
        return failure(
          CountdownError(
            .invalidPayload,
            "controls must be 0 (no buttons) or 1 (pause, resume and end), not \(value)"
          ))
      }
    }
    return Response(
      status: .ok,
      headers: [
        .contentType: "text/html; charset=utf-8", .cacheControl: "no-cache",
        .contentSecurityPolicy: Self.pagePolicy,
      ],
      body: ResponseBody(
        byteBuffer: ByteBuffer(
          bytes: BoardPage.html(
            style: core.options.style, controls: controls == .all && role >= .control))))
  }

  private func json(_ status: HTTPResponse.Status, _ bytes: [UInt8]) -> Response {
    Response(
      status: status, headers: [.contentType: "application/json"],
      body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
  }

  /// An error's body: `{"code":…,"message":…}`.
  static func errorBody(_ e: CountdownError) -> [UInt8] {
    var w = JSONWriter()
    w.raw("{")
    w.write(errorMembers: e)
    w.raw("}")
    return w.bytes
  }

  private func failure(_ e: CountdownError, status: HTTPResponse.Status? = nil) -> Response {
    var headers: HTTPFields = [.contentType: "application/json"]
    if e.code == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
    return Response(
      status: status ?? Self.status(of: e.code), headers: headers,
      body: ResponseBody(byteBuffer: ByteBuffer(bytes: Self.errorBody(e))))
  }

  private func notAllowed(_ allowed: String, _ request: Request) -> Response {
    var r = failure(
      .payload("\(request.uri.path) takes \(allowed), not \(request.method)"),
      status: .methodNotAllowed)
    r.headers[.allow] = allowed
    return r
  }

  private func badID(_ raw: Substring) -> Response {
    failure(
      .payload(
        "the id in the path is not valid percent-encoded UTF-8: \(JSONValue.string(String(raw)))"))
  }

  /// The HTTP status of each error code (docs/http.md).
  static func status(of code: CountdownError.Code) -> HTTPResponse.Status {
    switch code {
    case .invalidPayload, .invalidDate, .outOfOrder, .timeWentBackwards, .lineTooLong:
      return .badRequest
    case .unauthorized: return .unauthorized
    case .forbidden: return .forbidden
    case .misdirected: return .misdirectedRequest
    case .notFound: return .notFound
    case .duplicateID, .activityEnded: return .conflict
    case .attributesTooLarge: return .contentTooLarge
    case .limitReached: return .tooManyRequests
    case .disabled, .storageFailed, .shutdown, .unavailable: return .serviceUnavailable
    default: return .internalServerError
    }
  }

  // MARK: - Helpers

  /// The key a request gives: its `Authorization: Bearer KEY`, else its `?token=KEY`, else
  /// the board's cookie (``boardCookie(key:query:)``).
  static func key(of request: Request) -> Substring? {
    if let header = request.headers[.authorization], header.hasPrefix("Bearer ") {
      return Substring(header.dropFirst(7))
    }
    if let token = request.uri.queryParameters["token"] { return token }
    for field in request.headers[values: .cookie] {
      for pair in field.split(separator: ";") {
        let part = pair.drop { $0 == " " }
        if part.hasPrefix(Self.cookieName + "="),
          let key = percentDecoded(part.dropFirst(Self.cookieName.count + 1))
        {
          return Substring(key)
        }
      }
    }
    return nil
  }

  /// The board's cookie: the key a screen was opened with.
  static let cookieName = "countdown_key"

  /// `GET /?key=KEY` answered: the key in an `HttpOnly`, `SameSite=Strict` cookie of this
  /// server (`Secure` over TLS), and a redirect to the same board without the key in its
  /// address (the other parameters kept).
  private func boardCookie(key: Substring, query: FlatDictionary<Substring, Substring>) -> Response
  {
    var encoded = ""
    for b in key.utf8 {
      let plain =
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b)
        || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
      encoded +=
        plain ? String(UnicodeScalar(b)) : "%" + String(b, radix: 16, uppercase: true).leftPadded
    }
    var cookie = "\(Self.cookieName)=\(encoded); Path=/; HttpOnly; SameSite=Strict"
    if guardrail.scheme == "https" { cookie += "; Secure" }
    let kept = query.filter { $0.key != "key" && $0.key != "token" }
      .map { "\($0.key)=\($0.value)" }
    let location = kept.isEmpty ? "/" : "/?" + kept.joined(separator: "&")
    return Response(
      status: .seeOther,
      headers: [.location: location, .setCookie: cookie, .cacheControl: "no-store"])
  }

  /// `%XX` escapes decoded; nil when an escape is broken or the result is not UTF-8.
  static func percentDecoded(_ s: Substring) -> String? {
    var bytes: [UInt8] = []
    var it = Array(s.utf8)[...]
    while let b = it.popFirst() {
      guard b == UInt8(ascii: "%") else {
        bytes.append(b)
        continue
      }
      guard it.count >= 2, let hi = hex(it.popFirst()!), let lo = hex(it.popFirst()!) else {
        return nil
      }
      bytes.append(hi << 4 | lo)
    }
    return String(validating: bytes, as: UTF8.self)
  }

  private static func hex(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
    default: return nil
    }
  }
}

extension String {
  /// A hex byte's two digits (`"0A"` for `"A"`).
  fileprivate var leftPadded: String { count == 1 ? "0" + self : self }
}
