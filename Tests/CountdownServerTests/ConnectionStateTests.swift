// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Testing

@testable import CountdownServer

/// A connection's decisions alone (``ConnectionState``): no channel, no clock.
@Suite("ConnectionState")
struct ConnectionStateTests {
  @Test(
    "The budget: lines are taken while the owed and parsed replies fit; one is always let through when nothing is owed"
  )
  func budget() {
    var s = ConnectionState(replyBudget: 1000, needsAuth: false)
    let r1 = s.affords(5000)
    #expect(r1, "a reply over the budget is refused with nothing owed")
    let r2 = s.affords(1)
    #expect(!r2, "something went in after a reply over the budget")
    let big = s.submitted()
    #expect(big == 5000 && s.owed == 5000 && s.inFlight == 1 && s.batchCost == 0)
    let r3 = s.affords(128)
    #expect(!r3)
    let r4 = s.replying()
    #expect(r4 == .keepOpen)
    let r5 = s.written(big, paused: true, active: true)
    #expect(r5 == .parseBacklog)
    #expect(s.owed == 0)
    for _ in 0..<7 {
      let taken = s.affords(128)
      #expect(taken)
    }
    let r6 = s.affords(128)
    #expect(!r6, "the eighth 128-byte reply went over 1000")
    // A line over the limit is answered whatever the budget.
    s.charge(384)
    #expect(s.batchCost == 7 * 128 + 384)
  }

  @Test(
    "Written replies: the waiting lines are parsed only while the connection is open and not closing"
  )
  func written() {
    var s = ConnectionState(replyBudget: 1000, needsAuth: false)
    _ = s.affords(100)
    let cost = s.submitted()
    let r7 = s.written(cost, paused: false, active: true)
    #expect(r7 == .nothing)
    _ = s.affords(100)
    let second = s.submitted()
    let r8 = s.written(second, paused: true, active: false)
    #expect(r8 == .nothing)
    _ = s.affords(100)
    let third = s.submitted()
    let r9 = s.written(third, paused: true, active: true)
    #expect(r9 == .parseBacklog)
    #expect(s.owed == 0)
  }

  @Test(
    "Admission: a known key lets in with its role, anything else is refused and the connection closes after its last batch's replies"
  )
  func admission() {
    var s = ConnectionState(replyBudget: 1000, needsAuth: true)
    #expect(s.awaitsLine(paused: false, partial: false, skipping: false), "no timer for the key")
    let r10 = s.admit(clusterToken: false, auth: .some(.admin), needs: .view)
    #expect(r10 == .run)
    #expect(!s.needsAuth && !s.fromPeer && s.role == .admin)
    let r11 = s.admit(clusterToken: false, auth: nil, needs: .admin)
    #expect(r11 == .run, "asked again after auth")

    var refused = ConnectionState(replyBudget: 1000, needsAuth: true)
    let r12 = refused.admit(clusterToken: false, auth: nil, needs: .view)
    #expect(r12 == .refuse)
    #expect(refused.closing)
    _ = refused.submitted()
    _ = refused.submitted()
    let r13 = refused.replying()
    #expect(r13 == .keepOpen, "closed with a batch's replies still to come")
    let r14 = refused.replying()
    #expect(r14 == .closeWhenWritten)
    let r15 = refused.written(0, paused: true, active: true)
    #expect(r15 == .nothing, "a closing one parses on")
    // An unknown key is refused too.
    var unknown = ConnectionState(replyBudget: 1000, needsAuth: true)
    let r16 = unknown.admit(clusterToken: false, auth: .some(nil), needs: .view)
    #expect(r16 == .refuse && unknown.closing)
  }

  @Test(
    "Roles: each request against the connection's role; forbidden keeps the connection; a key read again takes its new role, or closes it when gone"
  )
  func roles() {
    for role in AccessRole.allCases {
      var s = ConnectionState(replyBudget: 1000, needsAuth: true)
      #expect(s.admit(clusterToken: false, auth: .some(role), needs: .view) == .run)
      for needs in AccessRole.allCases {
        let answer = s.admit(clusterToken: false, auth: nil, needs: needs)
        #expect(answer == (role >= needs ? .run : .forbid(needs: needs)), "\(role) \(needs)")
      }
      #expect(!s.closing, "forbidden is not a reason to close")
    }
    var s = ConnectionState(replyBudget: 1000, needsAuth: true)
    _ = s.admit(clusterToken: false, auth: .some(.control), needs: .view)
    s.rekeyed(.view)
    #expect(s.admit(clusterToken: false, auth: nil, needs: .control) == .forbid(needs: .control))
    s.rekeyed(nil)
    #expect(s.admit(clusterToken: false, auth: nil, needs: .view) == .refuse)
    #expect(s.closing)
    // A connection that needs no key (the Unix socket) is admin; an unknown key is refused
    // there and changes nothing, a known one gives its role.
    var open = ConnectionState(replyBudget: 1000, needsAuth: false)
    #expect(open.role == .admin)
    #expect(open.admit(clusterToken: false, auth: .some(nil), needs: .view) == .rejectKey)
    #expect(!open.closing && open.role == .admin)
    #expect(open.admit(clusterToken: false, auth: nil, needs: .admin) == .run)
    #expect(open.admit(clusterToken: false, auth: .some(.view), needs: .view) == .run)
    #expect(open.admit(clusterToken: false, auth: nil, needs: .control) == .forbid(needs: .control))
  }

  @Test("The cluster token makes the connection another node's, with or without --token")
  func peer() {
    for needsAuth in [true, false] {
      var s = ConnectionState(replyBudget: 1000, needsAuth: needsAuth)
      let r16 = s.admit(clusterToken: true, auth: .some(nil), needs: .view)
      #expect(r16 == .run)
      #expect(s.fromPeer && !s.needsAuth && !s.closing && s.role == .admin)
    }
  }

  @Test("Reading: held while the socket cannot take more or lines wait, done once both clear")
  func reading() {
    var s = ConnectionState(replyBudget: 1000, needsAuth: false)
    let r17 = s.read(writable: true, paused: false)
    #expect(r17)
    #expect(!s.readPending)
    let r18 = s.resumesReading(writable: true, paused: false)
    #expect(!r18, "a read nobody held back")
    let r19 = s.read(writable: false, paused: false)
    #expect(!r19)
    let r20 = s.resumesReading(writable: true, paused: true)
    #expect(!r20)
    let r21 = s.resumesReading(writable: false, paused: false)
    #expect(!r21)
    let r22 = s.resumesReading(writable: true, paused: false)
    #expect(r22)
    let r23 = s.resumesReading(writable: true, paused: false)
    #expect(!r23, "the held read was done twice")
    let r24 = s.read(writable: true, paused: true)
    #expect(!r24)
    #expect(s.readPending)
  }

  @Test("The line timer runs while a line is begun or skipped, never while lines wait for room")
  func lineTimer() {
    let s = ConnectionState(replyBudget: 1000, needsAuth: false)
    #expect(!s.awaitsLine(paused: false, partial: false, skipping: false))
    #expect(s.awaitsLine(paused: false, partial: true, skipping: false))
    #expect(s.awaitsLine(paused: false, partial: false, skipping: true))
    #expect(!s.awaitsLine(paused: true, partial: true, skipping: false))
  }
}
