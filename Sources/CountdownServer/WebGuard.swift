// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// What the HTTP API lets another web page do (docs/security.md; docs/security.md): the
/// decisions alone, on header values, so that each rule is tested without a socket.
///
/// - The `Host` header must name this server: the address it listens on (any address when it
///   listens on all of them: an address is never what a rebinding page can put there), a
///   loopback name, or a name given with `--public-host`. Else 421: a page on
///   `evil.example`, resolved to this machine, gets nothing.
/// - A request that changes state from a browser on another origin is refused with 403
///   `forbidden`, token or not: an `Origin` that is not the server's own (`null` included)
///   and not one of `--cors-origin`, or `Sec-Fetch-Site` other than `same-origin` or `none`.
///   A request with neither header is not a browser's (curl, scripts) and passes.
/// - CORS headers go only to the origins of `--cors-origin`.
struct WebGuard: Sendable {
  /// Host names (lowercased, without port or brackets) that name this server.
  let hostNames: Set<String>
  /// Whether any IP address is this server's (it listens on 0.0.0.0 or ::).
  let anyAddress: Bool
  /// Origins (`scheme://host[:port]`, lowercased) allowed across origins, with CORS headers.
  let corsOrigins: Set<String>
  /// `https` when the server speaks TLS, else `http`: the scheme of its own origin.
  let scheme: String

  /// - Parameters:
  ///   - listenHost: the host of `--http` (an address or a name).
  ///   - publicHosts: `--public-host` names.
  ///   - corsOrigins: `--cors-origin` origins.
  init(listenHost: String, publicHosts: [String], corsOrigins: [String], tls: Bool) {
    var names: Set<String> = ["localhost", "127.0.0.1", "::1"]
    names.insert(Self.normalized(listenHost))
    for h in publicHosts { names.insert(Self.normalized(h)) }
    hostNames = names
    switch System.hostKind(listenHost) {
    case .ipv4(_, let unspecified), .ipv6(_, let unspecified): anyAddress = unspecified
    case .name: anyAddress = false
    }
    self.corsOrigins = Set(corsOrigins.map { Self.origin($0) })
    scheme = tls ? "https" : "http"
  }

  /// What becomes of a request.
  enum Verdict: Equatable {
    case pass
    /// 421: the Host names another server (DNS rebinding).
    case misdirected(String)
    /// 403 `forbidden`: a state change from another origin.
    case forbidden(String)
  }

  /// Methods that change state.
  static func changesState(_ method: String) -> Bool {
    method == "POST" || method == "PATCH" || method == "DELETE" || method == "PUT"
  }

  /// The verdict on a request with these headers (nil where the header is absent).
  func check(method: String, host: String?, origin: String?, fetchSite: String?) -> Verdict {
    if let host {
      guard let name = Self.hostName(host), allows(hostName: name) else {
        return .misdirected(
          "this server does not answer to the host name \(JSONValue.string(host)) (a page on another name may have been pointed at it); use its address, localhost, or a name given with --public-host"
        )
      }
    }
    guard Self.changesState(method) else { return .pass }
    if let origin {
      let o = Self.origin(origin)
      let own = host.map { "\(scheme)://\(Self.origin($0))" }
      if o != own && !corsOrigins.contains(o) {
        return .forbidden(
          "a page on another origin (\(JSONValue.string(origin))) may not change activities here; serve it from this server, or name its origin with --cors-origin"
        )
      }
      if corsOrigins.contains(o) { return .pass }
    }
    if let site = fetchSite?.lowercased(), site != "same-origin", site != "none" {
      return .forbidden(
        "a request from a \(site) page (Sec-Fetch-Site) may not change activities here; serve the page from this server, or name its origin with --cors-origin"
      )
    }
    return .pass
  }

  /// Whether `origin` gets CORS headers.
  func allowsCORS(from origin: String?) -> Bool {
    guard let origin else { return false }
    return corsOrigins.contains(Self.origin(origin))
  }

  private func allows(hostName name: String) -> Bool {
    if hostNames.contains(name) { return true }
    if anyAddress, System.hostKind(name) != .name { return true }
    return false
  }

  // MARK: - Parsing

  /// The name of a `Host` value: lowercased, without the port, brackets or a final dot; nil
  /// when it is malformed (empty, a bad port, an unclosed bracket).
  static func hostName(_ host: String) -> String? {
    var h = Substring(host.lowercased())
    if h.hasPrefix("[") {
      guard let close = h.firstIndex(of: "]") else { return nil }
      let rest = h[h.index(after: close)...]
      guard rest.isEmpty || (rest.hasPrefix(":") && UInt16(rest.dropFirst()) != nil) else {
        return nil
      }
      return String(h[h.index(after: h.startIndex)..<close])
    }
    if let colon = h.lastIndex(of: ":") {
      guard UInt16(h[h.index(after: colon)...]) != nil else { return nil }
      h = h[..<colon]
    }
    if h.hasSuffix(".") { h = h.dropLast() }
    return h.isEmpty ? nil : String(h)
  }

  /// A name as listed: lowercased, brackets and a final dot removed.
  static func normalized(_ name: String) -> String {
    var h = Substring(name.lowercased())
    if h.hasPrefix("["), h.hasSuffix("]") { h = h.dropFirst().dropLast() }
    if h.hasSuffix(".") { h = h.dropLast() }
    return String(h)
  }

  /// An origin or host compared as written by browsers: lowercased, no final slash.
  static func origin(_ text: String) -> String {
    var o = Substring(text.lowercased())
    while o.hasSuffix("/") { o = o.dropLast() }
    return String(o)
  }
}
