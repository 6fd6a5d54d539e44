// swift-tools-version: 6.0
// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
import PackageDescription

// A Swift service that uses a running `countdown serve` through the async client alone
// (CountdownClientNIO and the core's request types): it starts a countdown, follows its events
// and ends it. CI builds it and runs it against a real server (`make service-example`).
let package = Package(
  name: "GateService",
  platforms: [.macOS(.v15)],
  dependencies: [.package(name: "Countdown", path: "../..")],
  targets: [
    .executableTarget(
      name: "GateService",
      dependencies: [
        .product(name: "CountdownClientNIO", package: "Countdown"),
        .product(name: "Countdown", package: "Countdown"),
      ])
  ],
  swiftLanguageModes: [.v6]
)
