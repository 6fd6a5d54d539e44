# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""Live Activity pushes end to end (docs/pushes.md): `countdown serve` (the debug
build) with --apns-* against the APNs stand-in of apns_standin.py, real TLS and HTTP/2 on
loopback. Commands go through the HTTP API; what the gateway received is checked against the
protocol: headers, the provider JWT's signature, the payloads and their content-state, the
budget, APNs's statuses, faults of the gateway, and a restart with pushes pending.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from apns_standin import REFERENCE_EPOCH, StandIn, b64url_decode, make_key_p8  # noqa: E402
from countdown_http import ServeProcess, free_port  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COUNTDOWN = os.environ.get("COUNTDOWN", os.path.join(ROOT, ".build/debug/countdown"))
SCRATCH = os.environ.get("SCRATCH", os.path.join(ROOT, ".build-pushes"))

KEY_ID, TEAM_ID, BUNDLE = "ABC123DEFG", "TEAM456XYZ", "com.example.walk"
T1 = "a1" * 32
T2 = "b2" * 32
S1 = "c3" * 32


class Server(ServeProcess):
    """`countdown serve` with HTTP and --apns-* pointing at the stand-in."""

    def __init__(self, dir, gateway, extra=(), url=None, topic=BUNDLE, env=None):
        super().__init__(COUNTDOWN, dir, [
            "--apns-key", os.path.join(dir, "key.p8"), "--apns-key-id", KEY_ID,
            "--apns-team-id", TEAM_ID, "--apns-topic", topic,
            "--apns-url", url or gateway.url, "--apns-ca", gateway.tls["ca.pem"],
            "--apns-timeout-ms", "1500", *extra], env=env)


class NotifySocket:
    """An AF_UNIX datagram socket standing in for systemd's NOTIFY_SOCKET: keeps every
    datagram `countdown serve` sends it (sd_notify(3))."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.datagrams = []
        self.open = True
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while self.open:
            try:
                self.datagrams.append(self.sock.recv(4096).decode())
            except socket.timeout:
                pass
            except OSError:
                return

    def wait_for(self, predicate, timeout=10.0):
        end = time.time() + timeout
        while time.time() < end:
            if any(predicate(d) for d in list(self.datagrams)):
                return True
            time.sleep(0.05)
        return False

    def close(self):
        self.open = False
        self.sock.close()


def reference(ms):
    """Milliseconds since 1970 as ActivityKit's default Date: seconds since 2001."""
    return ms / 1000 - REFERENCE_EPOCH


class StandInCase(unittest.TestCase):
    """A scratch directory, a provider key and the APNs stand-in for each test, and the
    server it starts stopped after it (this file's tests and test_channels.py's). No tests of
    its own."""

    def setUp(self):
        os.makedirs(SCRATCH, exist_ok=True)
        self.dir = tempfile.mkdtemp(dir=SCRATCH)
        self.public_key = make_key_p8(os.path.join(self.dir, "key.p8"))
        self.gateway = StandIn(self.dir, self.public_key, KEY_ID, TEAM_ID, BUNDLE)
        self.server = None

    def tearDown(self):
        if self.server:
            self.server.stop()
        self.gateway.close()
        if not os.environ.get("KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)


class PushTests(StandInCase):
    def serve(self, *extra, url=None, topic=BUNDLE, env=None):
        self.server = Server(self.dir, self.gateway, extra, url, topic, env)
        return self.server

    def pipeline(self, lines):
        """Sends `lines` over the server's Unix socket from a thread while reading as many
        replies here; returns the replies, parsed."""
        with socket.socket(socket.AF_UNIX) as c:
            c.connect(os.path.join(self.dir, "c.sock"))
            data = "".join(line + "\n" for line in lines).encode()
            writer = threading.Thread(target=c.sendall, args=(data,))
            writer.start()
            buf, replies = b"", []
            while len(replies) < len(lines):
                chunk = c.recv(1 << 16)
                if not chunk:
                    break
                *complete, buf = (buf + chunk).split(b"\n")
                replies += [json.loads(r) for r in complete]
            writer.join()
            return replies

    def start(self, body):
        status, obj = self.server.api("POST", "/v1/activities", body)
        self.assertEqual(status, 201, obj)
        return obj

    def assert_jwt(self, jwt):
        head64, claims64, _ = jwt.split(".")
        self.assertEqual(json.loads(b64url_decode(head64)), {"alg": "ES256", "kid": KEY_ID})
        claims = json.loads(b64url_decode(claims64))
        self.assertEqual(claims["iss"], TEAM_ID)
        self.assertLessEqual(abs(claims["iat"] - time.time()), 120)

    # -------------------------------------------------------------------------------------

    def test_a_countdown_widget_from_start_to_end(self):
        """Push-to-start, an update, a pause, a resume and an end with a dismissal date, each
        checked on the wire: headers, JWT, payload and content-state (reference dates)."""
        s = self.serve()
        # The sender's thread says what it is (docs/driver.md, "Threads").
        names = [open("/proc/%d/task/%s/comm" % (s.proc.pid, t)).read().strip()
                 for t in os.listdir("/proc/%d/task" % s.proc.pid)]
        self.assertIn("countdown-push", names)
        end_ms = int(time.time() * 1000) + 600_000
        obj = self.start({
            "id": "gate", "kind": "countdown", "endDate": end_ms, "title": "Gate B12",
            "color": "#ff9500",
            "liveActivity": {"pushTokens": {T1: True}, "startTokens": {S1: True},
                             "attributesType": "GateAttributes",
                             "attributes": {"gate": "B12"}, "sound": "chime.caf"}})
        self.assertEqual(obj["liveActivity"]["pushTokens"], {T1: True})
        self.assertEqual(obj["liveActivity"]["sound"], "chime.caf")
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(S1)) == 1), "no start push")
        start = self.gateway.pushes(S1)[0]
        self.assertEqual(start["headers"]["apns-priority"], "10")
        self.assertEqual(start["headers"]["apns-topic"], BUNDLE + ".push-type.liveactivity")
        self.assertEqual(start["headers"]["apns-push-type"], "liveactivity")
        self.assert_jwt(start["jwt"])
        aps = start["payload"]["aps"]
        self.assertEqual(aps["event"], "start")
        self.assertEqual(aps["attributes-type"], "GateAttributes")
        self.assertEqual(aps["attributes"], {"gate": "B12"})
        self.assertEqual(aps["input-push-token"], 1)
        self.assertEqual(aps["alert"]["title"], "Gate B12")
        self.assertEqual(aps["alert"]["sound"], "chime.caf")
        cs = aps["content-state"]
        self.assertAlmostEqual(cs["endDate"], reference(end_ms), delta=0.001)
        self.assertEqual(cs["title"], "Gate B12")
        self.assertEqual(cs["color"], "#ff9500")
        self.assertEqual(cs["isPaused"], False)
        # Expiry (docs/pushes.md): a start expires at the countdown's end, in whole seconds.
        self.assertEqual(start["headers"]["apns-expiration"], str(-(-end_ms // 1000)))

        time.sleep(1.05)  # a new second: the update goes at once
        self.assertEqual(s.api("PATCH", "/v1/activities/gate", {"subtitle": "Boarding"})[0], 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T1)) == 1), "no update")
        update = self.gateway.pushes(T1)[0]
        self.assertEqual(update["payload"]["aps"]["event"], "update")
        self.assertEqual(update["headers"]["apns-priority"], "5")
        self.assertEqual(update["payload"]["aps"]["content-state"]["subtitle"], "Boarding")
        # No alert on this update (no alertMessage), so no sound either.
        self.assertNotIn("alert", update["payload"]["aps"])

        time.sleep(1.05)
        self.assertEqual(s.api("POST", "/v1/activities/gate/pause")[0], 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T1)) == 2), "no pause push")
        paused = self.gateway.pushes(T1)[1]
        self.assertEqual(paused["headers"]["apns-priority"], "10")
        # A paused countdown has no end yet: 8 hours after the push.
        self.assertEqual(int(paused["headers"]["apns-expiration"]),
                         paused["payload"]["aps"]["timestamp"] + 8 * 3600)
        cs = paused["payload"]["aps"]["content-state"]
        self.assertEqual(cs["isPaused"], True)
        self.assertEqual(cs["phase"], "paused")
        self.assertAlmostEqual(cs["pausedAt"], reference(time.time() * 1000), delta=2)

        time.sleep(1.05)
        self.assertEqual(s.api("POST", "/v1/activities/gate/resume")[0], 200)
        time.sleep(1.05)
        dismiss_ms = int(time.time() * 1000) + 60_000
        self.assertEqual(s.api("POST", "/v1/activities/gate/end",
                               {"dismissal": {"after": dismiss_ms}})[0], 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T1)) == 4), "no end push")
        resumed, ended = self.gateway.pushes(T1)[2:4]
        self.assertEqual(resumed["payload"]["aps"]["content-state"]["isPaused"], False)
        # The end moved later by the pause.
        self.assertGreater(resumed["payload"]["aps"]["content-state"]["endDate"],
                           reference(end_ms) + 0.5)
        aps = ended["payload"]["aps"]
        self.assertEqual(aps["event"], "end")
        self.assertEqual(aps["dismissal-date"], dismiss_ms // 1000)
        # An end expires at its dismissal instant.
        self.assertEqual(ended["headers"]["apns-expiration"], str(-(-dismiss_ms // 1000)))
        resumed_end_ms = round((resumed["payload"]["aps"]["content-state"]["endDate"]
                                + REFERENCE_EPOCH) * 1000)
        self.assertEqual(int(resumed["headers"]["apns-expiration"]), -(-resumed_end_ms // 1000))
        # Each push its own apns-id, a UUID (the stand-in refuses any other).
        ids = [p["headers"]["apns-id"] for p in self.gateway.pushes(T1) + self.gateway.pushes(S1)]
        self.assertEqual(len(set(ids)), 5, ids)
        self.assertEqual(aps["content-state"]["phase"], "ended")
        stamps = [p["payload"]["aps"]["timestamp"] for p in self.gateway.pushes(T1)]
        self.assertEqual(stamps, sorted(set(stamps)), "timestamps must rise strictly")
        self.assertEqual(self.gateway.problems, [])
        # The start push went to the start token only; no push for ticks.
        self.assertEqual(len(self.gateway.pushes(S1)), 1)

        # The gateway has the push before the server has read its answer.
        end = time.time() + 5
        while "countdown_push_queue 0" not in s.api("GET", "/metrics")[1] and time.time() < end:
            time.sleep(0.05)
        status, metrics = s.api("GET", "/metrics")
        self.assertIn('countdown_pushes_total{event="update",result="delivered"} 3', metrics)
        self.assertIn('countdown_pushes_total{event="start",result="delivered"} 1', metrics)
        self.assertIn('countdown_pushes_total{event="end",result="delivered"} 1', metrics)
        self.assertIn("countdown_push_queue 0", metrics)
        self.assertIn("countdown_push_latency_seconds_count", metrics)

    def test_a_walk_timer_with_renamed_keys(self):
        """An elapsed timer with keys {"startDate":"startedAt"}: the walk app's ContentState."""
        s = self.serve()
        start_ms = int(time.time() * 1000) - 5000
        self.start({"id": "walk", "kind": "elapsed", "startDate": start_ms, "title": "Walk",
                    "liveActivity": {"pushTokens": {T1: True},
                                     "keys": {"startDate": "startedAt"}}})
        self.assertEqual(s.api("POST", "/v1/activities/walk/pause")[0], 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T1)) == 1))
        cs = self.gateway.pushes(T1)[0]["payload"]["aps"]["content-state"]
        self.assertNotIn("startDate", cs)
        self.assertAlmostEqual(cs["startedAt"], reference(start_ms), delta=0.001)
        self.assertEqual(cs["isPaused"], True)
        self.assertGreaterEqual(cs["pausedAt"], cs["startedAt"])

    def test_a_token_that_joins_late_hears_what_it_missed(self):
        """The app's own flow: started by a push-to-start token, paused, then the phone's update
        token sent with a PATCH. The new token gets the activity as it is (paused) at once, the
        tokens that had it nothing again; a token removed gets nothing."""
        s = self.serve()
        end_ms = int(time.time() * 1000) + 600_000
        self.start({"id": "gate", "kind": "countdown", "endDate": end_ms, "title": "Gate B12",
                    "liveActivity": {"startTokens": {S1: True},
                                     "attributesType": "GateAttributes",
                                     "attributes": {"gate": "B12"}}})
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(S1)) == 1), "no start push")
        self.assertEqual(s.api("POST", "/v1/activities/gate/pause")[0], 200)
        status, _ = s.api("PATCH", "/v1/activities/gate",
                          {"liveActivity": {"pushTokens": {T1: True}}})
        self.assertEqual(status, 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T1)) == 1),
                        "the late token heard nothing")
        push = self.gateway.pushes(T1)[0]
        aps = push["payload"]["aps"]
        self.assertEqual(aps["event"], "update")
        self.assertEqual(push["headers"]["apns-priority"], "10")
        self.assertEqual(aps["content-state"]["isPaused"], True)
        self.assertAlmostEqual(aps["content-state"]["endDate"], reference(end_ms), delta=0.001)
        # A second token: it alone is caught up.
        self.assertEqual(s.api("PATCH", "/v1/activities/gate",
                               {"liveActivity": {"pushTokens": {T2: True}}})[0], 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T2)) == 1), "no catch-up")
        self.assertEqual(s.api("PATCH", "/v1/activities/gate",
                               {"liveActivity": {"pushTokens": {T2: None}}})[0], 200)
        time.sleep(1.5)
        self.assertEqual(len(self.gateway.pushes(T1)), 1)
        self.assertEqual(len(self.gateway.pushes(T2)), 1)
        self.assertEqual(len(self.gateway.pushes(S1)), 1)

    def test_a_medication_timeline_pushes_each_phase_at_its_instant(self):
        """Milestones that change the content: each phase reaches the phone at its instant
        (priority 10), with the phase in the content-state; nothing else is pushed."""
        s = self.serve()
        start_ms = int(time.time() * 1000)
        self.start({
            "id": "dose", "kind": "elapsed", "startDate": start_ms, "title": "Ibuprofen",
            "fields": {"stage": "taken"},
            "milestones": [
                {"name": "kicking-in", "atMs": 1500, "content": {"fields": {"stage": "kicking in"}}},
                {"name": "peaking", "atMs": 3500,
                 "content": {"subtitle": "Peak", "fields": {"stage": "peaking"}}}],
            "liveActivity": {"pushTokens": {T1: True}, "keys": {"startDate": "startedAt"}}})
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T1)) == 2, 8), "two phases")
        time.sleep(1.2)
        pushes = self.gateway.pushes(T1)
        self.assertEqual(len(pushes), 2, [p["payload"] for p in pushes])
        phases = [("kicking in", "kicking-in", 1500), ("peaking", "peaking", 3500)]
        for push, (phase, name, at_ms) in zip(pushes, phases):
            self.assertEqual(push["headers"]["apns-priority"], "10")
            cs = push["payload"]["aps"]["content-state"]
            # The content's fields are members of the content-state.
            self.assertEqual(cs["stage"], phase)
            self.assertEqual(cs["milestone"], name)
            self.assertEqual(cs["isPaused"], False)
            self.assertEqual(push["payload"]["aps"]["timestamp"], (start_ms + at_ms) // 1000)
            # On the wire within a second of its instant.
            self.assertLess(push["at"] - (start_ms + at_ms) / 1000, 1.0)
        self.assertEqual(pushes[1]["payload"]["aps"]["content-state"]["subtitle"], "Peak")
        status, obj = s.api("GET", "/v1/activities/dose")
        self.assertEqual(obj["content"]["fields"]["stage"], "peaking")
        self.assertEqual(self.gateway.problems, [])

    def test_overtime_pushes_nothing_per_second(self):
        """A countdown with overtime: its content-state says so; past its end no push is made
        per second (the phone has endDate); a milestone past the end pushes at its instant."""
        self.serve()
        end_ms = int(time.time() * 1000) + 1500
        self.start({"id": "talk", "kind": "countdown", "endDate": end_ms, "title": "Keynote",
                    "overtime": True, "milestones": [{"name": "over-2", "atMs": -2000}],
                    "liveActivity": {"pushTokens": {T1: True}}})
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T1)) == 1, 8), "over-2")
        time.sleep(2.5)
        pushes = self.gateway.pushes(T1)
        self.assertEqual(len(pushes), 1, [p["payload"] for p in pushes])
        cs = pushes[0]["payload"]["aps"]["content-state"]
        self.assertEqual((cs["milestone"], cs["overtime"]), ("over-2", True))
        self.assertAlmostEqual(cs["endDate"], reference(end_ms), delta=0.001)
        self.assertEqual(pushes[0]["payload"]["aps"]["timestamp"], (end_ms + 2000) // 1000)

    def test_budget_one_push_per_second_with_the_latest_state(self):
        """Five updates in one second: the first goes at once, the rest as one push at the
        next second with the last title; timestamps rise strictly."""
        s = self.serve()
        self.start({"id": "b", "kind": "countdown", "endDate": int(time.time() * 1000) + 600_000,
                    "title": "t0", "liveActivity": {"pushTokens": {T1: True}}})
        # Start at the beginning of a second, so that all five fall in it.
        time.sleep(1 - (time.time() % 1) + 0.02)
        for i in range(1, 6):
            self.assertEqual(s.api("PATCH", "/v1/activities/b", {"title": "t%d" % i})[0], 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T1)) >= 2, 5))
        time.sleep(1.5)
        pushes = self.gateway.pushes(T1)
        self.assertEqual(len(pushes), 2, [p["payload"] for p in pushes])
        self.assertEqual(pushes[0]["payload"]["aps"]["content-state"]["title"], "t1")
        self.assertEqual(pushes[1]["payload"]["aps"]["content-state"]["title"], "t5")
        t0, t1 = (p["payload"]["aps"]["timestamp"] for p in pushes)
        self.assertEqual(t1, t0 + 1)
        self.assertGreaterEqual(pushes[1]["at"], t1)

    def test_statuses(self):
        """410 and 400 BadDeviceToken remove the token from the activity; 429 and 503 are
        retried after a backoff; 403 ExpiredProviderToken is retried with a new JWT."""
        s = self.serve()
        tokens = {"d1" * 32: (410, "Unregistered"), "d2" * 32: (400, "BadDeviceToken"),
                  "d3" * 32: (429, "TooManyRequests"), "d4" * 32: (503, "ServiceUnavailable"),
                  "d5" * 32: (403, "ExpiredProviderToken")}
        for t, answer in tokens.items():
            self.gateway.answer_next(t, answer)
        self.start({"id": "st", "kind": "countdown",
                    "endDate": int(time.time() * 1000) + 600_000, "title": "x",
                    "liveActivity": {"pushTokens": {t: True for t in tokens}}})
        t0 = time.time()
        self.assertEqual(s.api("POST", "/v1/activities/st/pause")[0], 200)
        self.assertTrue(self.gateway.wait_for(
            lambda g: all(len(g.pushes(t)) == 1 for t in list(tokens)[2:]), 10),
            [(r["token"][:4], r.get("payload") is not None) for r in self.gateway.requests])
        retried = {t: [r for r in self.gateway.requests if r["token"] == t]
                   for t in list(tokens)[2:]}
        for t in ("d3" * 32, "d4" * 32):
            self.assertEqual(len(retried[t]), 2)
            self.assertGreaterEqual(retried[t][1]["at"] - retried[t][0]["at"], 0.45)
        # A push keeps its apns-id on every retry, and the log line about its answer names it
        # (docs/pushes.md, "Tracing").
        for t in ("d3" * 32, "d4" * 32, "d5" * 32):
            ids = {r["headers"]["apns-id"] for r in retried[t]}
            self.assertEqual(len(ids), 1, (t[:4], ids))
        self.assertEqual(len({retried[t][0]["headers"]["apns-id"] for t in retried}), 3)
        with open(os.path.join(self.dir, "serve.log")) as f:
            log = f.read()
        self.assertIn("to push %s of st" % retried["d4" * 32][0]["headers"]["apns-id"], log)
        jwts = [r["headers"]["authorization"] for r in retried["d5" * 32]]
        self.assertEqual(len(jwts), 2)
        self.assertNotEqual(jwts[0], jwts[1], "a new provider token after ExpiredProviderToken")

        def tokens_now():
            return set(s.api("GET", "/v1/activities/st")[1]["liveActivity"]["pushTokens"])
        end = time.time() + 5
        while time.time() < end and ("d1" * 32 in tokens_now() or "d2" * 32 in tokens_now()):
            time.sleep(0.05)
        self.assertEqual(tokens_now(), {"d3" * 32, "d4" * 32, "d5" * 32})
        # No push for the removal itself, and none to the removed tokens afterwards.
        time.sleep(1.05)
        self.assertEqual(s.api("POST", "/v1/activities/st/resume")[0], 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes("d3" * 32)) == 2, 5))
        time.sleep(0.3)
        for t in ("d1" * 32, "d2" * 32):
            self.assertEqual(len([r for r in self.gateway.requests if r["token"] == t]), 1)
        status, metrics = s.api("GET", "/metrics")
        self.assertIn('countdown_pushes_total{event="update",result="token_removed"} 2', metrics)
        self.assertIn('countdown_pushes_total{event="update",result="retried"} 2', metrics)
        self.assertIn(
            'countdown_pushes_total{event="update",result="provider_token_expired"} 1', metrics)
        self.assertLess(time.time() - t0, 20)

    def test_a_configuration_fault_holds_then_everything_goes(self):
        """403 InvalidProviderToken to every push (a revoked key): nothing is dropped, no token
        removed, one push is tried again after 1 s, 2 s, ...; the metric names the reason.
        Once APNs takes one, what was held goes, merged: each token's three updates are one
        push of the newest state (coalescing), so the phone ends where it would have. The
        systemd STATUS= line says it while it holds, and no more once it sends."""
        notify = NotifySocket(os.path.join(self.dir, "notify.sock"))
        self.addCleanup(notify.close)
        s = self.serve(env={"NOTIFY_SOCKET": notify.path})
        self.assertTrue(notify.wait_for(lambda d: "READY=1" in d), notify.datagrams)
        self.gateway.refuse_all((403, "InvalidProviderToken"))
        self.start({"id": "h", "kind": "countdown", "endDate": int(time.time() * 1000) + 600_000,
                    "title": "zero", "liveActivity": {"pushTokens": {T1: True, T2: True}}})
        for title in ("one", "two", "three"):
            time.sleep(1.05)
            self.assertEqual(s.api("PATCH", "/v1/activities/h", {"title": title})[0], 200)
        metrics = s.api("GET", "/metrics")[1]
        self.assertIn('countdown_push_sender_held{reason="InvalidProviderToken"} 1', metrics)
        self.assertIn('countdown_push_sender_held{reason="BadTopic"} 0', metrics)
        self.assertIn('countdown_pushes_total{event="update",result="config_error"}', metrics)
        self.assertNotIn('result="dropped"} 1', metrics)
        self.assertTrue(notify.wait_for(
            lambda d: d.startswith("STATUS=Serving ") and "; pushes held: APNs answered 403 "
            "InvalidProviderToken; check --apns-key" in d), notify.datagrams)
        self.assertEqual(set(s.api("GET", "/v1/activities/h")[1]["liveActivity"]["pushTokens"]),
                         {T1, T2})
        # The two pushes out when the hold began, then one probe at a time with the backoff.
        self.assertLessEqual(len(self.gateway.requests), 6,
                             [r["token"][:4] for r in self.gateway.requests])
        self.assertEqual(self.gateway.pushes(), [])
        self.gateway.refuse_all(None)
        self.assertTrue(self.gateway.wait_for(
            lambda g: g.pushes(T1) and g.pushes(T2)
            and g.pushes(T1)[-1]["payload"]["aps"]["content-state"]["title"] == "three"
            and g.pushes(T2)[-1]["payload"]["aps"]["content-state"]["title"] == "three", 20),
            [(p["token"][:4], p["payload"]["aps"]["content-state"]["title"])
             for p in self.gateway.pushes()])
        time.sleep(1.2)
        for t in (T1, T2):
            titles = [p["payload"]["aps"]["content-state"]["title"] for p in self.gateway.pushes(t)]
            self.assertEqual(titles, ["three"], "held updates not merged")
        # Said at once when it sends again (the count is the last beat's).
        held_at = max(i for i, d in enumerate(notify.datagrams) if "pushes held" in d)
        self.assertTrue(any(d.startswith("STATUS=Serving ") and "held" not in d
                            for d in notify.datagrams[held_at + 1:]), notify.datagrams)
        metrics = s.api("GET", "/metrics")[1]
        self.assertIn('countdown_push_sender_held{reason="InvalidProviderToken"} 0', metrics)
        self.assertIn("countdown_push_queue 0", metrics)

    def test_a_wrong_topic_holds_until_fixed_and_restarted(self):
        """--apns-topic naming another app: APNs answers TopicDisallowed to every push; they
        stay in the outbox. Restarted with the right topic, the server sends them all."""
        s = self.serve(topic="com.example.other")
        self.start({"id": "w", "kind": "countdown", "endDate": int(time.time() * 1000) + 600_000,
                    "title": "x", "liveActivity": {"pushTokens": {T1: True}}})
        self.assertEqual(s.api("POST", "/v1/activities/w/pause")[0], 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.requests) >= 1, 5))
        time.sleep(1.2)
        self.assertIn('countdown_push_sender_held{reason="TopicDisallowed"} 1',
                      s.api("GET", "/metrics")[1])
        self.assertEqual(self.gateway.pushes(), [])
        s.stop()
        with open(os.path.join(self.dir, "serve.log")) as f:
            log = f.read()
        # Said once, with the flag to check.
        self.assertEqual(log.count("check --apns-topic"), 1, log)
        self.serve()
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T1)) == 1, 10),
                        "the held push was not sent after the restart")
        self.assertEqual(self.gateway.pushes(T1)[0]["payload"]["aps"]["content-state"]["isPaused"],
                         True)

    def test_gateway_faults_cost_retries_only(self):
        """A gateway that hangs, resets a stream, sends GOAWAY, drops the connection, answers
        garbage or speaks HTTP/1.1 only: the push is retried until it is delivered, and the
        server answers its clients all the while."""
        s = self.serve()
        self.start({"id": "f", "kind": "countdown", "endDate": int(time.time() * 1000) + 600_000,
                    "title": "x", "liveActivity": {"pushTokens": {T1: True}}})
        # Descriptors once a push went through: the faults below must leave no more behind.
        time.sleep(1.05)
        self.assertEqual(s.api("PATCH", "/v1/activities/f", {"title": "first"})[0], 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.pushes(T1)) == 1, 5))
        descriptors = len(os.listdir("/proc/%d/fd" % s.proc.pid))
        for fault in ("hang", "reset", "goaway", "close"):
            before = len(self.gateway.pushes(T1))
            self.gateway.answer_next(T1, fault)
            time.sleep(1.05)
            self.assertEqual(s.api("PATCH", "/v1/activities/f", {"title": fault})[0], 200)
            self.assertTrue(self.gateway.wait_for(
                lambda g: len(g.pushes(T1)) == before + 1, 12), "not delivered after " + fault)
            self.assertEqual(self.gateway.pushes(T1)[-1]["payload"]["aps"]["content-state"]["title"],
                             fault)
        for mode in ("garbage", "http1"):
            before = len(self.gateway.pushes(T1))
            connections = self.gateway.connections
            self.gateway.set_mode(mode)
            # Drop the good connection so that the next push makes a new one.
            self.gateway.answer_next(T1, "close")
            time.sleep(1.05)
            self.assertEqual(s.api("PATCH", "/v1/activities/f", {"title": mode})[0], 200)
            self.assertTrue(self.gateway.wait_for(lambda g: g.connections >= connections + 2, 10),
                            "no new connections to the %s gateway" % mode)
            t = time.time()
            self.assertEqual(s.api("GET", "/v1/activities/f")[0], 200)
            self.assertLess(time.time() - t, 0.5, "the server must answer while pushes fail")
            self.assertEqual(len(self.gateway.pushes(T1)), before)
            self.gateway.set_mode("h2")
            self.assertTrue(self.gateway.wait_for(
                lambda g: len(g.pushes(T1)) == before + 1, 15), "not delivered after " + mode)
        self.assertIsNone(s.proc.poll())
        self.assertEqual(self.gateway.problems, [])
        # The connections given up are closed: at most the one in use now is new.
        time.sleep(0.5)
        self.assertLessEqual(len(os.listdir("/proc/%d/fd" % s.proc.pid)), descriptors + 1)

    def test_a_gateway_that_refuses_every_connection(self):
        """A gateway that closes every connection at once (before TLS), with thousands of
        pushes waiting: every command is answered all the while, the descriptors stay put, and
        the server restarted with a working gateway sends every push once."""
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(512)
        listener.settimeout(0.1)
        refused = [0]
        stop = threading.Event()

        def refuse():
            while not stop.is_set():
                try:
                    c, _ = listener.accept()
                    c.close()
                    refused[0] += 1
                except socket.timeout:
                    pass
        thread = threading.Thread(target=refuse, daemon=True)
        thread.start()
        n = 3000
        try:
            s = self.serve(url="https://127.0.0.1:%d" % listener.getsockname()[1])
            end = int(time.time() * 1000) + 600_000
            starts = self.pipeline([json.dumps({
                "op": "start", "id": "r%d" % k, "kind": "countdown", "endDate": end,
                "title": "x", "liveActivity": {"pushTokens": {"%064x" % (k + 1): True}}})
                for k in range(n)])
            self.assertEqual([r["ok"] for r in starts], [True] * n)
            descriptors = len(os.listdir("/proc/%d/fd" % s.proc.pid))
            t = time.time()
            updates = self.pipeline(['{"op":"update","id":"r%d","subtitle":"u"}' % k
                                     for k in range(n)])
            self.assertEqual(len(updates), n, "the server closed the connection")
            self.assertEqual([r["ok"] for r in updates], [True] * n)
            self.assertLess(time.time() - t, 20)
            deadline = time.time() + 5
            while refused[0] == 0 and time.time() < deadline:
                time.sleep(0.05)
            self.assertGreater(refused[0], 0, "no connection to the refusing gateway")
            self.assertLessEqual(len(os.listdir("/proc/%d/fd" % s.proc.pid)), descriptors + 2)
            s.stop()
        finally:
            stop.set()
            thread.join()
            listener.close()
        # This stand-in checks a JWT signature per request, far slower than APNs: a longer
        # request timeout, so that a thousand requests waiting in it are not given up.
        self.serve("--apns-timeout-ms", "20000")
        self.assertTrue(
            self.gateway.wait_for(lambda g: len({p["token"] for p in g.pushes()}) == n, 60),
            "%d of %d sent after the restart" % (len(self.gateway.pushes()), n))
        time.sleep(0.5)
        # At least once: a push sent again (its answer lost) is the same push, which the phone
        # ignores by its timestamp.
        first = {}
        for p in self.gateway.pushes():
            self.assertEqual(first.setdefault(p["token"], p["payload"]), p["payload"])
        self.assertEqual(self.gateway.problems, [])

    def test_kill_with_pushes_pending_then_restart(self):
        """Pushes refused (503) when the server is killed with SIGKILL: the restarted server
        sends them, in order per token, merged where both waited (the newest state)."""
        s = self.serve()
        for _ in range(3):
            self.gateway.answer_next(T1, (503, "ServiceUnavailable"))
            self.gateway.answer_next(T2, (503, "ServiceUnavailable"))
            self.gateway.answer_next(S1, (503, "ServiceUnavailable"))
        self.start({"id": "k", "kind": "countdown", "endDate": int(time.time() * 1000) + 600_000,
                    "title": "x", "liveActivity": {"pushTokens": {T1: True, T2: True},
                                                   "startTokens": {S1: True},
                                                   "attributesType": "A", "attributes": {}}})
        self.assertEqual(s.api("POST", "/v1/activities/k/pause")[0], 200)
        time.sleep(1.05)
        self.assertEqual(s.api("POST", "/v1/activities/k/resume")[0], 200)
        self.assertTrue(self.gateway.wait_for(lambda g: len(g.requests) >= 3, 5))
        s.stop(signal.SIGKILL)
        self.assertEqual(self.gateway.pushes(), [])
        # The first push refused before the kill, by token: its apns-id is stored with it.
        refused = {}
        for r in self.gateway.requests:
            refused.setdefault(r["token"], r["headers"]["apns-id"])
        self.gateway.script.clear()
        self.serve()
        self.assertTrue(self.gateway.wait_for(
            lambda g: all(g.pushes(t) and g.pushes(t)[-1]["payload"]["aps"]["content-state"]
                          ["isPaused"] is False for t in (T1, T2)), 10),
            [(r["token"][:4], r.get("payload") is not None) for r in self.gateway.requests])
        # In order, and merged where both waited (coalescing): the phone ends running either way.
        time.sleep(1.2)
        for t in (T1, T2):
            states = [p["payload"]["aps"]["content-state"]["isPaused"] for p in self.gateway.pushes(t)]
            self.assertIn(states, ([True, False], [False]))
            if states == [True, False] and t in refused:
                self.assertEqual(self.gateway.pushes(t)[0]["headers"]["apns-id"], refused[t])
        # The start push (never merged) after the restart: the apns-id it had before the kill
        # (docs/pushes.md, "Tracing").
        self.assertEqual(len(self.gateway.pushes(S1)), 1)
        self.assertEqual(self.gateway.pushes(S1)[0]["headers"]["apns-id"], refused[S1])

    def test_bad_settings_exit_with_a_message(self):
        def run(*args):
            p = subprocess.run([COUNTDOWN, "serve", "--socket", os.path.join(self.dir, "x.sock"),
                                "--state", os.path.join(self.dir, "x.db"), *args],
                               capture_output=True, text=True, timeout=20)
            return p.returncode, p.stderr
        key = os.path.join(self.dir, "key.p8")
        base = ["--apns-key-id", KEY_ID, "--apns-team-id", TEAM_ID, "--apns-topic", BUNDLE]
        code, err = run("--apns-key", key)
        self.assertEqual(code, 64, err)  # a usage error, as for every flag
        self.assertIn("--apns-key-id, --apns-team-id, --apns-topic", err)
        p384 = os.path.join(self.dir, "p384.p8")
        make_key_p8(p384, ec.SECP384R1())
        code, err = run("--apns-key", p384, *base)
        self.assertEqual(code, 1, err)
        self.assertIn("not a P-256 private key", err)
        code, err = run("--apns-key", os.path.join(self.dir, "missing.p8"), *base)
        self.assertEqual(code, 1, err)
        self.assertIn("--apns-key: cannot read", err)
        code, err = run("--apns-key", key, *base, "--apns-url", "http://127.0.0.1:1")
        self.assertEqual(code, 1, err)
        self.assertIn("must be https://", err)
        code, err = run("--apns-key", key, *base, "--apns-ca", key)
        self.assertEqual(code, 1, err)
        self.assertIn("--apns-ca", err)
        p = subprocess.run([COUNTDOWN, "serve", "--socket", os.path.join(self.dir, "y.sock"),
                            "--state", ":memory:", "--apns-key", key, *base],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("need a state file", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "x.sock")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
