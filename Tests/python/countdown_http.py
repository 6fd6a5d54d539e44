"""What the Python tests (Tests/browser, Tests/pushes) share: a free loopback port, the wall
clock in milliseconds, and one request to a `countdown serve --http` on loopback."""

import json
import socket
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
