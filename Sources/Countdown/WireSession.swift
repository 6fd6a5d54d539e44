// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Applies protocol lines to an engine and collects the JSON Lines it answers with. Pure: the
/// caller reads input, supplies instants (the lines' `at`), and writes the output.
///
/// The clock starts at the first line with a valid `at`. A line rejected while decoding (bad
/// JSON, unknown `op`, a bad field) leaves everything unchanged, the clock included. A command
/// the engine rejects (`notFound`, `activityEnded`, …) is judged at its instant, after the
/// events due by then, so the clock has moved to it.
public final class WireSession {
  /// The engine, once the first valid line has set the clock.
  public private(set) var engine: ActivityEngine?
  private let options: EngineOptions
  private let sink: Sink

  /// Holds the writer the engine's event handler appends to, and hands its bytes to `output`
  /// whenever they pass `threshold`, so that output stays bounded even when one command
  /// produces billions of ticks.
  private final class Sink {
    var writer: WireEventWriter
    let output: (([UInt8]) -> Void)?
    let threshold: Int

    init(_ w: WireEventWriter, output: (([UInt8]) -> Void)?, threshold: Int) {
      writer = w
      self.output = output
      self.threshold = threshold
    }

    func write(_ e: ActivityEvent) {
      writer.write(e)
      if let output, writer.out.bytes.count >= threshold { output(writer.take()) }
    }
  }

  /// A session writing `text` with `formatter`, and ticks only when `writesTicks`. Without
  /// ticks the engine keeps no tick schedule at all. With `output`, the session hands over
  /// its output whenever it passes `outputThreshold` bytes (the caller still takes the rest
  /// with ``takeOutput()``); without it, output waits for ``takeOutput()``.
  public init(
    formatter: TimerFormatter, writesTicks: Bool, options: EngineOptions = EngineOptions(),
    outputThreshold: Int = 1 << 16, output: (([UInt8]) -> Void)? = nil
  ) {
    var options = options
    options.deliversTicks = writesTicks
    self.options = options
    self.sink = Sink(
      WireEventWriter(formatter: formatter, writesTicks: writesTicks), output: output,
      threshold: outputThreshold)
  }

  /// Handles one input line (1-based `number`). Blank lines are skipped.
  public func handle(line: some StringProtocol, number: Int) {
    if Self.isBlank(line.utf8) { return }
    handle(WireCommand.decode(line: line), number: number)
  }

  /// Handles one input line of raw bytes (1-based `number`), as read from a file or a socket:
  /// bytes that are not UTF-8 give an `invalidPayload` error naming the first bad byte.
  public func handle(bytes: UnsafeBufferPointer<UInt8>, number: Int) {
    if Self.isBlank(bytes) { return }
    handle(WireCommand.decode(bytes: bytes), number: number)
  }

  private static func isBlank(_ bytes: some Sequence<UInt8>) -> Bool {
    bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
  }

  private func handle(_ decoded: Result<WireCommand, WireDecodingFailure>, number: Int) {
    switch decoded {
    case .failure(let f):
      sink.writer.write(error: f.error, line: number, at: engine?.now, id: f.id)
    case .success(let c):
      apply(c, number: number)
    }
  }

  /// Applies one decoded command.
  public func apply(_ c: WireCommand, number: Int) {
    if engine == nil {
      let sink = self.sink
      engine = ActivityEngine(now: c.at, options: options) { sink.write($0) }
    }
    do throws(CountdownError) {
      if case .state(let s) = try engine!.apply(c.operation, id: c.id, at: c.at) {
        sink.writer.write(state: s, at: c.at)
      }
    } catch {
      sink.writer.write(error: error, line: number, at: engine!.now, id: c.id)
    }
  }

  /// The output written since the last call.
  public func takeOutput() -> [UInt8] { sink.writer.take() }

  /// Bytes of output waiting.
  public var pendingOutput: Int { sink.writer.out.bytes.count }
}
