import ArgumentParser

@main
struct CountdownCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "countdown",
    abstract: "Live Activity timers for Linux: replay scenarios, format durations.",
    subcommands: [ReplayCommand.self, FormatCommand.self]
  )
}
