# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""The packages as a new user installs them (make package; root): a fresh Debian 12 root made
with `debootstrap --variant=minbase bookworm` (kept under SCRATCH between runs, copied afresh
for each), apt resolving the dependencies of countdown and libcountdown0 from Debian's
archive, the kiosk quick start with the installed binary (served, an activity made over HTTP,
the board page, the socket), then libcountdown-dev with gcc and pkg-config and
Examples/c/kiosk.c built and run through `pkg-config --cflags --libs countdown`, then all of
it purged: no file of the packages left.

    python3 Tests/package/test_debootstrap.py DEB_DIR
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRATCH = os.environ.get("SCRATCH", os.path.join(ROOT, ".build-package"))
MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
CACHED = os.path.join(SCRATCH, "bookworm-minbase")
WORK = os.path.join(SCRATCH, "bookworm-work")
PORT = 18080


def say(text):
    print("debootstrap: " + text, flush=True)


def run(args, **kw):
    kw.setdefault("check", True)
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    r = subprocess.run(args, **kw)
    return r


def inside(command, check=True, timeout=900):
    """`command` (sh) run in the root, as root, with Debian's PATH."""
    r = subprocess.run(["chroot", WORK, "/usr/bin/env", "-i",
                        "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
                        "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C.UTF-8", "sh", "-c", command],
                       capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("in the root: %s: exit %d\n%s\n%s" % (
            command, r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
    return r


def mounts(on):
    for path in ("proc", "dev/pts", "dev"):
        target = os.path.join(WORK, path)
        if on:
            os.makedirs(target, exist_ok=True)
        else:
            subprocess.run(["umount", "-l", target], capture_output=True)
    if on:
        run(["mount", "--bind", "/dev", os.path.join(WORK, "dev")])
        run(["mount", "--bind", "/dev/pts", os.path.join(WORK, "dev/pts")])
        run(["mount", "-t", "proc", "proc", os.path.join(WORK, "proc")])


def fresh_root():
    """A copy of the cached minbase root (made once: a few minutes and ~40 MB of downloads)."""
    if not os.path.exists(os.path.join(CACHED, ".complete")):
        shutil.rmtree(CACHED, ignore_errors=True)
        say("debootstrap --variant=minbase bookworm (cached in %s)" % CACHED)
        run(["debootstrap", "--variant=minbase", "bookworm", CACHED, MIRROR], timeout=1800)
        open(os.path.join(CACHED, ".complete"), "w").close()
    shutil.rmtree(WORK, ignore_errors=True)
    run(["cp", "-a", CACHED, WORK])
    shutil.copy("/etc/resolv.conf", os.path.join(WORK, "etc/resolv.conf"))


def http(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (PORT, path), data=data,
                                     method=method)
    with urllib.request.urlopen(request, timeout=10) as r:
        return r.status, r.read().decode()


def main():
    if os.geteuid() != 0:
        sys.exit("test_debootstrap.py makes a Debian root and chroots into it: run as root")
    debs = sys.argv[1] if len(sys.argv) > 1 else ROOT
    os.makedirs(SCRATCH, exist_ok=True)
    packages = {}
    for name in ("countdown", "libcountdown0", "libcountdown-dev"):
        found = glob.glob(os.path.join(debs, "%s_*.deb" % name))
        assert len(found) == 1, (name, found)
        packages[name] = found[0]
    fresh_root()
    mounts(True)
    server = None
    try:
        for path in packages.values():
            shutil.copy(path, os.path.join(WORK, "tmp"))
        deb = {name: "/tmp/" + os.path.basename(path) for name, path in packages.items()}
        assert inside("command -v gcc || echo none").stdout.strip() == "none", "not minbase?"
        inside("apt-get update -qq")
        # The kiosk: the program and its library, apt taking libuv1 and libsqlite3-0.
        inside("apt-get install -y -qq %s %s" % (deb["countdown"], deb["libcountdown0"]))
        version = inside("countdown --version").stdout.strip()
        assert deb["countdown"].startswith("/tmp/countdown_%s-1_" % version), version
        for unit in ("countdown.service", "countdown.socket"):
            assert os.path.isfile(os.path.join(WORK, "lib/systemd/system", unit)), unit
        ldd = inside("ldd /usr/bin/countdown").stdout
        assert "not found" not in ldd and "/countdown/swift/" in ldd, ldd
        # The kiosk quick start, with the installed binary (its port moved off 8080).
        os.makedirs(os.path.join(WORK, "srv/kiosk"), exist_ok=True)
        server = subprocess.Popen(
            ["chroot", WORK, "/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "sh", "-c",
             "cd /srv/kiosk && exec countdown serve --http 127.0.0.1:%d" % PORT],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = server.stdout.readline()
        assert "http http://127.0.0.1:%d/" % PORT in line, (line, server.stderr.read()
                                                            if server.poll() is not None else "")
        status, made = http("POST", "/v1/activities", {
            "kind": "countdown", "endDate": int(time.time() * 1000) + 600000,
            "title": "Gate B12", "subtitle": "Boarding", "color": "#1E88E5"})
        assert status == 201 and json.loads(made)["content"]["title"] == "Gate B12", made
        status, page = http("GET", "/")
        assert status == 200 and "<html" in page.lower(), page[:200]
        listed = inside("countdown send --socket /srv/kiosk/countdown.sock '{\"op\":\"list\"}'")
        assert "Gate B12" in listed.stdout, listed.stdout
        say("installed with apt in a fresh bookworm minbase: countdown %s; the quick start "
            "served, an activity made, the board page and the socket answered" % version)
        server.terminate()
        assert server.wait(timeout=15) == 0, server.stderr.read()
        server = None
        # A C developer: the -dev package (apt takes libuv1-dev), gcc and pkg-config.
        inside("apt-get install -y -qq --no-install-recommends %s gcc libc6-dev pkg-config"
               % deb["libcountdown-dev"], timeout=1800)
        shutil.copy(os.path.join(ROOT, "Examples/c/kiosk.c"), os.path.join(WORK, "tmp"))
        flags = inside("pkg-config --cflags --libs countdown").stdout.strip()
        assert "-lcountdown" in flags and "rpath" not in flags, flags
        inside("cd /tmp && gcc -std=c11 -Wall -Werror kiosk.c $(pkg-config --cflags --libs "
               "countdown) -o kiosk")
        needed = inside("readelf -d /tmp/kiosk | grep NEEDED").stdout
        assert "libcountdown.so.0" in needed, needed
        ran = inside("/tmp/kiosk 1")
        assert "tick" in ran.stdout, ran.stdout[-500:]
        say("libcountdown-dev: kiosk.c built with `%s` (NEEDED libcountdown.so.0) and run" % flags)
        # Removed and purged: nothing of the packages left.
        files = inside("dpkg -L countdown libcountdown0 libcountdown-dev").stdout.split()
        owned = [f for f in files if os.path.isfile(os.path.join(WORK, f.lstrip("/")))]
        inside("apt-get purge -y -qq countdown libcountdown0 libcountdown-dev")
        left = [f for f in owned if os.path.exists(os.path.join(WORK, f.lstrip("/")))]
        assert not left, left
        assert not glob.glob(os.path.join(WORK, "usr/lib/*/countdown"))
        gone = inside("dpkg -s countdown libcountdown0 libcountdown-dev", check=False)
        assert gone.returncode != 0, gone.stdout
        say("purged: none of the %d files left" % len(owned))
    finally:
        if server is not None:
            server.kill()
        mounts(False)
        shutil.rmtree(WORK, ignore_errors=True)
    say("all passed")


if __name__ == "__main__":
    main()
