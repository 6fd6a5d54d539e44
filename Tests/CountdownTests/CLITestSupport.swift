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

  /// Runs `countdown` with `arguments`, feeding `input` on standard input.
  static func run(_ arguments: [String], input: Data? = nil) throws -> Result {
    let p = Process()
    p.executableURL = executable
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
