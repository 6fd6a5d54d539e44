# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""Web safety (docs/security.md) in a real headless Chromium: what a page on another origin can do to a
`countdown serve --http` on loopback. Chromium resolves attacker.example and evil.example to
127.0.0.1 (--host-resolver-rules), as a DNS-rebinding attacker's resolver would.

Run by `make browser` (part of `make test`); the environment is test_board.py's.
"""

import base64
import hashlib
import http.server
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_board import COUNTDOWN, Server, api, chromium, free_port, now_ms  # noqa: E402
from countdown_http import wait_for  # noqa: E402

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

ATTACK = """<!doctype html><meta charset="utf-8"><title>loading</title>
<h1>Win a prize</h1>
<form id="f" method="POST" action="http://127.0.0.1:%(port)d/v1/activities" enctype="text/plain">
<input type="hidden"
 name='{"id":"evil","kind":"countdown","endDate":4102444800000,"title":"EVACUATE NOW","subtitle":"'
 value='"}'>
</form>
<iframe id="fr" name="fr" src="http://127.0.0.1:%(port)d/" width="800" height="400"></iframe>
<script>
fetch("http://127.0.0.1:%(port)d/v1/activities/gate/end", {method: "POST", mode: "no-cors",
      body: "{}"})
  .then(() => fetch("http://127.0.0.1:%(port)d/v1/activities/gate", {method: "PATCH",
      mode: "no-cors", body: '{"title":"PWNED"}'}))
  .then(() => { document.title = "fetched"; }, () => { document.title = "fetched"; });
</script>
"""


class AttackSite:
    """Another origin (http://attacker.example:PORT/) serving the attacker's page."""

    def __init__(self, target_port):
        page = (ATTACK % {"port": target_port}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class WebSafetyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="cd-websafety-", dir="/tmp")
        cls.port = free_port()
        cls.server = Server(cls.dir, cls.port)
        status, _ = cls.server.api("POST", "/v1/activities", {
            "id": "gate", "kind": "countdown", "endDate": now_ms() + 600_000, "title": "Gate B12"})
        assert status == 201, status
        cls.site = AttackSite(cls.port)
        options = Options()
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1280,800",
                    "--host-resolver-rules=MAP attacker.example 127.0.0.1, "
                    "MAP evil.example 127.0.0.1"]:
            options.add_argument(arg)
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
        cls.driver = webdriver.Chrome(service=service, options=options)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.site.stop()
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def wait_for(self, condition, timeout, what):
        wait_for(condition, timeout, what)

    def test_1_cross_site_requests_change_nothing(self):
        """A form (enctype text/plain, a JSON body in disguise) and no-cors fetches from another
        origin: the server refuses them; the activity is as it was, no new one exists."""
        self.driver.get("http://attacker.example:%d/" % self.site.port)
        self.wait_for(lambda: self.driver.title == "fetched", 10, "the page's fetches")
        self.driver.execute_script("document.getElementById('f').submit()")
        self.wait_for(lambda: "attacker.example" not in self.driver.current_url, 10,
                      "the form's navigation")
        self.assertIn("forbidden", self.driver.find_element(By.TAG_NAME, "body").text)
        status, gate = self.server.api("GET", "/v1/activities/gate")
        self.assertEqual(status, 200)
        self.assertEqual(gate["phase"], "active")
        self.assertEqual(gate["content"]["title"], "Gate B12")
        self.assertEqual(self.server.api("GET", "/v1/activities/evil")[0], 404)

    def test_2_board_not_framed(self):
        """The board in another origin's frame stays empty (clickjacking of its buttons)."""
        self.driver.get("http://attacker.example:%d/" % self.site.port)
        self.wait_for(lambda: self.driver.title == "fetched", 10, "the page")
        time.sleep(1.5)
        self.driver.switch_to.frame("fr")
        try:
            self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "section.tile"), [])
            self.assertEqual(self.driver.find_elements(By.TAG_NAME, "button"), [])
        finally:
            self.driver.switch_to.default_content()

    def test_3_rebinding(self):
        """A page on evil.example, which resolves to this machine, reads nothing."""
        self.driver.get("http://evil.example:%d/v1/activities" % self.port)
        body = self.driver.find_element(By.TAG_NAME, "body").text
        self.assertIn("misdirected", body)
        self.assertNotIn("Gate B12", body)
        self.driver.get("http://evil.example:%d/" % self.port)
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "section.tile"), [])

    def test_4_own_page_still_works(self):
        """The board's own buttons (same origin) still pause and resume."""
        self.driver.get("http://127.0.0.1:%d/" % self.port)
        self.wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR,
                                                        'section.tile[data-id="gate"] button'),
                      10, "the gate's buttons")
        tile = self.driver.find_element(By.CSS_SELECTOR, 'section.tile[data-id="gate"]')
        pause = next(b for b in tile.find_elements(By.TAG_NAME, "button")
                     if b.text.lower() == "pause")
        pause.click()
        self.wait_for(lambda: self.server.api("GET", "/v1/activities/gate")[1]["phase"] == "paused",
                      5, "the pause")


def openssl(dir, *args, input=None):
    return subprocess.run(["openssl"] + list(args), cwd=dir, input=input, capture_output=True,
                          check=True).stdout


class BoardOverHTTPSTest(unittest.TestCase):
    """The board served with --tls-cert/--tls-key, in Chromium trusting exactly that key."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="cd-tls-", dir="/tmp")
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        openssl(cls.dir, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                "-subj", "/CN=Countdown test CA")
        openssl(cls.dir, "req", *ec, "-keyout", "server.key", "-out", "server.csr",
                "-subj", "/CN=localhost")
        with open(os.path.join(cls.dir, "san.ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        openssl(cls.dir, "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
        spki = openssl(cls.dir, "pkey", "-in", "server.key", "-pubout", "-outform", "der")
        pin = base64.b64encode(hashlib.sha256(spki).digest()).decode()
        cls.port = free_port()
        cls.proc = subprocess.Popen(
            [COUNTDOWN, "serve", "--socket", os.path.join(cls.dir, "c.sock"), "--state", ":memory:",
             "--http", "127.0.0.1:%d" % cls.port, "--tls-cert", "server.pem",
             "--tls-key", "server.key"],
            cwd=cls.dir, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = cls.proc.stdout.readline()
        assert "https://127.0.0.1:%d/" % cls.port in line, line
        cls.tls = ssl.create_default_context(cafile=os.path.join(cls.dir, "ca.pem"))
        status, _ = cls.api("POST", "/v1/activities", {
            "id": "gate", "kind": "countdown", "endDate": now_ms() + 600_000, "title": "Gate B12"})
        assert status == 201, status
        options = Options()
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1280,800", "--ignore-certificate-errors-spki-list=" + pin]:
            options.add_argument(arg)
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
        cls.driver = webdriver.Chrome(service=service, options=options)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.proc.send_signal(signal.SIGTERM)
        cls.proc.wait(timeout=15)
        cls.proc.stdout.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def api(cls, method, path, body=None):
        return api(cls.port, method, path, body, tls=cls.tls)

    def test_board_over_https(self):
        """Tiles, live seconds from the event stream and the pause button, all over HTTPS."""
        self.driver.get("https://127.0.0.1:%d/" % self.port)
        deadline = time.time() + 10
        while time.time() < deadline and not self.driver.find_elements(
                By.CSS_SELECTOR, 'section.tile[data-id="gate"]'):
            time.sleep(0.05)
        tile = self.driver.find_element(By.CSS_SELECTOR, 'section.tile[data-id="gate"]')
        self.assertIn("Gate B12", tile.text)
        # A lifecycle event over the stream redraws the tile: end it from the API.
        pause = next(b for b in tile.find_elements(By.TAG_NAME, "button")
                     if b.text.lower() == "pause")
        pause.click()
        deadline = time.time() + 5
        while time.time() < deadline and self.api("GET", "/v1/activities/gate")[1]["phase"] != "paused":
            time.sleep(0.05)
        self.assertEqual(self.api("GET", "/v1/activities/gate")[1]["phase"], "paused")
        self.api("POST", "/v1/activities/gate/end", {})
        deadline = time.time() + 5
        while time.time() < deadline and "ended" not in self.driver.find_element(
                By.CSS_SELECTOR, 'section.tile[data-id="gate"]').text.lower():
            time.sleep(0.05)
        self.assertIn("ended", self.driver.find_element(
            By.CSS_SELECTOR, 'section.tile[data-id="gate"]').text.lower())


class KeyedServerCase(unittest.TestCase):
    """A server with `--access` (the class's ACCESS text, mode 0600) in a directory of its own,
    Chromium, and `start` on the Unix socket (which needs no key). No tests of its own."""

    ACCESS = ""

    @classmethod
    def setUpClass(cls):
        if cls is KeyedServerCase:
            raise unittest.SkipTest("a base case: its subclasses have the tests")
        cls.dir = tempfile.mkdtemp(prefix="cd-keys-", dir="/tmp")
        access = os.path.join(cls.dir, "access")
        with open(access, "w") as f:
            f.write(cls.ACCESS)
        os.chmod(access, 0o600)
        cls.port = free_port()
        cls.server = Server(cls.dir, cls.port, ["--access", access])
        cls.seed()
        cls.driver = chromium()

    @classmethod
    def seed(cls):
        pass

    @classmethod
    def start(cls, id, title, group=None):
        import socket as sockets
        with sockets.socket(sockets.AF_UNIX) as c:
            c.connect(os.path.join(cls.dir, "c.sock"))
            extra = ',"group":"%s"' % group if group else ""
            c.sendall(('{"op":"start","id":"%s","kind":"countdown","endDate":%d,'
                       '"title":"%s"%s}\n' % (id, now_ms() + 600_000, title, extra)).encode())
            assert b'"ok":true' in c.recv(4096)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)


class BoardWithKeysTest(KeyedServerCase):
    """The board with a key (docs/security.md, "Roles"): `/?key=KEY` keeps the key in an
    HttpOnly cookie and drops it from the address; a view key's screen shows the tiles and no
    buttons (`controls=1` adds none); a control key's has them, and they work."""

    VIEW, CONTROL = "screen-key-0001", "operator-key-0001"
    ACCESS = "view %s\ncontrol %s\n" % (VIEW, CONTROL)

    @classmethod
    def seed(cls):
        cls.start("gate", "Gate B12")

    def tiles(self):
        return self.driver.find_elements(By.CSS_SELECTOR, "section.tile")

    def test_1_view_key(self):
        self.driver.get("http://127.0.0.1:%d/?key=%s&controls=1" % (self.port, self.VIEW))
        wait_for(lambda: len(self.tiles()) == 1, 10, "the gate's tile with a view key")
        self.assertEqual(self.driver.current_url, "http://127.0.0.1:%d/?controls=1" % self.port)
        self.assertNotIn(self.VIEW, self.driver.current_url)
        self.assertEqual(self.driver.find_elements(By.TAG_NAME, "button"), [])
        # HttpOnly: the page's script cannot read it.
        self.assertNotIn("countdown_key", self.driver.execute_script("return document.cookie"))
        cookie = self.driver.get_cookie("countdown_key")
        self.assertEqual(cookie["value"], self.VIEW)
        self.assertTrue(cookie["httpOnly"])
        self.assertEqual(cookie["sameSite"], "Strict")
        # It ticks: the event stream and the clock came with the cookie.
        first = self.tiles()[0].find_element(By.CSS_SELECTOR, ".timer").text
        wait_for(lambda: self.tiles()[0].find_element(By.CSS_SELECTOR, ".timer").text != first,
                 3, "the next second")

    def test_2_control_key(self):
        self.driver.get("http://127.0.0.1:%d/?key=%s" % (self.port, self.CONTROL))
        wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, "section.tile button"), 10,
                 "the buttons with a control key")
        pause = next(b for b in self.driver.find_elements(By.TAG_NAME, "button")
                     if b.text.lower() == "pause")
        pause.click()
        wait_for(lambda: "paused" in [b.text.lower() for b in self.driver.find_elements(
            By.CSS_SELECTOR, "section.tile .badge")], 5, "the pause, made with the cookie")

    def test_3_no_key(self):
        self.driver.delete_all_cookies()
        self.driver.get("http://127.0.0.1:%d/" % self.port)
        self.assertIn("unauthorized", self.driver.page_source)
        self.assertEqual(self.tiles(), [])


class BoardWithGroupKeysTest(KeyedServerCase):
    """The board with a key that has groups (docs/security.md, "Groups"): a view key of gate-b
    shows gate-b's tiles alone, those started later too, no buttons; `?group=` narrows a key of
    two groups to one, and its buttons work there."""

    SCREEN, OPERATOR = "screen-b-0001", "operator-ab-0001"
    ACCESS = "view %s gate-b\ncontrol %s gate-a,gate-b\n" % (SCREEN, OPERATOR)

    @classmethod
    def seed(cls):
        for id, group in [("a1", "gate-a"), ("b1", "gate-b"), ("n1", None)]:
            cls.start(id, "T " + id, group)

    def titles(self):
        return sorted(t.text for t in self.driver.find_elements(By.CSS_SELECTOR, "section.tile .title"))

    def test_1_view_key_of_one_group(self):
        self.driver.get("http://127.0.0.1:%d/?key=%s&controls=1" % (self.port, self.SCREEN))
        wait_for(lambda: self.titles() == ["T b1"], 10, "gate-b's tile alone")
        self.assertEqual(self.driver.find_elements(By.TAG_NAME, "button"), [])
        # Started later: gate-b's appears, gate-a's and one without a group do not.
        self.start("a2", "T a2", "gate-a")
        self.start("n2", "T n2")
        self.start("b2", "T b2", "gate-b")
        wait_for(lambda: self.titles() == ["T b1", "T b2"], 10, "b2's tile")
        time.sleep(1.5)
        self.assertEqual(self.titles(), ["T b1", "T b2"])

    def test_2_group_narrows_a_key_of_two(self):
        self.driver.delete_all_cookies()
        self.driver.get("http://127.0.0.1:%d/?key=%s&group=gate-a" % (self.port, self.OPERATOR))
        wait_for(lambda: self.titles() == ["T a1", "T a2"], 10, "gate-a's tiles alone")
        self.assertIn("group=gate-a", self.driver.current_url)
        pause = next(b for b in self.driver.find_elements(By.TAG_NAME, "button")
                     if b.text.lower() == "pause")
        pause.click()
        wait_for(lambda: "paused" in [b.text.lower() for b in self.driver.find_elements(
            By.CSS_SELECTOR, "section.tile .badge")], 5, "the pause of a gate-a activity")


if __name__ == "__main__":
    unittest.main(verbosity=2)
