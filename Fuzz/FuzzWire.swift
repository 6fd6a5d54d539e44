// libFuzzer target over the wire decoder and a replay session: the path every line from a
// file or a socket takes. Built by `make fuzz` with the Countdown sources in one module
// (swiftc -sanitize=fuzzer,address), with DEBUG set so that the engine's invariants are checked.
//
// Each input is split into lines and fed to a WireSession as raw bytes, as `countdown replay`
// does. What must hold for any input: nothing traps or leaks, the engine's invariants hold after
// every line, and every line the session writes is one JSON object that parses back.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWire(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let input = UnsafeBufferPointer(start: data, count: size)
  // The first byte picks the text style, so that every formatter runs too.
  let styles = TimerStyle.names
  let styleName = styles[Int(input.first ?? 0) % styles.count]
  let style = TimerStyle(name: styleName, maxUnits: Int(input.first ?? 0) % 4 + 1) ?? .timer
  // Ticks off: one valid line can ask for 8000 years of them, which is correct but not a bug.
  let session = WireSession(formatter: TimerFormatter(style: style), writesTicks: false)
  var start = 0
  var number = 0
  for k in 0...size where k == size || input[k] == 0x0A {
    number += 1
    session.handle(bytes: UnsafeBufferPointer(rebasing: input[start..<k]), number: number)
    start = k + 1
    session.engine?.checkInvariants()
    checkOutput(session.takeOutput())
  }
  return 0
}

/// Every output line is a JSON object with `at`, `event` and `id`.
private func checkOutput(_ bytes: [UInt8]) {
  var start = 0
  for k in bytes.indices where bytes[k] == 0x0A {
    let line = bytes[start..<k]
    start = k + 1
    let value = line.withUnsafeBufferPointer { buffer in
      Result { () throws(CountdownError) -> JSONValue in try JSONParser.parse(bytes: buffer) }
    }
    guard case .success(.object(let o)) = value, o["at"] != nil, o["event"] != nil,
      o.keys.contains("id")
    else {
      fatalError("output line is not an event object: \(String(decoding: line, as: UTF8.self))")
    }
  }
  precondition(start == bytes.count, "output does not end with a newline")
}
