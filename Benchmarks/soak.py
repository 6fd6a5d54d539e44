#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""A soak: `countdown serve` under a steady, mixed load for a long time (docs/soak.md).

    Benchmarks/soak.py COUNTDOWN [--minutes 60] [--activities 100000] [--commands 1000]
                       [--out DIR] [--postgres URL] [--warmup-minutes W]

For M minutes: N ticking countdowns (1% of them with a Live Activity's push token), C commands
a second over the socket (updates of the end and of the title, and start/end pairs whose
events go to the webhook), one socket subscriber taking every tick, 20 event-stream clients
(`GET /v1/events`) that each stay 10-30 s and come back, Live Activity pushes to the APNs
stand-in of Tests/pushes (real TLS and HTTP/2) and webhook deliveries to a receiver, both
failing 1% of requests (APNs 500 InternalServerError and HTTP 503, which are retried), and the
state in a SQLite file (WAL, checkpointed by the server), or with --postgres in a node of two
on PostgreSQL (the load through node a, which forwards half of it).

Every 10 s the server's RSS, open descriptors, state file and WAL sizes, the tick lateness p99
over those 10 s (from /metrics' histogram) and the outbox (pushes and deliveries held) go to
DIR/soak.csv; DIR/soak.png plots them (matplotlib). At the end the load stops, the outbox must
drain, and every start/end pair's three lifecycle events must have reached the webhook.

Passes (exit 0) when, after the warm-up (W minutes, default a sixth of the run): RSS and the
state file with its WAL grow by less than 1% of their mean an hour (least squares over each
minute's lowest sample, so that an event stream's snapshot, written for a moment, is not
growth), or, in a run shorter than 30 minutes (too short to tell a slope from noise), by less
than a floor over the run (8 MB each); once the load has stopped, the server holds none of the
event streams' connections and no more files than after the warm-up (descriptors counted
whole; their slope is shown); the lateness p99 of the last third is within 2 ms or 50% of the
first third's; no command was refused or left unanswered; the tick subscriber was not cut off;
the outbox drained; and nothing was lost. Prints the figures BENCHMARKS.md records.
"""

import argparse
import csv
import http.server
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests", "pushes"))
sys.path.insert(0, os.path.join(ROOT, "Tests", "python"))
from apns_standin import StandIn, make_key_p8  # noqa: E402
from countdown_http import free_port  # noqa: E402
from load_common import Replies, connect, rss_kib  # noqa: E402

# The tick subscriber, run by its own interpreter (load_common from argv[2]): subscribes to
# every tick over the socket (argv[1]) and reads until the server closes it.
TICK_READER = """
import sys, threading
sys.path.insert(0, sys.argv[2])
from load_common import connect, drain
s = connect(sys.argv[1])
s.sendall(b'{"rid":"s","op":"subscribe","ticks":true}\\n')
drain(s, threading.Event())
"""

KEY_ID, TEAM_ID, BUNDLE = "ABC123DEFG", "TEAM456XYZ", "com.example.soak"
FAIL = 0.01


class FlakyAPNs(StandIn):
    """The APNs stand-in, answering 1% of pushes 500 InternalServerError (retried)."""

    def _answer(self, request):
        if random.random() < FAIL:
            return (500, "InternalServerError")
        return super()._answer(request)


class Webhook:
    """A webhook receiver answering 1% of deliveries 503 (retried); keeps the (id, event)
    pairs delivered."""

    def __init__(self):
        self.lock = threading.Lock()
        self.delivered = set()
        self.requests = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status = 503 if random.random() < FAIL else 200
                with outer.lock:
                    outer.requests += 1
                    # Only the pairs' deliveries are counted (parsed): the updates' are many.
                    if status == 200 and b'"pair-' in body:
                        e = json.loads(body)["event"]
                        outer.delivered.add((e["id"], e["event"]))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.port = free_port()
        self.url = "http://127.0.0.1:%d/hook" % self.port
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def sse_client(port, stop, sessions):
    """An event-stream client that stays 10-30 s, leaves, and comes back a second later."""
    time.sleep(random.uniform(0, 20))
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Accept: text/event-stream\r\n\r\n")
            s.settimeout(0.5)
            end = time.time() + random.uniform(10, 30)
            while time.time() < end and not stop.is_set():
                try:
                    if not s.recv(1 << 20):
                        break
                except socket.timeout:
                    pass
            s.close()
            sessions.append(1)
        except OSError:
            pass
        time.sleep(1)


def descriptors(pid, port):
    """The server's descriptors by kind: (files and others, sockets, connections accepted on
    the HTTP `port` and still open)."""
    inodes, files = set(), 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
        else:
            files += 1
    accepted = 0
    for table in ("/proc/%d/net/tcp" % pid, "/proc/%d/net/tcp6" % pid):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                # local address:port, remote, state (0A is listening), …, inode (column 9).
                if (int(cols[1].split(":")[1], 16) == port and cols[3] != "0A"
                        and cols[9] in inodes):
                    accepted += 1
    return files, len(inodes), accepted


def metrics(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        return r.read().decode()


def figure(text, name):
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else 0.0


def lateness_buckets(text):
    """The tick lateness histogram's cumulative buckets: [(upper bound in s, count)]."""
    out = []
    for m in re.finditer(r'^countdown_tick_lateness_seconds_bucket\{le="([^"]+)"\} (\d+)$',
                         text, re.M):
        out.append((float("inf") if m.group(1) == "+Inf" else float(m.group(1)),
                    int(m.group(2))))
    return sorted(out)


def p99(before, after):
    """The p99 (ms) of the ticks between two histogram readings, interpolated within its
    bucket (the buckets go 10, 25, 50 ms: a bound alone would hide a drift within one)."""
    counts = [(le, a - b) for (le, a), (_, b) in zip(after, before)]
    total = counts[-1][1] if counts else 0
    if total <= 0:
        return 0.0
    lower, below = 0.0, 0
    for le, n in counts:
        if n >= 0.99 * total:
            if le == float("inf"):
                return lower * 1000
            return (lower + (le - lower) * (0.99 * total - below) / max(1, n - below)) * 1000
        lower, below = le, n
    return float("inf")


def slope_per_hour(xs, ys):
    """Least squares slope of ys over xs (seconds), per hour."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    return 0.0 if var == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var * 3600


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def serve(countdown, dir, name, extra, env):
    """`countdown serve` in `dir`; its process and HTTP port."""
    port = free_port()
    log = open(os.path.join(dir, "serve-%s.log" % name), "w")
    p = subprocess.Popen(
        [countdown, "serve", "--socket", os.path.join(dir, "%s.sock" % name),
         "--http", "127.0.0.1:%d" % port, *extra],
        stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    line = p.stdout.readline().strip()
    if "listening" not in line and "http" not in line:
        raise SystemExit("countdown serve did not start: %r (see %s)" % (line, log.name))
    print(line, flush=True)
    return p, port


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("countdown")
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--activities", type=int, default=100_000)
    ap.add_argument("--commands", type=int, default=1000, help="commands a second")
    ap.add_argument("--out", default="bench-results/soak")
    ap.add_argument("--postgres", help="a PostgreSQL URL: a node of two on it")
    ap.add_argument("--warmup-minutes", type=float)
    a = ap.parse_args()
    warmup = a.warmup_minutes if a.warmup_minutes is not None else a.minutes / 6
    os.makedirs(a.out, exist_ok=True)

    dir = tempfile.mkdtemp(prefix="soak-")
    gateway = FlakyAPNs(dir, make_key_p8(os.path.join(dir, "key.p8")), KEY_ID, TEAM_ID, BUNDLE)
    hook = Webhook()
    env = dict(os.environ)
    common = ["--max-activities", str(a.activities * 2),
              "--apns-key", os.path.join(dir, "key.p8"), "--apns-key-id", KEY_ID,
              "--apns-team-id", TEAM_ID, "--apns-topic", BUNDLE, "--apns-url", gateway.url,
              "--apns-ca", gateway.tls["ca.pem"],
              "--webhook", hook.url, "--webhook-secret", "soak-secret"]
    state = os.path.join(dir, "state.db")
    others = []
    if a.postgres:
        listen = [free_port(), free_port()]
        node = lambda n, k: ["--postgres", a.postgres, "--node", n, "--shards", "8",  # noqa: E731
                             "--listen", "127.0.0.1:%d" % listen[k], "--cluster-token", "soak"]
        server, port = serve(a.countdown, dir, "a", common + node("a", 0), env)
        other, _ = serve(a.countdown, dir, "b", common + node("b", 1), env)
        others.append(other)
        time.sleep(12)  # the lease (5 s) twice: b takes its half
    else:
        server, port = serve(a.countdown, dir, "a", common + ["--state", state], env)
    sock_path = os.path.join(dir, "a.sock")

    now = int(time.time() * 1000)
    ids = ["m%06d" % i for i in range(a.activities)]
    cmd = connect(sock_path)
    replies = Replies(cmd)
    sent = 0
    for i in range(0, len(ids), 1000):
        lines = []
        for j in range(min(1000, len(ids) - i)):
            k = i + j
            la = (',"liveActivity":{"pushTokens":{"%064x":true}}' % k) if k % 100 == 0 else ""
            # The title as long as the updates' (below): a title of up to 15 bytes is held in
            # its String, a longer one on the heap (about 64 bytes), so titles shorter than the
            # updates' would make RSS grow as the updates reach the activities one by one (the
            # first hour's run grew so, 2 MB an hour), which is not the server growing.
            lines.append('{"rid":%d,"op":"start","id":"%s","kind":"countdown","endDate":%d,'
                         '"title":"Gate %d at %07d"%s}\n'
                         % (sent + j, ids[k], now + 7_200_000 + random.randrange(3_600_000), k,
                            sent + j, la))
        cmd.sendall("".join(lines).encode())
        sent += len(lines)
        replies.wait(sent - 5000)
    if not replies.wait(sent) or replies.refused:
        raise SystemExit("the starts were not all acknowledged: %s" % replies.refused[:3])
    print("started %d countdowns" % sent, flush=True)

    stop = threading.Event()
    # The tick subscriber reads in a process of its own: on a thread of this one, behind the
    # command loop and the event streams' threads, it fell behind for minutes at a time, and
    # the server then holds a pending tick for each activity (coalesced: 5.3 MB at 100,000),
    # which is not the server growing (docs/soak.md).
    ticker = subprocess.Popen([sys.executable, "-c", TICK_READER, sock_path,
                               os.path.dirname(os.path.abspath(__file__))])
    sessions = []
    for _ in range(20):
        threading.Thread(target=sse_client, args=(port, stop, sessions), daemon=True).start()

    fields = ["seconds", "rss_mb", "fds", "state_mb", "wal_mb", "lateness_p99_ms",
              "push_queue", "webhook_queue", "replies", "sent", "sse_sessions",
              "ticks_coalesced"]
    out = open(os.path.join(a.out, "soak.csv"), "w", newline="")
    writer = csv.writer(out)
    writer.writerow(fields)
    rows = []
    pairs = 0
    pair_of = {}  # the rids of each pair's start and end: the pair
    t0 = time.time()
    text = metrics(port)
    last = lateness_buckets(text)
    last_coalesced = figure(text, "countdown_ticks_coalesced_total")
    next_sample = t0 + 10
    per_slice = a.commands // 10
    held_at_warmup = None  # descriptors(…) at the first sample after the warm-up
    next_slice = t0
    while time.time() - t0 < a.minutes * 60:
        if server.poll() is not None or any(o.poll() is not None for o in others):
            raise SystemExit("a server exited (see %s)" % dir)
        if ticker.poll() is not None:
            raise SystemExit("the tick subscriber's connection ended (see %s)" % dir)
        # A tenth of a second's commands: a start/end pair in ten, the rest updates.
        lines = []
        n_pairs = max(1, per_slice // 20)
        for _ in range(per_slice - 2 * n_pairs):
            i = random.randrange(len(ids))
            if random.random() < 0.5:
                lines.append('{"rid":%d,"op":"update","id":"%s","endDate":%d}'
                             % (sent, ids[i], int(time.time() * 1000) + 7_200_000
                                + random.randrange(3_600_000)))
            else:
                lines.append('{"rid":%d,"op":"update","id":"%s","title":"Gate %d at %07d"}'
                             % (sent, ids[i], i, sent))
            sent += 1
        for _ in range(n_pairs):
            pid = "pair-%d" % pairs
            lines.append('{"rid":%d,"op":"start","id":"%s","kind":"countdown","endDate":%d,'
                         '"title":"Pair"}' % (sent, pid, int(time.time() * 1000) + 60_000))
            lines.append('{"rid":%d,"op":"end","id":"%s","dismissal":"immediate"}'
                         % (sent + 1, pid))
            pair_of[sent] = pair_of[sent + 1] = pairs
            sent += 2
            pairs += 1
        cmd.sendall(("\n".join(lines) + "\n").encode())
        next_slice += 0.1
        time.sleep(max(0, next_slice - time.time()))
        if time.time() >= next_sample:
            next_sample += 10
            text = metrics(port)
            buckets = lateness_buckets(text)
            pid = server.pid
            row = [round(time.time() - t0, 1),
                   round(rss_kib(pid) / 1024, 1),
                   len(os.listdir("/proc/%d/fd" % pid)),
                   round(file_size(state) / 1e6, 2), round(file_size(state + "-wal") / 1e6, 2),
                   round(p99(last, buckets), 2),
                   int(figure(text, "countdown_push_queue")),
                   int(figure(text, "countdown_webhook_queue")),
                   replies.count, sent, len(sessions),
                   int(figure(text, "countdown_ticks_coalesced_total") - last_coalesced)]
            if held_at_warmup is None and row[0] >= warmup * 60:
                held_at_warmup = descriptors(pid, port)
            last = buckets
            last_coalesced = figure(text, "countdown_ticks_coalesced_total")
            writer.writerow(row)
            out.flush()
            rows.append(row)
            if len(rows) % 6 == 0:
                print("%5.0f s: RSS %.1f MB, %d fds, file %.1f + WAL %.1f MB, p99 %.1f ms, "
                      "outbox %d+%d, replies %d/%d, SSE sessions %d, ticks coalesced %d"
                      % tuple(row), flush=True)
    stop.set()
    answered = replies.wait(sent, 60)
    # The outbox drains, and every pair's started, ended and dismissed reached the webhook.
    drained = False
    # A pair with a command refused is not expected (the refusal fails the run on its own).
    unchecked = {pair_of[rid] for rid in replies.refused_rids if rid in pair_of}
    expected = {("pair-%d" % k, e) for k in range(pairs) if k not in unchecked
                for e in ("started", "ended", "dismissed")}
    deadline = time.time() + 120
    while time.time() < deadline:
        text = metrics(port)
        with hook.lock:
            missing = expected - hook.delivered
        queues = figure(text, "countdown_push_queue") + figure(text, "countdown_webhook_queue")
        if queues == 0 and not missing:
            drained = True
            break
        time.sleep(1)
    # With the event streams gone (each closes within half a second of `stop`) and nothing
    # left to send, the server holds no connection of theirs and no file more than it did
    # after the warm-up: a descriptor counted whole, without the streams' coming and going.
    # A stream's connection is half-closed by its client's leaving and found gone by the
    # next write to it: at the latest its heartbeat, 15 s on.
    deadline = time.time() + 20
    while True:
        held_at_end = descriptors(server.pid, port)
        if held_at_end[2] == 0 or time.time() > deadline:
            break
        time.sleep(1)
    out.close()
    for p in [server, ticker] + others:
        p.terminate()
        p.wait(30)
    gateway.close()

    # The verdict.
    kept = [r for r in rows if r[0] >= warmup * 60]
    xs = [r[0] for r in kept]
    hours = max(1e-9, (xs[-1] - xs[0]) / 3600) if len(xs) > 1 else 1e-9
    verdict = []

    def flat(name, col, floor, decides=True):
        # Each minute's lowest sample: what comes and goes (an event stream's snapshot of
        # every activity, 8 MB at 20,000 and 40 MB at 100,000, while it is written; a stream's
        # descriptor) raises some samples, and half of a minute's when several streams connect
        # in it (a soak-short run failed on its medians so); what grows raises the lowest.
        minutes = {}
        for r in kept:
            minutes.setdefault(int(r[0] // 60), []).append(r[col])
        mx = sorted(minutes)
        # A minute with fewer than half its samples (the run's last, cut short) is left out:
        # its lowest may be a moment of a snapshot.
        mx = [m for m in mx if len(minutes[m]) >= 3]
        ys = [min(minutes[m]) for m in mx]
        if not ys:
            return
        mean = sum(ys) / len(ys)
        slope = slope_per_hour([m * 60 for m in mx], ys)
        grown = slope * hours
        # The floor only for a run too short to tell a slope from noise (soak-short).
        ok = slope <= 0.01 * mean or (a.minutes < 30 and floor is not None and grown <= floor)
        if decides:
            verdict.append(ok)
        print("%-22s mean %9.1f, slope %+8.2f an hour (%+.2f%% of the mean), over the run %+.1f: %s"
              % (name, mean, slope, 100 * slope / mean if mean else 0, grown,
                 ("flat" if ok else "GROWS") if decides else "(shown)"))

    flat("RSS (MB)", 1, 8)
    # Descriptors come whole, and the 20 streams between connections move any sample by one
    # or two: through an hour that is a line of ±1% of 70 with nothing held (three runs: -1.7%
    # to +1.1%). So their slope is shown, and what decides is counted once the load has
    # stopped (above).
    flat("open descriptors", 2, None, decides=False)
    files0 = held_at_warmup[0] if held_at_warmup else None
    files1, sockets1, accepted1 = held_at_end
    held_ok = files0 is not None and files1 <= files0 and accepted1 == 0
    verdict.append(held_ok)
    print("open descriptors       at the end, with the load stopped: %d files and others (%s after "
          "the warm-up), %d sockets, %d of them the HTTP port's connections: %s"
          % (files1, files0, sockets1, accepted1, "none held" if held_ok else "HELD"))
    if not a.postgres:
        sizes = [r[3] + r[4] for r in kept]
        for r, s in zip(kept, sizes):
            r.append(s)
        flat("state file + WAL (MB)", len(fields), 8)
    third = max(1, len(kept) // 3)
    first_p99 = sorted(r[5] for r in kept[:third])[third // 2] if kept else 0
    last_p99 = sorted(r[5] for r in kept[-third:])[third // 2] if kept else 0
    lateness_ok = last_p99 <= max(first_p99 + 2, first_p99 * 1.5)
    verdict.append(lateness_ok)
    print("tick lateness p99 (ms), median of the 10 s windows: first third %.1f, last third %.1f: "
          "%s" % (first_p99, last_p99, "no drift" if lateness_ok else "DRIFTS"))
    print("commands: %d sent, %d answered, %d refused; start/end pairs %d; SSE sessions %d; "
          "webhook requests %d (1%% answered 503), pushes accepted %d"
          % (sent, replies.count, len(replies.refused), pairs, len(sessions), hook.requests,
             len(gateway.received)))
    verdict += [answered, not replies.refused, drained]
    if not answered:
        print("FAIL: %d commands unanswered" % (sent - replies.count))
    if replies.refused:
        print("FAIL: refused: %s" % replies.refused[:3])
    if not drained:
        print("FAIL: the outbox did not drain or deliveries were lost: %d missing (%d pairs not "
              "checked: a command of theirs was refused)" % (len(missing), len(unchecked)))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        t = [r[0] / 60 for r in rows]
        fig, ax = plt.subplots(5, 1, figsize=(9, 12), sharex=True)
        for axis, (col, label) in zip(ax, [(1, "RSS (MB)"), (2, "open descriptors"),
                                           (None, "state file + WAL (MB)"),
                                           (5, "tick lateness p99 (ms), 10 s windows"),
                                           (6, "outbox: pushes + deliveries held")]):
            if col is None:
                axis.plot(t, [r[3] + r[4] for r in rows])
            elif col == 6:
                axis.plot(t, [r[6] + r[7] for r in rows])
            else:
                axis.plot(t, [r[col] for r in rows])
            axis.axvline(warmup, color="grey", linestyle=":")
            axis.set_ylabel(label, fontsize=8)
            axis.set_ylim(bottom=0)
            if col == 5 and kept:
                # The start-up's windows (before the dotted line) would flatten the rest.
                axis.set_ylim(top=1.5 * max(r[5] for r in kept) + 1)
        ax[-1].set_xlabel("minutes")
        fig.suptitle("countdown serve soak: %d activities, %d commands/s, %s, %.0f min"
                     % (a.activities, a.commands, "node a of two on PostgreSQL" if a.postgres
                        else "SQLite state file", a.minutes))
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "soak.png"), dpi=90)
        print("plot: %s" % os.path.join(a.out, "soak.png"))
    except ImportError:
        print("no matplotlib: no plot (pip install matplotlib)")
    shutil.rmtree(dir, ignore_errors=True)
    print("PASS" if all(verdict) else "FAIL")
    return 0 if all(verdict) else 1


if __name__ == "__main__":
    sys.exit(main())
