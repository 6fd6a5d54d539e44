#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
# `make bench-guard`: the engine's operations and ticks beside the baseline revision that
# Benchmarks/baseline names, two ways, failing when either says this tree is slower:
#
# 1. Instructions (Benchmarks/ops-instructions.sh, under callgrind): each command of
#    `countdown-bench ops`' engine pass and the tick walk, per operation. A count is the same
#    for one binary whatever else the machine does, so this part needs no second run: a row
#    fails when it runs more than the file's `slack` instructions an operation above the
#    baseline's (the id index's hash seed, drawn per process, moves a row by up to about 16;
#    `slack NAME = N` sets one row's own).
# 2. Seconds (Benchmarks/side-by-side.sh, in release): a row fails below its bound, an
#    operation's rate now ÷ old, a tick row's CPU old ÷ now (lateness is not bounded: on a
#    shared 2-core VM its p99 moves 2x between runs). A tick row whose CPU figures differ by
#    one step of their rounding (0.1 point: 0.5% against 0.6% is 0.83x) is below what the
#    figures can tell, and passes, saying so. One run below is not yet a regression here (two
#    like sides of one build differ by up to +-10%): when a row is below, the side-by-side runs
#    again, and only a row below in both runs fails.
#
# Prints the tables and every row against its bound; exits 1 naming each row that failed.
#
#   Benchmarks/bench-guard.sh [BASELINE-FILE]     (default Benchmarks/baseline)
#
# BENCHMARKS.md ("Keeping the engine's speed") says how to read it on a noisy VM.
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
file=${1:-Benchmarks/baseline}
[ -r "$file" ] || { echo "bench-guard: no baseline file $file" >&2; exit 2; }
value() { awk -v k="$1" '$1 == k && NF == 2 { print $2; exit }' "$file"; }
rev=$(value revision)
rounds=$(value rounds)
bound=$(value bound)
slack=$(value slack)
icount=$(value instructions)
if [ -z "$rev" ] || [ -z "$rounds" ] || [ -z "$bound" ] || [ -z "$slack" ] || [ -z "$icount" ]; then
  echo "bench-guard: $file must name a revision, rounds, a bound, a slack and instructions" >&2
  exit 2
fi
git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || {
  echo "bench-guard: $file names revision $rev, which this clone does not have" >&2
  exit 2
}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo "bench-guard: instructions, this tree beside $rev ($icount activities, slack $slack)" >&2
Benchmarks/ops-instructions.sh -n "$icount" "$rev" WORK | tee "$scratch/instructions"
python3 - "$scratch/instructions" "$slack" "$scratch/verdict" "$file" <<'PY'
import re, sys
lines = [l.strip() for l in open(sys.argv[1]) if "|" in l]
slack = int(sys.argv[2])
own = {}
for line in open(sys.argv[4]):
    m = re.match(r"\s*slack\s+(.+?)\s*=\s*([0-9]+)\s*$", line)
    if m:
        own[m.group(1)] = int(m.group(2))
if len(lines) != 2:
    sys.exit("bench-guard: ops-instructions.sh printed no two revisions' counts: nothing was measured")
def parse(line):
    sha, *cells = line.split("|")
    return sha, [(c.rsplit("=", 1)[0], int(c.rsplit("=", 1)[1])) for c in cells]
(old_sha, old), (_, now) = parse(lines[0]), parse(lines[1])
failed = []
print(f"\n| row (instructions an operation) | {old_sha} | this tree | now - old | |\n|---|---|---|---|---|")
unknown = set(own) - {name for name, _ in old}
if unknown:
    sys.exit(f"bench-guard: {sys.argv[4]} gives a slack to rows not counted: {', '.join(sorted(unknown))}")
for (name, a), (_, b) in zip(old, now):
    room = own.get(name, slack)
    ok = b <= a + room
    print(f"| {name} | {a:,} | {b:,} | {b - a:+,} | {'ok' if ok else 'ABOVE'} |")
    if not ok:
        failed.append(f"{name}: {b:,} instructions an operation against {a:,} (more than {room} above)")
with open(sys.argv[3], "w") as f:
    f.write("".join(line + "\n" for line in failed))
PY

# The seconds: one run's rows below their bound, one name a line, into $2.
seconds() {
  Benchmarks/side-by-side.sh "$rev" "$rounds" | tee "$1"
  python3 - "$1" "$file" "$bound" "$2" <<'PY'
import re, sys
tables, file, bound, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
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
below = []
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
        below.append(f"{name} ({what} {ratio:.2f}× < {b:.2f}×)")
with open(out, "w") as f:
    f.write("".join(line + "\n" for line in below))
PY
}

echo "bench-guard: seconds, this tree beside $rev, $rounds rounds, bound ${bound}x" >&2
seconds "$scratch/tables1" "$scratch/below1"
failed=()
if [ -s "$scratch/below1" ]; then
  echo "bench-guard: below the bound in the first run (again, before believing it):" >&2
  sed 's/^/  /' "$scratch/below1" >&2
  seconds "$scratch/tables2" "$scratch/below2"
  # A row fails when it is below in both runs. Its name is what comes before the last " (":
  # names have brackets of their own ("engine update (title)").
  while IFS= read -r line; do
    name=${line% (*}
    while IFS= read -r first; do
      if [ "${first% (*}" = "$name" ]; then failed+=("$line (and in the first run)"); fi
    done <"$scratch/below1"
  done <"$scratch/below2"
fi
while IFS= read -r line; do failed+=("$line"); done <"$scratch/verdict"
if [ ${#failed[@]} -gt 0 ]; then
  echo "" >&2
  echo "bench-guard: FAILED, slower than $rev:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  echo "BENCHMARKS.md (\"Keeping the engine's speed\") says how to find it." >&2
  exit 1
fi
echo "" >&2
if [ -s "$scratch/below1" ]; then
  echo "bench-guard: every row within its bound (instructions; seconds: no row below in both runs)" >&2
else
  echo "bench-guard: every row within its bound (instructions; seconds in the first run)" >&2
fi
