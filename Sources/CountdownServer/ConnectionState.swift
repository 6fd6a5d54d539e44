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
  /// Whether the first request must be `auth` with the server's token (a TCP connection to a
  /// server with `--token`).
  private(set) var needsAuth: Bool
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
  }

  /// A request decoded; `clusterToken` when it is `auth` with the cluster's token,
  /// `serverToken` when with the server's. The cluster token makes the connection another
  /// node's (and lets it in); until the server's token comes, any other request is refused.
  mutating func admit(clusterToken: Bool, serverToken: Bool) -> Admission {
    if clusterToken {
      fromPeer = true
      needsAuth = false
    }
    guard needsAuth else { return .run }
    if serverToken {
      needsAuth = false
      return .run
    }
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
