// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CCountdownABI
import Countdown

#if canImport(Glibc)
  import Glibc
#endif

// The C ABI's statuses and its per-thread last error message.

extension cd_status {
  /// The status for a Countdown error code.
  init(_ code: CountdownError.Code) {
    switch code {
    case .invalidPayload: self = CD_ERR_INVALID_PAYLOAD
    case .invalidDate: self = CD_ERR_INVALID_DATE
    case .attributesTooLarge: self = CD_ERR_ATTRIBUTES_TOO_LARGE
    case .duplicateID: self = CD_ERR_DUPLICATE_ID
    case .notFound: self = CD_ERR_NOT_FOUND
    case .activityEnded: self = CD_ERR_ACTIVITY_ENDED
    case .outOfOrder: self = CD_ERR_OUT_OF_ORDER
    case .limitReached: self = CD_ERR_LIMIT_REACHED
    case .disabled: self = CD_ERR_DISABLED
    case .timeWentBackwards: self = CD_ERR_TIME_WENT_BACKWARDS
    case .lineTooLong: self = CD_ERR_LINE_TOO_LONG
    case .unauthorized: self = CD_ERR_UNAUTHORIZED
    case .slowConsumer: self = CD_ERR_SLOW_CONSUMER
    case .shutdown: self = CD_ERR_SHUTDOWN
    default: self = CD_ERR_SYSTEM
    }
  }
}

/// The message of the last failed call, one buffer per thread (a pthread key whose destructor
/// frees it), so that a failing call never races another thread's message.
enum LastError {
  static let capacity = 1024

  static let key: pthread_key_t = {
    var k = pthread_key_t()
    pthread_key_create(&k) { free($0) }
    return k
  }()

  /// This thread's buffer, made on first use.
  static func buffer() -> UnsafeMutablePointer<CChar>? {
    if let p = pthread_getspecific(key) { return p.assumingMemoryBound(to: CChar.self) }
    guard let raw = calloc(capacity, 1) else { return nil }
    pthread_setspecific(key, raw)
    return raw.assumingMemoryBound(to: CChar.self)
  }

  /// Records `message` (cut at a character boundary to fit) and returns `status`.
  static func fail(_ status: cd_status, _ message: String) -> cd_status {
    guard let p = buffer() else { return status }
    let utf8 = Array(message.utf8)
    var cut = min(utf8.count, capacity - 1)
    // Never end inside a character: back off to the start of the one the cut splits.
    while cut < utf8.count, cut > 0, utf8[cut] & 0xC0 == 0x80 { cut -= 1 }
    let bytes = utf8[..<cut]
    for (k, b) in bytes.enumerated() { p[k] = CChar(bitPattern: b) }
    p[bytes.count] = 0
    return status
  }

  /// Records a Countdown error and returns its status.
  static func fail(_ error: CountdownError) -> cd_status {
    fail(cd_status(error.code), error.message)
  }
}

/// The name of `status`.
@c(cd_status_name)
public func cdStatusName(_ status: cd_status) -> UnsafePointer<CChar> {
  let name: StaticString =
    switch status {
    case CD_OK: "ok"
    case CD_ERR_INVALID_PAYLOAD: "invalidPayload"
    case CD_ERR_INVALID_DATE: "invalidDate"
    case CD_ERR_ATTRIBUTES_TOO_LARGE: "attributesTooLarge"
    case CD_ERR_DUPLICATE_ID: "duplicateID"
    case CD_ERR_NOT_FOUND: "notFound"
    case CD_ERR_ACTIVITY_ENDED: "activityEnded"
    case CD_ERR_OUT_OF_ORDER: "outOfOrder"
    case CD_ERR_LIMIT_REACHED: "limitReached"
    case CD_ERR_DISABLED: "disabled"
    case CD_ERR_TIME_WENT_BACKWARDS: "timeWentBackwards"
    case CD_ERR_LINE_TOO_LONG: "lineTooLong"
    case CD_ERR_UNAUTHORIZED: "unauthorized"
    case CD_ERR_SLOW_CONSUMER: "slowConsumer"
    case CD_ERR_SHUTDOWN: "shutdown"
    case CD_ERR_SYSTEM: "systemError"
    case CD_ERR_INVALID_ARGUMENT: "invalidArgument"
    case CD_ERR_BUFFER_TOO_SMALL: "bufferTooSmall"
    case CD_ERR_WRONG_THREAD: "wrongThread"
    default: "unknown"
    }
  return staticCString(name)
}

/// The message of this thread's last failed call.
@c(cd_last_error_message)
public func cdLastErrorMessage() -> UnsafePointer<CChar> {
  if let p = pthread_getspecific(LastError.key) {
    return UnsafePointer(p.assumingMemoryBound(to: CChar.self))
  }
  return staticCString("")
}

// MARK: - Reading C arguments

/// A string from a C pointer and length: nil pointer with length 0 is "", invalid UTF-8 is
/// `invalidPayload` naming the field and the byte.
func string(
  _ field: String, _ p: UnsafePointer<CChar>?, _ n: Int
) throws(CountdownError) -> String {
  // A size_t past Int.max (a negative int cast to size_t, most likely) arrives negative.
  guard n >= 0 else {
    throw CountdownError(
      .invalidPayload, "\(field)_length \(UInt(bitPattern: n)) is not the length of a string")
  }
  guard n > 0 else { return "" }
  guard let p else { throw CountdownError(.invalidPayload, "\(field) is NULL with length \(n)") }
  let bytes = UnsafeBufferPointer(
    start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: n)
  if let k = UTF8Validation.firstInvalidByte(bytes) {
    throw CountdownError(
      .invalidPayload, "\(field) is not valid UTF-8 at byte \(k + 1) of \(n)")
  }
  return String(decoding: bytes, as: UTF8.self)
}

/// An optional string: nil for a NULL pointer.
func optionalString(
  _ field: String, _ p: UnsafePointer<CChar>?, _ n: Int
) throws(CountdownError) -> String? {
  guard p != nil else { return nil }
  return try string(field, p, n)
}

/// An optional instant: nil for 0.
func optionalInstant(_ field: String, _ ms: Int64) throws(CountdownError) -> Instant? {
  guard ms != 0 else { return nil }
  return try Instant(milliseconds: ms).validated(field)
}

/// Copies `bytes` into a caller's buffer with a NUL when it fits, and sets the length out.
func copyOut(
  _ bytes: UnsafeBufferPointer<UInt8>, to out: UnsafeMutablePointer<CChar>?, capacity: Int,
  length: UnsafeMutablePointer<Int>?
) -> cd_status {
  length?.pointee = bytes.count
  guard let out, capacity >= bytes.count else {
    return LastError.fail(
      CD_ERR_BUFFER_TOO_SMALL, "the output needs \(bytes.count) bytes; the buffer has \(capacity)")
  }
  if let base = bytes.baseAddress {
    UnsafeMutableRawPointer(out).copyMemory(from: base, byteCount: bytes.count)
  }
  if capacity > bytes.count { out[bytes.count] = 0 }
  return CD_OK
}
