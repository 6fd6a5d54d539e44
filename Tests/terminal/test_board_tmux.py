# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""`countdown board` in a real terminal: tmux, read back with capture-pane.

Run by `make tui` (part of `make test`). COUNTDOWN is the executable (default
.build/debug/countdown).
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COUNTDOWN = os.environ.get("COUNTDOWN", os.path.join(ROOT, ".build/debug/countdown"))
SESSION = "cd-board-test-%d" % os.getpid()


def now_ms():
    return int(time.time() * 1000)


def tmux(*args):
    return subprocess.run(["tmux", "-L", SESSION] + list(args), capture_output=True, text=True,
                          check=True).stdout


def screen(escapes=False):
    return tmux("capture-pane", "-p", "-t", SESSION, *(["-e"] if escapes else []))


def wait_for(condition, timeout, what):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = screen()
        if condition(last):
            return last
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s; the screen:\n%s" % (what, last))


class Server:
    def __init__(self, dir, extra=()):
        self.dir = dir
        self.socket = os.path.join(dir, "c.sock")
        self.proc = subprocess.Popen(
            [COUNTDOWN, "serve", "--socket", self.socket, "--state", os.path.join(dir, "s.db")]
            + list(extra),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=dir)
        assert self.proc.stdout.readline().startswith("countdown serve:")

    def send(self, *requests):
        out = subprocess.run([COUNTDOWN, "send", "--socket", self.socket] +
                             [json.dumps(r) for r in requests],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        return [json.loads(line) for line in out.stdout.splitlines()]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=15)
        self.proc.stdout.close()


class TerminalBoardTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cd-tui-", dir="/tmp")
        self.server = Server(self.dir)
        t = now_ms()
        self.server.send(
            {"op": "start", "id": "gate", "kind": "countdown", "endDate": t + 95_500,
             "startDate": t - 60_000, "title": "Gate B12", "subtitle": "Boarding",
             "color": "#1E88E5"},
            {"op": "start", "id": "auction", "kind": "countdown", "endDate": t + 35_500,
             "title": "Auction #3", "color": "#E53935"},
            {"op": "start", "id": "dose", "kind": "elapsed", "startDate": t - 5_000,
             "title": "Medication", "milestones": [{"name": "second dose", "atMs": 6_000,
                                                 "content": {"subtitle": "Second dose due"}}]},
            {"op": "start", "id": "parking", "kind": "countdown", "endDate": t + 3_600_000,
             "title": "Parking P2"},
            {"op": "pause", "id": "parking"})
        self.shell_out = os.path.join(self.dir, "shell.txt")
        tmux("new-session", "-d", "-s", SESSION, "-x", "110", "-y", "14",
             "env -i PATH=%s TERM=xterm-256color HOME=%s bash --norc --noprofile" %
             (os.environ["PATH"], self.dir))
        tmux("send-keys", "-t", SESSION,
             "stty -a > %s/before.txt; %s board --socket %s; echo BOARD-EXIT=$?; stty -a > %s/after.txt"
             % (self.dir, COUNTDOWN, self.server.socket, self.dir), "Enter")

    def tearDown(self):
        subprocess.run(["tmux", "-L", SESSION, "kill-server"], capture_output=True)
        self.server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def rows(self, text):
        return [line for line in text.splitlines() if line.startswith("▌")]

    def test_board(self):
        text = wait_for(lambda s: len(self.rows(s)) == 4 and " live" in s, 10, "four rows, live")
        rows = self.rows(text)
        # Soonest ending first: the running countdowns by end, the paused one, the elapsed timer.
        order = [next(n for n in ("Auction", "Gate", "Parking", "Medication") if n in r) for r in rows]
        self.assertEqual(order, ["Auction", "Gate", "Parking", "Medication"])
        self.assertIn("Gate B12 · Boarding", rows[1])
        self.assertIn("[PAUSED]", rows[2])
        self.assertIn("1:00:00", rows[2])
        self.assertTrue(text.splitlines()[0].startswith("Countdown  4 activities"))
        self.assertIn("q quits", text)
        # Values change every second, and the elapsed timer passes its milestone.
        gate = re.search(r"(\d+:\d\d)", rows[1]).group(1)
        text = wait_for(lambda s: re.search(r"(\d+:\d\d)", self.rows(s)[1]).group(1) != gate, 3,
                        "the gate's value to change")
        wait_for(lambda s: "● second dose" in s, 5, "the milestone")
        # Its content patch is drawn at once: the subtitle it set.
        wait_for(lambda s: "Medication · Second dose due" in s, 2, "the milestone's subtitle")
        # Colors (the content's color, in the 256-color palette) with TERM=xterm-256color.
        self.assertIn("\x1b[38;5;", screen(escapes=True))
        # A lifecycle event redraws the row: end the auction, it goes last with its badge.
        self.server.send({"op": "end", "id": "auction"})
        text = wait_for(lambda s: "[ENDED]" in self.rows(s)[-1], 5, "the ended badge")
        self.assertIn("Auction", self.rows(text)[-1])
        # Follows the terminal's size: narrower, every line fits (no wrap), rows still there.
        tmux("resize-window", "-t", SESSION, "-x", "60", "-y", "10")
        text = wait_for(lambda s: len(self.rows(s)) == 4 and
                        all(len(line) <= 60 for line in s.splitlines()), 5, "a 60-column board")
        self.assertIn("Gate", "".join(self.rows(text)))
        # q quits, restores the terminal (cooked mode again, the shell's screen back).
        tmux("send-keys", "-t", SESSION, "q")
        text = wait_for(lambda s: "BOARD-EXIT=0" in s, 5, "the board to quit")
        # The shell's own screen is back: its command line, wrapped lines joined (-J) and the
        # lines scrolled above the pane included (-S): at 60 columns the line wraps where the
        # lengths of the paths in it say, and may no longer fit in 10 rows.
        self.assertIn("board --socket",
                      tmux("capture-pane", "-p", "-J", "-S", "-50", "-t", SESSION))
        time.sleep(0.3)
        with open(os.path.join(self.dir, "before.txt")) as f:
            before = f.read()
        with open(os.path.join(self.dir, "after.txt")) as f:
            after = f.read()
        # The same settings but the size (resized above).
        self.assertEqual(before.splitlines()[1:], after.splitlines()[1:])
        self.assertRegex(after, r"(^|\s)icanon(\s|$)")
        self.assertRegex(after, r"(^|\s)echo(\s|$)")

    def test_overtime(self):
        # A countdown with overtime goes on past its end: a negative value in red, a badge.
        wait_for(lambda s: len(self.rows(s)) == 4 and " live" in s, 10, "four rows, live")
        self.server.send(
            {"op": "start", "id": "talk", "kind": "countdown", "endDate": now_ms() + 1_200,
             "title": "Keynote", "overtime": True})
        text = wait_for(lambda s: any("Keynote" in r and "-0:02" in r for r in self.rows(s)), 6,
                        "the keynote two seconds over")
        row = next(r for r in self.rows(text) if "Keynote" in r)
        self.assertIn("[OVERTIME]", row)
        # Its timer text is drawn in red (SGR 31; tmux writes bold and red as two sequences).
        colored = next(line for line in screen(escapes=True).splitlines() if "Keynote" in line)
        self.assertRegex(colored, r"\x1b\[(1;)?31m\s*-0:0\d")
        gate = next(line for line in screen(escapes=True).splitlines() if "Gate B12" in line)
        self.assertNotIn("\x1b[31m", gate)
        self.assertNotIn("[OVERTIME]", "".join(r for r in self.rows(text) if "Keynote" not in r))

    def test_reconnects(self):
        wait_for(lambda s: len(self.rows(s)) == 4 and " live" in s, 10, "four rows")
        self.server.stop()
        wait_for(lambda s: "reconnecting" in s, 5, "reconnecting")
        self.server = Server(self.dir)
        self.server.send({"op": "start", "id": "new", "kind": "countdown",
                          "endDate": now_ms() + 10_000, "title": "Late arrival"})
        text = wait_for(lambda s: " live" in s and len(self.rows(s)) == 5, 10, "live again")
        self.assertIn("Late arrival", self.rows(text)[0])

    def test_client_text_is_not_obeyed(self):
        """Titles and subtitles are client text: an escape in them is shown, never run. The
        OSC 2 sequence would set the pane's title; CR, ED (clear screen) and CUP (cursor home)
        would wipe the board and write over its first line."""
        wait_for(lambda s: len(self.rows(s)) == 4 and " live" in s, 10, "four rows, live")
        title_before = tmux("display-message", "-p", "-t", SESSION, "#{pane_title}").strip()
        self.server.send(
            {"op": "start", "id": "evil", "kind": "countdown", "endDate": now_ms() + 20_000,
             "title": "Gate\u001b]2;PWNED\u001b\\",
             "subtitle": "x\rSPOOF\u001b[2J\u001b[1;1HFAKE BOARD\u0007\u009b31m"})
        text = wait_for(lambda s: len(self.rows(s)) == 5, 5, "the fifth row")
        time.sleep(1.2)  # a redraw or two more
        text = screen()
        self.assertNotEqual(
            tmux("display-message", "-p", "-t", SESSION, "#{pane_title}").strip(), "PWNED")
        self.assertEqual(
            tmux("display-message", "-p", "-t", SESSION, "#{pane_title}").strip(), title_before)
        # The board is whole: its header first, every earlier row still there.
        self.assertTrue(text.splitlines()[0].startswith("Countdown  5 activities"), text)
        for name in ("Auction", "Gate B12", "Parking", "Medication"):
            self.assertIn(name, "".join(self.rows(text)))
        # The escapes are shown as visible stand-ins on the new row.
        evil = next(r for r in self.rows(text) if "PWNED" in r)
        self.assertIn("Gate\u241b]2;PWNED", evil)
        self.assertIn("\u240dSPOOF", evil)
        self.assertNotIn("FAKE BOARD", text.splitlines()[0])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_certificates(dir):
    """A test CA and a certificate for localhost and 127.0.0.1 signed by it."""
    def openssl(*args):
        subprocess.run(["openssl"] + list(args), cwd=dir, check=True, capture_output=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=Countdown test CA")
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    with open(os.path.join(dir, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")


class RemoteBoardTest(unittest.TestCase):
    """The board of another machine: TCP, TLS with the kiosk LAN's CA, a view key."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cd-tui-", dir="/tmp")
        make_certificates(self.dir)
        access = os.path.join(self.dir, "access")
        with open(access, "w") as f:
            f.write("view screen-key-0001\ncontrol operator-key-0001\n")
        os.chmod(access, 0o600)
        with open(os.path.join(self.dir, "key"), "w") as f:
            f.write("screen-key-0001\n")
        self.port = free_port()
        self.extra = ["--listen", "127.0.0.1:%d" % self.port, "--access", access,
                      "--tls-cert", "server.pem", "--tls-key", "server.key"]
        self.server = Server(self.dir, self.extra)
        self.control(["--socket", self.server.socket],
                     {"op": "start", "id": "gate", "kind": "countdown",
                      "endDate": now_ms() + 95_500, "title": "Gate B12"})
        tmux("new-session", "-d", "-s", SESSION, "-x", "110", "-y", "14",
             "env -i PATH=%s TERM=xterm-256color HOME=%s bash --norc --noprofile" %
             (os.environ["PATH"], self.dir))
        tmux("send-keys", "-t", SESSION,
             "cd %s; %s board --connect tcp:127.0.0.1:%d --tls-ca ca.pem --key-file key; "
             "echo BOARD-EXIT=$?" % (self.dir, COUNTDOWN, self.port), "Enter")

    def tearDown(self):
        subprocess.run(["tmux", "-L", SESSION, "kill-server"], capture_output=True)
        self.server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def control(self, where, *requests):
        out = subprocess.run(
            [COUNTDOWN, "send"] + where + [json.dumps(r) for r in requests],
            capture_output=True, text=True, cwd=self.dir,
            env=dict(os.environ, COUNTDOWN_KEY="operator-key-0001"))
        assert out.returncode == 0, out.stdout + out.stderr

    def rows(self, text):
        return [line for line in text.splitlines() if line.startswith("▌")]

    def test_over_tls_and_back_after_a_restart(self):
        wait_for(lambda s: len(self.rows(s)) == 1 and " live" in s, 10, "the gate, live")
        self.assertIn("Gate B12", self.rows(screen())[0])
        # A change sent over TLS by another client (the operator's key) shows at once.
        self.control(["--connect", "tcp:127.0.0.1:%d" % self.port, "--tls-ca", "ca.pem"],
                     {"op": "pause", "id": "gate"})
        wait_for(lambda s: "[PAUSED]" in "".join(self.rows(s)), 5, "the paused badge")
        # The server goes away: the board says where it is reconnecting to, then is back.
        self.server.stop()
        wait_for(lambda s: "reconnecting to tcp:127.0.0.1:%d (TLS)" % self.port in s, 5,
                 "reconnecting")
        self.server = Server(self.dir, self.extra)
        self.control(["--socket", self.server.socket],
                     {"op": "start", "id": "late", "kind": "countdown",
                      "endDate": now_ms() + 10_000, "title": "Late arrival"})
        text = wait_for(lambda s: " live" in s and len(self.rows(s)) == 2, 10, "live again")
        self.assertIn("Late arrival", self.rows(text)[0])
        tmux("send-keys", "-t", SESSION, "q")
        wait_for(lambda s: "BOARD-EXIT=0" in s, 5, "the board to quit")


if __name__ == "__main__":
    unittest.main(verbosity=2)
