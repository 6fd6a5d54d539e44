// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser

@main
struct CountdownCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "countdown",
    abstract: "Live Activity timers for Linux: replay scenarios, format durations, serve them.",
    // The release's version, the C header's CD_VERSION_* (the package test holds them equal).
    version: "0.4.0",
    subcommands: [
      ReplayCommand.self, FormatCommand.self, ServeCommand.self, SendCommand.self,
      BoardCommand.self,
    ]
  )
}
