// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import Testing

@testable import CountdownServer

@Suite("RelayLinks: reading another node's relayed events")
struct RelayLinksTests {
  func kindAndID(_ json: String) -> (ActivityEvent.Kind, String)? {
    Array(json.utf8).withUnsafeBytes { RelayLinks.kindAndID($0) }
  }

  @Test("Kind and id read from the event's head; an id with escapes or another order parsed")
  func kindAndIDs() {
    let plain = kindAndID(#"{"at":5,"event":"expired","id":"gate-7"}"# + "\n")
    #expect(plain?.0 == .expired && plain?.1 == "gate-7")
    let escaped = kindAndID(#"{"at":5,"event":"paused","id":"a\"b\\c","value":3}"# + "\n")
    #expect(escaped?.0 == .paused && escaped?.1 == #"a"b\c"#)
    let reordered = kindAndID(#"{"id":"x","event":"tick","at":5}"#)
    #expect(reordered?.0 == .tick && reordered?.1 == "x")
    #expect(kindAndID(#"{"at":5,"event":"nonsense","id":"x"}"#) == nil)
    #expect(kindAndID("not json") == nil)
  }

  @Test("A needle found at the start, the end, after a false start; not past the end")
  func find() {
    let hay = Array("aab,ab,abc".utf8)
    hay.withUnsafeBytes { b in
      #expect(RelayLinks.find(Array("aab".utf8), in: b, from: 0) == 3)
      #expect(RelayLinks.find(Array("ab,".utf8), in: b, from: 0) == 4)
      #expect(RelayLinks.find(Array("ab,".utf8), in: b, from: 2) == 7)
      #expect(RelayLinks.find(Array("abc".utf8), in: b, from: 0) == 10)
      #expect(RelayLinks.find(Array("abcd".utf8), in: b, from: 0) == nil)
    }
  }
}
