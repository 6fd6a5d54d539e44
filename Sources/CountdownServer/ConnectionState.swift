// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// A connection's decisions apart from its I/O (docs/protocol.md, "Backpressure" and
/// "Authentication"): whether a request's reply fits the reply budget now, whether the
/// connection is let in by its first request, when reading goes on, when the line timer runs,
/// and when a refused connection closes. A pure state machine: ``ConnectionHandler`` tells it
/// what happened (a line parsed, a batch sent, replies written, a read asked for) and does what
/// it answers; nothing here touches a channel or a clock.
///
/// Memory stays bounded whatever a client pipelines: while the replies not yet on the socket
/// (``owed``) and those of the batch being parsed (``batchCost``) would go over the budget, no
/// line is taken and nothing more is read; something is always let through when nothing is
/// owed, so that a reply larger than the budget still goes.
struct ConnectionState {
  /// Bytes of replies that may wait to be written before reading stops.
  let replyBudget: Int
  /// Whether the first request must be `auth` with a key (a TCP connection to a server with
  /// `--token` or `--access`).
  private(set) var needsAuth: Bool
  /// What the connection may do (docs/security.md, "Roles"): its key's role once `auth` gave
  /// one; `admin` for a connection that needs no key (the Unix socket, loopback without
  /// keys) and for another node.
  private(set) var role: AccessRole?
  /// Whether the transport needs a key at all (TCP with keys), as it was made.
  let requiresKey: Bool
  /// Whether the connection authenticated with the cluster token: another node, whose
  /// requests were forwarded once already and are never forwarded again.
  private(set) var fromPeer = false
  /// Set by a refusal (`unauthorized`): nothing more is read, and the connection closes once
  /// its replies are out.
  private(set) var closing = false
  /// Estimated bytes of replies asked for and not yet written to the socket.
  private(set) var owed = 0
  /// The estimated size of the replies of the batch being parsed.
  private(set) var batchCost = 0
  /// Batches sent to the loop whose replies are not written yet.
  private(set) var inFlight = 0
  /// A read NIO asked for and the connection held back (not writable, or lines waiting).
  private(set) var readPending = false

  init(replyBudget: Int, needsAuth: Bool) {
    self.replyBudget = replyBudget
    self.needsAuth = needsAuth
    self.requiresKey = needsAuth
    self.role = needsAuth ? nil : .admin
  }

  // MARK: - The reply budget

  /// Whether a reply estimated at `cost` fits the budget now; counted in when it does.
  mutating func affords(_ cost: Int) -> Bool {
    if owed + batchCost > 0, owed + batchCost + cost > replyBudget { return false }
    batchCost += cost
    return true
  }

  /// A reply that is given whatever the budget (the error of a line over the limit: its
  /// bytes are already read).
  mutating func charge(_ cost: Int) {
    batchCost += cost
  }

  /// The batch parsed so far goes to the loop: its replies are owed from now on. Returns
  /// what they were estimated at, to hand back to ``written(_:paused:active:)``.
  mutating func submitted() -> Int {
    let cost = batchCost
    batchCost = 0
    owed += cost
    inFlight += 1
    return cost
  }

  /// What to do after a batch's replies were handed to the socket.
  enum AfterReplies: Equatable {
    /// Close once these replies are written (a refused connection's last batch).
    case closeWhenWritten
    case keepOpen
  }

  /// A batch's replies are being written.
  mutating func replying() -> AfterReplies {
    inFlight -= 1
    return closing && inFlight == 0 ? .closeWhenWritten : .keepOpen
  }

  /// What to do once replies estimated at `cost` are on the socket.
  enum AfterWritten: Equatable {
    /// Parse the lines that waited for room in the budget.
    case parseBacklog
    case nothing
  }

  /// Replies estimated at `cost` are on the socket; `paused` when lines wait unparsed,
  /// `active` while the connection is open.
  mutating func written(_ cost: Int, paused: Bool, active: Bool) -> AfterWritten {
    owed -= cost
    return paused && !closing && active ? .parseBacklog : .nothing
  }

  // MARK: - Authentication

  /// What a request line does to the connection's admission.
  enum Admission: Equatable {
    /// Run it.
    case run
    /// Refuse it with `unauthorized`; the connection closes once its replies are out.
    case refuse
    /// Refuse it with `forbidden`: the connection's role is below the one it `needs`; the
    /// connection stays.
    case forbid(needs: AccessRole)
    /// Refuse an `auth` whose key the server does not have, on a connection that needs none
    /// (the Unix socket): it stays, with the role it had.
    case rejectKey
  }

  /// A request decoded, which `needs` a role. `auth` is nil for any other request; for an
  /// `auth`, its key's role (`.some(nil)` for a key the server does not have);
  /// `clusterToken` when its key is the cluster's, which makes the connection another node's.
  /// On a connection that needs a key, any request before one is refused, and so is an `auth`
  /// with an unknown key: the connection closes. A known key gives the connection its role;
  /// a request the role does not cover is forbidden, and the connection stays.
  mutating func admit(clusterToken: Bool, auth: AccessRole??, needs: AccessRole) -> Admission {
    if clusterToken {
      fromPeer = true
      needsAuth = false
      keyed = false
      role = .admin
      return .run
    }
    if let auth {
      guard let given = auth else { return requiresKey || keyed ? refuse() : .rejectKey }
      needsAuth = false
      keyed = true
      role = given
      return .run
    }
    guard !needsAuth, let role else { return refuse() }
    return role >= needs ? .run : .forbid(needs: needs)
  }

  /// The keys were read again (SIGHUP), and the connection's key now has `role` (nil: it is
  /// gone). From the next request on it has that role; a key gone refuses it, and the
  /// connection closes. A connection that gave no key is as it was.
  mutating func rekeyed(_ role: AccessRole?) {
    guard keyed else { return }
    self.role = role
    if role == nil { needsAuth = true }
  }

  /// Whether the connection's role came from a key it gave (``rekeyed(_:)`` applies).
  private(set) var keyed = false

  private mutating func refuse() -> Admission {
    closing = true
    return .refuse
  }

  // MARK: - Reading

  /// NIO asks to read: true to read now; false to hold it until the socket can take more
  /// and no line waits (``resumesReading(writable:paused:)``).
  mutating func read(writable: Bool, paused: Bool) -> Bool {
    if writable && !paused { return true }
    readPending = true
    return false
  }

  /// After the socket became writable or the waiting lines were parsed: true to do the read
  /// that was held back.
  mutating func resumesReading(writable: Bool, paused: Bool) -> Bool {
    guard readPending, writable, !paused else { return false }
    readPending = false
    return true
  }

  /// Whether the line timer should run: the client owes its token, or the rest of a line it
  /// began (`partial`, or one over the limit being skipped), and no line waits for room.
  func awaitsLine(paused: Bool, partial: Bool, skipping: Bool) -> Bool {
    needsAuth || (!paused && (partial || skipping))
  }
}
