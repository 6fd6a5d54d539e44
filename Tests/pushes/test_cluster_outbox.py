# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""Live Activity pushes and webhooks from cluster nodes (docs/pushes.md, docs/webhooks.md with docs/cluster.md
"Pushes and webhooks from a node"): two `countdown serve --node` processes on a real
PostgreSQL, each with --apns-* pointing at the APNs stand-in (real TLS and HTTP/2) and a
--webhook to a real HTTP receiver. Each node sends its own shards' outbox; after `kill -9` of
one with a push and a delivery pending, the other takes its shards and sends them, and the
pushes it makes then go on from the dead node's budget (timestamps still rising).

Run by `make pushes-cluster` (part of `make test`) under Tests/postgres/with-postgres.sh.
"""

import json
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TESTS, "python"))
sys.path.insert(0, os.path.join(TESTS, "webhooks"))
from apns_standin import StandIn, make_key_p8  # noqa: E402
from countdown_http import NodeProcess, fresh_database, now_ms, wait_for  # noqa: E402
from test_webhooks import Receiver  # noqa: E402

ROOT = os.path.dirname(TESTS)
COUNTDOWN = os.environ.get("COUNTDOWN", os.path.join(ROOT, ".build/debug/countdown"))
SCRATCH = os.environ.get("SCRATCH", os.path.join(ROOT, ".build-pushes"))
POSTGRES = os.environ.get("COUNTDOWN_TEST_POSTGRES")
KEY_ID, TEAM_ID, BUNDLE = "ABC123DEFG", "TEAM456XYZ", "com.example.walk"
TA, TB = "a1" * 32, "b2" * 32


def node(name, url, dir, gateway, receiver):
    """A cluster node with pushes to the stand-in and a webhook to the receiver."""
    return NodeProcess(COUNTDOWN, name, url, dir, "ct-outbox", [
        "--apns-key", os.path.join(dir, "key.p8"), "--apns-key-id", KEY_ID,
        "--apns-team-id", TEAM_ID, "--apns-topic", BUNDLE, "--apns-url", gateway.url,
        "--apns-ca", gateway.tls["ca.pem"], "--apns-timeout-ms", "1500",
        "--apns-channels", "--apns-manage-url", gateway.url,
        "--webhook", receiver.url])


@unittest.skipIf(POSTGRES is None, "COUNTDOWN_TEST_POSTGRES is not set: run make pushes-cluster")
class ClusterOutboxTest(unittest.TestCase):
    def setUp(self):
        os.makedirs(SCRATCH, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix="cd-outbox-", dir=SCRATCH)
        public_key = make_key_p8(os.path.join(self.dir, "key.p8"))
        self.gateway = StandIn(self.dir, public_key, KEY_ID, TEAM_ID, BUNDLE)
        self.refusing = set()  # activities whose deliveries the receiver answers 503

        def answer(n, headers, body):
            return 503 if json.loads(body)["event"]["id"] in self.refusing else 200
        self.receiver = Receiver(answer)
        url = fresh_database(POSTGRES, "countdown_outbox")
        self.a = node("a", url, self.dir, self.gateway, self.receiver)
        self.b = node("b", url, self.dir, self.gateway, self.receiver)
        self.a.split_evenly(["a", "b"])

    def tearDown(self):
        self.a.stop()
        self.b.stop(signal.SIGKILL)
        self.gateway.close()
        self.receiver.close()
        if not os.environ.get("KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, node, title, token, channel=None):
        """A countdown on `node` (an id in one of its shards) whose Live Activity has `token`
        (and `channel`, when given)."""
        found = {}
        live = {"pushTokens": {token: True}}
        if channel:
            live["channel"] = channel

        def started():
            status, a = node.api("POST", "/v1/activities", {
                "kind": "countdown", "endDate": now_ms() + 600_000, "title": title,
                "liveActivity": live})
            found["a"] = a
            return status == 201
        wait_for(started, 10, "a start on " + node.name)
        return found["a"]["id"]

    def delivered(self, id, kind):
        """The receiver's 200-answered deliveries of `kind` for `id`: their arrival times."""
        out = []
        with self.receiver.lock:
            for at, _, body, status in self.receiver.requests:
                e = json.loads(body)["event"]
                if e["id"] == id and e["event"] == kind and status == 200:
                    out.append(at)
        return out

    def updates(self, token):
        """The stand-in's accepted pushes to `token`: (timestamp, isPaused, arrival)."""
        return [(p["payload"]["aps"]["timestamp"],
                 p["payload"]["aps"]["content-state"].get("isPaused"), p["at"])
                for p in self.gateway.pushes(token)]

    def test_each_node_sends_its_shards_then_the_survivor_sends_the_dead_ones(self):
        mine = self.start(self.a, "Gate A", TA)
        theirs = self.start(self.b, "Gate B", TB)
        # Each node posts its own activity's start (the webhook).
        wait_for(lambda: self.delivered(mine, "started") and self.delivered(theirs, "started"),
                 10, "both starts delivered")

        # A pause on each node: each sends its own update push.
        time.sleep(1.05)  # a new second for each budget
        self.assertEqual(self.a.api("POST", "/v1/activities/%s/pause" % mine)[0], 200)
        wait_for(lambda: len(self.updates(TA)) == 1, 10, "a's push")
        self.assertTrue(self.updates(TA)[0][1], "paused")

        # b's pause meets a gateway and a receiver that refuse it: both wait in b's outbox.
        self.gateway.answer_next(TB, *[(503, "ServiceUnavailable")] * 1000)
        self.refusing.add(theirs)
        self.assertEqual(self.b.api("POST", "/v1/activities/%s/pause" % theirs)[0], 200)
        wait_for(lambda: any(r["token"] == TB for r in self.gateway.requests), 10,
                 "b's push tried")
        wait_for(lambda: any(json.loads(body)["event"]["id"] == theirs and status == 503
                             for _, _, body, status in self.receiver.requests), 10,
                 "b's delivery tried")
        self.assertEqual(self.updates(TB), [], "refused, not accepted")

        # kill -9 of b; the gateway and the receiver take them again.
        self.b.stop(signal.SIGKILL)
        killed = time.time()
        with self.gateway.lock:
            self.gateway.script[TB] = []
        self.refusing.clear()

        # a takes b's shards and sends what b left pending: the push and the delivery.
        wait_for(lambda: len(self.updates(TB)) == 1, 15, "b's pending push sent by a")
        paused = self.updates(TB)[0]
        self.assertTrue(paused[1], "the pending push is the pause")
        self.assertGreater(paused[2], killed)
        wait_for(lambda: self.delivered(theirs, "paused"), 15, "b's pending delivery sent by a")
        self.assertGreater(self.delivered(theirs, "paused")[0], killed)

        # A resume of b's activity, now a's: a pushes it with a later timestamp (the budget
        # came with the shard) and posts it.
        time.sleep(1.05)
        self.assertEqual(self.a.api("POST", "/v1/activities/%s/resume" % theirs)[0], 200)
        wait_for(lambda: len(self.updates(TB)) == 2, 10, "the resume's push")
        resumed = self.updates(TB)[1]
        self.assertFalse(resumed[1])
        self.assertGreater(resumed[0], paused[0], "timestamps rise across the takeover")
        wait_for(lambda: self.delivered(theirs, "resumed"), 10, "the resume's delivery")
        # Nothing was sent twice to the phone: one pause, one resume.
        self.assertEqual(len(self.updates(TB)), 2)
        self.assertEqual(len(self.delivered(theirs, "paused")), 1)

    def test_a_dead_nodes_channel_creation_is_made_by_the_survivor(self):
        """A channel's creation pending on b (the management API refusing it) when b is killed
        with SIGKILL: a takes b's shards, makes the channel, sets it on the activity, and
        broadcasts the activity's next change on it; the dismissal deletes it."""
        self.gateway.answer_next("create-channel", *[(503, "ServiceUnavailable")] * 1000)
        theirs = self.start(self.b, "Gate C", TB, channel="create")
        wait_for(lambda: any(r["token"] == "create-channel" for r in self.gateway.requests), 10,
                 "b's creation tried")
        self.b.stop(signal.SIGKILL)
        with self.gateway.lock:
            self.gateway.script["create-channel"] = []
        wait_for(lambda: len(self.gateway.made) == 1, 15, "the channel made by a")
        made = self.gateway.made[0]

        def holds():
            status, a = self.a.api("GET", "/v1/activities/" + theirs)
            return status == 200 and a["liveActivity"]["channelId"] == made
        wait_for(holds, 10, "the channel set on b's activity by a")
        time.sleep(1.05)
        self.assertEqual(self.a.api("POST", "/v1/activities/%s/pause" % theirs)[0], 200)
        wait_for(lambda: any(b["channel"] == made and b["payload"]["aps"]["content-state"]
                             .get("isPaused") for b in self.gateway.broadcasts), 10,
                 "the pause broadcast on the channel")
        self.assertEqual(self.a.api("POST", "/v1/activities/%s/end" % theirs,
                                    {"dismissal": "immediate"})[0], 200)
        wait_for(lambda: self.gateway.deleted == [made], 10, "the channel deleted by a")
        self.assertEqual(len(self.gateway.made), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
