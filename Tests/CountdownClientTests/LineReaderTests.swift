// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation
import Testing

@testable import CountdownClient

/// The line reader on a real pipe: lines that cross reads, the last line without its newline,
/// a descriptor with nothing yet.
@Suite("LineReader")
struct LineReaderTests {
  @Test("Lines split across writes come whole; the unfinished last one comes at the end")
  func acrossReads() throws {
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    let writeEnd = fds[1]
    let long = String(repeating: "x", count: 100_000)  // longer than one read of 64 KiB
    let writer = Thread {
      for piece in ["{\"a\":", "1}\n{\"b\"", ":2}\n\(long)\n", "tail"] {
        System.writeAll(writeEnd, Array(piece.utf8), socket: false)
        usleep(20_000)
      }
      System.close(writeEnd)
    }
    writer.start()
    var reader = LineReader(fd: fds[0])
    var lines: [String] = []
    try reader.forEachLine { lines.append(String(decoding: $0, as: UTF8.self)) }
    System.close(fds[0])
    #expect(lines == ["{\"a\":1}", "{\"b\":2}", long, "tail"])
  }

  @Test("readOnce on a non-blocking descriptor with nothing yet reads nothing and goes on")
  func nothingYet() throws {
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
    var reader = LineReader(fd: fds[0])
    var lines: [String] = []
    #expect(try reader.readOnce { lines.append(String(decoding: $0, as: UTF8.self)) })
    #expect(lines.isEmpty)
    System.writeAll(fds[1], Array("one\ntw".utf8), socket: false)
    #expect(try reader.readOnce { lines.append(String(decoding: $0, as: UTF8.self)) })
    #expect(lines == ["one"])
    System.close(fds[1])
    #expect(try !reader.readOnce { lines.append(String(decoding: $0, as: UTF8.self)) })
    #expect(lines == ["one", "tw"])
    System.close(fds[0])
  }

  @Test("A read that fails is a ReadFailure with the reason")
  func failure() {
    var reader = LineReader(fd: 9_999)
    #expect {
      try reader.forEachLine { _ in }
    } throws: { error in
      (error as? ReadFailure)?.message.contains("Bad file descriptor") == true
    }
  }
}
