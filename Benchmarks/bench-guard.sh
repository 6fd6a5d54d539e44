#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
# `make bench-guard`: the engine's operations and ticks side by side with the baseline
# revision that Benchmarks/baseline names (Benchmarks/side-by-side.sh, in release), failing
# when any row's ratio falls below its bound: an operation's rate now ÷ old, a tick row's CPU
# old ÷ now (lateness is not bounded: on a shared 2-core VM its p99 moves 2x between runs).
# A tick row whose CPU figures differ by one step of their rounding (0.1 point: 0.5% against
# 0.6% is 0.83x) is below what the figures can tell, and passes, saying so.
# Prints the tables and then every row against its bound; exits 1 naming each row below it.
#
#   Benchmarks/bench-guard.sh [BASELINE-FILE]     (default Benchmarks/baseline)
#
# BENCHMARKS.md ("Keeping the engine's speed") says how to read a failure on a noisy VM.
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
file=${1:-Benchmarks/baseline}
[ -r "$file" ] || { echo "bench-guard: no baseline file $file" >&2; exit 2; }
value() { awk -v k="$1" '$1 == k { print $2; exit }' "$file"; }
rev=$(value revision)
rounds=$(value rounds)
bound=$(value bound)
if [ -z "$rev" ] || [ -z "$rounds" ] || [ -z "$bound" ]; then
  echo "bench-guard: $file must name a revision, rounds and a bound" >&2
  exit 2
fi
git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || {
  echo "bench-guard: $file names revision $rev, which this clone does not have" >&2
  exit 2
}
tables=$(mktemp)
trap 'rm -f "$tables"' EXIT
echo "bench-guard: this tree beside $rev, $rounds rounds, bound ${bound}x" >&2
Benchmarks/side-by-side.sh "$rev" "$rounds" | tee "$tables"
python3 - "$tables" "$file" "$bound" <<'PY'
import re, sys
tables, file, bound = sys.argv[1], sys.argv[2], float(sys.argv[3])
own = {}
for line in open(file):
    m = re.match(r"\s*row\s+(.+?)\s*=\s*([0-9.]+)\s*$", line)
    if m:
        own[m.group(1)] = float(m.group(2))
rows = []  # (name, what, ratio, CPU old and now in % for a tick row)
section = None
for line in open(tables):
    if line.startswith("| operation"):
        section = "ops"; continue
    if line.startswith("| ticks"):
        section = "ticks"; continue
    if not line.startswith("| ") or line.startswith("|---"):
        continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if section == "ops":
        rows.append((cells[0], "rate now ÷ old", float(cells[3].rstrip("×")), None))
    elif section == "ticks":
        cpu = (float(cells[1].rstrip("%")), float(cells[2].rstrip("%")))
        rows.append((cells[0], "CPU old ÷ now", float(cells[3].rstrip("×")), cpu))
if not any(r[1].startswith("rate") for r in rows) or not any(r[1].startswith("CPU") for r in rows):
    sys.exit("bench-guard: side-by-side.sh printed no operation or tick rows: nothing was measured")
unknown = set(own) - {r[0] for r in rows}
if unknown:
    sys.exit(f"bench-guard: {file} bounds rows that were not measured: {', '.join(sorted(unknown))}")
failed = []
print("\n| row | measured | ratio | bound | |\n|---|---|---|---|---|")
for name, what, ratio, cpu in rows:
    b = own.get(name, bound)
    ok = ratio >= b
    verdict = "ok" if ok else "BELOW"
    # The figures have one decimal: a difference of one step is below their resolution.
    if not ok and cpu is not None and cpu[1] - cpu[0] <= 0.1 + 1e-9:
        ok = True
        verdict = f"ok ({cpu[0]:.1f}% against {cpu[1]:.1f}%: one step of the figures' rounding)"
    print(f"| {name} | {what} | {ratio:.2f}× | {b:.2f}× | {verdict} |")
    if not ok:
        failed.append(f"{name} ({what} {ratio:.2f}× < {b:.2f}×)")
if failed:
    print("\nbench-guard: FAILED, slower than the baseline beyond the bound:\n  "
          + "\n  ".join(failed)
          + "\nRun it again before believing it (BENCHMARKS.md, \"Keeping the engine's speed\");"
          + " twice below is a regression to find.", file=sys.stderr)
    sys.exit(1)
print(f"\nbench-guard: every row at or above its bound", file=sys.stderr)
PY
