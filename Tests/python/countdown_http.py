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
    flags after those. Started when made: its first line says it listens."""

    def __init__(self, countdown, dir, extra=()):
        self.dir = dir
        self.port = free_port()
        self.args = [countdown, "serve", "--socket", os.path.join(dir, "c.sock"),
                     "--state", os.path.join(dir, "state.db"),
                     "--http", "127.0.0.1:%d" % self.port, *extra]
        self.log = open(os.path.join(dir, "serve.log"), "a")
        # SWIFTNIO_STRICT: work scheduled on a stopped event loop crashes instead of a warning.
        env = dict(os.environ, SWIFTNIO_STRICT="1")
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
