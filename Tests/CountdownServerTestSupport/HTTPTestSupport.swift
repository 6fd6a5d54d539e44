// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown
import CountdownServer
import Foundation
import Testing

/// An HTTP/1.1 answer read off a real socket.
package struct HTTPAnswer {
  package var status: Int
  package var headers: [String: String]
  package var body: String

  package var json: [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
  }
  package var code: String? { json["code"] as? String }
}

/// One request on a fresh TCP connection (`Connection: close`), the answer read to the end.
package func http(
  _ method: String, _ path: String, port: Int, body: String? = nil, bodyBytes: [UInt8]? = nil,
  headers: [String: String] = [:]
) throws -> HTTPAnswer {
  let c = try TestClient(tcpPort: port)
  var head = "\(method) \(path) HTTP/1.1\r\nConnection: close\r\n"
  if headers["Host"] == nil { head += "Host: 127.0.0.1\r\n" }
  for (k, v) in headers { head += "\(k): \(v)\r\n" }
  let payload = bodyBytes ?? body.map { Array($0.utf8) }
  if let payload {
    head += "Content-Type: application/json\r\nContent-Length: \(payload.count)\r\n"
  }
  head += "\r\n"
  c.sendBytes(Array(head.utf8) + (payload ?? []))
  // Read to the end: the server closes after the answer.
  var raw: [UInt8] = []
  let deadline = Date().addingTimeInterval(10)
  while deadline.timeIntervalSinceNow > 0 {
    var p = pollfd(fd: c.fd, events: Int16(POLLIN), revents: 0)
    if poll(&p, 1, 100) <= 0 { continue }
    var chunk = [UInt8](repeating: 0, count: 65536)
    let n = chunk.withUnsafeMutableBytes { recv(c.fd, $0.baseAddress, 65536, 0) }
    if n <= 0 { break }
    raw += chunk[0..<n]
  }
  let text = String(decoding: raw, as: UTF8.self)
  guard let split = text.range(of: "\r\n\r\n") else {
    throw TestFailure("no HTTP answer to \(method) \(path): \(text)")
  }
  let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
  guard let first = lines.first, first.hasPrefix("HTTP/1.1 "),
    let status = Int(first.dropFirst(9).prefix(3))
  else { throw TestFailure("no HTTP status line: \(text)") }
  var headers: [String: String] = [:]
  for line in lines.dropFirst() {
    let parts = line.split(separator: ":", maxSplits: 1)
    if parts.count == 2 {
      headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
    }
  }
  return HTTPAnswer(status: status, headers: headers, body: String(text[split.upperBound...]))
}

/// A flag one thread sets and another polls.
package final class StopSignal: Sendable {
  private let value = Locked(false)
  package init() {}
  package var isSet: Bool { value.withLock { $0 } }
  package func set() { value.withLock { $0 = true } }
}

/// A server in this process with HTTP on a free loopback port.
package final class HTTPServer {
  package let running: RunningServer
  package let port: Int

  package init(_ configure: (inout ServerOptions) -> Void = { _ in }) throws {
    running = try RunningServer { o in
      o.http = "127.0.0.1:0"
      configure(&o)
    }
    guard let p = running.server.httpAddress?.port else { throw TestFailure("no HTTP port") }
    port = p
  }

  package func callAsFunction(
    _ method: String, _ path: String, _ body: String? = nil, headers: [String: String] = [:]
  ) throws -> HTTPAnswer {
    try http(method, path, port: port, body: body, headers: headers)
  }

  /// The `countdown_subscribers` gauge of `/metrics`.
  package func subscribers() throws -> Double? {
    try metric("countdown_subscribers", port: port)
  }
}

/// The figure `name` (with its labels, if any, as written) of the `/metrics` served on
/// `port`, or nil when it has none.
package func metric(_ name: String, port: Int) throws -> Double? {
  let line = try http("GET", "/metrics", port: port).body.split(separator: "\n")
    .first { $0.hasPrefix(name + " ") }
  return line.flatMap { Double($0.split(separator: " ")[1]) }
}

/// A `GET /v1/events` stream read as it comes: (event name, data) pairs.
package final class EventStream {
  package let client: TestClient
  package var status = 0
  package var contentType = ""

  package init(
    port: Int, query: String = "", headers: [String: String] = [:], receiveBuffer: Int32? = nil
  )
    throws
  {
    client = try TestClient(tcpPort: port, receiveBuffer: receiveBuffer)
    var head = "GET /v1/events\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    for (k, v) in headers { head += "\(k): \(v)\r\n" }
    client.send(head + "\r\n")
    guard receiveBuffer == nil else { return }
    try readHead()
  }

  package func readHead() throws {
    guard let first = client.line(timeout: 10) else { throw TestFailure("no answer") }
    status = Int(first.dropFirst(9).prefix(3)) ?? 0
    while let line = client.line(timeout: 5), line != "\r" {
      if line.lowercased().hasPrefix("content-type:") {
        contentType = line.dropFirst(13).trimmingCharacters(in: .whitespacesAndNewlines)
      }
    }
  }

  /// The next event, or nil when the stream ended or `timeout` passed. Chunk-size lines of the
  /// chunked encoding, comments and `retry:` are skipped.
  package func next(timeout: Double = 5) -> (name: String, data: [String: Any])? {
    var name: String?
    var data: String?
    let deadline = Date().addingTimeInterval(timeout)
    while deadline.timeIntervalSinceNow > 0 {
      guard let raw = client.line(timeout: deadline.timeIntervalSinceNow) else { return nil }
      let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : raw
      if line.hasPrefix("event: ") {
        name = String(line.dropFirst(7))
      } else if line.hasPrefix("data: ") {
        data = String(line.dropFirst(6))
      } else if line.isEmpty, let n = name, let d = data {
        let o = (try? JSONSerialization.jsonObject(with: Data(d.utf8))) as? [String: Any] ?? [:]
        return (n, o)
      }
    }
    return nil
  }
}
