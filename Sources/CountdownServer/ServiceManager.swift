// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownLoop
import Logging
import NIOCore

/// What a service manager (systemd, or anything speaking its two small protocols) gave
/// `countdown serve` in its environment (docs/systemd.md): listening sockets to serve instead
/// of binding (socket activation: `LISTEN_PID`, `LISTEN_FDS`, `LISTEN_FDNAMES`) and a socket to
/// tell it about the service (`NOTIFY_SOCKET`: `READY=1`, `STATUS=`, `STOPPING=1`, and with
/// `WATCHDOG_USEC` the `WATCHDOG=1` pings).
public struct ServiceManagerEnvironment: Sendable, Equatable {
  /// The listening sockets handed over, by what they serve.
  public var sockets = InheritedSockets()
  /// The AF_UNIX datagram socket of sd_notify(3) (`@` first for the abstract namespace).
  public var notifySocket: String?
  /// How often the manager wants `WATCHDOG=1` at the latest, in microseconds; nil for no
  /// watchdog.
  public var watchdogMicroseconds: UInt64?

  public init() {}

  /// The variables' names, for the caller to unset once read (sd_listen_fds(3) does, so that a
  /// child process does not take the sockets for its own).
  public static let variables = [
    "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID",
  ]

  /// Reads the environment as systemd sets it: the sockets only when `LISTEN_PID` is this
  /// process, from descriptor 3 on; each is named by `LISTEN_FDNAMES` (`socket`, `listen` or
  /// `http`, systemd's `FileDescriptorName=`), or, under any other name (a unit's own name by
  /// default), a Unix socket serves the socket protocol and a TCP one HTTP.
  /// - Throws: ``ServerStartError`` naming what to change: a count that is not a number, a
  ///   descriptor that is not a listening stream socket, two for one use.
  public static func read(
    _ environment: [String: String], pid: Int32
  ) throws(ServerStartError) -> ServiceManagerEnvironment {
    try read(environment, pid: pid, kind: System.listeningSocketKind)
  }

  /// ``read(_:pid:)`` with what a descriptor is told by `kind` (tests pass their own).
  static func read(
    _ environment: [String: String], pid: Int32, kind: (Int32) -> InheritedSocketKind?
  ) throws(ServerStartError) -> ServiceManagerEnvironment {
    var out = ServiceManagerEnvironment()
    if let path = environment["NOTIFY_SOCKET"], !path.isEmpty { out.notifySocket = path }
    if let text = environment["WATCHDOG_USEC"], out.notifySocket != nil {
      guard let usec = UInt64(text), usec > 0 else {
        throw ServerStartError("WATCHDOG_USEC=\(text) is not a positive number of microseconds")
      }
      // WATCHDOG_PID names the process the pings are for; another's are not ours to send.
      if environment["WATCHDOG_PID"].map({ $0 == "\(pid)" }) ?? true {
        out.watchdogMicroseconds = usec
      }
    }
    guard let owner = environment["LISTEN_PID"], owner == "\(pid)",
      let countText = environment["LISTEN_FDS"]
    else { return out }
    guard let count = Int(countText), count >= 0, count <= 64 else {
      throw ServerStartError("LISTEN_FDS=\(countText) is not a number of sockets (0 to 64)")
    }
    let names = environment["LISTEN_FDNAMES"].map {
      $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    }
    if let names, names.count != count {
      throw ServerStartError(
        "LISTEN_FDNAMES names \(names.count) sockets but LISTEN_FDS is \(count): give each socket one name"
      )
    }
    for i in 0..<count {
      let fd = Int32(3 + i)
      guard let what = kind(fd) else {
        throw ServerStartError(
          "descriptor \(fd) handed over (LISTEN_FDS) is not a listening stream socket: use ListenStream= in the .socket unit"
        )
      }
      let name = names?[i] ?? ""
      let use: InheritedSockets.Use
      switch name {
      case "socket": use = .socket
      case "listen": use = .listen
      case "http": use = .http
      default:
        if case .unix = what { use = .socket } else { use = .http }
      }
      switch (use, what) {
      case (.socket, .ip):
        throw ServerStartError(
          "descriptor \(fd) is named socket (the Unix socket protocol) but is a TCP socket")
      case (.listen, .unix), (.http, .unix):
        throw ServerStartError(
          "descriptor \(fd) is named \(use) (TCP) but is a Unix socket: name it socket")
      default: break
      }
      guard out.sockets[use] == nil else {
        throw ServerStartError(
          "two sockets handed over for \(use) (descriptors \(out.sockets[use]!.fd) and \(fd)): name each with FileDescriptorName=socket, listen or http"
        )
      }
      out.sockets[use] = InheritedSocket(fd: fd, kind: what)
    }
    return out
  }
}

/// A listening socket's family and, for TCP, its address.
public enum InheritedSocketKind: Sendable, Equatable {
  case unix
  case ip(host: String, port: Int)
}

/// One socket handed over by the service manager.
public struct InheritedSocket: Sendable, Equatable {
  public var fd: Int32
  public var kind: InheritedSocketKind

  public init(fd: Int32, kind: InheritedSocketKind) {
    self.fd = fd
    self.kind = kind
  }

  /// `HOST:PORT` of a TCP socket (`[::1]:8080` for IPv6), as `--listen` and `--http` take it.
  var hostPort: String? {
    guard case .ip(let host, let port) = kind else { return nil }
    return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
  }
}

/// The listening sockets handed over: each replaces the bind of its flag (`--socket`,
/// `--listen`, `--http`).
public struct InheritedSockets: Sendable, Equatable {
  /// The Unix socket of the protocol; the service manager owns its file (it is not removed at
  /// stop).
  public var socket: InheritedSocket?
  /// TCP for the socket protocol (`--listen`).
  public var listen: InheritedSocket?
  /// HTTP (`--http`).
  public var http: InheritedSocket?

  public init() {}

  enum Use: CustomStringConvertible {
    case socket, listen, http
    var description: String {
      switch self {
      case .socket: "socket"
      case .listen: "listen"
      case .http: "http"
      }
    }
  }

  subscript(use: Use) -> InheritedSocket? {
    get {
      switch use {
      case .socket: socket
      case .listen: listen
      case .http: http
      }
    }
    set {
      switch use {
      case .socket: socket = newValue
      case .listen: listen = newValue
      case .http: http = newValue
      }
    }
  }
}

/// When to ping the watchdog: only while the loop thread answers. Each beat (every half of
/// `WATCHDOG_USEC`) pings and asks the loop for its activity count; while the last question is
/// unanswered (a wedged loop) it withholds the ping, so the manager restarts the service.
/// Pure and clock-free; ``ServiceNotifier`` runs it on a network thread.
struct WatchdogState: Equatable {
  /// A probe asked of the loop and not answered yet.
  private(set) var probeOutstanding = false
  /// The activity count of the last answer (for `STATUS=`).
  private(set) var activities = 0
  /// Whether the last beat withheld its ping (logged once per stall).
  private(set) var withholding = false

  enum Action: Equatable {
    /// Send `WATCHDOG=1` and `STATUS=` with this count, and ask the loop again.
    case ping(activities: Int)
    /// The loop has not answered since the last beat: no ping (the first withheld beat is
    /// `firstWithheld`, to log once).
    case withhold(firstWithheld: Bool)
  }

  mutating func beat() -> Action {
    if probeOutstanding {
      defer { withholding = true }
      return .withhold(firstWithheld: !withholding)
    }
    probeOutstanding = true
    withholding = false
    return .ping(activities: activities)
  }

  /// The loop answered the last probe with its count.
  mutating func answered(activities count: Int) {
    probeOutstanding = false
    activities = count
  }
}

/// Tells the service manager about the server over `NOTIFY_SOCKET` (sd_notify(3)'s datagrams):
/// `READY=1` with `STATUS=` once the state is restored and every listener is open; then, each
/// beat, `STATUS=` and (with a watchdog) `WATCHDOG=1` while the loop thread answers;
/// `STOPPING=1` when the server begins to stop.
final class ServiceNotifier: Sendable {
  let path: String
  let beat: TimeAmount
  let watchdog: Bool
  private let logger: Logger
  private let state = Locked(WatchdogState())
  private let task = Locked<RepeatedTask?>(nil)
  /// Why the push sender holds (docs/pushes.md, "Configuration faults hold"), nil while it
  /// does not: said in each `STATUS=` after the count.
  private let pushesHeld = Locked<String?>(nil)

  /// Beats every half of the watchdog's interval, or every 10 s without one (status only).
  init(path: String, watchdogMicroseconds: UInt64?, logger: Logger) {
    self.path = path
    self.logger = logger
    if let usec = watchdogMicroseconds {
      watchdog = true
      beat = .microseconds(Int64(clamping: max(usec / 2, 1)))
    } else {
      watchdog = false
      beat = .seconds(10)
    }
  }

  func send(_ text: String) {
    if let problem = System.sendDatagram(Array(text.utf8), to: path) {
      logger.warning("cannot notify the service manager at \(path): \(problem)")
    }
  }

  static func status(_ activities: Int, pushesHeld: String? = nil) -> String {
    "STATUS=Serving \(activities) \(activities == 1 ? "activity" : "activities")"
      + (pushesHeld.map { "; pushes held: \($0)" } ?? "")
  }

  /// The `STATUS=` line of `activities` as things stand.
  private func status(_ activities: Int) -> String {
    Self.status(activities, pushesHeld: pushesHeld.withLock { $0 })
  }

  /// The push sender holds for `why` (nil: it sends again): said at once in `STATUS=`, with
  /// the last activity count, and in each beat's until it changes.
  func pushes(heldFor why: String?) {
    pushesHeld.withLock { $0 = why }
    send(status(state.withLock { $0.activities }))
  }

  /// Sends `READY=1` and begins the beats on `eventLoop`, asking `loop` for its count.
  func ready(activities: Int, loop: CountdownLoop, on eventLoop: any EventLoop) {
    state.withLock { $0.answered(activities: activities) }
    send("READY=1\nMAINPID=\(System.processID)\n\(status(activities))")
    let repeated = eventLoop.scheduleRepeatedTask(initialDelay: beat, delay: beat) {
      [self] _ in
      switch state.withLock({ $0.beat() }) {
      case .ping(let count):
        send(watchdog ? "WATCHDOG=1\n\(status(count))" : status(count))
        loop.submit({ engine in engine.count }) { [self] result in
          if case .success(let n) = result {
            state.withLock { $0.answered(activities: n) }
          }
        }
      case .withhold(let first):
        if first {
          logger.error(
            "the timer loop has not answered for \(beat.nanoseconds / 1_000_000) ms: watchdog pings stopped until it does"
          )
        }
      }
    }
    task.withLock { $0 = repeated }
  }

  /// Sends `STOPPING=1` and ends the beats.
  func stopping() {
    task.withLock {
      $0?.cancel()
      $0 = nil
    }
    send("STOPPING=1")
  }
}
