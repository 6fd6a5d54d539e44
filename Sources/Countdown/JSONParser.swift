// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// A strict JSON (RFC 8259) parser over UTF-8 bytes with a nesting limit, so that no input,
/// however hostile, can trap or exhaust the stack.
package struct JSONParser {
  /// Deepest nesting of arrays and objects accepted.
  package static let maximumDepth = 64

  /// Parses one JSON text (surrounding white space allowed).
  package static func parse(_ text: some StringProtocol) throws(CountdownError) -> JSONValue {
    var copy = String(text)
    let result = copy.withUTF8 { buf in
      Result { () throws(CountdownError) -> JSONValue in try parse(bytes: buf) }
    }
    return try result.get()
  }

  /// Parses one JSON text from UTF-8 bytes.
  package static func parse(bytes: UnsafeBufferPointer<UInt8>) throws(CountdownError) -> JSONValue {
    var p = JSONParser(bytes: bytes)
    p.skipSpace()
    let v = try p.value(depth: 0)
    p.skipSpace()
    if p.i != bytes.count { throw p.fail("unexpected text after the JSON value") }
    return v
  }

  /// Parses one JSON text from UTF-8 bytes, reading a top-level object as ``JSONMembers``
  /// (nested objects stay dictionaries).
  package static func parseTopLevel(
    bytes: UnsafeBufferPointer<UInt8>
  ) throws(CountdownError) -> JSONTopLevel {
    var p = JSONParser(bytes: bytes)
    p.skipSpace()
    let top: JSONTopLevel
    if p.i < bytes.count, bytes[p.i] == UInt8(ascii: "{") {
      var members = JSONMembers()
      try p.object(depth: 1) { (key, value) in members[key] = value }
      top = .object(members)
    } else {
      top = .other(try p.value(depth: 0))
    }
    p.skipSpace()
    if p.i != bytes.count { throw p.fail("unexpected text after the JSON value") }
    return top
  }

  private let b: UnsafeBufferPointer<UInt8>
  private var i = 0

  /// Whether short ASCII strings may be built as small strings in place (see
  /// ``TimerFormatter/smallStringLayoutHolds``), read once per parse.
  private let smallInPlace: Bool

  private init(bytes: UnsafeBufferPointer<UInt8>) {
    self.b = bytes
    #if _pointerBitWidth(_64) && _endian(little)
      smallInPlace = TimerFormatter.smallStringLayoutHolds
    #else
      smallInPlace = false
    #endif
  }

  private func fail(_ what: String) -> CountdownError {
    .payload("invalid JSON at byte \(i + 1): \(what)")
  }

  private mutating func skipSpace() {
    while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
  }

  private mutating func value(depth: Int) throws(CountdownError) -> JSONValue {
    guard i < b.count else { throw fail("unexpected end of input") }
    switch b[i] {
    case UInt8(ascii: "{"): return try object(depth: depth + 1)
    case UInt8(ascii: "["): return try array(depth: depth + 1)
    case UInt8(ascii: "\""): return .string(try string())
    case UInt8(ascii: "t"):
      try literal("true")
      return .bool(true)
    case UInt8(ascii: "f"):
      try literal("false")
      return .bool(false)
    case UInt8(ascii: "n"):
      try literal("null")
      return .null
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
    default: throw fail("unexpected character '\(Unicode.Scalar(b[i]))'")
    }
  }

  private mutating func literal(_ word: StaticString) throws(CountdownError) {
    let n = word.utf8CodeUnitCount
    guard b.count - i >= n else { throw fail("unexpected end of input") }
    for k in 0..<n where b[i + k] != word.utf8Start[k] {
      throw fail("invalid literal")
    }
    i += n
  }

  private mutating func object(depth: Int) throws(CountdownError) -> JSONValue {
    var members: [String: JSONValue] = [:]
    try object(depth: depth) { (key, value) in members[key] = value }
    return .object(members)
  }

  /// Reads one object, handing each member to `add` in order.
  private mutating func object(
    depth: Int, _ add: (String, JSONValue) -> Void
  ) throws(CountdownError) {
    if depth > Self.maximumDepth { throw fail("nested deeper than \(Self.maximumDepth)") }
    i += 1
    skipSpace()
    if i < b.count, b[i] == UInt8(ascii: "}") {
      i += 1
      return
    }
    while true {
      skipSpace()
      guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
      let key = try string()
      skipSpace()
      guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
      i += 1
      skipSpace()
      add(key, try value(depth: depth))
      skipSpace()
      guard i < b.count else { throw fail("unexpected end of input") }
      if b[i] == UInt8(ascii: ",") {
        i += 1
        continue
      }
      if b[i] == UInt8(ascii: "}") {
        i += 1
        return
      }
      throw fail("expected ',' or '}'")
    }
  }

  private mutating func array(depth: Int) throws(CountdownError) -> JSONValue {
    if depth > Self.maximumDepth { throw fail("nested deeper than \(Self.maximumDepth)") }
    i += 1
    var items: [JSONValue] = []
    skipSpace()
    if i < b.count, b[i] == UInt8(ascii: "]") {
      i += 1
      return .array(items)
    }
    while true {
      skipSpace()
      items.append(try value(depth: depth))
      skipSpace()
      guard i < b.count else { throw fail("unexpected end of input") }
      if b[i] == UInt8(ascii: ",") {
        i += 1
        continue
      }
      if b[i] == UInt8(ascii: "]") {
        i += 1
        return .array(items)
      }
      throw fail("expected ',' or ']'")
    }
  }

  private mutating func hex4() throws(CountdownError) -> UInt32 {
    guard b.count - i >= 4 else { throw fail("unexpected end of input in \\u escape") }
    var v: UInt32 = 0
    for _ in 0..<4 {
      let c = b[i]
      let d: UInt32
      switch c {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
      case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
      case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
      default: throw fail("invalid \\u escape")
      }
      v = v << 4 | d
      i += 1
    }
    return v
  }

  private mutating func string() throws(CountdownError) -> String {
    i += 1
    let start = i
    // Fast path: no escapes.
    while i < b.count {
      let c = b[i]
      if c == UInt8(ascii: "\"") {
        #if _pointerBitWidth(_64) && _endian(little)
          // Keys, ids and enum values are mostly short ASCII: built as a small string from
          // two words, without validating again or allocating.
          let n = i - start
          if n <= 15 {
            var raw: (UInt64, UInt64) = (0, 0)
            let source = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: b[start..<i]))
            withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: source) }
            if (raw.0 | raw.1) & 0x8080_8080_8080_8080 == 0 {
              i += 1
              return TimerFormatter.smallString(raw.0, raw.1, count: n, inPlace: smallInPlace)
            }
          }
        #endif
        let s = String(validating: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        guard let s else { throw fail("string is not valid UTF-8") }
        i += 1
        return s
      }
      if c == UInt8(ascii: "\\") { break }
      if c < 0x20 { throw fail("control character in string") }
      i += 1
    }
    var bytes = Array(b[start..<i])
    while i < b.count {
      let c = b[i]
      if c == UInt8(ascii: "\"") {
        i += 1
        guard let s = String(validating: bytes, as: UTF8.self) else {
          throw fail("string is not valid UTF-8")
        }
        return s
      }
      if c < 0x20 { throw fail("control character in string") }
      if c != UInt8(ascii: "\\") {
        bytes.append(c)
        i += 1
        continue
      }
      i += 1
      guard i < b.count else { break }
      let e = b[i]
      i += 1
      switch e {
      case UInt8(ascii: "\""): bytes.append(0x22)
      case UInt8(ascii: "\\"): bytes.append(0x5C)
      case UInt8(ascii: "/"): bytes.append(0x2F)
      case UInt8(ascii: "b"): bytes.append(0x08)
      case UInt8(ascii: "f"): bytes.append(0x0C)
      case UInt8(ascii: "n"): bytes.append(0x0A)
      case UInt8(ascii: "r"): bytes.append(0x0D)
      case UInt8(ascii: "t"): bytes.append(0x09)
      case UInt8(ascii: "u"):
        var scalar = try hex4()
        if (0xD800...0xDBFF).contains(scalar) {
          guard b.count - i >= 6, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else {
            throw fail("unpaired surrogate in \\u escape")
          }
          i += 2
          let low = try hex4()
          guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
          scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
          throw fail("unpaired surrogate in \\u escape")
        }
        guard let u = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
        bytes.append(contentsOf: UTF8.encode(u).map { Array($0) } ?? [])
      default: throw fail("invalid escape '\\\(Unicode.Scalar(e))'")
      }
    }
    throw fail("unterminated string")
  }

  private mutating func number() throws(CountdownError) -> JSONValue {
    let start = i
    var isInteger = true
    if b[i] == UInt8(ascii: "-") { i += 1 }
    guard i < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) else {
      throw fail("invalid number")
    }
    if b[i] == UInt8(ascii: "0") {
      i += 1
    } else {
      while i < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) { i += 1 }
    }
    if i < b.count, b[i] == UInt8(ascii: ".") {
      isInteger = false
      i += 1
      let d = i
      while i < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) { i += 1 }
      if i == d { throw fail("invalid number: no digits after '.'") }
    }
    if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
      isInteger = false
      i += 1
      if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
      let d = i
      while i < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) { i += 1 }
      if i == d { throw fail("invalid number: no digits in exponent") }
    }
    let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
    if isInteger, let v = Int64(text) { return .int(v) }
    guard let d = Double(text) else { throw fail("invalid number") }
    // A number past Double's range (1e400) is ±infinity here, not an error: the decoder of
    // each field rejects it with the field's name ("endDate is not a finite number").
    return .double(d)
  }
}
