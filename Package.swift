// swift-tools-version: 6.1
// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
import PackageDescription

let package = Package(
  name: "Countdown",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "Countdown", targets: ["Countdown"]),
    .library(name: "CountdownLoop", targets: ["CountdownLoop"]),
    .library(name: "CountdownServer", targets: ["CountdownServer"]),
    // A client of `countdown serve` without SwiftNIO: the socket, and the time model the boards
    // share (what an activity object shows at an instant).
    .library(name: "CountdownClient", targets: ["CountdownClient"]),
    // The async client a Swift service uses (typed requests, pipelined; subscriptions that
    // reconnect), on SwiftNIO for TLS: a product of its own so that CountdownClient stays
    // free of NIO.
    .library(name: "CountdownClientNIO", targets: ["CountdownClientNIO"]),
    // The C ABI: libCountdownC.so, installed as libcountdown.so by `make install` (a library
    // product named "countdown" would collide with the executable's name).
    .library(name: "CountdownC", type: .dynamic, targets: ["CountdownC"]),
    // The same C entry points linked statically, for a Swift package that drives the C ABI
    // (countdown-bench's c-abi driver) without a second copy of the core in a shared library.
    .library(name: "CountdownCStatic", targets: ["CountdownC"]),
    .executable(name: "countdown", targets: ["CountdownCLI"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
    // NIOHTTPTypes: the HTTP body parts an event stream writes straight to its connection.
    .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    // HTTP (docs/http.md). Its default traits pull in swift-configuration and Foundation's
    // networking, which the service does not use (the store's writer thread uses Foundation's
    // Thread, nothing more).
    .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    // HTTPField names of the web-safety headers (Hummingbird re-exports only the containers).
    .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    // TLS for HTTP and --listen (--tls-cert, --tls-key): BoringSSL through SwiftNIO.
    .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    // Live Activity pushes (docs/pushes.md): HTTP/2 to APNs, and the ES256 provider token.
    .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
    .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    // The cluster's store (docs/cluster.md): PostgreSQL's wire protocol, on SwiftNIO.
    .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    // `make docs`: the DocC catalogs (swift package generate-documentation).
    .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
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
    // CPrefetch: a header of prefetch hints, inlined into the core (nothing to link).
    .systemLibrary(name: "CPrefetch", path: "CSupport/CPrefetch"),
    .target(
      name: "Countdown", dependencies: ["CPrefetch"],
      linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
    .target(name: "CountdownLoop", dependencies: ["Countdown", "CLibUV"]),
    // The service protocol's requests, batches and replies (docs/protocol.md), free of NIO so that the
    // C ABI shares them.
    .target(name: "CountdownProtocol", dependencies: ["Countdown", "CountdownLoop"]),
    // include/countdown.h, the C ABI's hand-written header, as a module for the Swift side.
    .systemLibrary(name: "CCountdownABI", path: "include"),
    .target(
      name: "CountdownC",
      dependencies: ["Countdown", "CountdownLoop", "CountdownProtocol", "CCountdownABI"]),
    // Durable state (docs/state-file.md): SQLite in WAL mode through GRDB, written by its
    // own thread with group commit. Debian's libsqlite3-dev (`make deps`).
    .target(
      name: "CountdownStore",
      dependencies: ["Countdown", "CountdownPush", .product(name: "GRDB", package: "GRDB.swift")]),
    // The same state in PostgreSQL (docs/cluster.md): the store a cluster's nodes share.
    .target(
      name: "CountdownPostgres",
      dependencies: [
        "Countdown", "CountdownPush", "CountdownStore", "CountdownCluster", "CountdownNIO",
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "Logging", package: "swift-log"),
      ]),
    .target(name: "CountdownClient", dependencies: ["Countdown"]),
    .target(
      name: "CountdownClientNIO",
      dependencies: [
        "Countdown", "CountdownClient", "CountdownNIO",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOExtras", package: "swift-nio-extras"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "NIOTLS", package: "swift-nio"),
      ]),
    // What the SwiftNIO-based targets share: the one timer armed for what is due next.
    .target(
      name: "CountdownNIO",
      dependencies: [
        "Countdown", .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
      ]),
    // Live Activity pushes' decisions (docs/pushes.md), pure and clock-free: the budget per
    // activity and token, what APNs's answers mean, the retry schedule.
    .target(name: "CountdownPush", dependencies: ["Countdown"]),
    // The cluster's decisions (docs/cluster.md), pure and clock-free: which shards a
    // node acquires, renews, stops serving and hands over; how its engine is made from them.
    .target(name: "CountdownCluster", dependencies: ["Countdown"]),
    // The APNs client (docs/pushes.md): one HTTP/2 connection over TLS, the provider JWT.
    .target(
      name: "CountdownAPNs",
      dependencies: [
        "CountdownPush", "CountdownNIO",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOTLS", package: "swift-nio"),
        .product(name: "NIOHTTP2", package: "swift-nio-http2"),
        .product(name: "NIOHPACK", package: "swift-nio-http2"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "Crypto", package: "swift-crypto"),
      ]),
    // The service (docs/protocol.md): sockets on SwiftNIO, the engine on CountdownLoop's thread.
    .target(
      name: "CountdownServer",
      dependencies: [
        "Countdown", "CountdownLoop", "CountdownProtocol", "CountdownStore", "CountdownClient",
        "CountdownPush", "CountdownAPNs", "CountdownPostgres", "CountdownCluster", "CountdownNIO",
        // memory.h's hold on the allocator's mmap threshold (docs/protocol.md, "Memory").
        "CPrefetch",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
        // ServerQuiescingHelper: HTTP's graceful stop.
        .product(name: "NIOExtras", package: "swift-nio-extras"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "HummingbirdCore", package: "hummingbird"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "Crypto", package: "swift-crypto"),
      ]
    ),
    .executableTarget(
      name: "CountdownCLI",
      dependencies: [
        "Countdown", "CountdownLoop", "CountdownServer", "CountdownClient", "CountdownClientNIO",
        "CountdownPostgres",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      ]
    ),
    // What the engine's and the state file's tests share: a recorder of events, random runs
    // of commands, an engine holding every stored state. Public API only, so that it builds in
    // any configuration.
    .target(
      name: "CountdownTestSupport", dependencies: ["Countdown"], path: "Tests/CountdownTestSupport"),
    .testTarget(
      name: "CountdownTests", dependencies: ["Countdown", "CLibUV", "CountdownTestSupport"]),
    // The command line run as a process (`replay`, `format`), on the fixture files.
    .testTarget(name: "CountdownCLITests", dependencies: ["CountdownCLI"], exclude: ["Fixtures"]),
    .testTarget(
      name: "CountdownLoopTests", dependencies: ["CountdownLoop", "Countdown", "CountdownCluster"]),
    .testTarget(name: "CountdownClientTests", dependencies: ["CountdownClient", "Countdown"]),
    .testTarget(
      name: "CountdownNIOTests",
      dependencies: [
        "CountdownNIO", "CountdownTestSupport", .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
      ]),
    .testTarget(
      name: "CountdownClusterTests",
      dependencies: ["CountdownCluster", "Countdown", "CountdownTestSupport"]),
    .testTarget(
      name: "CountdownPushTests",
      dependencies: ["CountdownPush", "Countdown", "CountdownTestSupport"]),
    .testTarget(
      name: "CountdownAPNsTests",
      dependencies: [
        "CountdownAPNs", "CountdownTestSupport",
        .product(name: "Crypto", package: "swift-crypto"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP2", package: "swift-nio-http2"),
        .product(name: "NIOHPACK", package: "swift-nio-http2"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
      ]),
    .testTarget(name: "CountdownProtocolTests", dependencies: ["CountdownProtocol", "Countdown"]),
    .testTarget(
      name: "CountdownStoreTests",
      dependencies: [
        "CountdownStore", "Countdown", "CountdownTestSupport",
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      exclude: ["Fixtures"]),
    .testTarget(
      name: "CountdownPostgresTests",
      dependencies: [
        "CountdownPostgres", "CountdownStore", "CountdownCluster", "Countdown",
        "CountdownTestSupport",
      ]),
    // What the server's tests and the served process's share: a client socket, a server run in
    // the test's process, `countdown serve` as a child, a partitioning proxy.
    .target(
      name: "CountdownServerTestSupport",
      dependencies: [
        "CountdownServer", "CountdownClient", "Countdown", "CountdownTestSupport",
        .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
      ],
      path: "Tests/CountdownServerTestSupport"),
    // The server's parts, in the test's process.
    .testTarget(
      name: "CountdownServerTests",
      dependencies: [
        "CountdownServer", "CountdownNIO", "CountdownStore", "Countdown",
        "CountdownClient", "CountdownCluster", "CountdownServerTestSupport",
        "CountdownTestSupport", "CountdownPostgres", .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "Crypto", package: "swift-crypto"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
      ]),
    // The async client against real servers: in this process over real sockets (Unix, TCP,
    // TLS, keys), and `countdown serve` as a process for restarts.
    .testTarget(
      name: "CountdownClientNIOTests",
      dependencies: [
        "CountdownClientNIO", "CountdownClient", "CountdownServer", "Countdown", "CountdownCLI",
        "CountdownServerTestSupport", "CountdownTestSupport",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ]),
    // `countdown serve` run as a process (the executable built from CountdownCLI): restarts,
    // kill -9, signals, file modes, limits, TLS files, a cluster of nodes.
    .testTarget(
      name: "CountdownServeTests",
      dependencies: [
        "CountdownCLI", "CountdownServer", "CountdownStore", "Countdown", "CountdownClient",
        "CountdownClientNIO", "CountdownCluster", "CountdownServerTestSupport",
        "CountdownTestSupport",
        "CountdownPostgres", .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
      ]),
  ],
  swiftLanguageModes: [.v6]
)
