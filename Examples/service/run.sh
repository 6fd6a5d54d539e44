#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
# Runs the example service against a real `countdown serve` on a socket of its own and checks
# what it printed: started, ticks, the update, ended, dismissed, nothing left.
# usage: run.sh COUNTDOWN GATE-SERVICE
set -euo pipefail
countdown=$1
service=$2
dir=$(mktemp -d /tmp/cd-service-XXXXXX)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
"$countdown" serve --socket "$dir/c.sock" > "$dir/serve.out" 2> "$dir/serve.err" &
server=$!
for _ in $(seq 100); do [ -S "$dir/c.sock" ] && break; sleep 0.1; done
timeout 30 "$service" "unix:$dir/c.sock" 3 | tee "$dir/out.txt"
for want in "started gate-b12" "gate-b12: 10:00 active Gate B12" "tick gate-b12 9:5" \
  "updated gate-b12" "ended gate-b12" "dismissed gate-b12" "0 activities left"; do
  grep -q "$want" "$dir/out.txt" || { echo "run.sh: no \"$want\" in the output" >&2; exit 1; }
done
echo "run.sh: the example service ran as it should"
