// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation

/// The text of the file at `path` (empty if it cannot be read), read with POSIX calls until
/// the end (a file of /proc says it is empty and is not): Foundation's
/// `String(contentsOfFile:)` leaks its buffer (LeakSanitizer, `make asan`).
package func readTextFile(_ path: String) -> String {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return "" }
  defer { close(fd) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 4096)
  while true {
    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if n < 0 && errno == EINTR { continue }
    guard n > 0 else { break }
    bytes += chunk[0..<n]
  }
  return String(decoding: bytes, as: UTF8.self)
}

/// The fields of a `/proc/PID/stat` or `/proc/PID/task/TID/stat` after the command's closing
/// parenthesis (a command may hold spaces and parentheses): `[0]` is the state (`R`, `S`,
/// `T`…), `[11]` and `[12]` the user and system clock ticks (proc(5)'s fields 3, 14 and 15).
/// Empty when the file cannot be read.
package func procStatFields(_ path: String) -> [Substring] {
  let stat = readTextFile(path)
  guard let close = stat.lastIndex(of: ")") else { return [] }
  return stat[stat.index(after: close)...].split(separator: " ")
}
