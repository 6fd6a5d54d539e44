# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""The kiosk board (GET /, docs/http.md) in a real headless Chromium driven by Selenium, against a
real `countdown serve --http` with a real state file.

Run by `make browser` (part of `make test`). Environment:
  COUNTDOWN      the countdown executable (default .build/debug/countdown)
  SCRATCH        where screenshots and server files go (default .build-browser)
  SCREENSHOTS    a directory to also save the README's screenshots in (`make screenshots`)
"""

import http.server
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from countdown_http import api, free_port, now_ms, wait_for  # noqa: E402,F401 (test_web_safety imports them from here)
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COUNTDOWN = os.environ.get("COUNTDOWN", os.path.join(ROOT, ".build/debug/countdown"))
SCRATCH = os.environ.get("SCRATCH", os.path.join(ROOT, ".build-browser"))


class Server:
    """`countdown serve` as a child process, with HTTP on `port` and its state in `dir`."""

    def __init__(self, dir, port, extra=()):
        self.dir, self.port = dir, port
        self.proc = subprocess.Popen(
            [COUNTDOWN, "serve", "--socket", os.path.join(dir, "c.sock"),
             "--state", os.path.join(dir, "state.db"), "--http", "127.0.0.1:%d" % port]
            + list(extra),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.start_line = self.proc.stdout.readline()
        assert "http http://127.0.0.1:%d/" % port in self.start_line, self.start_line

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=15)
        self.proc.stdout.close()

    def api(self, method, path, body=None):
        return api(self.port, method, path, body)


def seconds_of(text):
    """Whole seconds of a `timer` text (`1:35`, `1:02:05`)."""
    parts = [int(p) for p in text.split(":")]
    total = 0
    for p in parts:
        total = total * 60 + p
    return total


def chromium():
    """Headless Chromium at 1280×800."""
    options = Options()
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,800", "--hide-scrollbars", "--force-device-scale-factor=1"]:
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)


def set_viewport(driver, width, height):
    """The page's own size (a window's size would include the browser's frame)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def save_screenshot(driver, name):
    """A screenshot in SCRATCH, and in SCREENSHOTS too when it is set (the README's)."""
    path = os.path.join(SCRATCH, name)
    driver.save_screenshot(path)
    target = os.environ.get("SCREENSHOTS")
    if target:
        os.makedirs(target, exist_ok=True)
        shutil.copy(path, os.path.join(target, name))


def serve(cls, prefix, extra=()):
    """A server for a test class (`cls.dir`, `cls.port`, `cls.server`)."""
    os.makedirs(SCRATCH, exist_ok=True)
    cls.dir = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    cls.port = free_port()
    cls.server = Server(cls.dir, cls.port, extra)


class BoardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        serve(cls, "cd-board-")
        t = now_ms()
        s = cls.server
        cls.created = {}
        for body in [
            {"id": "gate", "kind": "countdown", "endDate": t + 95_500, "startDate": t - 60_000,
             "title": "Gate B12", "subtitle": "Boarding · Lisbon", "color": "#1E88E5"},
            {"id": "auction", "kind": "countdown", "endDate": t + 35_500, "title": "Auction #3",
             "subtitle": "Vintage camera", "color": "#E53935",
             "milestones": [{"name": "last-call", "atMs": 31_000}]},
            {"id": "dose", "kind": "elapsed", "startDate": t - 65_000, "goalMs": 600_000,
             "title": "Medication", "subtitle": "Ward 4, bed 2", "color": "#43A047",
             "milestones": [{"name": "second dose", "atMs": 67_000,
                             "content": {"subtitle": "Second dose due"}}]},
            {"id": "parking", "kind": "countdown", "endDate": t + 3_600_000, "title": "Parking P2",
             "subtitle": "Bay 41", "color": "#FB8C00"},
            {"id": "shuttle", "kind": "countdown", "endDate": t + 600_000, "title": "Shuttle",
             "subtitle": "Every 10 minutes", "staleDate": t + 1_000},
        ]:
            status, a = s.api("POST", "/v1/activities", body)
            assert status == 201, (status, a)
            cls.created[a["id"]] = a
        assert s.api("POST", "/v1/activities/parking/pause")[0] == 200
        cls.driver = chromium()
        cls.viewport(1280, 800)
        cls.driver.get("http://127.0.0.1:%d/" % cls.port)
        cls.wait_for(lambda: len(cls.tiles()) == 5, 15, "five tiles")

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def viewport(cls, width, height):
        set_viewport(cls.driver, width, height)

    @classmethod
    def tiles(cls):
        return cls.driver.find_elements(By.CSS_SELECTOR, "section.tile")

    @classmethod
    def wait_for(cls, condition, timeout, what):
        wait_for(condition, timeout, what)

    @classmethod
    def snapshots(cls):
        """How many snapshots the page's streams have brought."""
        return int(cls.driver.execute_script("return document.getElementById('board').dataset.snapshots"))

    def tile(self, id):
        return self.driver.find_element(By.CSS_SELECTOR, 'section.tile[data-id="%s"]' % id)

    def text(self, id, cls):
        return self.tile(id).find_element(By.CSS_SELECTOR, "." + cls).text

    def badges(self, id):
        return [b.text.lower() for b in self.tile(id).find_elements(By.CSS_SELECTOR, ".badge")]

    def screenshot(self, name):
        save_screenshot(self.driver, name)

    # The tests run in name order (unittest sorts them), one browser for all.

    def test_1_tiles(self):
        """One tile per activity, soonest ending first, with title, subtitle, color, badges."""
        order = [t.get_attribute("data-id") for t in self.tiles()]
        self.assertEqual(order, ["auction", "gate", "shuttle", "parking", "dose"])
        self.assertEqual(self.text("gate", "title"), "Gate B12")
        self.assertEqual(self.text("gate", "subtitle"), "Boarding · Lisbon")
        color = self.driver.execute_script(
            "return arguments[0].style.getPropertyValue('--c')", self.tile("auction"))
        self.assertEqual(color.strip(), "#E53935")
        self.assertEqual(self.badges("parking"), ["paused"])
        self.assertEqual(self.text("parking", "timer"), "1:00:00")
        self.wait_for(lambda: self.badges("shuttle") == ["stale"], 5, "the stale badge")
        # Progress: a countdown with a start (gate: 60 s of 155.5 s gone), none without one.
        width = self.driver.execute_script(
            "return parseFloat(arguments[0].querySelector('.bar > div').style.width)",
            self.tile("gate"))
        self.assertTrue(35 <= width <= 50, width)
        self.assertIn("none", self.tile("auction").find_element(By.CSS_SELECTOR, ".bar")
                      .get_attribute("class"))
        # Milestones passed while the page is open: last-call at 4.5 s, second dose at 2 s.
        self.wait_for(lambda: self.text("auction", "milestone") == "● last-call", 10, "last-call")
        self.wait_for(lambda: self.text("dose", "milestone") == "● second dose", 10, "second dose")
        # Its content patch shows at once (no command: the milestone changed the subtitle).
        self.wait_for(lambda: self.text("dose", "subtitle") == "Second dose due", 2,
                      "the milestone's subtitle")
        self.screenshot("board-1280x800.png")

    def test_2_seconds(self):
        """Each second shows within 50 ms of the instant it changes, and agrees with the server."""
        self.driver.execute_script("""
            window.__changes = [];
            const el = document.querySelector('section.tile[data-id="gate"] .timer');
            new MutationObserver(() => window.__changes.push([Date.now(), el.textContent]))
              .observe(el, { childList: true, characterData: true, subtree: true });
        """)
        checks = []
        for _ in range(4):
            before = self.text("gate", "timer")
            status, a = self.server.api("GET", "/v1/activities/gate")
            after = self.text("gate", "timer")
            self.assertEqual(status, 200)
            checks.append((before, a["text"], after))
            time.sleep(1.5)
        for before, server, after in checks:
            self.assertIn(server, (before, after), checks)
        changes = self.driver.execute_script("return window.__changes")
        self.assertGreaterEqual(len(changes), 5, changes)
        end = self.created["gate"]["endDate"]
        late = []
        previous = None
        for at, text in changes:
            v = seconds_of(text)
            # The value v is shown from the instant the remaining time is v seconds.
            late.append(at - (end - v * 1000))
            if previous is not None:
                self.assertEqual(previous - v, 1, changes)
            previous = v
        print("board redraw lateness (ms):", late, "offset, rtt:", self.driver.execute_script(
            "return [window.countdownBoard.offset, document.getElementById('board').dataset.rtt]"),
            file=sys.stderr)
        redraws = self.driver.execute_script("return window.countdownBoard.redraws")
        self.assertTrue(all(-5 <= d <= 50 for d in late), (late, changes, redraws))

    def test_3_pause_button(self):
        """Pause shows at once, pauses the activity (checked through the API), freezes it."""
        self.driver.execute_script("""
            window.__pending = false;
            const t = document.querySelector('section.tile[data-id="gate"]');
            new MutationObserver(() => { if (t.classList.contains('pending')) window.__pending = true; })
              .observe(t, { attributes: true, attributeFilter: ['class'] });
        """)
        button = self.tile("gate").find_element(By.CSS_SELECTOR, "button.toggle")
        self.assertEqual(button.text, "Pause")
        button.click()
        self.assertTrue(self.driver.execute_script("return window.__pending"))
        self.wait_for(lambda: self.badges("gate") == ["paused"], 5, "the paused badge")
        status, a = self.server.api("GET", "/v1/activities/gate")
        self.assertEqual((status, a["phase"]), (200, "paused"))
        self.assertEqual(self.text("gate", "timer"), a["text"])
        frozen = self.text("gate", "timer")
        time.sleep(1.3)
        self.assertEqual(self.text("gate", "timer"), frozen)
        self.assertEqual(self.tile("gate").find_element(By.CSS_SELECTOR, "button.toggle").text,
                         "Resume")
        self.tile("gate").find_element(By.CSS_SELECTOR, "button.toggle").click()
        self.wait_for(lambda: self.badges("gate") == [], 5, "the badge to go")
        self.assertEqual(self.server.api("GET", "/v1/activities/gate")[1]["phase"], "active")

    def test_4_refusal(self):
        """A refused command shows a readable error on its tile."""
        self.assertEqual(self.server.api("POST", "/v1/activities/auction/end")[0], 200)
        self.wait_for(lambda: "ended" in self.badges("auction"), 5, "the ended badge")
        button = self.tile("auction").find_element(By.CSS_SELECTOR, "button.toggle")
        self.assertFalse(button.is_enabled())
        # Enabled by hand, the button asks anyway: the server refuses with activityEnded.
        self.driver.execute_script("arguments[0].disabled = false", button)
        button.click()
        self.wait_for(lambda: "activityEnded" in self.text("auction", "error"), 5, "the error")
        self.assertIn("Refused", self.text("auction", "error"))
        order = [t.get_attribute("data-id") for t in self.tiles()]
        self.assertEqual(order[-1], "auction")  # ended tiles go last

    def test_5_small_screen(self):
        """Readable on an 800×480 edge screen: nothing cut off sideways, large digits."""
        self.viewport(800, 480)
        time.sleep(0.5)
        self.assertEqual(self.driver.execute_script("return [innerWidth, innerHeight]"), [800, 480])
        width = self.driver.execute_script("return document.documentElement.clientWidth")
        scroll = self.driver.execute_script("return document.documentElement.scrollWidth")
        self.assertLessEqual(scroll, width)
        for t in self.tiles():
            timer = t.find_element(By.CSS_SELECTOR, ".timer")
            fits = self.driver.execute_script(
                "return arguments[0].scrollWidth <= arguments[0].clientWidth", timer)
            self.assertTrue(fits, t.get_attribute("data-id"))
            size = float(timer.value_of_css_property("font-size").replace("px", ""))
            self.assertGreaterEqual(size, 32)
        # Every tile fits on the screen without scrolling.
        bottom = self.driver.execute_script(
            "return Math.max(...[...document.querySelectorAll('section.tile')].map(t => t.getBoundingClientRect().bottom))")
        self.assertLessEqual(bottom, 480)
        self.screenshot("board-800x480.png")
        self.viewport(1280, 800)

    def test_6_restart(self):
        """After the server restarts, the page reconnects and catches up from a new snapshot."""
        snapshots = self.snapshots()
        self.server.stop()
        self.wait_for(lambda: "reconnecting" in self.driver.find_element(By.ID, "status").text, 10,
                      "the reconnecting status")
        time.sleep(1)
        type(self).server = Server(self.dir, self.port)
        self.wait_for(lambda: self.snapshots() > snapshots, 15, "a new snapshot")
        self.wait_for(lambda: self.driver.find_element(By.ID, "status").text == "live", 5, "live")
        ids = sorted(t.get_attribute("data-id") for t in self.tiles())
        self.assertEqual(ids, ["auction", "dose", "gate", "parking", "shuttle"])
        status, a = self.server.api("POST", "/v1/activities", {
            "id": "after", "kind": "countdown", "endDate": now_ms() + 20_000, "title": "After"})
        self.assertEqual(status, 201)
        self.wait_for(lambda: self.tiles()[0].get_attribute("data-id") == "after", 5, "new tile")
        first = self.text("after", "timer")
        self.wait_for(lambda: self.text("after", "timer") != first, 3, "the new tile to tick")

    def test_8_refused_stream(self):
        """A stream refused with an answer (503, as while the server stops, or a proxy's 502),
        which the browser does not retry by itself: the page connects again once the server is
        back."""
        snapshots = self.snapshots()
        self.server.stop()
        refused = []

        class Refusing(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                refused.append(self.path)
                body = b'{"code":"shutdown","message":"the server is stopping"}'
                self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        stub = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Refusing)
        threading.Thread(target=stub.serve_forever, daemon=True).start()
        try:
            self.wait_for(lambda: any(p.startswith("/v1/events") for p in refused), 15,
                          "the page to ask the refusing server for its stream")
            time.sleep(1.5)
        finally:
            stub.shutdown()
            stub.server_close()
        type(self).server = Server(self.dir, self.port)
        self.wait_for(lambda: self.snapshots() > snapshots, 15, "a new snapshot after the refusal")
        self.wait_for(lambda: self.driver.find_element(By.ID, "status").text == "live", 5, "live")

    def test_7_formatter(self):
        """The page's formatter writes what `countdown format` writes, in every style."""
        values = [0, 1, 59, 61, 3599, 3600, 3725, 86399, 86400, 90061, 359999, 12345678]
        styles = [
            ({"name": "compact"}, ["--style", "compact"]),
            ({"name": "remaining"}, ["--style", "remaining"]),
            ({"name": "positional"}, ["--style", "positional"]),
            ({"name": "minute-second"}, ["--style", "minute-second"]),
            ({"name": "timer"}, ["--style", "timer"]),
            ({"name": "timer", "noHours": True}, ["--style", "timer", "--no-hours"]),
        ] + [({"name": "units", "maxUnits": n}, ["--style", "units", "--max-units", str(n)])
             for n in (1, 2, 3, 4)]
        for style, args in styles:
            cli = subprocess.run([COUNTDOWN, "format"] + args + [str(v * 1000) for v in values],
                                 capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
            page = self.driver.execute_script(
                "return arguments[0].map(s => window.countdownBoard.format(s, arguments[1]))",
                values, style)
            self.assertEqual(page, cli, style)
            # Negative values (a countdown in overtime), as `countdown format --signed` writes.
            negative = [-1, -61, -3725, -90061]
            cli = subprocess.run(
                [COUNTDOWN, "format", "--signed"] + args + ["--"] + [str(v * 1000) for v in negative],
                capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
            page = self.driver.execute_script(
                "return arguments[0].map(s => window.countdownBoard.format(s, arguments[1]))",
                negative, style)
            self.assertEqual(page, cli, style)

    def test_9_controls_0(self):
        """`?controls=0` on a server with buttons: the same tiles without them."""
        status, listed = self.server.api("GET", "/v1/activities")
        self.assertEqual(status, 200)
        count = len(listed["activities"])
        self.assertGreater(count, 0)
        self.driver.get("http://127.0.0.1:%d/?controls=0" % self.port)
        self.wait_for(lambda: len(self.tiles()) == count, 15, "%d tiles" % count)
        self.assertEqual(self.driver.find_elements(By.TAG_NAME, "button"), [])
        self.assertNotIn("Pause", self.driver.find_element(By.TAG_NAME, "body").text)


class PublicBoardTest(unittest.TestCase):
    """A board for a screen facing the public: `--board-controls none` (or `?controls=0`)."""

    @classmethod
    def setUpClass(cls):
        serve(cls, "cd-board-public-", ["--board-controls", "none"])
        t = now_ms()
        for body in [
            {"id": "gate", "kind": "countdown", "endDate": t + 95_500, "title": "Gate B12",
             "subtitle": "Boarding · Lisbon", "color": "#1E88E5"},
            {"id": "parking", "kind": "countdown", "endDate": t + 3_600_000,
             "title": "Parking P2", "subtitle": "Bay 41"},
        ]:
            status, a = cls.server.api("POST", "/v1/activities", body)
            assert status == 201, (status, a)
        assert cls.server.api("POST", "/v1/activities/parking/pause")[0] == 200
        cls.driver = chromium()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def open(self, path, tiles):
        self.driver.get("http://127.0.0.1:%d%s" % (self.port, path))
        BoardTest.wait_for(
            lambda: len(self.driver.find_elements(By.CSS_SELECTOR, "section.tile")) == tiles,
            15, "%d tiles at %s" % (tiles, path))

    def page_text(self):
        return self.driver.find_element(By.TAG_NAME, "body").text

    def test_1_no_controls(self):
        """The same tiles, ticking, with badges; no button, and no word of a command."""
        self.open("/", 2)
        self.assertEqual(self.driver.find_elements(By.TAG_NAME, "button"), [])
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, ".actions, .error"), [])
        text = self.page_text()
        for word in ["Pause", "Resume", "End", "POST", "Refused"]:
            self.assertNotIn(word, text)
        self.assertIn("Gate B12", text)
        tile = self.driver.find_element(By.CSS_SELECTOR, 'section.tile[data-id="parking"]')
        self.assertEqual([b.text.lower() for b in tile.find_elements(By.CSS_SELECTOR, ".badge")],
                         ["paused"])
        timer = lambda: self.driver.find_element(
            By.CSS_SELECTOR, 'section.tile[data-id="gate"] .timer').text
        first = timer()
        BoardTest.wait_for(lambda: timer() != first, 3, "the gate's next second")
        self.driver.save_screenshot(os.path.join(SCRATCH, "board-public.png"))

    def test_2_address_over_default(self):
        """`?controls=1` brings the buttons back on this server (`?controls=0` on a server with
        them: BoardTest.test_9)."""
        self.open("/?controls=1", 2)
        self.assertEqual(len(self.driver.find_elements(By.TAG_NAME, "button")), 4)

    def test_3_empty(self):
        """With nothing to show, the page says so, and nothing about starting one."""
        for id in ["gate", "parking"]:
            self.assertEqual(self.server.api("POST", "/v1/activities/%s/end" % id,
                                             {"dismissal": "immediate"})[0], 200)
        self.open("/", 0)
        BoardTest.wait_for(lambda: self.driver.find_element(By.ID, "empty").is_displayed(), 10,
                           "the empty board")
        self.assertEqual(self.driver.find_element(By.ID, "empty").text, "No activities.")

    def test_4_overtime(self):
        """A stage timer with overtime goes on past its end: -0:01, -0:02 … in red, a badge."""
        status, a = self.server.api("POST", "/v1/activities", {
            "id": "talk", "kind": "countdown", "endDate": now_ms() + 1_500, "title": "Keynote",
            "overtime": True})
        self.assertEqual(status, 201, a)
        self.assertTrue(a["overtime"])
        self.open("/", 1)
        timer = lambda: self.driver.find_element(
            By.CSS_SELECTOR, 'section.tile[data-id="talk"] .timer').text
        BoardTest.wait_for(lambda: timer() == "-0:01", 5, "one second over")
        tile = self.driver.find_element(By.CSS_SELECTOR, 'section.tile[data-id="talk"]')
        self.assertEqual([b.text.lower() for b in tile.find_elements(By.CSS_SELECTOR, ".badge")],
                         ["overtime"])
        self.assertIn("overtime", tile.get_attribute("class"))
        color = self.driver.execute_script(
            "return getComputedStyle(arguments[0].querySelector('.timer')).color", tile)
        self.assertEqual(color, "rgb(255, 82, 82)")
        BoardTest.wait_for(lambda: timer() == "-0:02", 3, "two seconds over")
        # The page's value agrees with the server's.
        status, got = self.server.api("GET", "/v1/activities/talk")
        self.assertEqual(status, 200)
        self.assertTrue(got["value"] < 0 and got["text"].startswith("-0:0"), got)
        self.driver.save_screenshot(os.path.join(SCRATCH, "board-overtime.png"))


class OneTileTest(unittest.TestCase):
    """A screen for one gate: one activity fills it (its digits at least 60% of the screen's
    width), from a gate sign's 1920×1080 to an edge device's 800×480; two to four share it in
    a grid that fills it; `?id=` shows one of many."""

    SIZES = [(1920, 1080), (1280, 800), (800, 480)]

    @classmethod
    def setUpClass(cls):
        serve(cls, "cd-one-")
        t = now_ms()
        status, a = cls.server.api("POST", "/v1/activities", {
            "id": "b12", "kind": "countdown", "endDate": t + 1_500_000, "startDate": t - 300_000,
            "title": "Gate B12", "subtitle": "Boarding · Lisbon", "color": "#1E88E5"})
        assert status == 201, (status, a)
        cls.driver = chromium()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def open(self, path, tiles, size):
        set_viewport(self.driver, size[0], size[1])
        self.driver.get("http://127.0.0.1:%d%s" % (self.port, path))
        BoardTest.wait_for(
            lambda: len(self.driver.find_elements(By.CSS_SELECTOR, "section.tile")) == tiles,
            15, "%d tiles at %s" % (tiles, path))
        time.sleep(0.3)

    def measure(self):
        """The digits' box of the first tile, the viewport, the page's scroll size, and the
        tiles' union."""
        return self.driver.execute_script("""
            const el = document.querySelector('section.tile .timer');
            const r = document.createRange(); r.selectNodeContents(el);
            const b = r.getBoundingClientRect();
            const tiles = [...document.querySelectorAll('section.tile')].map(t => t.getBoundingClientRect());
            const area = tiles.reduce((s, t) => s + t.width * t.height, 0);
            return {width: b.width, height: b.height, bottom: Math.max(...tiles.map(t => t.bottom)),
                    innerWidth, innerHeight, area,
                    scrollWidth: document.documentElement.scrollWidth,
                    scrollHeight: document.documentElement.scrollHeight, text: el.textContent};""")

    def test_1_one_tile_fills_the_screen(self):
        for size in self.SIZES:
            self.open("/", 1, size)
            m = self.measure()
            self.assertEqual([m["innerWidth"], m["innerHeight"]], list(size))
            self.assertGreaterEqual(m["width"], 0.6 * size[0], (size, m))
            self.assertLessEqual(m["bottom"], size[1] + 0.5, (size, m))
            self.assertLessEqual(m["scrollWidth"], size[0], (size, m))
            self.assertLessEqual(m["scrollHeight"], size[1], (size, m))
            self.assertGreaterEqual(m["area"], 0.75 * size[0] * size[1], (size, m))
            self.assertRegex(m["text"], r"^2[45]:[0-5][0-9]$")
            save_screenshot(self.driver, "board-one-%dx%d.png" % size)

    def test_2_two_to_four_share_it(self):
        t = now_ms()
        for k, title in enumerate(["Gate B14", "Gate C2", "Gate C7"]):
            status, a = self.server.api("POST", "/v1/activities", {
                "id": "g%d" % k, "kind": "countdown", "endDate": t + 600_000 * (k + 2),
                "title": title})
            self.assertEqual(status, 201, a)
            for size in self.SIZES:
                self.open("/", k + 2, size)
                m = self.measure()
                self.assertLessEqual(m["scrollWidth"], size[0], (k + 2, size, m))
                self.assertLessEqual(m["scrollHeight"], size[1], (k + 2, size, m))
                self.assertGreaterEqual(m["area"], 0.6 * size[0] * size[1], (k + 2, size, m))
                # Larger than the many-tile board's digits, on every screen.
                self.assertGreaterEqual(m["height"], 0.12 * size[1], (k + 2, size, m))
        save_screenshot(self.driver, "board-four-800x480.png")

    def test_3_id_shows_one_of_many(self):
        self.open("/?id=b12", 1, (800, 480))
        m = self.measure()
        self.assertGreaterEqual(m["width"], 0.6 * 800, m)
        tile = self.driver.find_element(By.CSS_SELECTOR, "section.tile")
        self.assertEqual(tile.get_attribute("data-id"), "b12")


if __name__ == "__main__":
    unittest.main(verbosity=2)
