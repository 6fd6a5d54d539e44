// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "Countdown",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "Countdown", targets: ["Countdown"]),
    .library(name: "CountdownLoop", targets: ["CountdownLoop"]),
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
    // The core rounds Doubles (trunc, ceil, …), which live in libm on Linux: link it here, so
    // that a package depending on this product alone links (Examples/consumer checks it).
    .target(name: "Countdown", linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
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
