import Countdown
import Foundation

/// The store's own thread: it takes the loop's wakes in order, writes the changes of every
/// wake waiting into one transaction (group commit: one commit, and with `full` one sync,
/// serves them all), and only then releases each wake's replies and events.
///
/// After a failed write (disk full, I/O error) the wakes that were waiting, and every later
/// one that ran on the same uncommitted state, are released as failed; the writer reads the last
/// committed state back and hands it to `reload`, which rebuilds the engine from it. Wakes of
/// the rebuilt engine carry the new epoch and are written again as usual.
package final class StoreWriter: @unchecked Sendable {
  // @unchecked Sendable: `queue`, `closing`, `acceptedEpoch` and `needsReload` are guarded by
  // `condition`; `store`, `reload` and `onError` are used by the writer thread only (and by
  // `close` after it ended).

  /// One wake's share of the work.
  package struct Unit: Sendable {
    /// What to write, or nil when the wake changed nothing (its replies still go out in order).
    package var changes: StoreChanges?
    /// The engine's epoch when the wake ran (see ``StoreWriter``).
    package var epoch: UInt64
    /// Runs on the writer thread after the commit (nil) or with why it failed.
    package var release: @Sendable (_ failure: StoreError?) -> Void

    package init(
      changes: StoreChanges?, epoch: UInt64,
      release: @escaping @Sendable (_ failure: StoreError?) -> Void
    ) {
      self.changes = changes
      self.epoch = epoch
      self.release = release
    }
  }

  private let store: StateStore
  private let condition = NSCondition()
  private var queue: [Unit] = []
  private var closing = false
  private var busy = false
  private var finished = false
  /// Units of an older epoch are built on state that was never committed: they fail.
  private var acceptedEpoch: UInt64 = 0
  private var needsReload = false
  /// The failure that made the current epoch, for the wakes of older ones.
  private var lastFailure = StoreError("an earlier write failed")
  /// Used by the writer thread; let go by `close` once that thread has ended (they capture
  /// the loop, whose wake handler captures this writer: a cycle until then).
  private var reload: (@Sendable (EngineSnapshot?, _ epoch: UInt64) -> Void)?
  private var onError: (@Sendable (StoreError) -> Void)?

  /// Starts the writer thread on `store`. `reload` gets the last committed state after a
  /// failed write (nil when nothing was ever committed), with the epoch the rebuilt engine's wakes must carry; `onError` hears of
  /// each failure (to log it).
  package init(
    store: StateStore, reload: @escaping @Sendable (EngineSnapshot?, UInt64) -> Void,
    onError: @escaping @Sendable (StoreError) -> Void
  ) {
    self.store = store
    self.reload = reload
    self.onError = onError
    let thread = Thread { [self] in run() }
    thread.name = "countdown.store"
    thread.start()
  }

  /// Queues one wake; from the loop thread, which never waits here but for a short lock.
  package func enqueue(_ unit: Unit) {
    condition.lock()
    queue.append(unit)
    condition.signal()
    condition.unlock()
  }

  /// Blocks until everything queued so far is written and released.
  package func flush() {
    condition.lock()
    while !queue.isEmpty || busy { condition.wait() }
    condition.unlock()
  }

  /// Writes and releases what is queued, stops the thread and closes the file.
  package func close() {
    condition.lock()
    closing = true
    condition.broadcast()
    while !finished { condition.wait() }
    reload = nil
    onError = nil
    condition.unlock()
    store.close()
  }

  private func run() {
    while true {
      condition.lock()
      while queue.isEmpty && !closing {
        if needsReload {
          // Retry reading the committed state every second until it works.
          _ = condition.wait(until: Date().addingTimeInterval(1))
          break
        }
        condition.wait()
      }
      if queue.isEmpty && closing {
        finished = true
        condition.broadcast()
        condition.unlock()
        return
      }
      let units = queue
      queue = []
      busy = true
      let accepted = acceptedEpoch
      let reloading = needsReload
      var failure: StoreError? = lastFailure
      condition.unlock()

      if reloading { tryReload() }
      let current = units.filter { $0.epoch >= accepted }
      let changes = current.compactMap(\.changes)
      var ok = true
      if !changes.isEmpty {
        do throws(StoreError) {
          try store.write(changes)
        } catch {
          ok = false
          failure = error
          onError?(error)
          condition.lock()
          acceptedEpoch = max(acceptedEpoch, units.map(\.epoch).max() ?? 0) + 1
          needsReload = true
          lastFailure = error
          condition.unlock()
        }
      }
      for u in units {
        // A wake fails when its write failed, or when it ran on state that was never written
        // (an older epoch): even its queries saw changes that did not happen.
        u.release(ok && u.epoch >= accepted ? nil : failure)
      }
      if !ok { tryReload() }

      condition.lock()
      busy = false
      condition.broadcast()
      condition.unlock()
    }
  }

  /// Reads the last committed state and hands it to `reload` with the epoch now accepted.
  private func tryReload() {
    condition.lock()
    let epoch = acceptedEpoch
    let wanted = needsReload
    condition.unlock()
    guard wanted else { return }
    do throws(StoreError) {
      let snapshot = try store.load()
      condition.lock()
      needsReload = false
      condition.unlock()
      reload?(snapshot, epoch)
    } catch {
      onError?(error)
    }
  }
}
