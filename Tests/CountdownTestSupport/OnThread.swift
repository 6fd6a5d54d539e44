// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation

/// Runs a blocking test body on a thread of its own, so that it never holds one of the few
/// threads of Swift's cooperative pool (two on these machines): the real-loop and real-socket
/// tests need them meanwhile. A run in which synchronous tests held both threads for 30 s left
/// those tests' tasks waiting past their own time limits (a TLS client's token, a line
/// timeout).
///
/// - Parameter computing: the body is long computation rather than waits (a randomized
///   comparison, a state file written thousands of times). Such bodies run one at a time, so
///   that a dozen of them started together do not crowd the cooperative threads off the cores
///   instead.
package func onThread(computing: Bool = false, _ body: @escaping @Sendable () throws -> Void)
  async throws
{
  final class Box: @unchecked Sendable {  // written by the thread, read after it resumed us
    var error: (any Error)?
  }
  let box = Box()
  await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
    let thread = Thread {
      if computing { computingGate.wait() }
      do { try body() } catch { box.error = error }
      if computing { computingGate.signal() }
      c.resume()
    }
    thread.stackSize = 8 << 20
    thread.start()
  }
  if let error = box.error { throw error }
}

/// Lets one computing body (``onThread(computing:_:)``) run at a time.
private let computingGate = DispatchSemaphore(value: 1)
