# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""What the load scripts (service-memory.py, soak.py) share: the server's RSS, a socket to
`countdown serve`, its replies counted on a thread, and a subscriber's output thrown away."""

import json
import socket
import threading
import time


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


class Replies:
    """Reads a socket's reply lines on its own thread, counting them and the refusals (and the
    refused commands' `rid`s, where they had one)."""

    def __init__(self, sock):
        self.sock = sock
        self.count = 0
        self.refused = []
        self.refused_rids = set()
        self.lock = threading.Condition()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        rest = b""
        while True:
            data = self.sock.recv(1 << 20)
            if not data:
                return
            lines = (rest + data).split(b"\n")
            rest = lines.pop()
            with self.lock:
                for line in lines:
                    if b'"ok":false' in line:
                        self.refused.append(line[:300])
                        try:
                            rid = json.loads(line).get("rid")
                        except ValueError:
                            rid = None
                        if rid is not None:
                            self.refused_rids.add(rid)
                self.count += len(lines)
                self.lock.notify_all()

    def wait(self, n, timeout=120):
        end = time.time() + timeout
        with self.lock:
            while self.count < n and time.time() < end:
                self.lock.wait(1)
            return self.count >= n


def drain(sock, stop):
    """Reads and throws away everything a subscriber is sent."""
    sock.settimeout(1)
    while not stop.is_set():
        try:
            if not sock.recv(1 << 20):
                return
        except socket.timeout:
            pass
