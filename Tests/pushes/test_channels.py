# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""Broadcast channels end to end (docs/pushes.md, "Broadcast channels"): `countdown serve
--apns-channels` (the debug build) against the APNs stand-in of apns_standin.py, which speaks
the channel management API and broadcasts over real TLS and HTTP/2 on loopback. A channel made
for an activity, used for its updates and end (one request per change, whatever the audience),
deleted at its dismissal; a caller's own channel; `input-push-channel`; a channel APNs no longer
has; a creation pending across `kill -9`; reconciliation at start; bad input.
"""

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_pushes import (  # noqa: E402
    BUNDLE, COUNTDOWN, KEY_ID, S1, T1, T2, TEAM_ID, Server, StandInCase)

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class ChannelTests(StandInCase):
    def serve(self, *extra):
        self.server = Server(self.dir, self.gateway, (
            "--apns-channels", "--apns-manage-url", self.gateway.url, *extra))
        return self.server

    def start(self, body):
        status, obj = self.server.api("POST", "/v1/activities", body)
        self.assertEqual(status, 201, obj)
        return obj

    def live(self, id):
        status, obj = self.server.api("GET", "/v1/activities/" + id)
        self.assertEqual(status, 200, obj)
        return obj["liveActivity"]

    def wait(self, predicate, timeout=10.0, what=""):
        self.assertTrue(self.gateway.wait_for(predicate, timeout),
                        "%s; requests: %s; problems: %s" % (
                            what, [(r["token"], r["headers"].get(":path")) for r in self.gateway.requests],
                            self.gateway.problems))

    def broadcasts(self, channel):
        with self.gateway.lock:
            return [b for b in self.gateway.broadcasts if b["channel"] == channel]

    # -------------------------------------------------------------------------------------

    def test_a_channel_made_used_and_deleted(self):
        """liveActivity.channel "create": the server makes the channel (POST /1/apps/{bundleId}/
        channels), sets liveActivity.channelId, broadcasts each change once on it beside the
        token's own push, and deletes it when the activity is dismissed."""
        self.serve()
        end = int(time.time() * 1000) + 600_000
        obj = self.start({"id": "gate", "kind": "countdown", "endDate": end, "title": "Gate 12",
                          "liveActivity": {"pushTokens": {T1: True}, "channel": "create"}})
        self.assertEqual(obj["liveActivity"]["channel"], "create")
        self.assertIsNone(obj["liveActivity"]["channelId"])  # until APNs has answered
        self.wait(lambda g: len(g.made) == 1, what="a channel made")
        made = self.gateway.made[0]
        create = [r for r in self.gateway.requests if r["token"] == "create-channel"][0]
        self.assertEqual(create["headers"][":method"], "POST")
        self.assertEqual(create["headers"][":path"], "/1/apps/%s/channels" % BUNDLE)
        self.assertEqual(json.loads(create["body"]),
                         {"message-storage-policy": 1, "push-type": "LiveActivity"})
        self.assertRegex(create["headers"]["apns-request-id"], UUID)
        deadline = time.time() + 10
        while self.live("gate")["channelId"] != made and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.live("gate")["channelId"], made)
        # The phones that subscribe now get the activity as it is (the channel joins late).
        self.wait(lambda g: len(self.broadcasts(made)) == 1, what="the catch-up broadcast")
        first = self.broadcasts(made)[0]
        self.assertEqual(first["payload"]["aps"]["event"], "update")
        self.assertEqual(first["payload"]["aps"]["content-state"]["title"], "Gate 12")

        # One change: one broadcast, one push to the token.
        pushes_before = len(self.gateway.pushes(T1))
        time.sleep(1.05)  # the next second: its own push, not merged with the catch-up
        self.assertEqual(self.server.api("PATCH", "/v1/activities/gate",
                                         {"title": "Gate 14"})[0], 200)
        self.wait(lambda g: len(self.broadcasts(made)) == 2
                  and len(g.pushes(T1)) == pushes_before + 1, what="the update's broadcast")
        b = self.broadcasts(made)[1]
        h = b["headers"]
        self.assertEqual(h[":path"], "/4/broadcasts/apps/" + BUNDLE)
        self.assertEqual(h["apns-channel-id"], made)
        self.assertEqual(h["apns-push-type"], "liveactivity")
        self.assertNotIn("apns-topic", h)
        self.assertEqual(h["apns-priority"], "5")
        self.assertRegex(h["apns-request-id"], UUID)
        # The channel's message expires when the countdown ends, as a token's would.
        self.assertEqual(int(h["apns-expiration"]), (end + 999) // 1000)
        self.assertEqual(b["payload"]["aps"]["content-state"]["title"], "Gate 14")
        self.assertEqual(b["payload"], self.gateway.pushes(T1)[-1]["payload"])

        # The end: broadcast, then the channel deleted with the activity's dismissal.
        time.sleep(1.05)
        self.assertEqual(self.server.api("POST", "/v1/activities/gate/end",
                                         {"dismissal": "immediate"})[0], 200)
        self.wait(lambda g: g.deleted == [made], what="the channel deleted")
        self.assertEqual(self.broadcasts(made)[-1]["payload"]["aps"]["event"], "end")
        delete = [r for r in self.gateway.requests if r["token"] == "delete-channel"][0]
        self.assertEqual(delete["headers"][":method"], "DELETE")
        self.assertEqual(delete["headers"]["apns-channel-id"], made)
        self.assertEqual(self.gateway.channels, {})
        self.assertEqual(self.gateway.problems, [])

    def test_a_callers_channel_and_push_to_start(self):
        """A channel id the caller made is used at once and never deleted by the server; the
        start push carries `input-push-channel` instead of `input-push-token`."""
        own = base64.b64encode(b"the caller's own").decode()
        with self.gateway.lock:
            self.gateway.channels[own] = 1
        self.serve()
        obj = self.start({
            "id": "match", "kind": "elapsed", "title": "Match",
            "liveActivity": {"channel": own, "startTokens": {S1: True},
                             "attributesType": "MatchAttributes", "attributes": {"home": "A"}}})
        self.assertEqual(obj["liveActivity"]["channelId"], own)
        self.wait(lambda g: len(g.pushes(S1)) == 1, what="the start push")
        aps = self.gateway.pushes(S1)[0]["payload"]["aps"]
        self.assertEqual(aps["input-push-channel"], own)
        self.assertNotIn("input-push-token", aps)
        self.assertEqual(self.server.api("POST", "/v1/activities/match/pause")[0], 200)
        self.wait(lambda g: len(self.broadcasts(own)) == 1, what="the pause's broadcast")
        self.assertEqual(self.broadcasts(own)[0]["headers"]["apns-priority"], "10")
        self.assertTrue(self.broadcasts(own)[0]["payload"]["aps"]["content-state"]["isPaused"])
        self.assertEqual(self.server.api("POST", "/v1/activities/match/end",
                                         {"dismissal": "immediate"})[0], 200)
        self.wait(lambda g: len(self.broadcasts(own)) == 2, what="the end's broadcast")
        time.sleep(0.5)
        self.assertEqual(self.gateway.deleted, [])
        self.assertEqual(self.gateway.made, [])
        self.assertIn(own, self.gateway.channels)
        self.assertEqual(self.gateway.problems, [])

    def test_a_channel_apns_no_longer_has_is_dropped(self):
        """`400 BadChannelId` for a broadcast: the channel is dropped from the activity
        (liveActivity.channelId null), and its updates go on to its tokens."""
        gone = base64.b64encode(b"deleted elsewhere").decode()
        self.serve()
        self.start({"id": "g", "kind": "countdown", "endDate": int(time.time() * 1000) + 600_000,
                    "title": "x", "liveActivity": {"pushTokens": {T2: True}, "channel": gone}})
        self.assertEqual(self.server.api("PATCH", "/v1/activities/g", {"title": "y"})[0], 200)
        deadline = time.time() + 10
        while self.live("g")["channelId"] is not None and time.time() < deadline:
            time.sleep(0.05)
        self.assertIsNone(self.live("g")["channelId"])
        self.assertEqual(self.live("g")["channel"], gone)
        before = len(self.gateway.pushes(T2))
        time.sleep(1.05)
        self.assertEqual(self.server.api("PATCH", "/v1/activities/g", {"title": "z"})[0], 200)
        self.wait(lambda g: len(g.pushes(T2)) == before + 1, what="the token's push")
        time.sleep(0.3)
        tried = [r for r in self.gateway.requests if r["token"] == "channel:" + gone]
        self.assertEqual(len(tried), 1, "one broadcast, refused; none after")
        with open(os.path.join(self.dir, "serve.log")) as f:
            log = f.read()
        self.assertIn("BadChannelId", log)
        self.assertIn("the channel is gone", log)

    def test_a_creation_pending_across_kill_9(self):
        """A channel's creation refused (503) when the server is killed with SIGKILL is made
        after the restart: one channel, set on the activity."""
        for _ in range(50):
            self.gateway.answer_next("create-channel", (503, "ServiceUnavailable"))
        s = self.serve()
        self.start({"id": "k", "kind": "countdown", "endDate": int(time.time() * 1000) + 600_000,
                    "title": "x", "liveActivity": {"pushTokens": {T1: True}, "channel": "create"}})
        self.wait(lambda g: any(r["token"] == "create-channel" for r in g.requests),
                  what="a creation tried")
        s.stop(signal.SIGKILL)
        self.assertEqual(self.gateway.made, [])
        self.gateway.script.clear()
        self.serve()
        self.wait(lambda g: len(g.made) == 1, what="the channel made after the restart")
        made = self.gateway.made[0]
        deadline = time.time() + 10
        while self.live("k")["channelId"] != made and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.live("k")["channelId"], made)
        time.sleep(0.5)
        self.assertEqual(len(self.gateway.made), 1)
        self.assertEqual(self.gateway.problems, [])

    def test_reconcile_deletes_the_channels_no_activity_holds(self):
        """--apns-channels-reconcile: at start, the app's channels are listed (GET
        /1/apps/{bundleId}/all-channels) and those no activity holds are deleted."""
        self.serve()
        self.start({"id": "kept", "kind": "elapsed", "title": "x",
                    "liveActivity": {"channel": "create"}})
        self.wait(lambda g: len(g.made) == 1, what="a channel made")
        kept = self.gateway.made[0]
        deadline = time.time() + 10
        while self.live("kept")["channelId"] != kept and time.time() < deadline:
            time.sleep(0.05)
        self.server.stop()
        orphans = [base64.b64encode(("orphan %d" % k).encode()).decode() for k in range(3)]
        with self.gateway.lock:
            for o in orphans:
                self.gateway.channels[o] = 1
        self.serve("--apns-channels-reconcile")
        self.wait(lambda g: sorted(g.deleted) == sorted(orphans), what="the orphans deleted")
        listing = [r for r in self.gateway.requests if r["token"] == "list-channels"]
        self.assertEqual(len(listing), 1)
        self.assertEqual(listing[0]["headers"][":path"], "/1/apps/%s/all-channels" % BUNDLE)
        self.assertEqual(list(self.gateway.channels), [kept])
        self.assertEqual(self.live("kept")["channelId"], kept)

    def test_bad_input_is_refused_and_changes_nothing(self):
        self.serve()
        base = {"kind": "countdown", "endDate": int(time.time() * 1000) + 600_000, "title": "x"}
        for channel, words in (("not base64!", "liveActivity.channel"),
                               (5, "liveActivity.channel"), ("abc", "liveActivity.channel")):
            status, err = self.server.api("POST", "/v1/activities", dict(
                base, id="bad", liveActivity={"channel": channel}))
            self.assertEqual(status, 400, err)
            self.assertEqual(err["code"], "invalidPayload")
            self.assertIn(words, err["message"])
        status, err = self.server.api("POST", "/v1/activities", dict(
            base, id="bad", liveActivity={"channelId": "QUJD"}))
        self.assertEqual(status, 400, err)
        self.assertIn("set by the server", err["message"])
        self.assertEqual(self.server.api("GET", "/v1/activities/bad")[0], 404)
        own = base64.b64encode(b"mine").decode()
        self.start(dict(base, id="ok", liveActivity={"channel": own}))
        status, err = self.server.api("PATCH", "/v1/activities/ok", {
            "liveActivity": {"channel": "create"}})
        self.assertEqual(status, 400, err)
        self.assertIn("cannot change", err["message"])
        status, err = self.server.api("PATCH", "/v1/activities/ok", {
            "liveActivity": {"channelId": base64.b64encode(b"other").decode()}})
        self.assertEqual(status, 400, err)
        self.assertEqual(self.live("ok")["channelId"], own)
        self.assertEqual(self.live("ok")["channel"], own)

    def test_bad_flags_exit_with_a_message(self):
        def run(*args):
            p = subprocess.run([COUNTDOWN, "serve", "--socket", os.path.join(self.dir, "x.sock"),
                                "--state", os.path.join(self.dir, "x.db"), *args],
                               capture_output=True, text=True, timeout=20)
            return p.returncode, p.stderr
        key = os.path.join(self.dir, "key.p8")
        base = ["--apns-key", key, "--apns-key-id", KEY_ID, "--apns-team-id", TEAM_ID,
                "--apns-topic", BUNDLE]
        code, err = run("--apns-channels")
        self.assertEqual(code, 64, err)
        self.assertIn("--apns-channels needs --apns-key, --apns-key-id", err)
        code, err = run(*base, "--apns-manage-url", "https://127.0.0.1:1")
        self.assertEqual(code, 64, err)
        self.assertIn("give --apns-channels too", err)
        code, err = run(*base, "--apns-channels", "--apns-manage-url", "http://127.0.0.1:1")
        self.assertEqual(code, 64, err)
        self.assertIn("--apns-manage-url http://127.0.0.1:1 must be https://", err)
        code, err = run(*base, "--apns-channels-reconcile")
        self.assertEqual(code, 64, err)
        self.assertIn("give --apns-channels too", err)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "x.sock")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
