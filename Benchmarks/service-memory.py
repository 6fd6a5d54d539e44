#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""The service's memory under a steady load (issue 62, item 4).

    Benchmarks/service-memory.py COUNTDOWN [--minutes M] [--activities N] [--env K=V]...

Runs `COUNTDOWN serve` with a state file in a scratch directory and, for M minutes (25 by
default): N ticking countdowns (100,000), 200 updates and 10 start/end pairs a second over the
socket, one subscriber taking every tick, and five event-stream clients (`GET /v1/events`)
that each reconnect every 5 s (the five a second apart). Samples the server's RSS (VmRSS of /proc/PID/status) once a
second and prints, per minute, its minimum, mean and maximum, then the whole run's, and the
first and last five minutes' means. `--env MALLOC_ARENA_MAX=2` and the like go to the
server's environment. Exits 1 when the server died or a request was refused.
"""

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time

from load_common import Replies, connect, drain, rss_kib


def sse_client(port, stop, counts, delay):
    time.sleep(delay)
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            s.settimeout(0.5)
            end = time.time() + 5
            got = 0
            while time.time() < end and not stop.is_set():
                try:
                    data = s.recv(1 << 20)
                    if not data:
                        break
                    got += len(data)
                except socket.timeout:
                    pass
            s.close()
            counts.append(got)
        except OSError:
            time.sleep(0.5)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("countdown")
    p.add_argument("--minutes", type=float, default=25)
    p.add_argument("--activities", type=int, default=100_000)
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--arg", action="append", default=[], help="another flag for serve")
    a = p.parse_args()

    dir = tempfile.mkdtemp(prefix="service-memory-")
    sock_path = os.path.join(dir, "c.sock")
    port = 20000 + os.getpid() % 20000
    env = dict(os.environ)
    for kv in a.env:
        k, v = kv.split("=", 1)
        env[k] = v
    log = open(os.path.join(dir, "serve.log"), "w")
    server = subprocess.Popen(
        [a.countdown, "serve", "--socket", sock_path, "--state", os.path.join(dir, "state.db"),
         "--http", "127.0.0.1:%d" % port, "--max-activities", str(a.activities * 2), *a.arg],
        stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    print(server.stdout.readline().strip(), flush=True)

    now = int(time.time() * 1000)
    ids = ["m%06d" % i for i in range(a.activities)]
    cmd = connect(sock_path)
    replies = Replies(cmd)
    sent = 0
    for i in range(0, len(ids), 1000):
        chunk = "".join(
            '{"rid":%d,"op":"start","id":"%s","kind":"countdown","endDate":%d,"title":"Gate %d"}\n'
            % (sent + j, ids[i + j], now + 7_200_000 + random.randrange(3_600_000), i + j)
            for j in range(min(1000, len(ids) - i)))
        cmd.sendall(chunk.encode())
        sent += min(1000, len(ids) - i)
        replies.wait(sent - 5000)
    replies.wait(sent)
    print("started %d countdowns, RSS %.1f MB" % (sent, rss_kib(server.pid) / 1024), flush=True)

    stop = threading.Event()
    sub = connect(sock_path)
    sub.sendall(b'{"rid":"s","op":"subscribe","ticks":true}\n')
    threading.Thread(target=drain, args=(sub, stop), daemon=True).start()
    sse_counts = []
    for i in range(5):
        # A second apart: five browsers, not one connecting five times at once.
        threading.Thread(target=sse_client, args=(port, stop, sse_counts, i), daemon=True).start()

    samples = []  # (seconds since start, KiB)
    t0 = time.time()
    churn = 0
    next_second = t0
    while time.time() - t0 < a.minutes * 60:
        if server.poll() is not None:
            print("the server exited with %s" % server.returncode)
            return 1
        # One second's commands, in ten slices: 200 updates, 10 starts and 10 ends.
        for slice in range(10):
            lines = []
            for _ in range(20):
                i = random.randrange(len(ids))
                if random.random() < 0.5:
                    lines.append('{"rid":%d,"op":"update","id":"%s","endDate":%d}'
                                 % (sent, ids[i], int(time.time() * 1000) + 7_200_000
                                    + random.randrange(3_600_000)))
                else:
                    lines.append('{"rid":%d,"op":"update","id":"%s","title":"Gate %d at %d"}'
                                 % (sent, ids[i], i, sent))
                sent += 1
            churn_id = "churn-%d" % churn
            lines.append('{"rid":%d,"op":"start","id":"%s","kind":"countdown","endDate":%d,"title":"Churn"}'
                         % (sent, churn_id, int(time.time() * 1000) + 60_000))
            lines.append('{"rid":%d,"op":"end","id":"%s","dismissal":"immediate"}'
                         % (sent + 1, churn_id))
            sent += 2
            churn += 1
            cmd.sendall(("\n".join(lines) + "\n").encode())
            time.sleep(max(0, next_second + (slice + 1) * 0.1 - time.time()))
        next_second += 1
        samples.append((time.time() - t0, rss_kib(server.pid)))
        if len(samples) % 60 == 0:
            minute = [k for _, k in samples[-60:]]
            print("minute %2d: RSS min %.1f mean %.1f max %.1f MB; replies %d/%d; SSE sessions %d"
                  % (len(samples) // 60, min(minute) / 1024, sum(minute) / len(minute) / 1024,
                     max(minute) / 1024, replies.count, sent, len(sse_counts)), flush=True)

    stop.set()
    ok = replies.wait(sent, 30)
    kib = [k for _, k in samples]
    first = kib[:300]
    last = kib[-300:]
    print("whole run: RSS min %.1f mean %.1f max %.1f MB; first 5 min mean %.1f, last 5 min mean %.1f"
          % (min(kib) / 1024, sum(kib) / len(kib) / 1024, max(kib) / 1024,
             sum(first) / len(first) / 1024, sum(last) / len(last) / 1024))
    print("replies %d of %d, refused %d; event-stream sessions %d (mean %.1f MB each)"
          % (replies.count, sent, len(replies.refused), len(sse_counts),
             sum(sse_counts) / max(1, len(sse_counts)) / 1e6))
    for line in replies.refused[:5]:
        print("  refused: %s" % line.decode(errors="replace"))
    server.terminate()
    server.wait(timeout=30)
    return 0 if ok and not replies.refused else 1


if __name__ == "__main__":
    sys.exit(main())
