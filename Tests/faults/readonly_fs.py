#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""A disk that turns read-only under a running program: a FUSE filesystem passing every call
through to a backing directory, which SIGUSR1 turns read-only and SIGUSR2 writable again.

    Tests/faults/readonly_fs.py BACKING MOUNTPOINT

Read-only, it answers as a filesystem the kernel has remounted read-only after an error
(ext4's errors=remount-ro): every call that would change anything (writing through a
descriptor already open included, fsync, creating, truncating, removing, renaming, changing
attributes) fails with EROFS; reads go on. Prints "mounted" once the mount is up; at SIGTERM
libfuse unmounts it and it exits. A flip takes effect at the next call into the filesystem. The tests use it where device-mapper (dmsetup's error target) is not to be had: the
kernel here has none, `blockdev --setro` does not fail writes already cached, and a remount
read-only is refused while the state file is open for writing.

Needs root (it mounts), /dev/fuse, libfuse2 and fusepy (`make faultdeps`).
"""

import errno
import os
import signal
import sys
import threading

from fuse import FUSE, FuseOSError, Operations

WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class Flippable(Operations):
    def __init__(self, root):
        self.root = root
        self.readonly = False

    def _path(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def _writable(self):
        if self.readonly:
            raise FuseOSError(errno.EROFS)

    # Reads.
    def getattr(self, path, fh=None):
        st = os.lstat(self._path(path))
        return {k: getattr(st, k) for k in (
            "st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size",
            "st_uid")}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._path(path))

    def readlink(self, path):
        return os.readlink(self._path(path))

    def access(self, path, mode):
        if mode & os.W_OK:
            self._writable()
        if not os.access(self._path(path), mode):
            raise FuseOSError(errno.EACCES)

    def statfs(self, path):
        st = os.statvfs(self._path(path))
        return {k: getattr(st, k) for k in (
            "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
            "f_flag", "f_frsize", "f_namemax")}

    def open(self, path, flags):
        if flags & WRITES:
            self._writable()
        return os.open(self._path(path), flags)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        os.close(fh)
        return 0

    # Writes: refused while read-only.
    def create(self, path, mode, fi=None):
        self._writable()
        return os.open(self._path(path), os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)

    def write(self, path, data, offset, fh):
        self._writable()
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        self._writable()
        with open(self._path(path), "r+b") as f:
            f.truncate(length)

    def fsync(self, path, datasync, fh):
        self._writable()
        os.fsync(fh)
        return 0

    def unlink(self, path):
        self._writable()
        os.unlink(self._path(path))

    def rename(self, old, new):
        self._writable()
        os.rename(self._path(old), self._path(new))

    def mkdir(self, path, mode):
        self._writable()
        os.mkdir(self._path(path), mode)

    def rmdir(self, path):
        self._writable()
        os.rmdir(self._path(path))

    def chmod(self, path, mode):
        self._writable()
        os.chmod(self._path(path), mode)

    def chown(self, path, uid, gid):
        self._writable()
        os.chown(self._path(path), uid, gid)

    def utimens(self, path, times=None):
        self._writable()
        os.utime(self._path(path), times)


def main():
    backing, mountpoint = sys.argv[1], sys.argv[2]
    fs = Flippable(os.path.abspath(backing))

    def flip(readonly):
        fs.readonly = readonly
        print("read-only" if readonly else "writable", flush=True)

    # A parent may have started it with signals blocked (Foundation's Process passes on the
    # test runner's mask): the flips and libfuse's SIGTERM must come through.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    signal.signal(signal.SIGUSR1, lambda *_: flip(True))
    signal.signal(signal.SIGUSR2, lambda *_: flip(False))

    def announce():
        # The mount is up once the mount point's device differs from its parent's.
        parent = os.stat(os.path.dirname(os.path.abspath(mountpoint))).st_dev
        while os.stat(mountpoint).st_dev == parent:
            threading.Event().wait(0.02)
        print("mounted", flush=True)

    threading.Thread(target=announce, daemon=True).start()
    # Single-threaded: the calls come one at a time, so a flip falls between two of them.
    # No default_permissions: access(2) comes here, and says EROFS while read-only, as the kernel
    # does for a filesystem mounted read-only.
    FUSE(fs, mountpoint, foreground=True, nothreads=True, allow_other=True)


if __name__ == "__main__":
    main()
