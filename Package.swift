// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "Countdown",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "Countdown", targets: ["Countdown"]),
    .library(name: "CountdownLoop", targets: ["CountdownLoop"]),
    // libuv itself, for the benchmark's one-uv_timer_t-per-activity peer.
    .library(name: "CLibUV", targets: ["CLibUV"]),
    .executable(name: "countdown", targets: ["CountdownCLI"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2")
  ],
  targets: [
    .systemLibrary(
      name: "CLibUV",
      path: "CSupport/CLibUV",
      pkgConfig: "libuv",
      providers: [.apt(["libuv1-dev"])]
    ),
    .target(name: "Countdown"),
    .target(name: "CountdownLoop", dependencies: ["Countdown", "CLibUV"]),
    .executableTarget(
      name: "CountdownCLI",
      dependencies: [
        "Countdown",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),
    .testTarget(
      name: "CountdownTests",
      dependencies: ["Countdown", "CLibUV", "CountdownCLI"],
      exclude: ["Fixtures"]
    ),
    .testTarget(name: "CountdownLoopTests", dependencies: ["CountdownLoop", "Countdown"]),
  ],
  swiftLanguageModes: [.v6]
)
