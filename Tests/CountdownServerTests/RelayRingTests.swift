// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import NIOCore
import Testing

@testable import CountdownServer

@Suite("RelayRing: a node's recent events for the nodes relaying them")
struct RelayRingTests {
  static func line(_ n: Int, size: Int = 4) -> ByteBuffer {
    ByteBuffer(bytes: [UInt8](repeating: UInt8(n % 256), count: size))
  }

  static func numbers(_ lines: [ByteBuffer]) -> [Int] {
    lines.map { Int($0.readableBytesView.first!) }
  }

  @Test("Numbered from 1 in delivery order; what came after a number, and no gap while kept")
  func after() {
    var ring = RelayRing(capacity: 8, byteBound: 1 << 20)
    #expect(ring.lines(after: 0).lines.isEmpty && !ring.lines(after: 0).gap)
    for n in 1...5 { #expect(ring.append(Self.line(n)) == UInt64(n)) }
    #expect(Self.numbers(ring.lines(after: 0).lines) == [1, 2, 3, 4, 5])
    #expect(Self.numbers(ring.lines(after: 3).lines) == [4, 5])
    #expect(ring.lines(after: 5).lines.isEmpty && !ring.lines(after: 5).gap)
    #expect(!ring.lines(after: 3).gap)
  }

  @Test("Past its capacity or its bytes, the oldest go, and asking for them is a gap")
  func bounds() {
    var ring = RelayRing(capacity: 4, byteBound: 1 << 20)
    for n in 1...10 { _ = ring.append(Self.line(n)) }
    #expect(ring.count == 4)
    let all = ring.lines(after: 0)
    #expect(Self.numbers(all.lines) == [7, 8, 9, 10] && all.gap)
    #expect(!ring.lines(after: 6).gap && ring.lines(after: 5).gap)
    var small = RelayRing(capacity: 100, byteBound: 10)
    for n in 1...6 { _ = small.append(Self.line(n, size: 4)) }
    #expect(small.count == 2 && small.byteCount == 8)
    #expect(Self.numbers(small.lines(after: 4).lines) == [5, 6])
    // One line over the bound alone is kept (the newest is never dropped).
    _ = small.append(Self.line(7, size: 50))
    #expect(small.count == 1 && Self.numbers(small.lines(after: 0).lines) == [7])
  }

  @Test("Many appends: dropped entries are reclaimed, numbers stay consecutive")
  func many() {
    var ring = RelayRing(capacity: 1000, byteBound: 1 << 20)
    for n in 1...20_000 { _ = ring.append(Self.line(n, size: 1)) }
    #expect(ring.count == 1000 && ring.next == 20_001)
    let tail = ring.lines(after: 19_990)
    #expect(tail.lines.count == 10 && !tail.gap)
    #expect(ring.lines(after: 18_999).gap == true && ring.lines(after: 19_000).gap == false)
  }
}
