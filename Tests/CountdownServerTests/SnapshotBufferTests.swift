// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownProtocol
import NIOCore
import Testing

@testable import CountdownServer

/// The buffers of a large listing or event-stream snapshot (docs/protocol.md, "Memory"): made
/// once, of the size they need, and not kept by the writer that made them.
@Suite("Snapshot buffers")
struct SnapshotBufferTests {
  @Test("An event-stream snapshot is one buffer: the prefix, the SSE message, room after it")
  func sseInOneBuffer() {
    let json = Array("{\"at\":1,\"activities\":[]}\n".utf8)
    let buffer = EventFraming.sse(
      "snapshot", json, prefix: "retry: 1000\n\n", room: 4096, allocator: ByteBufferAllocator())
    let expected = Array("retry: 1000\n\n".utf8) + EventFraming.sse("snapshot", json)
    #expect(Array(buffer.readableBytesView) == expected)
    #expect(String(decoding: expected, as: UTF8.self).hasSuffix("[]}\n\n"))
    #expect(buffer.writableBytes >= 4096, "room for the events kept while it was built")
  }

  @Test("A writer hands over what it wrote and keeps at most 64 KiB of room, not a copy of it")
  func takeKeepsLittle() {
    var w = ReplyWriter(formatter: TimerFormatter(style: .timer))
    for _ in 0..<50_000 { w.out.raw("0123456789abcdefghij") }
    let taken = w.take()
    #expect(taken.count == 1_000_000)
    #expect(w.out.bytes.isEmpty)
    #expect(w.out.bytes.capacity <= (1 << 16) + 4096, "\(w.out.bytes.capacity) bytes of room kept")
    w.out.raw("{}")
    let small = w.take()
    #expect(small == Array("{}".utf8))
    #expect(w.out.bytes.capacity >= 2, "room for as much again")
  }
}
