import ArgumentParser

@main
struct CountdownCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "countdown",
    abstract: "Live Activity timers for Linux: replay scenarios, format durations, serve them.",
    subcommands: [
      ReplayCommand.self, FormatCommand.self, ServeCommand.self, SendCommand.self,
      BoardCommand.self,
    ]
  )
}
