// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Testing

@testable import CountdownServer

@Suite("A list gathered from every node")
struct GatheredListTests {
  static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

  @Test("Objects are split at the top level only: nested objects, arrays, strings with ] } , \\\"")
  func split() throws {
    let reply = Self.bytes(
      #"{"rid":1,"ok":true,"at":5,"activities":[{"id":"a","content":{"title":"x ] } , \" {"},"milestones":[{"n":1}],"endDate":30},{"id":"b","endDate":10}]}"#
    )
    let items = try #require(GatheredList.activities(in: reply))
    #expect(
      items.map { String(decoding: $0, as: UTF8.self) } == [
        #"{"id":"a","content":{"title":"x ] } , \" {"},"milestones":[{"n":1}],"endDate":30}"#,
        #"{"id":"b","endDate":10}"#,
      ])
    #expect(items.map { GatheredList.endDate(of: $0) } == [30, 10])
    #expect(GatheredList.activities(in: Self.bytes(#"{"at":5,"activities":[]}"#))?.isEmpty == true)
    #expect(GatheredList.activities(in: Self.bytes(#"{"ok":false,"code":"x"}"#)) == nil)
  }

  @Test("Whitespace between the objects is allowed; anything else in the array is not a list")
  func notAList() throws {
    let spaced = try #require(
      GatheredList.activities(in: Self.bytes(#"{"activities":[ {"id":"a"} ,\#n{"id":"b"} ]}"#)))
    #expect(spaced.map { String(decoding: $0, as: UTF8.self) } == [#"{"id":"a"}"#, #"{"id":"b"}"#])
    // Found by make fuzz: an element that was not an object came back as one.
    for bad in [
      #"{"activities":[1,{"id":"a"}]}"#, #"{"activities":[{"id":"a"} 1]}"#,
      #"{"activities":["a"]}"#, #"{"activities":[[{"id":"a"}]]}"#, #"{"activities":[{"id":"a"},]}"#,
      #"{"activities":[,{"id":"a"}]}"#, #"{"activities":[{"id":"a"}{"id":"b"}]}"#,
      #"{"activities":[{"id":"a"}"#,
    ] {
      #expect(GatheredList.activities(in: Self.bytes(bad)) == nil, "\(bad)")
    }
    // An endDate of more digits than an Int64 holds is none (it trapped).
    #expect(GatheredList.endDate(of: Self.bytes(#"{"endDate":99999999999999999999}"#)[...]) == nil)
    #expect(GatheredList.endDate(of: Self.bytes(#"{"endDate":9223372036854775807}"#)[...]) == .max)
  }

  @Test("Merged: this node's first, then each peer's; soonest k across all, by endDate")
  func merge() {
    let local = Self.bytes(#"{"rid":"r","ok":true,"at":5,"activities":[{"id":"a","endDate":30}]}"#)
    let peers = [
      Self.bytes(#"{"rid":"r","ok":true,"at":6,"activities":[{"id":"b","endDate":10}]}"#),
      Self.bytes(#"{"rid":"r","ok":true,"at":6,"activities":[]}"#),
      Self.bytes(
        #"{"rid":"r","ok":true,"at":6,"activities":[{"id":"c","endDate":null},{"id":"d","endDate":20}]}"#
      ),
    ]
    #expect(
      String(decoding: GatheredList.merge(local, peers: peers, soonest: nil), as: UTF8.self)
        == #"{"rid":"r","ok":true,"at":5,"activities":[{"id":"a","endDate":30},{"id":"b","endDate":10},{"id":"c","endDate":null},{"id":"d","endDate":20}]}"#
    )
    #expect(
      String(decoding: GatheredList.merge(local, peers: peers, soonest: 2), as: UTF8.self)
        == #"{"rid":"r","ok":true,"at":5,"activities":[{"id":"b","endDate":10},{"id":"d","endDate":20}]}"#
    )
    let empty = Self.bytes(#"{"at":5,"activities":[]}"#)
    #expect(
      String(
        decoding: GatheredList.merge(empty, peers: [empty, peers[0]], soonest: nil), as: UTF8.self)
        == #"{"at":5,"activities":[{"id":"b","endDate":10}]}"#)
  }

  @Test(
    "A subscription's snapshot: the peers' activities spliced under snapshot; each peer's place read"
  )
  func snapshot() throws {
    let local = Self.bytes(#"{"rid":"s","ok":true,"at":5,"snapshot":[{"id":"a","endDate":30}]}"#)
    let peer = Self.bytes(
      #"{"rid":null,"ok":true,"at":6,"incarnation":"9f3a","from":17,"activities":[{"id":"b","endDate":10}]}"#
    )
    #expect(
      String(
        decoding: GatheredList.merge(local, key: "snapshot", peers: [peer], soonest: nil),
        as: UTF8.self)
        == #"{"rid":"s","ok":true,"at":5,"snapshot":[{"id":"a","endDate":30},{"id":"b","endDate":10}]}"#
    )
    let head = try #require(PeerMessage.SnapshotHead.decode(peer))
    #expect(head.incarnation == 0x9f3a && head.from == 17)
    #expect(PeerMessage.SnapshotHead.decode(Self.bytes(#"{"ok":false,"code":"x"}"#)) == nil)
    #expect(
      PeerMessage.SnapshotHead.decode(Self.bytes(#"{"ok":true,"incarnation":"zz","from":1}"#))
        == nil,
      "not hex")
  }
}
