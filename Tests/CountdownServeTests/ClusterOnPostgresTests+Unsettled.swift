// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CountdownCluster
import CountdownServerTestSupport
import Foundation
import Testing

@testable import CountdownServer

/// A node killed after a commit and before its hub relayed the events of it
/// (docs/cluster.md, "A node killed between a commit and its relay"), with real processes and
/// a real PostgreSQL. The fault is made by a debug build's `COUNTDOWN_FAULT_STALL_AFTER_COMMIT_OF`:
/// from the first commit of an activity of that prefix, the node's hub passes on nothing it
/// commits (it still commits and acknowledges), as a node killed between the two would.
extension ClusterOnPostgresTests {
  @Test(
    "kill -9 of a node that committed events and never relayed them: the node taking its shards passes them on, once each, in order, at their own instants, to its subscribers and to every other node (~ lines); what was relayed before is not repeated"
  )
  func killedBetweenCommitAndRelay() async throws {
    try await Self.withTwoNodes(
      forwarding: true, environmentOfA: ["COUNTDOWN_FAULT_STALL_AFTER_COMMIT_OF": "held"]
    ) { p in
      let (a, b, owners, ca) = (p.a, p.b, p.owners, p.ca)
      let (before, held, soon) = (
        Self.id("before", ownedBy: "a", owners), Self.id("held", ownedBy: "a", owners),
        Self.id("heldSoon", ownedBy: "a", owners)
      )
      // A subscriber on b, its snapshot taken while a is live.
      let sb = try TestClient(unix: p.dirB.appendingPathComponent("c.sock").path)
      var r = try sb.request(#"{"rid":"s","op":"subscribe"}"#, timeout: 10)
      #expect(r["ok"] as? Bool == true, "\(r)")
      let socket = Self.socketRecorder(sb)
      defer { socket.stop() }
      let far = nowMs() + 600_000
      r = try Self.retrying(
        ca, #"{"op":"start","id":"\#(before)","kind":"countdown","endDate":\#(far),"title":"B"}"#)
      #expect(r["ok"] as? Bool == true, "\(r)")
      #expect(socket.wait(5) { socket.of(before) == ["started"] }, "\(socket.of(before))")

      // The fault strikes: a commits and acknowledges, and relays none of these.
      let endsAt = nowMs() + 1_200
      for request in [
        #"{"op":"start","id":"\#(held)","kind":"countdown","endDate":\#(far),"title":"H"}"#,
        #"{"op":"pause","id":"\#(held)"}"#,
        #"{"op":"start","id":"\#(soon)","kind":"countdown","endDate":\#(endsAt),"title":"S"}"#,
      ] {
        r = try ca.request(request)
        #expect(r["ok"] as? Bool == true, "\(request): \(r)")
      }
      // Its expiry is committed by a at its instant, and relayed no more than the rest.
      while nowMs() < endsAt + 500 { usleep(20_000) }
      #expect(socket.of(held).isEmpty && socket.of(soon).isEmpty, "the fault let some out")

      kill(a.pid, SIGKILL)
      _ = a.exitStatus(within: 5)
      let came = socket.wait(10) {
        socket.of(held) == ["started", "paused"] && socket.of(soon) == ["started", "expired"]
      }
      #expect(came, "held: \(socket.of(held)), soon: \(socket.of(soon))")
      #expect(socket.at(soon, "expired") == [endsAt])

      // b's relay to other nodes: the same events, as a's (`~INCARNATION SEQUENCE DELIVERY
      // JSON`), numbered in a's order.
      let portB = try #require(
        b.startLine.firstMatch(of: /tcp 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
      let raw = try TestClient(tcpPort: portB)
      raw.send(
        #"{"op":"auth","token":"ct-1"}"# + "\n"
          + #"{"op":"relay","incarnation":null,"after":0,"ticks":false}"# + "\n")
      var recovered: [(source: String, sequence: Int, event: String)] = []
      var deliveries: [Int] = []
      while let line = raw.line(timeout: 0.5) {
        guard !line.hasPrefix("{") else { continue }
        let parts = line.split(separator: " ", maxSplits: line.hasPrefix("~") ? 3 : 2)
        deliveries.append(Int(parts[line.hasPrefix("~") ? 2 : 1]) ?? -1)
        guard line.hasPrefix("~") else { continue }
        let o = try #require(
          try JSONSerialization.jsonObject(with: Data(parts[3].utf8)) as? [String: Any])
        recovered.append(
          (
            String(parts[0].dropFirst()), Int(parts[1]) ?? -1,
            "\(o["event"] as? String ?? "") \(o["id"] as? String ?? "")"
          ))
      }
      #expect(deliveries == Array(1...max(1, deliveries.count)), "\(deliveries)")
      #expect(
        recovered.map(\.event) == [
          "started \(held)", "paused \(held)", "started \(soon)", "expired \(soon)",
        ], "\(recovered)")
      #expect(Set(recovered.map(\.source)).count == 1, "\(recovered)")
      let sequences = recovered.map(\.sequence)
      #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count)

      // b counts what it passed on.
      let metrics = try http("GET", "/metrics", port: try #require(b.httpPort)).body
      #expect(
        metrics.split(separator: "\n").contains("countdown_cluster_events_recovered_total 4"),
        "\(metrics.split(separator: "\n").filter { $0.contains("recovered") })")
      // Nothing twice, and what a had relayed before is not passed on again.
      usleep(1_000_000)
      #expect(socket.of(before) == ["started"], "\(socket.of(before))")
      #expect(socket.of(held) == ["started", "paused"], "\(socket.of(held))")
      #expect(socket.of(soon) == ["started", "expired"], "\(socket.of(soon))")
      kill(b.pid, SIGTERM)
      #expect(b.exitStatus(within: 10) == 0)
    }
  }
}
