// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#if canImport(Glibc)
  import Glibc
#endif

/// Process-wide CPU time (user + system) in nanoseconds.
func cpuNanoseconds() -> Int64 {
  var u = rusage()
  getrusage(Int32(RUSAGE_SELF.rawValue), &u)
  let user = Int64(u.ru_utime.tv_sec) * 1_000_000_000 + Int64(u.ru_utime.tv_usec) * 1_000
  let sys = Int64(u.ru_stime.tv_sec) * 1_000_000_000 + Int64(u.ru_stime.tv_usec) * 1_000
  return user + sys
}

/// Resident set size now, in bytes (from /proc/self/status, or another process's status).
func residentBytes(of pid: Int32? = nil) -> Int64 {
  let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
  guard let f = fopen(path, "r") else { return 0 }
  defer { fclose(f) }
  var line = [CChar](repeating: 0, count: 256)
  while fgets(&line, Int32(line.count), f) != nil {
    let bytes = line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    let s = String(decoding: bytes, as: UTF8.self)
    if s.hasPrefix("VmRSS:") {
      let digits = s.filter(\.isNumber)
      return (Int64(digits) ?? 0) * 1024
    }
  }
  return 0
}

/// Wall-clock nanoseconds since 1970.
func wallNanoseconds() -> Int64 {
  var ts = timespec()
  clock_gettime(CLOCK_REALTIME, &ts)
  return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Monotonic nanoseconds.
func monotonicNanoseconds() -> Int64 {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
