# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""docs/install.md (README "Install"), run (make package; root, on the CI machine itself).

Every command of the section is run as written, from the repository's root: `make install`,
`countdown --version` and `make uninstall` (under /usr/local), `make deb` and `dpkg -i` of the
package it built, the service's commands against the installed binary, `dpkg -r`. The two
`systemctl` lines need systemd as PID 1, which this machine does not have: for them the test
reads the installed units and runs the service's own `ExecStart=` under
`systemd-socket-activate` with the socket unit's `ListenStream=` addresses and a
`NOTIFY_SOCKET` of its own (with `WATCHDOG_USEC`), as systemd would, and checks `READY=1`,
`STATUS=`, the watchdog pings and `STOPPING=1` on the wire. `systemd-analyze verify` and
`systemd-analyze security` check the units. The kiosk quick start is run with the installed
binary, and the C example is built against the installed library through pkg-config.
Everything is removed again at the end, even on failure."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from countdown_http import api, now_ms  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRATCH = os.environ.get("SCRATCH", os.path.join(ROOT, ".build-package"))
HEADER = open(os.path.join(ROOT, "include", "countdown.h")).read()
VERSION = ".".join(re.search(r"#define CD_VERSION_%s (\d+)" % p, HEADER).group(1)
                   for p in ("MAJOR", "MINOR", "PATCH"))
ARCH = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                      check=True).stdout.strip()
PACKAGES = ["countdown", "libcountdown0", "libcountdown-dev"]
MULTIARCH = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True,
                           text=True, check=True).stdout.strip()
# The packages' version: the release's with Debian revision 1 (dist/deb/build.sh).
DEBS = ["%s_%s-1_%s.deb" % (p, VERSION, ARCH) for p in PACKAGES]
DEB = DEBS[0]
UNITS = "/lib/systemd/system"
STATE = "/var/lib/countdown"
RUNDIR = "/run/countdown"
FROM_SOURCE = ["/usr/local/bin/countdown", "/usr/local/share/man/man1/countdown.1",
               "/usr/local/lib/libcountdown.so", "/usr/local/include/countdown.h",
               "/usr/local/lib/pkgconfig/countdown.pc",
               "/usr/local/lib/libcountdown.so.%s" % VERSION.split(".")[0],
               "/usr/local/lib/libcountdown.so." + VERSION]
ENV = dict(os.environ, PATH="/usr/local/bin:/usr/bin:/bin:" + os.environ.get("PATH", ""))


def say(text):
    print("package: " + text, flush=True)


def install_blocks():
    """docs/install.md's shell blocks (README "Install" in short), each a list of commands."""
    section = open(os.path.join(ROOT, "docs", "install.md")).read()
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [[line.strip() for line in b.strip().splitlines()] for b in blocks]


def sh(command, timeout=1800, check=True):
    """Runs a README command as written, from the repository's root; its output."""
    say("$ " + command)
    r = subprocess.run(command, shell=True, cwd=ROOT, env=ENV, capture_output=True, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("%s: exit %d\n%s\n%s" % (command, r.returncode, r.stdout[-3000:],
                                                       r.stderr[-3000:]))
    return r


def unit_values(path, key):
    return [line.split("=", 1)[1].strip() for line in open(path).read().splitlines()
            if line.startswith(key + "=")]


class NotifyListener:
    """NOTIFY_SOCKET: an AF_UNIX datagram socket that collects what the service says."""

    def __init__(self, path):
        self.path = path
        if os.path.exists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.seen = []

    def wait_for(self, text, timeout):
        """The first message (since the last wait) containing `text`, or fail."""
        end = time.time() + timeout
        while time.time() < end:
            self.sock.settimeout(max(0.01, end - time.time()))
            try:
                message = self.sock.recv(4096).decode()
            except socket.timeout:
                break
            self.seen.append(message)
            if text in message:
                return message
        raise AssertionError("no %r within %.1f s; saw %r" % (text, timeout, self.seen[-5:]))

    def collect(self, seconds):
        out = []
        end = time.time() + seconds
        while time.time() < end:
            self.sock.settimeout(max(0.01, end - time.time()))
            try:
                out.append(self.sock.recv(4096).decode())
            except socket.timeout:
                break
        self.seen += out
        return out

    def close(self):
        self.sock.close()
        os.unlink(self.path)


class ActivatedService:
    """countdown.service's ExecStart= under systemd-socket-activate, with countdown.socket's
    addresses: what `systemctl start countdown.socket` and the first connection do."""

    def __init__(self, notify, watchdog_usec):
        exec_start = unit_values(UNITS + "/countdown.service", "ExecStart")[0]
        command = exec_start.replace("$COUNTDOWN_OPTIONS", "").split()
        listen = unit_values(UNITS + "/countdown.socket", "ListenStream")
        os.makedirs(RUNDIR, exist_ok=True)
        os.makedirs(STATE, mode=0o700, exist_ok=True)  # StateDirectory=
        for address in listen:
            if address.startswith("/") and os.path.exists(address):
                os.unlink(address)
        args = ["systemd-socket-activate"]
        for address in listen:
            args += ["-l", address]
        args += ["-E", "NOTIFY_SOCKET=" + notify.path, "-E", "WATCHDOG_USEC=%d" % watchdog_usec]
        self.log = open(os.path.join(SCRATCH, "service.log"), "a")
        self.proc = subprocess.Popen(args + command, stdout=self.log, stderr=self.log,
                                     cwd=SCRATCH)
        self.socket = [a for a in listen if a.startswith("/")][0]
        self.port = int([a for a in listen if not a.startswith("/")][0].rsplit(":", 1)[1])
        end = time.time() + 10
        while not os.path.exists(self.socket) and time.time() < end:
            time.sleep(0.05)
        assert os.path.exists(self.socket), "systemd-socket-activate did not listen"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            status = self.proc.wait(timeout=30)
        else:
            status = self.proc.returncode
        self.log.close()
        return status


def check_from_source(block):
    assert block == ["make install", "countdown --version", "make uninstall"], block
    sh(block[0])
    for path in FROM_SOURCE:
        assert os.path.isfile(path), path
    assert shutil.which("countdown", path=ENV["PATH"]) == "/usr/local/bin/countdown"
    version = sh(block[1]).stdout.strip()
    assert version == VERSION, (version, VERSION)
    page = subprocess.run(["man", "-l", FROM_SOURCE[1]], capture_output=True, text=True,
                          env=dict(ENV, MANPAGER="cat", COLUMNS="100")).stdout
    assert "countdown" in page and "serve" in page and "--webhook" in page, page[:500]
    pc = open(FROM_SOURCE[4]).read()
    assert "libdir=/usr/local/lib" in pc and "Version: " + VERSION in pc, pc
    sh(block[2])
    for path in FROM_SOURCE:
        assert not os.path.exists(path), path
    say("from source: %d files installed, countdown %s, man page, uninstalled" %
        (len(FROM_SOURCE), version))


def check_package(block):
    assert block == ["make deb", "apt-get install -y " + " ".join("./" + d for d in DEBS)], (
        block, DEBS)
    sh(block[0])
    info = subprocess.run(["dpkg-deb", "-f", DEB], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    assert "Version: %s-1\n" % VERSION in info and "libuv1" in info and "libsqlite3-0" in info, info
    assert "libcountdown0 (= %s-1)" % VERSION in info, info
    dev = subprocess.run(["dpkg-deb", "-f", DEBS[2], "Depends"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert "libuv1-dev" in dev and "libcountdown0 (= %s-1)" % VERSION in dev, dev
    sh(block[1])
    files = [f for f in subprocess.run(["dpkg", "-L"] + PACKAGES, capture_output=True,
                                       text=True, check=True).stdout.splitlines()
             if os.path.isfile(f)]
    for expected in ["/usr/bin/countdown", "/usr/share/man/man1/countdown.1.gz",
                     UNITS + "/countdown.service", UNITS + "/countdown.socket",
                     "/usr/include/countdown.h"]:
        assert expected in files, (expected, files)
    # The library's SONAME, and each package's copyright and changelog.
    library = [f for f in files if os.path.basename(f) == "libcountdown.so." + VERSION]
    assert len(library) == 1, files
    soname = subprocess.run(["objdump", "-p", library[0]], capture_output=True, text=True,
                            check=True).stdout
    assert "SONAME               libcountdown.so.%s\n" % VERSION.split(".")[0] in soname, soname
    for p in PACKAGES:
        for doc in ("copyright", "changelog.Debian.gz"):
            assert "/usr/share/doc/%s/%s" % (p, doc) in files, (p, doc)
    assert sh("countdown --version").stdout.strip() == VERSION
    # The Swift runtime comes from the package's private directory, never the toolchain.
    for target in ["/usr/bin/countdown"] + library:
        ldd = subprocess.run(["ldd", target], capture_output=True, text=True,
                             check=True).stdout
        assert "not found" not in ldd, ldd
        swift = [line for line in ldd.splitlines() if "libswiftCore" in line]
        assert swift and "/usr/lib/%s/countdown/swift/" % MULTIARCH in swift[0], ldd
        assert "/opt/swift" not in ldd and ".build" not in ldd, ldd
    # The C library through pkg-config, with the package's runtime.
    example = os.path.join(SCRATCH, "kiosk")
    subprocess.run("gcc -std=c11 -Wall -Werror %s/Examples/c/kiosk.c $(pkg-config --cflags "
                   "--libs countdown) -o %s" % (ROOT, example), shell=True, check=True)
    subprocess.run([example, "1"], check=True, capture_output=True, timeout=30)
    # The units, as systemd reads them.
    verify = subprocess.run(["systemd-analyze", "verify", UNITS + "/countdown.service",
                             UNITS + "/countdown.socket"], capture_output=True, text=True)
    assert verify.returncode == 0 and "countdown" not in verify.stderr, verify.stderr
    # --threshold is on systemd's inner scale, ten times the one it prints: 20 is "2.0".
    security = subprocess.run(["systemd-analyze", "security", "--offline=true", "--threshold=20",
                               "--no-pager", UNITS + "/countdown.service"],
                              capture_output=True, text=True)
    exposure = re.search(r"Overall exposure level for countdown.service: ([\d.]+)",
                         security.stdout)
    assert security.returncode == 0 and exposure, security.stdout[-2000:] + security.stderr
    say("package: %d files, runtime private, C example linked, units verified, exposure %s" %
        (len(files), exposure.group(1)))
    return files


def check_service(service_block, socket_block):
    assert service_block[0] == "systemctl enable --now countdown.service", service_block
    assert socket_block == ["systemctl disable --now countdown.service",
                            "systemctl enable --now countdown.socket"], socket_block
    notify = NotifyListener(os.path.join(SCRATCH, "notify"))
    try:
        service = ActivatedService(notify, watchdog_usec=1_000_000)
        try:
            # Socket-activated: listening, not started until the first connection.
            assert not notify.collect(0.5), notify.seen
            sent = json.loads(sh(service_block[1]).stdout.splitlines()[0])
            assert sent.get("ok") is True and sent["activities"] == [], sent
            ready = notify.wait_for("READY=1", 10)
            assert "MAINPID=%d" % service.proc.pid in ready, ready
            assert "STATUS=Serving 0 activities" in ready, ready
            listed = json.loads(sh(service_block[2]).stdout)
            assert listed.get("activities") == [], listed
            status, body = api(service.port, "POST", "/v1/activities",
                               {"id": "gate", "kind": "countdown", "endDate": now_ms() + 600000,
                                "title": "Gate B12"})
            assert status == 201, (status, body)
            # Pings every half second (WATCHDOG_USEC/2), with the count, while the loop answers.
            pings = [m for m in notify.collect(2.2) if m.startswith("WATCHDOG=1")]
            assert len(pings) >= 3 and "STATUS=Serving 1 activity" in pings[-1], pings
        finally:
            status = service.stop()
        assert status == 0, status
        notify.wait_for("STOPPING=1", 5)
        log = open(os.path.join(SCRATCH, "service.log")).read()
        assert "ERROR" not in log and "error" not in log, log
        # The socket is systemd's: left in place for the next start.
        assert os.path.exists(service.socket)
        again = ActivatedService(notify, watchdog_usec=1_000_000)
        try:
            status, body = api(again.port, "GET", "/v1/activities/gate")
            assert status == 200 and body["content"]["title"] == "Gate B12", (status, body)
            ready = notify.wait_for("READY=1", 10)
            assert "STATUS=Serving 1 activity" in ready, ready
        finally:
            assert again.stop() == 0
    finally:
        notify.close()
    say("service: socket-activated at the first connection, READY=1, %d watchdog pings with "
        "STATUS, STOPPING=1, exit 0, state restored on the next activation" % len(pings))


def check_quick_start():
    """The README's kiosk in three commands, with the installed binary (not chromium: the
    page is fetched instead)."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    quick = re.search(r"### A kiosk in three commands\n\n```sh\n(.*?)```", readme, re.S).group(1)
    serve, browser, post = quick.split("\n", 2)
    serve = serve.split("#")[0].strip().rstrip("&").strip()
    assert serve == "countdown serve --http 127.0.0.1:8080", serve
    assert shutil.which("countdown", path=ENV["PATH"]) == "/usr/bin/countdown"
    cwd = os.path.join(SCRATCH, "kiosk-dir")
    os.makedirs(cwd, exist_ok=True)
    proc = subprocess.Popen(serve.split(), cwd=cwd, env=ENV, stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.DEVNULL)
    try:
        line = proc.stdout.readline()
        assert "http http://127.0.0.1:8080/" in line, line
        made = subprocess.run(post, shell=True, env=ENV, capture_output=True, text=True,
                              check=True).stdout
        assert json.loads(made)["content"]["title"] == "Gate B12", made
        page = subprocess.run(["curl", "-s", "127.0.0.1:8080/"], capture_output=True, text=True,
                              check=True).stdout
        assert "<html" in page.lower(), page[:200]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        proc.stdout.close()
    say("quick start with /usr/bin/countdown: served, activity made, board page served")


def check_removal(block, files):
    assert block == ["dpkg -r " + " ".join(PACKAGES)], block
    sh(block[0])
    left = [f for f in files if os.path.exists(f)]
    assert not left, left
    runtime = "/usr/lib/%s/countdown" % MULTIARCH
    assert not os.path.exists(runtime), os.listdir(runtime)
    # Removed, its maintainer scripts kept until purge (Debian's "rc" state), no files.
    status = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", "countdown"],
                            capture_output=True, text=True).stdout
    assert status.strip() == "rc", status
    # purge takes the state the service kept, and the package is gone from dpkg's database.
    subprocess.run(["dpkg", "--purge", "countdown"], check=True, capture_output=True)
    assert not os.path.exists(STATE)
    listed = subprocess.run(["dpkg", "-s", "countdown"], capture_output=True, text=True)
    assert listed.returncode != 0, listed.stdout
    say("dpkg -r: none of its %d files left; --purge removed %s" % (len(files), STATE))


def cleanup():
    subprocess.run(["dpkg", "--purge"] + PACKAGES, capture_output=True)
    subprocess.run(["make", "-s", "uninstall"], cwd=ROOT, capture_output=True)
    shutil.rmtree(RUNDIR, ignore_errors=True)
    shutil.rmtree(STATE, ignore_errors=True)


def main():
    if os.geteuid() != 0:
        sys.exit("make package installs into this machine (make install, dpkg -i): run as root")
    os.makedirs(SCRATCH, exist_ok=True)
    if os.path.exists(os.path.join(SCRATCH, "service.log")):
        os.unlink(os.path.join(SCRATCH, "service.log"))
    blocks = install_blocks()
    assert len(blocks) == 5, blocks
    cleanup()
    try:
        check_from_source(blocks[0])
        files = check_package(blocks[1])
        check_service(blocks[2], blocks[3])
        check_quick_start()
        check_removal(blocks[4], files)
    finally:
        cleanup()
    say("all passed")


if __name__ == "__main__":
    main()
