// swift-tools-version: 6.0
// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
import PackageDescription

// The benchmark CLI lives in its own package so that users of the library never build the
// peers it compares against.
let package = Package(
  name: "CountdownBenchmarks",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "countdown-bench", targets: ["CountdownBench"])
  ],
  dependencies: [
    .package(name: "Countdown", path: ".."),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
    .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    // `push`'s local gateway: HTTP/2.
    .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
  ],
  targets: [
    .systemLibrary(
      name: "CBenchUV", path: "CSupport/CBenchUV", pkgConfig: "libuv",
      providers: [.apt(["libuv1-dev"])]),
    .executableTarget(
      name: "CountdownBench",
      dependencies: [
        .product(name: "Countdown", package: "Countdown"),
        .product(name: "CountdownLoop", package: "Countdown"),
        .product(name: "CountdownServer", package: "Countdown"),
        .product(name: "CountdownClient", package: "Countdown"),
        .product(name: "CountdownClientNIO", package: "Countdown"),
        .product(name: "CountdownCStatic", package: "Countdown"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Histogram", package: "hdrhistogram-swift"),
        "CBenchUV",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        // `webhook`'s local receiver: HTTP/1.1.
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "NIOHTTP2", package: "swift-nio-http2"),
        .product(name: "NIOHPACK", package: "swift-nio-http2"),
        .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)
