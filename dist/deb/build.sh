#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
# make deb: countdown_<version>_<arch>.deb from the release build (README "Install",
# docs/systemd.md). The package holds countdown, its manual page, the systemd units, the C
# library with its header and countdown.pc, and the Swift runtime both need, in a private
# directory (/usr/lib/countdown/swift) that their RUNPATH names: nothing of the toolchain is
# needed on the kiosk. Depends on Debian's libuv and SQLite.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$1
out=${2:-.}
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
root=.build-deb/root
runtime=/usr/lib/countdown/swift
rm -rf "$root"
mkdir -p "$root"
make --no-print-directory install DESTDIR="$PWD/$root" PREFIX=/usr LIBDIR="/usr/lib/$multiarch"
gzip -9n "$root/usr/share/man/man1/countdown.1"

# The Swift runtime libraries the binary and the library load, from the toolchain.
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib/swift/linux
mkdir -p "$root$runtime"
for lib in $(ldd "$root/usr/bin/countdown" "$root/usr/lib/$multiarch/libcountdown.so" \
  | awk -v t="$toolchain/" 'index($3, t) == 1 { print $3 }' | sort -u); do
  install -m 0644 "$lib" "$root$runtime/"
done
strip --strip-unneeded "$root/usr/bin/countdown" "$root/usr/lib/$multiarch/libcountdown.so" \
  "$root$runtime"/*.so
patchelf --set-rpath "$runtime" "$root/usr/bin/countdown" "$root/usr/lib/$multiarch/libcountdown.so"

install -d "$root/lib/systemd/system"
install -m 0644 dist/systemd/countdown.service dist/systemd/countdown.socket "$root/lib/systemd/system/"

install -d "$root/DEBIAN"
for script in postinst prerm postrm; do install -m 0755 "dist/deb/$script" "$root/DEBIAN/"; done
cat > "$root/DEBIAN/control" <<CONTROL
Package: countdown
Version: $version
Architecture: $arch
Maintainer: Countdown developers <countdown@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1, libuv1 (>= 1.44), libsqlite3-0 (>= 3.40)
Section: net
Priority: optional
Description: Live Activity timers for kiosks, edge devices and services
 countdown serve keeps thousands to millions of countdown and elapsed-time
 activities, ticking each the instant its displayed second changes, with
 durable state, an HTTP API, a live kiosk board, Live Activity pushes through
 APNs and webhooks. Includes systemd units (socket activation, readiness and
 the watchdog) and the C library (libcountdown, countdown.h, countdown.pc).
CONTROL
mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out/countdown_${version}_${arch}.deb"
