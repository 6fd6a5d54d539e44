// swift-tools-version: 6.0
// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
import PackageDescription

// A package that depends on Countdown the way a service would, one executable per library
// product, each linking that product alone. CI builds and runs each (`make consumer`), so a
// product that does not link on its own (a missing system library, say) fails CI.
let package = Package(
  name: "CountdownConsumer",
  dependencies: [.package(name: "Countdown", path: "../..")],
  targets: [
    .executableTarget(
      name: "CoreOnly", dependencies: [.product(name: "Countdown", package: "Countdown")]),
    .executableTarget(
      name: "LoopOnly", dependencies: [.product(name: "CountdownLoop", package: "Countdown")]),
    .executableTarget(
      name: "ClientOnly",
      dependencies: [.product(name: "CountdownClient", package: "Countdown")]),
  ],
  swiftLanguageModes: [.v6]
)
