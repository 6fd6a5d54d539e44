// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// A webhook receiver's URL (`--webhook`, docs/webhooks.md), parsed once: where to connect
/// and what to ask for. The one reading of such a URL: ``WebhookOptions/problem(with:)`` is
/// its refusal, and ``WebhookClient`` connects to what it names.
struct WebhookURL: Equatable {
  var tls: Bool
  var host: String
  var port: Int
  /// The request target: the path and query (`/` when the URL has none).
  var path: String
  /// The `Host` header: the URL's authority (the host, and the port when given).
  var hostHeader: String

  /// Why a URL cannot be a webhook's address, said after the URL.
  struct Problem: Error, Equatable {
    var message: String
  }

  /// `url` as a webhook's address: `http://` or `https://`, a host (a name, an IPv4 address
  /// or `[` an IPv6 address `]`), an optional port 1–65535, no user or password, no fragment,
  /// ASCII without spaces or control characters.
  static func parse(_ url: String) -> Result<WebhookURL, Problem> {
    func problem(_ message: String) -> Result<WebhookURL, Problem> {
      .failure(Problem(message: message))
    }
    let lower = url.lowercased()
    guard let scheme = ["https://", "http://"].first(where: { lower.hasPrefix($0) }) else {
      return problem("is not an http:// or https:// URL")
    }
    let rest = url.dropFirst(scheme.count)
    let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    if authority.contains("@") {
      return problem("carries a user name or password: give a --webhook-secret instead")
    }
    // The host, and what follows it in the authority (empty, or ":PORT").
    let host: Substring
    let afterHost: Substring
    if authority.hasPrefix("[") {
      guard let close = authority.firstIndex(of: "]") else {
        return problem("has an IPv6 address without its closing ]")
      }
      host = authority[authority.index(after: authority.startIndex)..<close]
      afterHost = authority[authority.index(after: close)...]
    } else {
      host = authority.prefix { $0 != ":" }
      afterHost = authority.dropFirst(host.count)
    }
    if host.isEmpty { return problem("has no host") }
    if url.contains("#") { return problem("has a fragment (#…), which is never sent") }
    if url.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
      return problem(
        "has spaces, control characters or characters beyond ASCII: percent-encode them")
    }
    var port = scheme == "https://" ? 443 : 80
    if !afterHost.isEmpty {
      let text = afterHost.hasPrefix(":") ? afterHost.dropFirst() : afterHost
      guard afterHost.hasPrefix(":"), let n = Int(text), (1...65535).contains(n) else {
        return problem("has a bad port \(text)")
      }
      port = n
    }
    let tail = rest.dropFirst(authority.count)
    return .success(
      WebhookURL(
        tls: scheme == "https://", host: String(host), port: port,
        path: tail.isEmpty ? "/" : tail.hasPrefix("?") ? "/" + tail : String(tail),
        hostHeader: String(authority)))
  }
}
