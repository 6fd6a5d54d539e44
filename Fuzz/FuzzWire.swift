// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

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
    let line = UnsafeBufferPointer(rebasing: input[start..<k])
    session.handle(bytes: line, number: number)
    start = k + 1
    session.engine?.checkInvariants()
    checkOutput(session.takeOutput())
    peerLine(line)
  }
  splitInPieces(input)
  return 0
}

/// The nodes' protocol on the same line (docs/cluster.md): every decoder of PeerMessage and
/// GatheredList takes it without trapping, and what decodes encodes to a line that decodes to
/// the same.
private func peerLine(_ line: UnsafeBufferPointer<UInt8>) {
  let bytes = Array(line)
  if let r = PeerMessage.RelayRequest.decode(line) {
    let again = r.line.dropLast().withUnsafeBufferPointer { PeerMessage.RelayRequest.decode($0) }
    precondition(again == r, "RelayRequest \(r) does not decode to itself")
  }
  if let a = PeerMessage.RelayAnswer.decode(bytes) {
    precondition(PeerMessage.RelayAnswer.decode(a.line.dropLast()) == a, "RelayAnswer \(a)")
  }
  if let s = PeerMessage.SnapshotRequest.decode(line) {
    let again = s.line.withUnsafeBufferPointer { PeerMessage.SnapshotRequest.decode($0) }
    precondition(again == s, "SnapshotRequest \(s) does not decode to itself")
  }
  if let (method, id, _, groups) = PeerMessage.HTTPCommand.decode(line) {
    // Its body written back as the command carries it: decodes to the same method, id and
    // groups.
    var w = JSONWriter()
    w.write(.object(decodedBody(line)))
    let body = w.bytes
    let again = PeerMessage.HTTPCommand(method: method, id: id, body: body, groups: groups).line
      .withUnsafeBufferPointer { PeerMessage.HTTPCommand.decode($0) }
    precondition(
      again?.method == method && again?.id == id && again?.groups == groups,
      "HTTPCommand \(method) \(id ?? "-")")
  }
  if let c = PeerMessage.ScopedCommand.decode(line) {
    let again = c.wrapped.withUnsafeBufferPointer { PeerMessage.ScopedCommand.decode($0) }
    precondition(again == c, "ScopedCommand \(c) does not decode to itself")
  }
  _ = PeerMessage.RelayLine.decode(UnsafeRawBufferPointer(line))
  _ = PeerMessage.SnapshotHead.decode(bytes)
  _ = PeerMessage.isOK(bytes)
  _ = PeerMessage.servedShards(in: bytes)
  _ = PeerMessage.activity(in: bytes)
  _ = PeerMessage.head(of: bytes)
  if let items = GatheredList.activities(in: bytes) {
    for item in items {
      precondition(item.first == UInt8(ascii: "{") && item.last == UInt8(ascii: "}"))
      _ = GatheredList.endDate(of: item)
    }
    _ = GatheredList.merge(bytes, peers: [bytes], soonest: items.count / 2)
  }
}

/// The body member of a line HTTPCommand decoded.
private func decodedBody(_ line: UnsafeBufferPointer<UInt8>) -> [String: JSONValue] {
  PeerMessage.HTTPCommand.decode(line)?.body ?? [:]
}

/// The whole input through the peer connections' line splitter in pieces whose sizes the
/// input's own bytes choose: the same lines, in order, as splitting it whole.
private func splitInPieces(_ input: UnsafeBufferPointer<UInt8>) {
  var whole: [[UInt8]] = []
  var splitter = PeerMessage.LineSplitter()
  splitter.split(bytes: UnsafeRawBufferPointer(input)) { whole.append(Array($0)) }
  var pieces: [[UInt8]] = []
  var again = PeerMessage.LineSplitter()
  var at = 0
  while at < input.count {
    let size = max(1, Int(input[at] % 17))
    let end = min(input.count, at + size)
    again.split(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: input[at..<end]))) {
      pieces.append(Array($0))
    }
    at = end
  }
  precondition(pieces == whole, "the splitter's lines depend on how the bytes came")
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
