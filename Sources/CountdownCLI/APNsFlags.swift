// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import ArgumentParser
import CountdownServer

/// `--apns-*`: where and as whom to send Live Activity pushes (docs/pushes.md).
struct APNsFlags: ParsableArguments {
  @Option(
    name: .customLong("apns-key"),
    help: "Apple's .p8 key file (a PKCS#8 PEM P-256 key): sends Live Activity pushes.")
  var key: String?

  @Option(name: .customLong("apns-key-id"), help: "The key's id (the JWT's kid).")
  var keyID: String?

  @Option(name: .customLong("apns-team-id"), help: "The Apple developer team id (the JWT's iss).")
  var teamID: String?

  @Option(
    name: .customLong("apns-topic"),
    help: "The app's bundle id (sent as apns-topic: BUNDLE_ID.push-type.liveactivity).")
  var topic: String?

  @Option(
    name: .customLong("apns-environment"),
    help: "production (api.push.apple.com) or development (api.sandbox.push.apple.com).")
  var environment = "production"

  @Option(
    name: .customLong("apns-url"),
    help: "Another gateway, https://HOST[:PORT] (a staging or test stand-in), instead of Apple's.")
  var url: String?

  @Option(
    name: .customLong("apns-ca"), help: "Extra trusted CA certificates (PEM) for the gateway.")
  var ca: String?

  @Option(
    name: .customLong("apns-timeout-ms"),
    help: "How long a push may wait for APNs's answer before the connection is made again.")
  var timeoutMs: Int64 = 10_000

  @Flag(
    name: .customLong("apns-channels"),
    help:
      "Broadcast channels (iOS 18): liveActivity.channel \"create\" or a channel id; one push per change on the channel, whatever the audience."
  )
  var channels = false

  @Option(
    name: .customLong("apns-manage-url"),
    help:
      "Another channel management API, https://HOST[:PORT], instead of Apple's (api-manage-broadcast…:2196, :2195 in development)."
  )
  var manageURL: String?

  @Flag(
    name: .customLong("apns-channels-reconcile"),
    help:
      "At start, delete the app's channels that no activity holds (this server owns every channel of the app; not for a cluster node)."
  )
  var reconcile = false

  /// The settings, nil when no `--apns-*` is given; a missing piece is an error that names it.
  func options() throws -> APNsOptions? {
    let given = [key, keyID, teamID, topic, url, ca, manageURL].contains { $0 != nil }
    guard given || channels || reconcile else { return nil }
    if manageURL != nil || reconcile, !channels {
      throw ValidationError(
        "\(manageURL != nil ? "--apns-manage-url" : "--apns-channels-reconcile") is for broadcast channels: give --apns-channels too (docs/pushes.md, \"Broadcast channels\")"
      )
    }
    if let manageURL, !manageURL.hasPrefix("https://") {
      throw ValidationError(
        "--apns-manage-url \(manageURL) must be https://HOST[:PORT] (the channel management API is HTTP/2 over TLS)"
      )
    }
    let missing = [
      ("--apns-key", key), ("--apns-key-id", keyID), ("--apns-team-id", teamID),
      ("--apns-topic", topic),
    ].filter { $0.1 == nil }.map(\.0)
    guard missing.isEmpty else {
      throw ValidationError(
        "\(given ? "Live Activity pushes" : "--apns-channels") need\(given ? "" : "s") \(missing.joined(separator: ", ")) as well (docs/pushes.md)"
      )
    }
    guard environment == "production" || environment == "development" else {
      throw ValidationError(
        "--apns-environment must be production or development, not \(environment)")
    }
    guard timeoutMs > 0 else { throw ValidationError("--apns-timeout-ms must be ≥ 1") }
    var o = APNsOptions(
      keyPath: key!, keyID: keyID!, teamID: teamID!, bundleID: topic!,
      production: environment == "production", url: url, caPath: ca)
    o.requestTimeoutMilliseconds = timeoutMs
    o.channels = channels
    o.manageURL = manageURL
    o.reconcileChannels = reconcile
    return o
  }
}
