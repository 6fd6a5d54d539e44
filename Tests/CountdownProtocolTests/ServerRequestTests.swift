// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Testing

@testable import CountdownProtocol

/// One parser per parameter: an HTTP query and a socket request carry the same members to the
/// same decoder, so a parameter means the same and fails alike on both.
@Suite("ServerRequest")
struct ServerRequestTests {
  static func query(_ pairs: [String: String]) -> (String) -> Substring? {
    { pairs[$0].map { Substring($0) } }
  }

  static func socket(_ line: String) -> Result<ServerRequest, CountdownError> {
    Array(line.utf8).withUnsafeBufferPointer { ServerRequest.decode($0).request }
  }

  static func subscription(_ r: Result<ServerRequest, CountdownError>) -> ([String]?, Bool)? {
    guard case .success(.subscribe(let ids, let ticks, _)) = r else { return nil }
    return (ids, ticks)
  }

  static func failure(_ r: Result<ServerRequest, CountdownError>) -> CountdownError? {
    guard case .failure(let e) = r else { return nil }
    return e
  }

  @Test("ticks: true/false and 1/0 on both; anything else the same invalidPayload on both")
  func ticks() {
    for (text, json, wanted) in [
      ("1", "1", true), ("true", "true", true), ("0", "0", false), ("false", "false", false),
    ] {
      let http = Self.subscription(
        ServerRequest.decode(op: "subscribe", query: Self.query(["ticks": text])))
      let line = Self.subscription(Self.socket(#"{"op":"subscribe","ticks":\#(json)}"#))
      #expect(http?.1 == wanted && line?.1 == wanted, "ticks=\(text)")
    }
    let http = Self.failure(
      ServerRequest.decode(op: "subscribe", query: Self.query(["ticks": "maybe"])))
    let line = Self.failure(Self.socket(#"{"op":"subscribe","ticks":"maybe"}"#))
    #expect(http?.code == .invalidPayload && http == line)
    #expect(http?.message == #"ticks must be true or false (or 1 or 0), not "maybe""#)
    #expect(Self.failure(Self.socket(#"{"op":"subscribe","ticks":2}"#))?.code == .invalidPayload)
  }

  @Test("ids: a comma-separated list on HTTP, an array on the socket; other parameters ignored")
  func ids() {
    let http = Self.subscription(
      ServerRequest.decode(op: "subscribe", query: Self.query(["ids": "a,b", "token": "t"])))
    #expect(http?.0 == ["a", "b"] && http?.1 == false)
    let none = Self.subscription(ServerRequest.decode(op: "subscribe", query: Self.query([:])))
    #expect(none != nil && none!.0 == nil)
  }

  @Test("list: soonest and endedWithinMs checked alike; both at once refused")
  func list() {
    guard
      case .success(.list(.soonest(3), nil)) = ServerRequest.decode(
        op: "list", query: Self.query(["soonest": "3"]))
    else {
      Issue.record("soonest=3 not decoded")
      return
    }
    let bad = Self.failure(ServerRequest.decode(op: "list", query: Self.query(["soonest": "x"])))
    let badLine = Self.failure(Self.socket(#"{"op":"list","soonest":"x"}"#))
    #expect(bad == badLine && bad?.message == #"soonest must be a whole number ≥ 0, not "x""#)
    let both = Self.failure(
      ServerRequest.decode(op: "list", query: Self.query(["soonest": "1", "endedWithinMs": "5"])))
    #expect(both?.code == .invalidPayload)
  }
}
