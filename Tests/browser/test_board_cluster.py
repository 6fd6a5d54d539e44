# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""The kiosk board (GET /) of one cluster node in a real headless Chromium, showing the
activities of every node live (docs/cluster.md "Subscriptions across nodes"): two
`countdown serve --node` processes on a real PostgreSQL, forwarding to each other.

Run by `make browser-cluster` (part of `make test`) under Tests/postgres/with-postgres.sh,
which sets COUNTDOWN_TEST_POSTGRES. Environment:
  COUNTDOWN      the countdown executable (default .build/debug/countdown)
  SCRATCH        where screenshots and server files go (default .build-browser)
"""

import os
import shutil
import signal
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_board import chromium, COUNTDOWN, SCRATCH  # noqa: E402
from countdown_http import NodeProcess, fresh_database, now_ms, wait_for  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

POSTGRES = os.environ.get("COUNTDOWN_TEST_POSTGRES")


@unittest.skipIf(POSTGRES is None, "COUNTDOWN_TEST_POSTGRES is not set: run make browser-cluster")
class ClusterBoardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(SCRATCH, exist_ok=True)
        cls.dir = tempfile.mkdtemp(prefix="cd-board-cluster-", dir="/tmp")
        url = fresh_database(POSTGRES, "countdown_board")
        cls.a = NodeProcess(COUNTDOWN, "a", url, cls.dir, "ct-board")
        cls.b = NodeProcess(COUNTDOWN, "b", url, cls.dir, "ct-board")
        cls.a.split_evenly(["a", "b"])
        cls.driver = chromium()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.a.stop()
        cls.b.stop(signal.SIGKILL)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def start(self, node, title, end_in_ms):
        """Starts a countdown on `node` (an id in one of its shards); its id."""
        def started():
            status, a = node.api("POST", "/v1/activities", {
                "kind": "countdown", "endDate": now_ms() + end_in_ms, "title": title})
            if status == 201:
                self.ids[title] = a["id"]
                return True
            return False
        wait_for(started, 10, "a start on " + node.name)
        return self.ids[title]

    def tiles(self):
        return {t.get_attribute("data-id"): t for t in
                self.driver.find_elements(By.CSS_SELECTOR, "section.tile")}

    def badges(self, id):
        tile = self.tiles()[id]
        return [b.text.lower() for b in tile.find_elements(By.CSS_SELECTOR, ".badge")]

    def test_board_spans_nodes(self):
        """a's board shows b's activities and follows b's changes live; after kill -9 of b it
        follows them from a."""
        self.ids = {}
        mine = self.start(self.a, "Gate A", 600_000)
        theirs = self.start(self.b, "Gate B", 600_000)
        self.driver.get("http://127.0.0.1:%d/" % self.a.port)
        wait_for(lambda: set(self.tiles()) == {mine, theirs}, 15, "both nodes' tiles on a's board")
        shard = self.a.api("GET", "/v1/activities/" + theirs)[1]["shard"]
        owners = {s["shard"]: s["owner"] for s in self.a.api("GET", "/v1/cluster")[1]["shards"]}
        self.assertEqual(owners[shard], "b", "Gate B is b's")

        # Changes on b show on a's board at once: a pause, a start, an end with dismissal.
        self.assertEqual(self.b.api("POST", "/v1/activities/%s/pause" % theirs)[0], 200)
        wait_for(lambda: self.badges(theirs) == ["paused"], 3, "b's pause on a's board")
        later = self.start(self.b, "Shuttle B", 300_000)
        wait_for(lambda: later in self.tiles(), 3, "b's new activity on a's board")
        status, _ = self.b.api("POST", "/v1/activities/%s/end" % later, {"dismissal": "immediate"})
        self.assertEqual(status, 200)
        wait_for(lambda: later not in self.tiles(), 3, "b's dismissal on a's board")
        self.driver.save_screenshot(os.path.join(SCRATCH, "board-cluster.png"))

        # kill -9 of b: a takes b's shards; the board keeps the tile, and a resume (now
        # carried out by a) shows.
        self.b.stop(signal.SIGKILL)

        def resumed():
            return self.a.api("POST", "/v1/activities/%s/resume" % theirs)[0] == 200
        wait_for(resumed, 10, "a to take b's shards")
        wait_for(lambda: self.badges(theirs) == [], 3, "the resume on a's board")
        self.assertEqual(set(self.tiles()), {mine, theirs})


if __name__ == "__main__":
    unittest.main(verbosity=2)
