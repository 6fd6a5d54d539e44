// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// docs/security.md: the decisions alone (``WebGuard``, ``HTTPConnectionTimer``), then
/// each finding of the probe against a real server on real sockets. The browser's side (a
/// form and a fetch from another origin, a rebound name, a frame) is in Tests/browser.
@Suite("WebGuard")
struct WebGuardTests {
  let local = WebGuard(listenHost: "127.0.0.1", publicHosts: [], corsOrigins: [], tls: false)

  @Test("The Host must name this server: its address, a loopback name or a public host")
  func hosts() {
    for host in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "127.0.0.1"] {
      #expect(local.check(method: "GET", host: host, origin: nil, fetchSite: nil) == .pass)
    }
    for host in [
      "evil.example:8080", "evil.example", "127.attacker.example:80", "10.0.0.5:8080", "",
      "127.0.0.1:notaport", "[::1",
    ] {
      guard case .misdirected = local.check(method: "GET", host: host, origin: nil, fetchSite: nil)
      else {
        Issue.record("\(host) passed")
        continue
      }
    }
    let named = WebGuard(
      listenHost: "127.0.0.1", publicHosts: ["Kiosk.Local."], corsOrigins: [], tls: false)
    #expect(
      named.check(method: "GET", host: "kiosk.local:80", origin: nil, fetchSite: nil) == .pass)
    // Listening on every address, any address (never a name) is this server's.
    let all = WebGuard(listenHost: "0.0.0.0", publicHosts: [], corsOrigins: [], tls: false)
    #expect(
      all.check(method: "GET", host: "192.168.1.20:8080", origin: nil, fetchSite: nil) == .pass)
    #expect(all.check(method: "GET", host: "[fe80::1]:8080", origin: nil, fetchSite: nil) == .pass)
    guard
      case .misdirected = all.check(
        method: "GET", host: "evil.example", origin: nil, fetchSite: nil)
    else { return #expect(Bool(false), "a name passed on 0.0.0.0") }
  }

  @Test("A state change from another origin is forbidden; same origin and no browser pass")
  func origins() {
    let h = "127.0.0.1:8080"
    for method in ["POST", "PATCH", "DELETE", "PUT"] {
      for (origin, site) in [
        ("http://evil.example", nil), ("null", nil), ("http://127.0.0.1:9999", nil),
        ("https://127.0.0.1:8080", nil), (nil, "cross-site"), (nil, "same-site"),
        ("http://127.0.0.1:8080", "cross-site"),
      ] as [(String?, String?)] {
        guard
          case .forbidden = local.check(method: method, host: h, origin: origin, fetchSite: site)
        else {
          Issue.record("\(method) from \(origin ?? "-") \(site ?? "-") passed")
          continue
        }
      }
      #expect(local.check(method: method, host: h, origin: nil, fetchSite: nil) == .pass)
      #expect(
        local.check(method: method, host: h, origin: "http://127.0.0.1:8080", fetchSite: nil)
          == .pass)
      #expect(
        local.check(
          method: method, host: h, origin: "http://127.0.0.1:8080", fetchSite: "same-origin")
          == .pass)
      #expect(local.check(method: method, host: h, origin: nil, fetchSite: "none") == .pass)
    }
    // Reading is not a state change (the browser keeps another origin from reading the answer).
    #expect(
      local.check(method: "GET", host: h, origin: "http://evil.example", fetchSite: "cross-site")
        == .pass)
  }

  @Test("CORS only for the origins of --cors-origin")
  func cors() {
    let g = WebGuard(
      listenHost: "127.0.0.1", publicHosts: [], corsOrigins: ["https://App.example/"], tls: false)
    #expect(
      g.check(
        method: "POST", host: "127.0.0.1:1", origin: "https://app.example", fetchSite: "cross-site")
        == .pass)
    #expect(g.allowsCORS(from: "https://app.example"))
    #expect(!g.allowsCORS(from: "https://evil.example"))
    #expect(!g.allowsCORS(from: nil))
    #expect(!local.allowsCORS(from: "https://app.example"))
  }
}

@Suite("HTTPConnectionTimer")
struct HTTPConnectionTimerTests {
  @Test("Head, body and keep-alive deadlines on a virtual clock; none while responding")
  func deadlines() {
    var t = HTTPConnectionTimer(headTimeout: 10, bodyTimeout: 30)
    #expect(t.opened(now: 0) == .arm(10))
    #expect(t.fired(now: 9) == .arm(10))
    #expect(t.readHead(now: 9) == .arm(39))
    #expect(t.fired(now: 20) == .arm(39))
    #expect(t.readEnd(now: 21) == .disarm)
    // Responding (an event stream for hours): nothing is timed.
    #expect(t.fired(now: 10_000) == .disarm)
    #expect(t.wroteEnd(now: 10_001) == .arm(10_011))
    #expect(t.fired(now: 10_011) == .close(what: "a request head"))

    var slowBody = HTTPConnectionTimer(headTimeout: 10, bodyTimeout: 30)
    _ = slowBody.opened(now: 0)
    _ = slowBody.readHead(now: 5)
    #expect(slowBody.fired(now: 35) == .close(what: "a request body"))

    // Pipelined: a second head read while the first is answered; its end re-arms nothing
    // until both responses are written.
    var p = HTTPConnectionTimer(headTimeout: 10, bodyTimeout: 30)
    _ = p.opened(now: 0)
    _ = p.readHead(now: 1)
    _ = p.readEnd(now: 1)
    _ = p.readHead(now: 2)
    _ = p.readEnd(now: 2)
    #expect(p.wroteEnd(now: 3) == .none)
    #expect(p.wroteEnd(now: 4) == .arm(14))
  }
}

@Suite("Web safety, served", .serialized)
struct WebSafetyServedTests {
  @Test("DNS rebinding: a Host that is not this server gets 421 and no activity")
  func rebinding() async throws {
    try await onThread {
      let h = try HTTPServer()
      _ = try h(
        "POST", "/v1/activities",
        #"{"id":"secret","kind":"countdown","endDate":4102444800000,"title":"S"}"#)
      let r = try h("GET", "/v1/activities", headers: ["Host": "evil.example:\(h.port)"])
      #expect(r.status == 421)
      #expect(r.code == "misdirected")
      #expect(!r.body.contains("secret"))
      #expect(
        try h("GET", "/v1/activities", headers: ["Host": "localhost:\(h.port)"]).status == 200)
      let named = try HTTPServer { $0.publicHosts = ["kiosk.lan"] }
      #expect(
        try named("GET", "/v1/activities", headers: ["Host": "kiosk.lan:\(named.port)"]).status
          == 200)
    }
  }

  @Test("Cross-site requests cannot change state, token or not; curl's still can")
  func crossSite() async throws {
    try await onThread {
      for token in [nil, "tok"] as [String?] {
        let h = try HTTPServer { $0.token = token }
        var auth: [String: String] = [:]
        if let token { auth["Authorization"] = "Bearer \(token)" }
        let start = #"{"id":"x","kind":"countdown","endDate":4102444800000,"title":"Gate"}"#
        #expect(try h("POST", "/v1/activities", start, headers: auth).status == 201)
        let evil = #"{"id":"e","kind":"countdown","endDate":4102444800000,"title":"EVACUATE NOW"}"#
        for headers in [
          ["Origin": "http://evil.example"], ["Origin": "null"],
          ["Sec-Fetch-Site": "cross-site"],
          ["Origin": "http://evil.example", "Content-Type": "text/plain"],
        ] {
          let all = headers.merging(auth) { $1 }
          let made = try h("POST", "/v1/activities", evil, headers: all)
          #expect(made.status == 403 && made.code == "forbidden", "\(headers)")
          let ended = try h("POST", "/v1/activities/x/end", "{}", headers: all)
          #expect(ended.status == 403, "\(headers)")
          let patched = try h("PATCH", "/v1/activities/x", #"{"title":"PWNED"}"#, headers: all)
          #expect(patched.status == 403, "\(headers)")
        }
        let x = try h("GET", "/v1/activities/x", headers: auth)
        #expect(x.json["phase"] as? String == "active")
        #expect((x.json["content"] as? [String: Any])?["title"] as? String == "Gate")
        #expect(try h("GET", "/v1/activities/e", headers: auth).status == 404)
        // The board's own requests (same origin) and scripts (no Origin) pass.
        let own = [
          "Host": "127.0.0.1:\(h.port)", "Origin": "http://127.0.0.1:\(h.port)",
          "Sec-Fetch-Site": "same-origin",
        ]
        #expect(
          try h("POST", "/v1/activities/x/pause", "{}", headers: own.merging(auth) { $1 }).status
            == 200)
        #expect(try h("POST", "/v1/activities/x/resume", "{}", headers: auth).status == 200)
      }
    }
  }

  @Test("Never framed; CORS headers only for --cors-origin")
  func headers() async throws {
    try await onThread {
      let h = try HTTPServer()
      for path in ["/", "/v1/activities", "/v1/time", "/nowhere"] {
        let r = try h("GET", path, headers: ["Origin": "https://app.example"])
        #expect(r.headers["x-frame-options"] == "DENY", "\(path)")
        #expect(r.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true)
        #expect(r.headers["access-control-allow-origin"] == nil)
      }
      let preflight = try h(
        "OPTIONS", "/v1/activities",
        headers: ["Origin": "https://app.example", "Access-Control-Request-Method": "POST"])
      #expect(preflight.headers["access-control-allow-origin"] == nil)

      let open = try HTTPServer { $0.corsOrigins = ["https://app.example"] }
      let p = try open(
        "OPTIONS", "/v1/activities",
        headers: ["Origin": "https://app.example", "Access-Control-Request-Method": "POST"])
      #expect(p.status == 204)
      #expect(p.headers["access-control-allow-origin"] == "https://app.example")
      #expect(p.headers["access-control-allow-headers"]?.contains("Authorization") == true)
      let made = try open(
        "POST", "/v1/activities", #"{"kind":"countdown","endDate":4102444800000,"title":"A"}"#,
        headers: ["Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"])
      #expect(made.status == 201)
      #expect(made.headers["access-control-allow-origin"] == "https://app.example")
      #expect(
        try open("GET", "/v1/time", headers: ["Origin": "https://evil.example"])
          .headers["access-control-allow-origin"] == nil)
    }
  }

  @Test("Slow HTTP clients are closed: a head a byte at a time, a body that never ends")
  func slowClients() async throws {
    try await onThread {
      let h = try HTTPServer {
        $0.headerTimeoutMilliseconds = 600
        $0.bodyTimeoutMilliseconds = 600
      }
      let started = Date()
      // Slowloris: 20 heads, a byte every 200 ms.
      let slow = try (0..<20).map { _ in try TestClient(tcpPort: h.port) }
      var closedAll = false
      for byte in Array("GET /v1/activities HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: b".utf8) {
        for c in slow { c.sendBytes([byte]) }
        usleep(200_000)
        if slow.allSatisfy({ $0.closed(within: 0.001) }) {
          closedAll = true
          break
        }
      }
      #expect(closedAll)
      #expect(Date().timeIntervalSince(started) < 5)
      // An unterminated chunked body, and a body shorter than its Content-Length.
      let chunked = try TestClient(tcpPort: h.port)
      chunked.send(
        "POST /v1/activities HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":"
      )
      let short = try TestClient(tcpPort: h.port)
      short.send("POST /v1/activities HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
      #expect(chunked.closed(within: 3))
      #expect(short.closed(within: 3))
      // A well-behaved client is served meanwhile.
      #expect(try h("GET", "/v1/time").status == 200)
    }
  }

  @Test("A Content-Length over the limit is refused from the head, without reading the body")
  func hugeContentLength() async throws {
    try await onThread {
      let h = try HTTPServer()
      let c = try TestClient(tcpPort: h.port)
      let started = Date()
      c.send(
        "POST /v1/activities HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n{"
      )
      let status = c.line(timeout: 3)
      #expect(status?.hasPrefix("HTTP/1.1 413") == true)
      #expect(Date().timeIntervalSince(started) < 2)
      #expect(c.closed(within: 3))
    }
  }

  @Test("--max-connections counts the socket, TCP, HTTP and event streams together")
  func oneLimit() async throws {
    try await onThread {
      let h = try HTTPServer {
        $0.maxConnections = 4
        $0.listen = "127.0.0.1:0"
      }
      let tcpPort = h.running.server.tcpAddress!.port!
      let unix = try h.running.client()
      #expect(try unix.request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      let tcp = try TestClient(tcpPort: tcpPort)
      #expect(try tcp.request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      let stream = try EventStream(port: h.port)
      #expect(stream.next()?.name == "snapshot")
      let keepAlive = try TestClient(tcpPort: h.port)
      keepAlive.send("GET /v1/time HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
      #expect(keepAlive.line()?.hasPrefix("HTTP/1.1 200") == true)
      // Four held: a fifth over TCP or HTTP is refused.
      let refusedHTTP = try http("GET", "/v1/time", port: h.port)
      #expect(refusedHTTP.status == 429 && refusedHTTP.code == "limitReached")
      let refusedTCP = try TestClient(tcpPort: tcpPort).json()
      #expect(refusedTCP["code"] as? String == "limitReached")
      // The Unix socket has a few more (the operator's `countdown send` gets in); past them it
      // is refused too.
      var operators: [TestClient] = []
      for _ in 0..<CountdownServer.operatorRoom {
        let c = try h.running.client()
        #expect(try c.request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
        operators.append(c)
      }
      let refusedUnix = try h.running.client().json()
      #expect(refusedUnix["code"] as? String == "limitReached")
    }
  }

  @Test("A line begun and not ended, or a token not sent, closes the connection in time")
  func lineTimeout() async throws {
    try await onThread {
      let s = try RunningServer {
        $0.lineTimeoutMilliseconds = 500
        $0.listen = "127.0.0.1:0"
        $0.token = "tok"
      }
      let half = try s.client()
      half.send(#"{"op":"pi"#)
      let idle = try s.client()
      #expect(try idle.request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
      let silent = try TestClient(tcpPort: s.server.tcpAddress!.port!)
      #expect(half.closed(within: 3))
      #expect(silent.closed(within: 3))
      // An idle connection with nothing begun stays (a controller may wait hours to send).
      usleep(300_000)
      #expect(try idle.request(#"{"op":"ping"}"#)["ok"] as? Bool == true)
    }
  }

  @Test("Tokens compare as bytes: a canonically equal but different token is refused")
  func tokenBytes() async throws {
    try await onThread {
      let s = try RunningServer {
        $0.listen = "127.0.0.1:0"
        $0.token = "caf\u{E9}"
      }
      let port = s.server.tcpAddress!.port!
      let decomposed = try TestClient(tcpPort: port)
      let reply = try decomposed.request(#"{"op":"auth","token":"cafe\u0301"}"#)
      #expect(reply["code"] as? String == "unauthorized")
      let exact = try TestClient(tcpPort: port)
      #expect(try exact.request(#"{"op":"auth","token":"caf\u00e9"}"#)["ok"] as? Bool == true)
    }
  }

  @Test("Addresses are parsed, not matched by prefix; a plain token off loopback needs consent")
  func addresses() async throws {
    try await onThread {
      #expect(!CountdownServer.isLoopback("127.attacker.example"))
      #expect(CountdownServer.isLoopback("127.0.0.2"))
      #expect(CountdownServer.isLoopback("::1"))
      #expect(CountdownServer.isLoopback("localhost"))
      #expect(!CountdownServer.isLoopback("0.0.0.0"))
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let sock = dir.appendingPathComponent("x.sock").path
      let named = CountdownServer(
        options: ServerOptions(socketPath: sock, http: "127.attacker.example:80"))
      #expect(throws: ServerStartError.self) { try named.start() }
      var plain = ServerOptions(socketPath: sock, listen: "0.0.0.0:0", token: "tok")
      do {
        try CountdownServer(options: plain).start()
        Issue.record("a token over plain TCP on 0.0.0.0 started")
      } catch {
        #expect("\(error)".contains("--allow-plain-token"))
      }
      plain.allowPlainToken = true
      let trusted = CountdownServer(options: plain)
      try trusted.start()
      trusted.stop()
    }
  }
}
