// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Foundation

/// Where the test bundle and the built `countdown` executable live.
enum CLI {
  static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

  static var executable: URL {
    var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    // Inside an .xctest bundle on some platforms, step out of it.
    while dir.pathExtension == "xctest" || dir.lastPathComponent == "Contents"
      || dir.lastPathComponent == "MacOS"
    {
      dir.deleteLastPathComponent()
    }
    return dir.appendingPathComponent("countdown")
  }

  struct Result {
    var status: Int32
    var stdout: String
    var stderr: String
  }

  /// Runs `countdown` with `arguments`, feeding `input` on standard input. The blocking
  /// waits happen on a thread of their own, so that a long run never holds one of the few
  /// threads of Swift's cooperative pool (which the real-loop tests need meanwhile).
  static func run(_ arguments: [String], input: Data? = nil) async throws -> Result {
    try await runIn(nil, arguments, input: input)
  }

  /// `run` in the working directory `directory` (nil: this process's).
  static func runIn(_ directory: URL?, _ arguments: [String], input: Data? = nil) async throws
    -> Result
  {
    let box = ResultBox()
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
      Thread {
        box.result = Swift.Result { try runBlocking(directory, arguments, input: input) }
        c.resume()
      }.start()
    }
    return try box.result!.get()
  }

  /// Carries a result out of the runner thread; read only after it finished.
  final class ResultBox: @unchecked Sendable {
    var result: Swift.Result<Result, any Error>?
  }

  private static func runBlocking(_ directory: URL?, _ arguments: [String], input: Data?) throws
    -> Result
  {
    let p = Process()
    p.executableURL = executable
    if let directory { p.currentDirectoryURL = directory }
    p.arguments = arguments
    let inPipe = Pipe()
    let outPipe = Pipe()
    let errPipe = Pipe()
    p.standardInput = inPipe
    p.standardOutput = outPipe
    p.standardError = errPipe
    try p.run()
    // Feed and drain concurrently so that large streams cannot deadlock on full pipes.
    let writer = Thread {
      if let input { inPipe.fileHandleForWriting.write(input) }
      try? inPipe.fileHandleForWriting.close()
    }
    writer.start()
    let errBox = DataBox()
    let errReader = Thread { errBox.data = errPipe.fileHandleForReading.readDataToEndOfFile() }
    errReader.start()
    let out = outPipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    while errReader.isExecuting || !errReader.isFinished { usleep(1_000) }
    return Result(
      status: p.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
      stderr: String(decoding: errBox.data, as: UTF8.self))
  }
}

/// Carries bytes out of a reader thread; read only after the thread finished.
final class DataBox: @unchecked Sendable {
  var data = Data()
}
