// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Testing

@testable import CountdownServer

/// `--webhook` URLs: the one parser the flags' check and the client share.
@Suite("Webhook URLs")
struct WebhookURLTests {
  func parsed(_ url: String) -> WebhookURL? { try? WebhookURL.parse(url).get() }
  func problem(_ url: String) -> String? { WebhookOptions.problem(with: url) }

  @Test("Host, port, path and Host header, for names, IPv4 and IPv6, with the scheme's port")
  func parts() {
    #expect(
      parsed("http://hooks.example/a/b?x=1")
        == WebhookURL(
          tls: false, host: "hooks.example", port: 80, path: "/a/b?x=1",
          hostHeader: "hooks.example"))
    #expect(
      parsed("HTTPS://10.0.0.5:8443")
        == WebhookURL(
          tls: true, host: "10.0.0.5", port: 8443, path: "/", hostHeader: "10.0.0.5:8443"))
    #expect(
      parsed("https://[::1]:9/h")
        == WebhookURL(tls: true, host: "::1", port: 9, path: "/h", hostHeader: "[::1]:9"))
    #expect(
      parsed("http://h?q")
        == WebhookURL(tls: false, host: "h", port: 80, path: "/?q", hostHeader: "h"))
  }

  @Test("Refused, naming why; what the check refuses the client never parses otherwise")
  func refused() {
    let cases: [(String, String)] = [
      ("ftp://h/", "is not an http:// or https:// URL"),
      ("http:///x", "has no host"),
      ("http://:80/", "has no host"),
      ("http://u:p@h/", "carries a user name or password"),
      ("http://h/#f", "has a fragment"),
      ("http://h/a b", "has spaces"),
      ("http://h:0/", "has a bad port 0"),
      ("http://h:99999/", "has a bad port 99999"),
      ("http://h:1:2/", "has a bad port 1:2"),
      ("http://h:/", "has a bad port "),
      ("http://[::1/", "has an IPv6 address without its closing ]"),
      ("http://[::1]x/", "has a bad port x"),
    ]
    for (url, message) in cases {
      #expect(problem(url)?.hasPrefix(message) == true, "\(url): \(problem(url) ?? "accepted")")
      #expect(parsed(url) == nil)
    }
  }
}
