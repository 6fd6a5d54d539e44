// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownServerTestSupport
import CountdownTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// `--access` (docs/security.md, "Roles"): every socket op and HTTP route against every kind
/// of key (none, unknown, view, control, admin, `--token`), on real sockets; the file's checks
/// at start; SIGHUP's reading again.
@Suite("Access: roles", .serialized)
struct AccessTests {
  static let keys = [
    "view": "view-key-0001", "control": "control-key-0001", "admin": "admin-key-0001",
  ]

  /// A file of the three keys (mode 0600) in `dir`.
  static func accessFile(in dir: URL, _ text: String? = nil, mode: Int = 0o600) throws -> String {
    let path = dir.appendingPathComponent("access").path
    let body =
      text
      ?? "# the kiosk's keys\nview \(keys["view"]!)   # a screen\ncontrol \(keys["control"]!)\n\nadmin \(keys["admin"]!)\n"
    try body.write(toFile: path, atomically: false, encoding: .utf8)
    chmod(path, mode_t(mode))
    return path
  }

  /// A server with the keys, `--token tok`, TCP and HTTP on loopback, and one activity `a`.
  static func server() throws -> (RunningServer, http: Int, tcp: Int) {
    let dir = temporaryDirectory()
    let path = try accessFile(in: dir)
    let s = try RunningServer {
      $0.accessPath = path
      $0.token = "the-token-0001"
      $0.listen = "127.0.0.1:0"
      $0.http = "127.0.0.1:0"
    }
    let c = try s.client()
    let started = try c.request(
      #"{"op":"start","id":"a","kind":"countdown","endDate":\#(nowMs() + 600_000),"title":"A"}"#)
    guard started["ok"] as? Bool == true else { throw TestFailure("\(started)") }
    // An activity named like a route that needs admin: its GET needs view only.
    _ = try c.request(#"{"op":"start","id":"cluster","kind":"elapsed","title":"C"}"#)
    return (s, s.server.httpAddress!.port!, s.server.tcpAddress!.port!)
  }

  /// Who asks: the key each gives, and its role (nil: none or unknown).
  static let askers: [(name: String, key: String?, role: AccessRole?)] = [
    ("no key", nil, nil), ("an unknown key", "not-a-key-0001", nil),
    ("view", keys["view"], .view), ("control", keys["control"], .control),
    ("admin", keys["admin"], .admin), ("--token", "the-token-0001", .admin),
  ]

  @Test(
    "Every socket op against every key: run, forbidden (the connection stays), or unauthorized (it closes)"
  )
  func socketOps() async throws {
    try await onThread {
      let (s, _, tcp) = try Self.server()
      _ = s
      // Each op and the role it needs; ops that change `a` use ids of their own.
      let end = nowMs() + 600_000
      let ops: [(String, AccessRole)] = [
        (#"{"op":"ping"}"#, .view), (#"{"op":"get","id":"a"}"#, .view),
        (#"{"op":"list"}"#, .view), (#"{"op":"subscribe","ids":["a"]}"#, .view),
        (#"{"op":"unsubscribe"}"#, .view),
        (
          #"{"op":"start","id":"s-KEY","kind":"countdown","endDate":\#(end),"title":"S"}"#, .control
        ),
        (#"{"op":"update","id":"a","subtitle":"u"}"#, .control),
        (#"{"op":"pause","id":"a"}"#, .control), (#"{"op":"resume","id":"a"}"#, .control),
        (#"{"op":"end","id":"e-KEY"}"#, .control),
        (#"{"op":"configure","enabled":true}"#, .admin), (#"{"op":"cluster"}"#, .admin),
      ]
      for asker in Self.askers {
        let c = try TestClient(tcpPort: tcp)
        if let key = asker.key {
          let auth = try c.request(#"{"op":"auth","token":"\#(key)"}"#)
          if asker.role == nil {
            #expect(auth["code"] as? String == "unauthorized", "\(asker.name): \(auth)")
            #expect(c.closed(within: 5), "\(asker.name): an unknown key closes the connection")
            continue
          }
          #expect(auth["ok"] as? Bool == true, "\(asker.name): \(auth)")
        }
        guard let role = asker.role else {
          let r = try c.request(#"{"op":"ping"}"#)
          #expect(r["code"] as? String == "unauthorized", "\(asker.name): \(r)")
          #expect(c.closed(within: 5))
          continue
        }
        for (line, needs) in ops {
          let text = line.replacingOccurrences(of: "KEY", with: asker.name.filter(\.isLetter))
          let r = try c.request(text)
          if role >= needs {
            #expect(r["code"] as? String != "forbidden", "\(asker.name) \(text): \(r)")
            #expect(r["code"] as? String != "unauthorized", "\(asker.name) \(text): \(r)")
          } else {
            #expect(r["code"] as? String == "forbidden", "\(asker.name) \(text): \(r)")
            let message = r["message"] as? String ?? ""
            #expect(message.contains("needs \(needs.name)"), "\(message)")
          }
        }
        #expect(try c.request(#"{"op":"ping"}"#)["ok"] as? Bool == true, "still open")
      }
      // The Unix socket needs no key: admin.
      let local = try s.client()
      #expect(try local.request(#"{"op":"cluster"}"#)["code"] as? String != "forbidden")
    }
  }

  @Test("Every HTTP route against every key: 2xx/4xx of the request, 403 forbidden, or 401")
  func httpRoutes() async throws {
    try await onThread {
      let (s, port, _) = try Self.server()
      _ = s
      let routes: [(String, String, String?, AccessRole)] = [
        ("GET", "/v1/activities", nil, .view), ("GET", "/v1/activities/a", nil, .view),
        ("GET", "/v1/time", nil, .view), ("GET", "/", nil, .view),
        ("GET", "/openapi.json", nil, .view), ("GET", "/v1/activities/cluster", nil, .view),
        ("POST", "/v1/activities", #"{"kind":"elapsed","title":"H"}"#, .control),
        ("PATCH", "/v1/activities/a", #"{"subtitle":"h"}"#, .control),
        ("POST", "/v1/activities/a/pause", nil, .control),
        ("POST", "/v1/activities/a/resume", nil, .control),
        ("POST", "/v1/activities/nope/end", nil, .control),
        ("GET", "/metrics", nil, .admin), ("GET", "/v1/cluster", nil, .admin),
      ]
      for asker in Self.askers {
        let headers = asker.key.map { ["Authorization": "Bearer \($0)"] } ?? [:]
        for (method, path, body, needs) in routes {
          let r = try http(method, path, port: port, body: body, headers: headers)
          let what = "\(asker.name) \(method) \(path): \(r.status) \(r.body.prefix(200))"
          guard let role = asker.role else {
            #expect(r.status == 401 && r.code == "unauthorized", "\(what)")
            continue
          }
          if role >= needs {
            #expect(r.status != 401 && r.status != 403, "\(what)")
          } else {
            #expect(r.status == 403 && r.code == "forbidden", "\(what)")
            #expect(r.body.contains("needs \(needs.name)"), "\(what)")
          }
        }
        // The event stream: view and up.
        let stream = try EventStream(port: port, headers: headers)
        #expect(stream.status == (asker.role == nil ? 401 : 200), "\(asker.name)")
      }
      // The board has buttons for control and admin only, whatever ?controls says.
      for (name, key) in [("view", Self.keys["view"]!), ("control", Self.keys["control"]!)] {
        let page = try http("GET", "/?controls=1&token=\(key)", port: port)
        #expect(page.status == 200)
        #expect(page.body.contains("const CONTROLS = true") == (name == "control"), "\(name)")
      }
    }
  }

  @Test(
    "SIGHUP reads the keys again: a key removed closes its connections and streams at once; a role changed applies at the next request; a bad file keeps the old keys"
  )
  func reload() async throws {
    try await onThread {
      let (s, port, tcp) = try Self.server()
      let path = s.server.options.accessPath!
      let control = try TestClient(tcpPort: tcp)
      _ = try control.request(#"{"op":"auth","token":"\#(Self.keys["control"]!)"}"#)
      let view = try TestClient(tcpPort: tcp)
      _ = try view.request(#"{"op":"auth","token":"\#(Self.keys["view"]!)"}"#)
      // A view key's subscriber and event stream, which send nothing more.
      let listener = try TestClient(tcpPort: tcp)
      _ = try listener.request(#"{"op":"auth","token":"\#(Self.keys["view"]!)"}"#)
      #expect(try listener.request(#"{"op":"subscribe"}"#)["ok"] as? Bool == true)
      let stream = try EventStream(
        port: port, headers: ["Authorization": "Bearer \(Self.keys["view"]!)"])
      #expect(stream.next()?.name == "snapshot")
      #expect(try control.request(#"{"op":"pause","id":"a"}"#)["ok"] as? Bool == true)
      // control's key becomes a view key; view's key is gone.
      try "view \(Self.keys["control"]!)\nadmin \(Self.keys["admin"]!)\n".write(
        toFile: path, atomically: false, encoding: .utf8)
      try s.server.reloadAccess()
      let r = try control.request(#"{"op":"resume","id":"a"}"#)
      #expect(r["code"] as? String == "forbidden", "\(r)")
      #expect(try control.request(#"{"op":"get","id":"a"}"#)["ok"] as? Bool == true)
      // The view key is gone: its subscriber and its stream are closed at once.
      #expect(listener.closed(within: 5), "a subscriber whose key is gone")
      #expect(stream.client.closed(within: 5), "an event stream whose key is gone")
      #expect(view.closed(within: 5), "a connection whose key is gone")
      let h = try http(
        "GET", "/v1/activities", port: port,
        headers: ["Authorization": "Bearer \(Self.keys["view"]!)"])
      #expect(h.status == 401)
      // A file others may read is refused, and the keys before it stay.
      chmod(path, 0o644)
      #expect(throws: ServerStartError.self) { try s.server.reloadAccess() }
      #expect(try control.request(#"{"op":"get","id":"a"}"#)["ok"] as? Bool == true)
    }
  }

  @Test(
    "The board with a key: GET /?key= keeps it in an HttpOnly, SameSite=Strict cookie and drops it from the address; the cookie authorizes the page's requests with the key's role; another site's POST is still forbidden"
  )
  func boardCookie() async throws {
    try await onThread {
      let (s, port, _) = try Self.server()
      _ = s
      let view = Self.keys["view"]!
      let r = try http("GET", "/?key=\(view)&controls=1", port: port)
      #expect(r.status == 303, "\(r.status) \(r.body)")
      #expect(r.headers["location"] == "/?controls=1")
      let cookie = try #require(r.headers["set-cookie"])
      #expect(cookie.hasPrefix("countdown_key=\(view);"))
      #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
      #expect(!cookie.contains("Secure"), "plain HTTP: no Secure")
      let jar = ["Cookie": "theme=dark; countdown_key=\(view)"]
      let page = try http("GET", "/?controls=1", port: port, headers: jar)
      #expect(page.status == 200 && page.body.contains("const CONTROLS = false"))
      #expect(try http("GET", "/v1/activities", port: port, headers: jar).status == 200)
      let start = try http(
        "POST", "/v1/activities", port: port, body: #"{"kind":"elapsed","title":"C"}"#,
        headers: jar)
      #expect(start.status == 403 && start.body.contains("needs control"))
      // A control key's cookie starts; from another site, even it cannot (Origin).
      let control = ["Cookie": "countdown_key=\(Self.keys["control"]!)"]
      let ok = try http(
        "POST", "/v1/activities", port: port, body: #"{"kind":"elapsed","title":"C"}"#,
        headers: control)
      #expect(ok.status == 201, "\(ok.status) \(ok.body)")
      let crossSite = try http(
        "POST", "/v1/activities", port: port, body: #"{"kind":"elapsed","title":"X"}"#,
        headers: control.merging(["Origin": "http://evil.example"]) { $1 })
      #expect(crossSite.status == 403 && crossSite.code == "forbidden")
      // An unknown key is not kept.
      let unknown = try http("GET", "/?key=nope-0001", port: port)
      #expect(unknown.status == 401 && unknown.headers["set-cookie"] == nil)
      // A key with characters a cookie cannot hold as they are is percent-encoded.
      #expect(
        try http("GET", "/v1/time", port: port, headers: ["Cookie": "countdown_key=%41"]).status
          == 401)
    }
  }

  @Test("A bad access file stops the server before it listens, naming the line")
  func badFiles() throws {
    let cases: [(String, Int, String)] = [
      ("view k1\n", 0o644, "lets others read it"),
      ("viewer k1\n", 0o600, "line 1: \"viewer\" is not a role"),
      ("view\n", 0o600, "line 1: a view line needs its key"),
      ("view k1\ncontrol k1\n", 0o600, "line 2: this key is already on an earlier line"),
    ]
    for (text, mode, message) in cases {
      let dir = temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: dir) }
      let path = try Self.accessFile(in: dir, text, mode: mode)
      let server = CountdownServer(
        options: {
          var o = ServerOptions(socketPath: dir.appendingPathComponent("c.sock").path)
          o.accessPath = path
          return o
        }())
      #expect {
        try server.start()
      } throws: { error in
        "\(error)".contains(message)
      }
      #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("c.sock").path))
    }
  }
}
