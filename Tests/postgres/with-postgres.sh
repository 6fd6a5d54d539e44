#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
# Runs a command beside a scratch PostgreSQL server (Debian's, `make pgdeps`): initdb in a
# fresh directory under /tmp (the postgres user must reach it: a clone under a 0700 home
# could not be), a free port on 127.0.0.1, trust authentication for the user `postgres`.
# The command gets COUNTDOWN_TEST_POSTGRES (the server's URL) and COUNTDOWN_TEST_PG_RESTART
# (a shell command that restarts it at once, `pg_ctl restart -m immediate`, as a crash
# would); the server is stopped and its directory removed afterwards, whatever the result.
# COUNTDOWN_PG_SETTINGS replaces the server's settings beyond its port (default -c fsync=off,
# for the tests: a crash of the operating system is not what they check; the benchmark
# gives -c fsync=on).
set -eu
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "with-postgres: no PostgreSQL server (make pgdeps)" >&2; exit 1; }
data=$(mktemp -d /tmp/countdown-pg.XXXXXX)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
if [ "$(id -u)" = 0 ]; then
  chown postgres "$data"
  as() { runuser -u postgres -- "$@"; }
else
  as() { "$@"; }
fi
options="-p $port -k $data -c listen_addresses=127.0.0.1 ${COUNTDOWN_PG_SETTINGS:--c fsync=off}"
stop() { as "$bin/pg_ctl" -D "$data/db" stop -m immediate >/dev/null 2>&1 || true; rm -rf "$data"; }
trap stop EXIT INT TERM
as "$bin/initdb" -D "$data/db" -A trust -U postgres >"$data/initdb.log" 2>&1 ||
  { cat "$data/initdb.log" >&2; exit 1; }
as "$bin/pg_ctl" -D "$data/db" -o "$options" -l "$data/log" start -w >/dev/null ||
  { cat "$data/log" >&2; exit 1; }
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($data)"
export COUNTDOWN_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres"
if [ "$(id -u)" = 0 ]; then
  export COUNTDOWN_TEST_PG_RESTART="runuser -u postgres -- $bin/pg_ctl -D $data/db -o '$options' -l $data/log restart -m immediate -w"
else
  export COUNTDOWN_TEST_PG_RESTART="$bin/pg_ctl -D $data/db -o '$options' -l $data/log restart -m immediate -w"
fi
status=0
"$@" || status=$?
exit $status
