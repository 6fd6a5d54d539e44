import ArgumentParser

@main
struct BenchCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "countdown-bench",
    abstract: "Measure Countdown beside what people would otherwise use.",
    subcommands: [FormatBench.self, TicksBench.self]
  )
}
