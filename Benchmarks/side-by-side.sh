#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
# Side by side: the engine at another revision against the working tree's, in one run on one
# machine, alternating processes, so that the ratio does not depend on how fast or busy the
# machine is (absolute figures from different days and VMs here differ by 2x and more).
#
#   Benchmarks/side-by-side.sh REV [ROUNDS]      (default 3 rounds; about 1.5 min a round)
#
# REV is checked out in a scratch worktree (.build-sxs/REV) and its countdown-bench built in
# release with this tree's `ops` harness copied in, so that both sides run the same
# operations (median of 5 passes on fresh 200k engines each). The tick rows run each side's
# own `ticks`: churn 50k/s at 100k, 1M and 100k aligned. Where REV's recorder reads the wall
# clock at every tick (before the anchored cycle-counter recorder), this tree's runs do too
# (`--tick-clock wall`), so that the instrument is the same on both sides; the driver's own
# cost (`--count-only`) is compared where REV has it. Prints each row's medians and ratio.
# The worktree stays for the next run; `git worktree remove --force .build-sxs/SHA` drops it.
set -euo pipefail
rev=${1:?usage: Benchmarks/side-by-side.sh REV [ROUNDS]}
rounds=${2:-3}
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
sha=$(git rev-parse --short "$rev^{commit}")
wt=$root/.build-sxs/$sha
out=$root/.build-sxs/$sha.results
new=$root/Benchmarks/.build/release/countdown-bench
old=$wt/Benchmarks/.build/release/countdown-bench

[ -d "$wt" ] || git worktree add --detach "$wt" "$sha" >/dev/null
cp Benchmarks/Sources/CountdownBench/OpsBench.swift "$wt/Benchmarks/Sources/CountdownBench/"
# Before CountdownLoop's commands took a LoopEngine, a submitted closure took (engine, now).
if grep -q 'inout ActivityEngine, Instant' "$wt"/Sources/CountdownLoop/*.swift; then
  sed -i 's/{ _ in }, completion:/{ _, _ in }, completion:/' \
    "$wt/Benchmarks/Sources/CountdownBench/OpsBench.swift"
fi
echo "building $sha's countdown-bench and this tree's (release)" >&2
build() { # package directory; the log's end on failure
  if ! (cd "$1" && swift build -c release >"$out.build" 2>&1); then
    tail -30 "$out.build" >&2
    exit 1
  fi
}
build "$wt/Benchmarks"
build Benchmarks

wall=""
"$old" ticks --help | grep -q -- --tick-clock || wall="--tick-clock wall"
countOnly=0
"$old" ticks --help | grep -q -- --count-only && countOnly=1

: >"$out"
binary() { if [ "$1" = now ]; then echo "$new"; else echo "$old"; fi; }
tick() { # label side args... (the same recorder on both sides unless counting only)
  local label=$1 side=$2
  shift 2
  local bin extra=""
  bin=$(binary "$side")
  [ "$side" = now ] && extra=$wall
  case "$*" in *--count-only*) extra="" ;; esac
  # shellcheck disable=SC2086
  line=$("$bin" ticks "$@" $extra --seconds 7 --warmup 2 2>/dev/null | grep activities | tail -1)
  echo "$label|$side|$line" >>"$out"
}
for r in $(seq 1 "$rounds"); do
  echo "round $r of $rounds" >&2
  for side in old now; do
    "$(binary "$side")" ops --submits 1000 2>/dev/null | grep '^engine' | sed "s/^/ops|$side|/" >>"$out"
    tick "churn 50k/s, 100k" "$side" --activities 100000 --churn 50000
    tick "1M, random" "$side" --activities 1000000
    tick "100k aligned" "$side" --activities 100000 --phases aligned
    if [ $countOnly = 1 ]; then
      tick "1M, counting only" "$side" --activities 1000000 --count-only
    fi
  done
done

python3 - "$out" "$sha" "$(git rev-parse --short HEAD)" "${wall:-anchored}" <<'EOF'
import re, statistics, sys
from collections import defaultdict
path, sha, head, clock = sys.argv[1:]
ops = defaultdict(lambda: defaultdict(list))
ticks = defaultdict(lambda: defaultdict(list))
for line in open(path):
    kind, side, rest = line.rstrip("\n").split("|", 2)
    if kind == "ops":
        name, rate = re.match(r"(.*?)\s+([0-9]+) /s", rest).groups()
        ops[name][side].append(float(rate) / 1e6)
        continue
    def ms(key):
        m = re.search(key + r" ([0-9.]+) (µs|ms)", rest)
        return float(m.group(1)) * (1000 if m.group(2) == "ms" else 1) / 1000
    cpu = float(re.search(r"CPU ([0-9.]+)%", rest).group(1))
    ticks[kind][side].append((cpu, ms("p99"), ms("max")))
med = statistics.median
print(f"\n{sha} ('old') beside the working tree on {head} ('now'), alternating processes; "
      f"this tree's tick clock: {clock.replace('--tick-clock ', '')}\n")
print("| operation (M/s, median) | old | now | now ÷ old |\n|---|---|---|---|")
for name, s in ops.items():
    o, n = med(s["old"]), med(s["now"])
    print(f"| {name} | {o:.2f} | {n:.2f} | {n / o:.2f}× |")
print("\n| ticks (median) | old CPU | now CPU | old ÷ now | old p99 | now p99 | old max | now max |")
print("|---|---|---|---|---|---|---|---|")
for name, s in ticks.items():
    o, n = ([med(v) for v in zip(*s[side])] for side in ("old", "now"))
    counting = "counting" in name  # no lateness is recorded
    f = lambda v: "–" if counting else f"{v:.2f} ms"
    print(f"| {name} | {o[0]:.1f}% | {n[0]:.1f}% | {o[0] / n[0]:.2f}× | {f(o[1])} | {f(n[1])} | {f(o[2])} | {f(n[2])} |")
EOF
