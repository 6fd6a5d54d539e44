// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownProtocol
import CountdownTestSupport
import NIOCore
import Testing

@testable import CountdownServer

/// The nodes' protocol's codec (`PeerMessage`): every message round trip, and what is not a
/// message decoded to nil (or a typed error), never a guess from a substring.
@Suite("The nodes' protocol: PeerMessage")
struct PeerMessageTests {
  static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

  static func decodeRequest(_ s: String) -> PeerMessage.RelayRequest? {
    bytes(s).withUnsafeBufferPointer { PeerMessage.RelayRequest.decode($0) }
  }

  static func decodeSnapshotRequest(_ s: String) -> PeerMessage.SnapshotRequest? {
    bytes(s).withUnsafeBufferPointer { PeerMessage.SnapshotRequest.decode($0) }
  }

  static func decodeLine(_ s: String) -> (PeerMessage.RelayLine, json: String)? {
    let b = bytes(s)
    return b.withUnsafeBytes { raw in
      PeerMessage.RelayLine.decode(raw).map {
        ($0.0, String(decoding: raw[$0.json...], as: UTF8.self))
      }
    }
  }

  @Test("A relay request: round trip, and what is not one")
  func relayRequest() {
    for r in [
      PeerMessage.RelayRequest(incarnation: nil, after: 0, ticks: false),
      PeerMessage.RelayRequest(incarnation: 0xdead_beef, after: 123, ticks: true),
      PeerMessage.RelayRequest(incarnation: .max, after: UInt64(Int64.max), ticks: false),
    ] {
      let line = r.line
      #expect(line.last == 0x0A)
      let back = line.dropLast().withUnsafeBufferPointer { PeerMessage.RelayRequest.decode($0) }
      #expect(back == r, "\(String(decoding: line, as: UTF8.self))")
    }
    // `after` absent is 0, negative is 0; `incarnation` absent is none.
    #expect(
      Self.decodeRequest(#"{"op":"relay"}"#)
        == PeerMessage.RelayRequest(incarnation: nil, after: 0, ticks: false))
    #expect(Self.decodeRequest(#"{"op":"relay","after":-5,"ticks":true}"#)?.after == 0)
    for bad in [
      #"{"op":"relays","after":1}"#, #"{"op":"list"}"#, #"{"op":"relay","incarnation":"zz"}"#,
      #"{"op":"relay","incarnation":12}"#, #"{"op":"relay","after":"3"}"#,
      #"{"op":"relay","after":1"#, #"{"op":"relay"} trailing"#, "", "relay",
      #"{"op":"relay","incarnation":"10000000000000000"}"#,
    ] {
      #expect(Self.decodeRequest(bad) == nil, "\(bad)")
    }
  }

  @Test("A relay answer: round trip; an answer without an incarnation, or not JSON, is none")
  func relayAnswer() {
    for a in [
      PeerMessage.RelayAnswer.accepted(incarnation: 0x9f3a, gap: false),
      .accepted(incarnation: .max, gap: true),
      .refused(code: .unavailable, message: #"no "relay" here: \ {"ok":true}"#),
    ] {
      #expect(PeerMessage.RelayAnswer.decode(a.line.dropLast()) == a)
    }
    for bad in [
      #"{"rid":null,"ok":true}"#, #"{"ok":true,"incarnation":"x1"}"#,
      #"{"ok":false,"message":"no code"}"#, #"{"ok":"yes"}"#, "ok", "",
      #"{"ok":true,"incarnation":"1""#,
    ] {
      #expect(PeerMessage.RelayAnswer.decode(Self.bytes(bad)) == nil, "\(bad)")
    }
  }

  @Test("Whether a reply says yes is read from its ok member, not from a string inside it")
  func isOK() {
    #expect(PeerMessage.isOK(Self.bytes(#"{"rid":1,"ok":true,"at":5}"#)) == true)
    // A substring search for "ok":true said yes to this refusal.
    #expect(
      PeerMessage.isOK(
        Self.bytes(#"{"ok":false,"code":"unauthorized","message":"\"ok\":true is not a token"}"#))
        == false)
    #expect(PeerMessage.isOK(Self.bytes(#"{"id":"ok"}"#)) == nil)
    #expect(PeerMessage.isOK(Self.bytes("not json")) == nil)
  }

  @Test("A relay line's head: round trip with and without a source; malformed heads are none")
  func relayLine() throws {
    for head in [
      PeerMessage.RelayLine(source: nil, sequence: 0, delivery: 0),
      PeerMessage.RelayLine(source: nil, sequence: 42, delivery: 7),
      PeerMessage.RelayLine(source: 0xabc, sequence: .max, delivery: .max),
      PeerMessage.RelayLine(source: nil, sequence: 3, delivery: 0, group: "gate-12"),
      PeerMessage.RelayLine(source: 0x1f, sequence: 9, delivery: 4, group: "a.b_c-D"),
    ] {
      var buffer = ByteBufferAllocator().buffer(capacity: 64)
      head.writeHead(into: &buffer)
      buffer.writeString(#"{"at":1,"event":"started","id":"a"}"# + "\n")
      let text = String(buffer: buffer)
      let (back, json) = try #require(Self.decodeLine(text), "\(text)")
      #expect(back == head && json == #"{"at":1,"event":"started","id":"a"}"# + "\n")
    }
    for bad in [
      "", "12 3", "12 3 ", "12x 3 {}\n", "12  3 {}\n", "~ 1 2 {}\n", "~zz 1 2 {}\n",
      "~11112222333344445 1 2 {}\n", "99999999999999999999999 1 {}\n", " 1 2 {}\n",
      "-1 2 {}\n", "1 2 @ {}\n", "1 2 @gate/12 {}\n", "1 2 @gate-12\n", "1 2 @g\n",
    ] {
      #expect(Self.decodeLine(bad) == nil, "\(bad.debugDescription)")
    }
  }

  @Test("A snapshot request: round trip with ids of any text, and without")
  func snapshotRequest() {
    for r in [
      PeerMessage.SnapshotRequest(ids: nil), .init(ids: []),
      .init(ids: ["gate-12", #"quote " and \ slash"#, "é ☃"]),
      .init(ids: nil, groups: ["gate-a", "gate-b"], group: "gate-b"), .init(ids: ["x"], groups: []),
    ] {
      #expect(r.line.withUnsafeBufferPointer { PeerMessage.SnapshotRequest.decode($0) } == r)
    }
    #expect(Self.decodeSnapshotRequest(#"{"op":"peerSnapshot","ids":["a",1]}"#) == nil)
    #expect(Self.decodeSnapshotRequest(#"{"op":"peerSnapshot","ids":"a"}"#) == nil)
    #expect(Self.decodeSnapshotRequest(#"{"op":"peerSnapshots"}"#) == nil)
    #expect(Self.decodeSnapshotRequest(#"{"op":"peerSnapshot","groups":["a b"]}"#) == nil)
    #expect(Self.decodeSnapshotRequest(#"{"op":"peerSnapshot","group":7}"#) == nil)
  }

  @Test("A forwarded HTTP command: round trip, an empty body as {}, and what is not one")
  func httpCommand() throws {
    let full = PeerMessage.HTTPCommand(
      method: "pause", id: #"gate "12""#, body: Self.bytes(#" {"timestamp":5} "#))
    let back = try #require(
      full.line.withUnsafeBufferPointer { PeerMessage.HTTPCommand.decode($0) })
    #expect(back.method == "pause" && back.id == #"gate "12""# && back.body["timestamp"] == .int(5))
    let empty = PeerMessage.HTTPCommand(method: "start", id: nil, body: Self.bytes(" \n"))
    #expect(String(decoding: empty.line, as: UTF8.self).hasSuffix(#""id":null,"body":{}}"#))
    let none = try #require(
      empty.line.withUnsafeBufferPointer { PeerMessage.HTTPCommand.decode($0) })
    #expect(none.id == nil && none.body.isEmpty)
    for bad in [
      #"{"op":"peerHTTP","method":"end","id":"a","body":[]}"#,
      #"{"op":"peerHTTP","method":"end","id":1,"body":{}}"#,
      #"{"op":"peerHTTP","id":"a","body":{}}"#, #"{"op":"peerHTTPs","method":"end","body":{}}"#,
    ] {
      #expect(
        Self.bytes(bad).withUnsafeBufferPointer { PeerMessage.HTTPCommand.decode($0) } == nil,
        "\(bad)")
    }
  }

  @Test(
    "A command for a key with groups: the line wrapped with them, round trip; the groups of a forwarded HTTP command; what is not one"
  )
  func scopedCommand() throws {
    let line = Self.bytes(#"{"op":"get","id":"gate \"12\""}"#)
    let wrapped = PeerMessage.ScopedCommand(groups: ["b", "a"], line: line)
    #expect(
      String(decoding: wrapped.wrapped, as: UTF8.self)
        == #"{"op":"peerScoped","groups":["a","b"],"line":{"op":"get","id":"gate \"12\""}}"#)
    let back = try #require(
      wrapped.wrapped.withUnsafeBufferPointer { PeerMessage.ScopedCommand.decode($0) })
    #expect(back.groups == ["a", "b"])
    let decoded = back.line.withUnsafeBufferPointer { ServerRequest.decode($0) }
    guard case .success(.command(.get, let id)) = decoded.request else {
      Issue.record("\(decoded.request)")
      return
    }
    #expect(id == #"gate "12""#)
    let http = PeerMessage.HTTPCommand(method: "end", id: "a", body: [], groups: ["gate-1"])
    let h = try #require(http.line.withUnsafeBufferPointer { PeerMessage.HTTPCommand.decode($0) })
    #expect(h.groups == ["gate-1"])
    for bad in [
      #"{"op":"peerScoped","groups":["a"],"line":"x"}"#,
      #"{"op":"peerScoped","groups":"a","line":{}}"#,
      #"{"op":"peerScoped","groups":["a b"],"line":{}}"#, #"{"op":"peerScoped","line":{}}"#,
    ] {
      #expect(
        Self.bytes(bad).withUnsafeBufferPointer { PeerMessage.ScopedCommand.decode($0) } == nil,
        "\(bad)")
    }
    #expect(
      Self.bytes(#"{"op":"peerHTTP","method":"end","id":"a","groups":[1],"body":{}}"#)
        .withUnsafeBufferPointer { PeerMessage.HTTPCommand.decode($0) } == nil)
  }

  @Test("A snapshot's head, a part's served shards and a forwarded activity are read typed")
  func replies() throws {
    let part = Self.bytes(
      #"{"rid":null,"ok":true,"at":6,"incarnation":"9f3a","from":17,"servedShards":[1,5,63],"activities":[{"id":"servedShards","title":"\"servedShards\":[9]"}]}"#
    )
    #expect(
      PeerMessage.SnapshotHead.decode(part)
        == PeerMessage.SnapshotHead(incarnation: 0x9f3a, from: 17))
    #expect(PeerMessage.servedShards(in: part) == [1, 5, 63])
    #expect(PeerMessage.servedShards(in: Self.bytes(#"{"ok":true,"activities":[]}"#)) == nil)
    #expect(PeerMessage.servedShards(in: Self.bytes(#"{"ok":true,"servedShards":[1.5]}"#)) == nil)
    #expect(PeerMessage.SnapshotHead.decode(Self.bytes(#"{"ok":true,"from":1}"#)) == nil)
    #expect(
      PeerMessage.SnapshotHead.decode(Self.bytes(#"{"ok":true,"incarnation":"1","from":-1}"#))
        == nil)

    let got = PeerMessage.activity(
      in: Self.bytes(#"{"rid":null,"ok":true,"at":5,"activity":{"id":"a","title":"x"}}"#))
    #expect(
      (try? got.get()).map { String(decoding: $0, as: UTF8.self) } == #"{"id":"a","title":"x"}"#)
    let refused = PeerMessage.activity(
      in: Self.bytes(#"{"rid":null,"ok":false,"code":"notFound","message":"no activity \"a\""}"#))
    #expect(throws: CountdownError.self) { try refused.get() }
    if case .failure(let e) = refused {
      #expect(e.code == .notFound && e.message == #"no activity "a""#)
    }
    for bad in ["garbage", #"{"ok":true,"at":5}"#, #"{"ok":true,"activity":"a"}"#] {
      if case .failure(let e) = PeerMessage.activity(in: Self.bytes(bad)) {
        #expect(e.code == .unavailable && e.message.contains("not a reply"), "\(bad)")
      } else {
        Issue.record("\(bad) read as an activity")
      }
    }
  }

  @Test("A reply's head is its members before the list, found knowing strings and nesting")
  func head() throws {
    let nested = try #require(
      PeerMessage.head(
        of: Self.bytes(
          #"{"ok":true,"meta":{"activities":[1]},"note":"\",\"activities\":[","servedShards":[2],"activities":[{"id":"x"}],"after":1}"#
        )))
    #expect(nested["servedShards"] == .array([.int(2)]) && nested["meta"] != nil)
    #expect(nested["activities"] == nil && nested["after"] == nil, "cut before the list")
    let first = try #require(
      PeerMessage.head(of: Self.bytes(#"{ "snapshot":[{"ok":false}],"ok":true}"#)))
    #expect(first["ok"] == nil, "the list is the first member: an empty head")
    let whole = try #require(
      PeerMessage.head(of: Self.bytes(#"{"ok":false,"code":"x","message":"m"}"#)))
    #expect(whole["code"] == .string("x"))
    #expect(
      PeerMessage.head(of: Self.bytes(#"{"ok":true,"activities":[]"#)) != nil,
      "the list need not end")
    #expect(PeerMessage.head(of: Self.bytes("[1,2]")) == nil)
  }

  @Test("The line splitter gives the same lines however the bytes are cut")
  func splitter() {
    let seed = testSeed()
    var rng = SplitMix64(state: seed)
    let lines = (0..<200).map { k in
      "\(k) " + String(repeating: "x", count: Int.random(in: 0...300, using: &rng)) + "\n"
    }
    let all = Array(lines.joined().utf8)
    for _ in 0..<20 {
      var splitter = PeerMessage.LineSplitter()
      var got: [String] = []
      var i = 0
      while i < all.count {
        let n = min(all.count - i, Int.random(in: 1...700, using: &rng))
        splitter.split(ByteBuffer(bytes: all[i..<(i + n)])) {
          got.append(String(decoding: $0, as: UTF8.self))
        }
        i += n
      }
      #expect(got == lines, "seed \(seed)")
    }
  }

  @Test("Mutated and random lines never trap any decoder, and a valid line still decodes")
  func mutations() async throws {
    try await onThread(computing: true) {
      let seed = testSeed()
      var rng = SplitMix64(state: seed)
      let valid: [[UInt8]] = [
        PeerMessage.RelayRequest(incarnation: 0x1f, after: 9, ticks: true).line.dropLast(),
        Array(PeerMessage.RelayAnswer.accepted(incarnation: 7, gap: true).line.dropLast()),
        PeerMessage.SnapshotRequest(ids: ["a", "b"]).line,
        Self.bytes(#"~1f 12 3 {"at":1,"event":"ended","id":"a"}"# + "\n"),
        Self.bytes(#"{"rid":null,"ok":true,"incarnation":"9","from":2,"servedShards":[1]}"#),
      ]
      for _ in 0..<20_000 {
        var line = valid[Int.random(in: 0..<valid.count, using: &rng)]
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
          guard !line.isEmpty else { break }
          let at = Int.random(in: 0..<line.count, using: &rng)
          switch Int.random(in: 0..<3, using: &rng) {
          case 0: line[at] = UInt8.random(in: 0...255, using: &rng)
          case 1: line.remove(at: at)
          default: line.insert(UInt8.random(in: 0...255, using: &rng), at: at)
          }
        }
        _ = line.withUnsafeBufferPointer { PeerMessage.RelayRequest.decode($0) }
        _ = line.withUnsafeBufferPointer { PeerMessage.SnapshotRequest.decode($0) }
        _ = line.withUnsafeBytes { PeerMessage.RelayLine.decode($0) }
        _ = PeerMessage.RelayAnswer.decode(line)
        _ = PeerMessage.SnapshotHead.decode(line)
        _ = PeerMessage.isOK(line)
        _ = PeerMessage.servedShards(in: line)
        _ = PeerMessage.activity(in: line)
        _ = PeerMessage.head(of: line)
        _ = line.withUnsafeBufferPointer { PeerMessage.HTTPCommand.decode($0) }
      }
      #expect(
        valid[0].withUnsafeBufferPointer { PeerMessage.RelayRequest.decode($0) }?.incarnation
          == 0x1f, "seed \(seed)")
    }
  }
}
