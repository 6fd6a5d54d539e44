# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""What the Python tests (Tests/browser, Tests/pushes, Tests/webhooks) share: a free loopback
port, the wall clock in milliseconds, one request to a `countdown serve --http` on loopback,
and such a server as a child process."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request


def now_ms():
    return int(time.time() * 1000)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(port, method, path, body=None, tls=None):
    """(status, answer): the JSON answer parsed (`/metrics`'s text as it is). With `tls` (an
    `ssl.SSLContext` trusting the server's CA), over HTTPS."""
    data = None if body is None else json.dumps(body).encode()
    scheme = "https" if tls else "http"
    req = urllib.request.Request("%s://127.0.0.1:%d%s" % (scheme, port, path), data=data,
                                 method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10, context=tls) as r:
            text = r.read()
            return r.status, (text.decode() if path == "/metrics" else json.loads(text or b"{}"))
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


class ServeProcess:
    """`countdown serve` (the binary `countdown`) as a child: its socket and state file in
    `dir`, HTTP on a free loopback port, standard error appended to `dir`/serve.log, `extra`
    flags after those, `env` added to the environment. Started when made: its first line says it listens."""

    def __init__(self, countdown, dir, extra=(), env=None):
        self.dir = dir
        self.port = free_port()
        self.args = [countdown, "serve", "--socket", os.path.join(dir, "c.sock"),
                     "--state", os.path.join(dir, "state.db"),
                     "--http", "127.0.0.1:%d" % self.port, *extra]
        self.log = open(os.path.join(dir, "serve.log"), "a")
        # SWIFTNIO_STRICT: work scheduled on a stopped event loop crashes instead of a warning.
        env = dict(os.environ, SWIFTNIO_STRICT="1", **(env or {}))
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env=env)
        self.start_line = self.proc.stdout.readline()
        assert "http http://127.0.0.1:%d/" % self.port in self.start_line, self.start_line

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            status = self.proc.wait(timeout=15)
            # A graceful stop ends with status 0 (not a crash on the way out).
            assert sig != signal.SIGTERM or status == 0, "countdown serve exited %d" % status
        self.proc.stdout.close()
        self.log.close()

    def api(self, method, path, body=None):
        return api(self.port, method, path, body)


def wait_for(condition, timeout, what):
    """Waits up to `timeout` seconds for `condition()` (an exception counts as not yet);
    fails naming `what`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if condition():
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def fresh_database(postgres_url, prefix):
    """A new database on the server of `postgres_url` (COUNTDOWN_TEST_POSTGRES); its URL."""
    import random
    name = "%s_%d" % (prefix, random.randrange(1 << 30))
    subprocess.run(["psql", postgres_url, "-q", "-c", "CREATE DATABASE %s" % name],
                   check=True, capture_output=True)
    return postgres_url.rsplit("/", 1)[0] + "/" + name


class NodeProcess:
    """`countdown serve --node NAME` on PostgreSQL `url` (docs/cluster.md): 8 shards, a 1 s
    lease, --listen and --http on free loopback ports, the cluster token `token`, `extra`
    flags after those; standard error appended to `dir`/serve-NAME.log."""

    def __init__(self, countdown, name, url, dir, token, extra=()):
        self.name, self.port = name, free_port()
        self.log = open(os.path.join(dir, "serve-%s.log" % name), "a")
        self.proc = subprocess.Popen(
            [countdown, "serve", "--socket", os.path.join(dir, "%s.sock" % name),
             "--postgres", url, "--node", name, "--shards", "8", "--lease-ms", "1000",
             "--listen", "127.0.0.1:%d" % free_port(), "--cluster-token", token,
             "--http", "127.0.0.1:%d" % self.port, *extra],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        assert "http http://127.0.0.1:%d/" % self.port in line, line

    def api(self, method, path, body=None):
        return api(self.port, method, path, body)

    def split_evenly(self, names, timeout=15):
        """Waits until this node sees the shards split evenly among `names`."""
        def even():
            owners = [s["owner"] for s in self.api("GET", "/v1/cluster")[1]["shards"]]
            return all(owners.count(n) == len(owners) // len(names) for n in names) and \
                len(owners) > 0
        wait_for(even, timeout, "the shards split among " + ", ".join(names))

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=15)
        self.proc.stdout.close()
        self.log.close()
