#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
# make deb: the three packages of the release build, split as Debian splits a program with a
# library (README "Install", docs/systemd.md):
#   countdown_<version>_<arch>.deb       the binary, its manual page, the systemd units and
#                                        the maintainer scripts dh_installsystemd would write
#   libcountdown0_<version>_<arch>.deb   libcountdown.so.0 (its SONAME) and the Swift runtime
#                                        the binary and the library need, in a private
#                                        directory (/usr/lib/<multiarch>/countdown/swift) their RUNPATH
#                                        names: nothing of the toolchain is needed on a kiosk
#   libcountdown-dev_<version>_<arch>.deb countdown.h, countdown.pc and the libcountdown.so link
# Each has its copyright file (the licenses of what it ships, the Swift runtime's included) and
# its changelog.Debian.gz; `make package` runs lintian on each (dist/deb/lintian-overrides says
# why for what it is told to let pass).
set -euo pipefail
cd "$(dirname "$0")/../.."
# The packages' version: the release's, with Debian revision 1 (a package made from a
# release's sources outside them: changelog.Debian.gz is its Debian changelog).
upstream=$1
version=$upstream-1
out=${2:-.}
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
major=${upstream%%.*}
stage=.build-deb/stage
runtime=/usr/lib/$multiarch/countdown/swift
maintainer="Countdown maintainers <maintainers@countdown.example.org>"
rm -rf .build-deb
mkdir -p "$stage"
make --no-print-directory install DESTDIR="$PWD/$stage" PREFIX=/usr LIBDIR="/usr/lib/$multiarch"
lib="usr/lib/$multiarch/libcountdown.so.$upstream"

# The Swift runtime libraries the binary and the library load, from the toolchain.
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib/swift/linux
mkdir -p "$stage$runtime"
for so in $(ldd "$stage/usr/bin/countdown" "$stage/$lib" \
  | awk -v t="$toolchain/" 'index($3, t) == 1 { print $3 }' | sort -u); do
  install -m 0644 "$so" "$stage$runtime/"
done
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/countdown" \
  "$stage/$lib" "$stage$runtime"/*.so
patchelf --set-rpath "$runtime" "$stage/usr/bin/countdown" "$stage/$lib"

# Each package's root: the files it holds, moved out of the stage.
take() { # PACKAGE PATH…
  local root=.build-deb/$1
  shift
  for path in "$@"; do
    mkdir -p "$root/$(dirname "$path")"
    mv "$stage/$path" "$root/$path"
  done
}
take countdown usr/bin/countdown usr/share/man/man1/countdown.1
gzip -9n .build-deb/countdown/usr/share/man/man1/countdown.1
install -d .build-deb/countdown/lib/systemd/system
install -m 0644 dist/systemd/countdown.service dist/systemd/countdown.socket \
  .build-deb/countdown/lib/systemd/system/
take libcountdown0 "$lib" "usr/lib/$multiarch/libcountdown.so.$major" "${runtime#/}"
take libcountdown-dev usr/include/countdown.h "usr/lib/$multiarch/libcountdown.so" \
  "usr/lib/$multiarch/pkgconfig/countdown.pc"
# The library is in the linker's own directory here: a program built against it needs no
# RUNPATH (the one countdown.pc gives for an installation under another prefix).
sed -i 's/ -Wl,-rpath,${libdir}//' ".build-deb/libcountdown-dev/usr/lib/$multiarch/pkgconfig/countdown.pc"

date=$(date -R -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}")
for package in countdown libcountdown0 libcountdown-dev; do
  root=.build-deb/$package
  doc=$root/usr/share/doc/$package
  install -d "$doc" "$root/DEBIAN"
  sed "s/@PACKAGE@/$package/" dist/deb/copyright > "$doc/copyright"
  chmod 0644 "$doc/copyright"
  # changelog.Debian: one entry for this version, what the README's "Install" says it is.
  printf '%s (%s) unstable; urgency=medium\n\n  * Packaged from Countdown %s (README.md, BENCHMARKS.md).\n\n -- %s  %s\n' \
    "$package" "$version" "$upstream" "$maintainer" "$date" | gzip -9n > "$doc/changelog.Debian.gz"
  if [ -f "dist/deb/lintian-overrides/$package" ]; then
    install -d "$root/usr/share/lintian/overrides"
    install -m 0644 "dist/deb/lintian-overrides/$package" "$root/usr/share/lintian/overrides/$package"
  fi
done

# countdown: the units' maintainer scripts.
for script in postinst prerm postrm; do
  install -m 0755 "dist/deb/$script" .build-deb/countdown/DEBIAN/
done
# libcountdown0: what links against it depends on it (shlibs), and ldconfig runs after it.
echo "libcountdown $major libcountdown0 (>= $version)" > .build-deb/libcountdown0/DEBIAN/shlibs
echo "activate-noawait ldconfig" > .build-deb/libcountdown0/DEBIAN/triggers
chmod 0644 .build-deb/libcountdown0/DEBIAN/shlibs .build-deb/libcountdown0/DEBIAN/triggers

control() { # PACKAGE SECTION DEPENDS SUMMARY (the description's body on stdin)
  local root=.build-deb/$1
  {
    echo "Package: $1"
    echo "Source: countdown"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
    echo "Depends: $3"
    [ "$1" = libcountdown0 ] && echo "Multi-Arch: same"
    echo "Section: $2"
    echo "Priority: optional"
    echo "Description: $4"
    cat
  } > "$root/DEBIAN/control"
}
base="libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1 (>= 3.0)"
control countdown net \
  "$base, libcountdown0 (= $version), libuv1 (>= 1.44), libsqlite3-0 (>= 3.40)" \
  "Live Activity timers for kiosks, edge devices and services" <<'TEXT'
 countdown serve keeps thousands to millions of countdown and elapsed-time
 activities, ticking each the instant its displayed second changes, with
 durable state, an HTTP API, a live kiosk board, Live Activity pushes through
 APNs and webhooks. Includes the systemd units (socket activation, readiness
 and the watchdog).
TEXT
control libcountdown0 libs "$base, libuv1 (>= 1.44)" \
  "Live Activity timers for kiosks - C library" <<'TEXT'
 libcountdown gives C and C++ hosts (Qt, GTK, SDL, signage players) the
 timer formatter and the countdown loop of countdown: thousands of activities
 ticking the instant their displayed second changes, on a libuv loop of its
 own. This package holds the shared library and the Swift runtime it and the
 countdown program load, in a directory of their own.
TEXT
control libcountdown-dev libdevel "libcountdown0 (= $version), libuv1-dev (>= 1.44)" \
  "Live Activity timers for kiosks - C development files" <<'TEXT'
 libcountdown gives C and C++ hosts (Qt, GTK, SDL, signage players) the
 timer formatter and the countdown loop of countdown. This package holds the
 header countdown.h, countdown.pc for pkg-config and the link to build against.
TEXT

mkdir -p "$out"
for package in countdown libcountdown0 libcountdown-dev; do
  dpkg-deb --root-owner-group -Zxz --build ".build-deb/$package" "$out/${package}_${version}_${arch}.deb"
done
