// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser

@main
struct BenchCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "countdown-bench",
    abstract: "Measure Countdown beside what people would otherwise use.",
    subcommands: [
      SuiteBench.self, TicksBench.self, WakeBench.self, FormatBench.self, OpsBench.self,
      ServeBench.self, ServeChild.self, CABIBench.self, StoreBench.self, SSEBench.self,
      FloorBench.self, AbuseBench.self, PushBench.self, WebhookBench.self, ClusterBench.self,
      MemoryBench.self, AccessBench.self,
    ],
    defaultSubcommand: SuiteBench.self
  )
}
