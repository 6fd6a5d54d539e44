#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
# Instructions per engine operation at each revision given, under callgrind (issue 62): counts,
# not seconds, so the same for the same binary whatever else the machine is doing, and a
# bisect on this noisy 2-core VM needs no rounds. Each revision's Sources/Countdown (and its
# CPrefetch header) is built in release in a scratch package (.build-ops/REV) with the
# harness in Benchmarks/ops-instructions/main.swift (the commands of `countdown-bench ops`).
#
#   Benchmarks/ops-instructions.sh [-n COUNT] [-c] REV [REV …]     (WORK: the working tree)
#
# Prints, per revision, instructions per operation for each of the seven rows of
# `countdown-bench ops`' engine pass (COUNT activities, default 50000), and per tick of the
# tick walk (COUNT countdowns ticking for five seconds, the clock run a millisecond at a time,
# ticks counted and nothing else: `ticks --count-only`'s path). One callgrind run a revision,
# dumping its counts as each phase begins, so every row is that phase's own work counted in
# one process (one draw of the id index's hash seed, which moves a row by a few instructions
# from process to process; no set-up or teardown in any row). With -c, callgrind's cache
# simulation's data misses per operation instead, first level and last level (8 MiB,
# 16-way, 64-byte lines): what a row waits for memory, which this VM's missing hardware
# counters cannot tell (COUNT 200000 puts the engine well past the last level). With -t ROUNDS,
# seconds instead, without valgrind: ROUNDS rounds, each running every revision's harness in
# turn (3 passes of COUNT on fresh engines, each phase's median), and per revision each row's
# median nanoseconds an operation and its ratio to the first revision's (first ÷ this: above
# 1 is faster). A revision builds in about 15 s, so a bisect in seconds takes minutes where the
# side-by-side script's whole-package builds take ten each; use COUNT 200000, as the guard does.
set -euo pipefail
count=50000
cache=false
rounds=0
while [ $# -gt 0 ]; do
  case $1 in
  -n) count=$2; shift 2 ;;
  -c) cache=true; shift ;;
  -t) rounds=$2; shift 2 ;;
  *) break ;;
  esac
done
built=()
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
names=("start" "update (endDate)" "end (immediate)" "start (reused slots)" "update (title)"
  "update (random order)" "end (random order)" "tick (counting only)")
for rev in "$@"; do
  if [ "$rev" = WORK ]; then sha=work; else sha=$(git rev-parse --short "$rev^{commit}"); fi
  dir=$root/.build-ops/$sha
  rm -rf "$dir/Sources" "$dir/CSupport"
  mkdir -p "$dir/Sources/harness"
  if [ "$sha" = work ]; then
    cp -r Sources/Countdown "$dir/Sources/"
    mkdir -p "$dir/CSupport" && cp -r CSupport/CPrefetch "$dir/CSupport/"
  else
    git archive "$rev" Sources/Countdown CSupport/CPrefetch | tar -x -C "$dir"
  fi
  rm -rf "$dir/Sources/Countdown/Countdown.docc"
  cp Benchmarks/ops-instructions/main.swift "$dir/Sources/harness/main.swift"
  cat >"$dir/Package.swift" <<'PKG'
// swift-tools-version: 6.0
import PackageDescription
let package = Package(
  name: "ops",
  targets: [
    .systemLibrary(name: "CPrefetch", path: "CSupport/CPrefetch"),
    .target(name: "Countdown", dependencies: ["CPrefetch"],
      linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
    .executableTarget(name: "harness", dependencies: ["Countdown"]),
  ])
PKG
  (cd "$dir" && swift build -c release --product harness >build.log 2>&1) || {
    tail -20 "$dir/build.log" >&2
    exit 1
  }
  bin=$dir/.build/release/harness
  if [ "$rounds" -gt 0 ]; then
    built+=("$sha")
    continue
  fi
  # One run: callgrind dumps its counts before each phase and before phaseEnd, so the dump
  # after phase k's own (number k + 1) holds phase k alone, all in one process: no set-up, no
  # teardown at exit, one hash seed for every row. Phase 8 (starting the countdowns that tick)
  # is not reported; phase 9 is 5 x COUNT ticks.
  dumps=$dir/dumps
  rm -rf "$dumps" && mkdir -p "$dumps"
  if $cache; then
    sim=(--cache-sim=yes --LL=8388608,16,64)
  else
    sim=()
  fi
  valgrind --tool=callgrind "${sim[@]}" --callgrind-out-file="$dumps/out" \
    '--dump-before=$s7harness6phase*' '--dump-before=$s7harness8phaseEnd*' \
    "$bin" 9 "$count" >/dev/null 2>"$dumps/log" || { tail -5 "$dumps/log" >&2; exit 1; }
  line="$sha$(CACHE=$cache COUNT=$count ROWS=$(printf '%s\n' "${names[@]}") python3 - "$dumps" <<'PY'
import os, sys
dumps, count = sys.argv[1], int(os.environ["COUNT"])
names = os.environ["ROWS"].splitlines()
def summary(k):
    events = total = None
    for line in open(f"{dumps}/out.{k}"):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            total = dict(zip(events, map(int, line.split()[1:])))
    return total
# out.1 is the set-up; out.2 .. out.10 are phases 1 .. 9.
if not os.path.exists(f"{dumps}/out.10") or os.path.exists(f"{dumps}/out.11"):
    sys.exit(f"ops-instructions: expected 10 dumps in {dumps}, one before each phase and the end")
cells = []
for phase in [1, 2, 3, 4, 5, 6, 7, 9]:
    s = summary(phase + 1)
    per = 5 * count if phase == 9 else count
    name = names[7] if phase == 9 else names[phase - 1]
    if os.environ["CACHE"] == "true":
        d1 = (s["D1mr"] + s["D1mw"]) / per
        ll = (s["DLmr"] + s["DLmw"]) / per
        cells.append(f"{name}=D1 {d1:.2f} LL {ll:.2f}")
    else:
        cells.append(f"{name}={s['Ir'] // per}")
print("|" + "|".join(cells), end="")
PY
)"
  echo "$line"
done
[ "$rounds" -gt 0 ] || exit 0
out=$root/.build-ops/times
: >"$out"
for _ in $(seq 1 "$rounds"); do
  for sha in "${built[@]}"; do
    echo "$sha $("$root/.build-ops/$sha/.build/release/harness" time "$count" 3)" >>"$out"
  done
done
# The rows named as above, one a line.
ROWS=$(printf '%s\n' "${names[@]}") python3 - "$out" "${built[@]}" <<'PY'
import os, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    sha, *ns = line.split()
    rows.setdefault(sha, []).append([float(x) for x in ns])
names = os.environ["ROWS"].splitlines()
shas = sys.argv[2:]
print("ns an operation (ratio)".ljust(24) + "".join(s.rjust(17) for s in shas))
for i, name in enumerate(names):
    first = statistics.median(r[i] for r in rows[shas[0]])
    cells = []
    for sha in shas:
        m = statistics.median(r[i] for r in rows[sha])
        cells.append(f"{m:8.1f} ({first / m:4.2f})".rjust(17))
    print(name.ljust(24) + "".join(cells))
PY
