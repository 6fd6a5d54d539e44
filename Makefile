# Countdown: the two commands of the README are `make run` and `make test`.
# Both install libuv and SQLite (Debian libuv1-dev, libsqlite3-dev) first when missing.

SWIFT ?= swift

# (install, man, deb and packaging are below, with the C library.)
.PHONY: install-lib uninstall man deb debdeps package docs
.PHONY: faultdeps soak soak-cluster soak-short service-example bench-cluster browser-cluster pushes-cluster chaos run replay plot test deps cdeps browserdeps tuideps pushdeps pushes webhooks openapi openapideps lint build release tsan asan bench-format consumer fuzz lib install examples ctest browser tui screenshots postgres pgdeps bench-postgres bench-guard benchdeps

deps:
	@pkg-config --exists libuv 2>/dev/null && pkg-config --exists sqlite3 2>/dev/null || { \
	  echo "installing libuv1-dev, libsqlite3-dev"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libuv1-dev libsqlite3-dev pkg-config; }

# The C ABI's tests and examples compile with gcc and g++ (the issue's flags) and pkg-config;
# patchelf gives the library its SONAME.
cdeps: deps
	@command -v gcc >/dev/null && command -v g++ >/dev/null && command -v pkg-config >/dev/null \
	  && command -v patchelf >/dev/null || { \
	  echo "installing gcc, g++, pkg-config, patchelf"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc g++ pkg-config patchelf; }

# The main job: countdown-bench's default suite (release build, about 3½ minutes on 2 cores):
# the machine's wake-up floor, tick latency of our driver beside one uv_timer_t per activity,
# SwiftNIO and Dispatch, ours at 1M (also counting only), aligned, with 50k/s churn and at 10M
# on two loops, then formatting and operations. Results land in bench-results/ (JSON and .hgrm
# files).
run: deps
	cd Benchmarks && $(SWIFT) build -c release
	mkdir -p bench-results
	Benchmarks/.build/release/countdown-bench --json bench-results/suite.json --hgrm bench-results/hgrm

# The kiosk scenario, replayed on the virtual clock by a release build.
replay: deps
	$(SWIFT) build -c release --product countdown
	.build/release/countdown replay Examples/kiosk.jsonl

# The latency picture of the README, from the .hgrm files of `make run` (needs matplotlib).
plot:
	python3 -c "import matplotlib" 2>/dev/null || pip install -q matplotlib
	python3 Benchmarks/plot_latency.py bench-results/hgrm docs/latency-100k.png 100000

test: deps faultdeps
	$(SWIFT) build --build-tests
	COUNTDOWN_READONLY_DISK=1 $(SWIFT) test
	$(MAKE) ctest
	$(MAKE) browser
	$(MAKE) tui
	$(MAKE) pushes
	$(MAKE) webhooks
	$(MAKE) openapi
	$(MAKE) postgres
	$(MAKE) browser-cluster
	$(MAKE) pushes-cluster
	$(MAKE) chaos

# The board's browser tests need Debian's chromium and chromium-driver and PyPI's selenium;
# the terminal board's, tmux.
browserdeps:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  echo "installing chromium, chromium-driver"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-dejavu-core; }
	@python3 -c "import selenium" 2>/dev/null || { echo "installing selenium"; pip install -q selenium; }

# The push tests' APNs stand-in: PyPI's h2 (HTTP/2) and cryptography (its TLS certificates,
# the JWT's ES256 check).
# A disk that turns read-only under the state file (Tests/faults/readonly_fs.py): FUSE's
# library and fusepy.
faultdeps:
	@python3 -c "import fuse" 2>/dev/null || { echo "installing libfuse2, fusepy"; \
	  { ldconfig -p | grep -q libfuse.so.2 || { apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfuse2; }; } && pip install -q fusepy; }

pushdeps:
	@python3 -c "import h2, cryptography" 2>/dev/null || { echo "installing h2, cryptography"; pip install -q h2 cryptography; }

# The state in PostgreSQL (docs/cluster.md): Debian's PostgreSQL server (15 here), started
# for the run in a scratch directory under /tmp on a free port (Tests/postgres/with-postgres.sh),
# and the tests that need it: CountdownPostgresTests, which `swift test` alone skips, saying so.
pgdeps:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v psql >/dev/null || { \
	  echo "installing postgresql"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-client; }

postgres: deps pgdeps
	$(SWIFT) build --build-tests
	Tests/postgres/with-postgres.sh $(SWIFT) test --skip-build --no-parallel \
	  --filter "PostgresStoreTests|PostgresSettingsTests|OnPostgres"

# The cluster's chaos tests (docs/cluster.md): 20 rounds of kill -9 of a node under a stream of
# commands through another, 10 of the hand-back, and the faults short of death (a node cut off
# from PostgreSQL, two nodes cut from each other, PostgreSQL slowed, a flapping link; each
# link through Tests/CountdownServerTestSupport/FaultProxy.swift), on a PostgreSQL of their
# own (about 4 minutes).
chaos: deps pgdeps
	$(SWIFT) build --build-tests
	COUNTDOWN_CHAOS_ROUNDS=20 COUNTDOWN_HANDBACK_ROUNDS=10 COUNTDOWN_FAULTS=1 \
	  Tests/postgres/with-postgres.sh $(SWIFT) test --skip-build --no-parallel \
	  --filter "ClusterOnPostgresTests/(killedUnderStream|handBack|cutFromPostgres|nodesCutFromEachOther|slowPostgres|flappingLink)"

# The soak (docs/soak.md, Benchmarks/soak.py): an hour of the release build under a steady
# mixed load (100k ticking, 1,000 commands/s, 20 event streams coming and going, pushes and
# webhooks to stand-ins failing 1%, a SQLite file), sampled every 10 s into
# bench-results/soak/soak.csv and soak.png; fails when memory, descriptors or the file grow
# after the warm-up, the lateness drifts, or anything is lost. Not in CI (soak-short is).
soak: deps pushdeps
	$(SWIFT) build -c release --product countdown
	python3 -c "import matplotlib" 2>/dev/null || pip install -q matplotlib
	python3 Benchmarks/soak.py .build/release/countdown --minutes 60 --out bench-results/soak

# The same for node a of two on a PostgreSQL of their own, 30 minutes.
soak-cluster: deps pushdeps pgdeps
	$(SWIFT) build -c release --product countdown
	python3 -c "import matplotlib" 2>/dev/null || pip install -q matplotlib
	Tests/postgres/with-postgres.sh sh -c 'python3 Benchmarks/soak.py .build/release/countdown \
	  --minutes 30 --postgres "$$COUNTDOWN_TEST_POSTGRES" --out bench-results/soak-cluster'

# CI's three minutes of it: the debug build (make test built it), a lighter load (20k ticking,
# 300 commands/s); the same checks, with floors for what three minutes cannot tell.
soak-short: deps pushdeps
	$(SWIFT) build --product countdown
	python3 Benchmarks/soak.py .build/debug/countdown --minutes 3 --warmup-minutes 1 \
	  --activities 20000 --commands 300 --out .build-soak

# Live Activity pushes end to end: `countdown serve --apns-*` (the debug build) against the
# APNs stand-in, real TLS and HTTP/2 on loopback (Tests/pushes; scratch in .build-pushes),
# broadcast channels and the channel management API included.
pushes: deps pushdeps
	$(SWIFT) build --product countdown
	SCRATCH=$(CURDIR)/.build-pushes python3 Tests/pushes/test_pushes.py
	SCRATCH=$(CURDIR)/.build-pushes python3 Tests/pushes/test_channels.py

# Pushes and webhooks from cluster nodes: two nodes on a PostgreSQL of their own, the APNs
# stand-in and a webhook receiver; kill -9 of one with a push and a delivery pending.
pushes-cluster: deps pushdeps pgdeps
	$(SWIFT) build --product countdown
	SCRATCH=$(CURDIR)/.build-pushes Tests/postgres/with-postgres.sh \
	  python3 Tests/pushes/test_cluster_outbox.py

webhooks: deps pushdeps
	$(SWIFT) build --product countdown
	SCRATCH=$(CURDIR)/.build-webhooks python3 Tests/webhooks/test_webhooks.py

# The HTTP API's contract: docs/openapi.yaml valid, served at /openapi.json, and the server
# checked against it by schemathesis (Tests/openapi/test_openapi.py says what is and is not).
openapideps:
	@python3 -c "import yaml, openapi_spec_validator, schemathesis" 2>/dev/null || { echo "installing pyyaml, openapi-spec-validator, schemathesis"; pip install -q pyyaml openapi-spec-validator schemathesis; }

openapi: deps openapideps
	$(SWIFT) build --product countdown
	SCRATCH=$(CURDIR)/.build-openapi python3 Tests/openapi/test_openapi.py

tuideps:
	@command -v tmux >/dev/null || { \
	  echo "installing tmux"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux; }

# First the board page's time model and formatter run in Chromium beside ActivityClock and
# TimerFormatter on 5000 random cases (BoardPageTimeModelTests, which fails here rather than
# skips without Chromium). Then the kiosk board (GET /) in a real headless Chromium driven by Selenium, against a real
# `countdown serve --http` (the debug build); screenshots land in .build-browser. Then web
# safety: a page on another origin, a rebound name and a frame against the same server.
browser: deps browserdeps
	$(SWIFT) build --build-tests
	COUNTDOWN_BOARD_DIFF=1 $(SWIFT) test --skip-build --filter BoardPageTimeModelTests
	SCRATCH=$(CURDIR)/.build-browser python3 Tests/browser/test_board.py
	SCRATCH=$(CURDIR)/.build-browser python3 Tests/browser/test_web_safety.py

# The board of one cluster node showing every node's activities live, in Chromium, with two
# nodes on a PostgreSQL of its own (docs/cluster.md).
browser-cluster: deps browserdeps pgdeps
	$(SWIFT) build --product countdown
	SCRATCH=$(CURDIR)/.build-browser Tests/postgres/with-postgres.sh \
	  python3 Tests/browser/test_board_cluster.py

# `countdown board` under tmux, read back with capture-pane.
tui: deps tuideps
	$(SWIFT) build --product countdown
	python3 Tests/terminal/test_board_tmux.py

# The README's screenshots (docs/board-1280x800.png, docs/board-800x480.png,
# docs/board-one-1920x1080.png, docs/board-one-800x480.png).
screenshots: deps browserdeps
	$(SWIFT) build --product countdown
	SCRATCH=$(CURDIR)/.build-browser SCREENSHOTS=$(CURDIR)/docs python3 Tests/browser/test_board.py

# swift format, then the house's rules that it cannot check (.ci/house-rules: citations of
# documents not in the repository, files past 600 lines that do not say why, "session" in
# README.md or BENCHMARKS.md), its self-test first.
lint:
	$(SWIFT) format lint --strict -r Sources Tests Fuzz Examples/consumer Examples/service Package.swift Benchmarks/Sources Benchmarks/Package.swift
	python3 .ci/house-rules --self-test
	python3 .ci/house-rules

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Formatting throughput beside Foundation (release build of the Benchmarks package).
bench-format: deps
	cd Benchmarks && $(SWIFT) build -c release && .build/release/countdown-bench format

# The engine beside the revision Benchmarks/baseline names, in instructions under callgrind
# and in seconds side by side, failing a row above or below its bound (Benchmarks/bench-guard.sh;
# two release builds, about a minute of counts and 5 min of runs, 10 when a row is below once).
# A step of .ci/run-long.
bench-guard: deps benchdeps
	Benchmarks/bench-guard.sh

# valgrind, for the instruction counts of Benchmarks/ops-instructions.sh and bench-guard.
benchdeps:
	@command -v valgrind >/dev/null || { \
	  echo "installing valgrind"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind; }

# Acknowledged starts/s with the state in memory, in the file (sync normal, full) and in a
# scratch PostgreSQL server on loopback, fsync on (countdown-bench store --postgres), side by
# side.
bench-postgres: deps pgdeps
	cd Benchmarks && $(SWIFT) build -c release
	COUNTDOWN_PG_SETTINGS="-c fsync=on" Tests/postgres/with-postgres.sh sh -c \
	  'Benchmarks/.build/release/countdown-bench store --parts commands --postgres "$$COUNTDOWN_TEST_POSTGRES"'

# A cluster of two nodes on a scratch PostgreSQL (fsync on): a forwarded request beside a local
# one, the takeover after kill -9 over 10 rounds, acknowledged starts (countdown-bench cluster).
bench-cluster: deps pgdeps
	cd Benchmarks && $(SWIFT) build -c release
	COUNTDOWN_PG_SETTINGS="-c fsync=on" Tests/postgres/with-postgres.sh sh -c \
	  'Benchmarks/.build/release/countdown-bench cluster --postgres "$$COUNTDOWN_TEST_POSTGRES"'

# .ci/tsan.supp names the one report known to be the Swift runtime's uninstrumented atomics
# (SwiftNIO's pooled receive buffer) and why.
TSAN_SUPP := suppressions=$(CURDIR)/.ci/tsan.supp

# ThreadSanitizer over the real-loop tests, the service's socket tests and its HTTP tests that
# run in this process, a stream joining mid-flow among them, and the web-safety tests served in
# this process (limits, timeouts, the guard) (own scratch path, so the debug build stays).
tsan: deps pgdeps
	TSAN_OPTIONS=$(TSAN_SUPP) $(SWIFT) test --scratch-path .build-tsan --sanitize=thread --filter 'CountdownLoopTests|ServerProtocolTests|HTTPTests/(routes|errors|token|events|metrics|page|streamJoinsMidFlow)|WebSafetyServedTests|APNsClientTests|WebhookDeliveryTests|ServiceManagerTests|DeadlineTimerTests|GroupAccessTests|CountdownConnectionTests|CountdownSubscriptionTests|CallQueueTests'
	# The durable state: the state file in process, and servers run as children (built with
	# ThreadSanitizer too), which stop at their first race. Not the disk-failure test: under
	# its file-size limit the sanitizer's runtime cannot start (SIGBUS).
	TSAN_OPTIONS=$(TSAN_SUPP):halt_on_error=1:exitcode=66 $(SWIFT) test --scratch-path .build-tsan --sanitize=thread --filter 'StateFileTests|DurabilityTests/(restartCases|badStates|crashRounds)'
	# The PostgreSQL store and the shard leases (two nodes in one process, each on an
	# event loop of its own) against a scratch PostgreSQL; two cluster nodes as children (a
	# takeover, events passed on for a node killed before relaying them). Not the subscription
	# test: its steps before the kill outlast their deadline under the sanitizer.
	TSAN_OPTIONS=$(TSAN_SUPP):halt_on_error=1:exitcode=66 Tests/postgres/with-postgres.sh $(SWIFT) test --scratch-path .build-tsan --sanitize=thread --no-parallel --filter 'LeaseDriverOnPostgresTests|PostgresStoreTests|ClusterOnPostgresTests/(takeover|killedBetweenCommitAndRelay|groupKeyForwarded)'

# AddressSanitizer with LeakSanitizer over the real-loop tests and the formatter, which writes
# through raw pointers and builds small strings in place.
asan: deps pgdeps
	LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan.supp $(SWIFT) test --scratch-path .build-asan --sanitize=address --filter 'CountdownLoopTests|FormatterTests|FormatCommandTests|HardeningTests|ServerProtocolTests|APNsClientTests|WebhookDeliveryTests|RelayedSourcesTests|UnsettledEventsTests|ServerLifetimeTests|CountdownConnectionTests|CountdownSubscriptionTests'
	# The cluster's store and shard leases in process (two nodes, each on an event loop of
	# its own), a whole cluster node in process started and stopped, and two cluster nodes
	# as sanitized children (a takeover, events passed on for a node killed before relaying
	# them): a child that leaks exits non-zero, which the tests expect to be 0. Against a
	# scratch PostgreSQL. Not the subscription test: its steps before the kill outlast their
	# deadline under the sanitizer.
	LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan.supp Tests/postgres/with-postgres.sh $(SWIFT) test --scratch-path .build-asan --sanitize=address --no-parallel --filter 'LeaseDriverOnPostgresTests|PostgresStoreTests|ClusterNodeLifetimeOnPostgresTests|ClusterOnPostgresTests/(takeover|killedBetweenCommitAndRelay)'


# A package that depends on Countdown as a service would, one executable per library product,
# each linking that product alone; both are built and run (own scratch path).
consumer: deps
	cd Examples/consumer && $(SWIFT) build --scratch-path ../../.build-consumer
	.build-consumer/debug/CoreOnly
	.build-consumer/debug/LoopOnly
	.build-consumer/debug/ClientOnly

# libFuzzer over the wire decoder and a replay session, and the nodes' protocol (PeerMessage,
# GatheredList) on the same lines (Fuzz/FuzzWire.swift), with
# AddressSanitizer and the engine's invariant checks, for FUZZ_SECONDS (default 60). The
# Countdown sources and the target are compiled as one module; the corpus starts from the
# replay fixtures and grows in .build-fuzz/corpus; a crash is saved as .build-fuzz/crash-*.
FUZZ_SECONDS ?= 60
FUZZ_SOURCES := $(wildcard Sources/Countdown/*.swift) Sources/CountdownServer/PeerMessage.swift \
  Sources/CountdownServer/GatheredList.swift Fuzz/FuzzWire.swift

.build-fuzz/fuzz-wire: $(FUZZ_SOURCES) $(wildcard CSupport/CPrefetch/*.h)
	mkdir -p .build-fuzz
	$(SWIFT)c -sanitize=fuzzer,address -O -g -D DEBUG -parse-as-library -use-ld=lld \
	  -I CSupport/CPrefetch -module-name CountdownFuzz -package-name countdown $(FUZZ_SOURCES) -o $@

fuzz: .build-fuzz/fuzz-wire
	mkdir -p .build-fuzz/corpus
	cp Tests/CountdownCLITests/Fixtures/*.jsonl .build-fuzz/corpus/
	for f in Examples/*.jsonl; do cp $$f .build-fuzz/corpus/example-$$(basename $$f); done
	cp Fuzz/corpus/*.jsonl .build-fuzz/corpus/
	.build-fuzz/fuzz-wire -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -timeout=10 \
	  -dict=Fuzz/wire.dict -artifact_prefix=.build-fuzz/ -print_final_stats=1 .build-fuzz/corpus

# ---- The C ABI (include/countdown.h, libcountdown) ----
# The dynamic library product is CountdownC (a product named "countdown" would collide with
# the executable). `make lib` copies it as libcountdown.so.VERSION with the SONAME
# libcountdown.so.MAJOR (patchelf: SwiftPM sets none), and the two links a system has beside
# it: libcountdown.so.MAJOR (what a program loads) and libcountdown.so (what -lcountdown finds).
PREFIX ?= /usr/local
VERSION := $(shell sed -n 's/^\#define CD_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' include/countdown.h | paste -sd.)
SOVERSION := $(firstword $(subst ., ,$(VERSION)))
CLIB := .build/release/libcountdown.so
CFLAGS_STRICT := -std=c11 -Wall -Wextra -Werror -pedantic
CSCRATCH := .build-c

lib: cdeps
	$(SWIFT) build -c release --product CountdownC
	cp .build/release/libCountdownC.so $(CLIB).$(VERSION)
	patchelf --set-soname libcountdown.so.$(SOVERSION) $(CLIB).$(VERSION)
	ln -sf libcountdown.so.$(VERSION) $(CLIB).$(SOVERSION)
	ln -sf libcountdown.so.$(SOVERSION) $(CLIB)

# `make install` (README "Install"): countdown, its manual page, and the C library, header and
# countdown.pc under PREFIX (DESTDIR for a staging root). `make install-lib` installs the C
# part alone. The binary finds the Swift runtime where the toolchain has it (from source);
# the .deb carries its own (`make deb`).
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man/man1
LIBDIR ?= $(PREFIX)/lib
# swift-argument-parser's generate-manual plugin (it builds the package in release first).
MANPAGE := .build/plugins/GenerateManual/outputs/CountdownCLI/countdown.1

man: deps
	$(SWIFT) package generate-manual

install-lib: lib
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 0644 $(CLIB).$(VERSION) $(DESTDIR)$(LIBDIR)/libcountdown.so.$(VERSION)
	ln -sf libcountdown.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libcountdown.so.$(SOVERSION)
	ln -sf libcountdown.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libcountdown.so
	install -m 0644 include/countdown.h $(DESTDIR)$(PREFIX)/include/countdown.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	  CSupport/countdown.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/countdown.pc

install: install-lib man
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)
	install -m 0755 .build/release/countdown $(DESTDIR)$(BINDIR)/countdown
	install -m 0644 $(MANPAGE) $(DESTDIR)$(MANDIR)/countdown.1

# What `make install` put under PREFIX, removed again.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/countdown $(DESTDIR)$(MANDIR)/countdown.1 \
	  $(DESTDIR)$(LIBDIR)/libcountdown.so $(DESTDIR)$(LIBDIR)/libcountdown.so.$(SOVERSION) \
	  $(DESTDIR)$(LIBDIR)/libcountdown.so.$(VERSION) $(DESTDIR)$(PREFIX)/include/countdown.h \
	  $(DESTDIR)$(LIBDIR)/pkgconfig/countdown.pc

# The DocC catalogs (Sources/*/*.docc) of the libraries an app embeds, warnings as errors
# (swift-docc-plugin); the archives land in .build/plugins/Swift-DocC/outputs.
docs: deps
	$(SWIFT) package generate-documentation --target Countdown --target CountdownLoop \
	  --target CountdownClient --target CountdownClientNIO --warnings-as-errors

# ---- The Debian package (dist/deb/build.sh, docs/systemd.md) ----
# dpkg-dev (dpkg-architecture, dpkg-deb), patchelf (the runtime's RUNPATH), systemd's tools
# (systemd-socket-activate, systemd-analyze) and man-db (the units' man: link) for its test.
debdeps: deps
	@command -v patchelf >/dev/null && command -v dpkg-architecture >/dev/null \
	  && command -v systemd-socket-activate >/dev/null && command -v systemd-analyze >/dev/null \
	  && command -v man >/dev/null && command -v lintian >/dev/null \
	  && command -v debootstrap >/dev/null || { \
	  echo "installing patchelf, dpkg-dev, systemd, man-db, lintian, debootstrap"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patchelf dpkg-dev systemd man-db lintian debootstrap; }

# countdown, libcountdown0 and libcountdown-dev _<version>-1_<arch>.deb here, from the release
# build (dist/deb/build.sh).
DEBS = countdown libcountdown0 libcountdown-dev
deb: debdeps
	dist/deb/build.sh $(VERSION) .

# Debian's lintian on each package (errors and warnings fail); README "Install", run: make
# install and uninstall under a scratch PREFIX, the packages installed with apt (this machine;
# root), the units verified, the installed binary served under systemd-socket-activate with a
# NOTIFY_SOCKET listener, the kiosk quick start, dpkg -r (Tests/package/test_package.py); then
# the packages installed with apt into a fresh `debootstrap --variant=minbase bookworm` root
# (cached in .build-package), the quick start and the C example there, and a purge
# (Tests/package/test_debootstrap.py). Not in .ci/run (a release build of its own and a
# Debian root: about 15 minutes); .ci/run-long runs it.
package: deb
	for p in $(DEBS); do lintian --fail-on error,warning --tag-display-limit 0 \
	  $${p}_$(VERSION)-1_$$(dpkg --print-architecture).deb || exit 1; done
	SCRATCH=$(CURDIR)/.build-package python3 Tests/package/test_package.py
	SCRATCH=$(CURDIR)/.build-package python3 Tests/package/test_debootstrap.py $(CURDIR)

# The example service (Examples/service: a package that depends on CountdownClientNIO alone),
# built in a scratch of its own and run against a real countdown serve.
service-example: deps
	cd Examples/service && $(SWIFT) build --scratch-path ../../.build-service
	$(SWIFT) build --product countdown
	Examples/service/run.sh .build/debug/countdown .build-service/debug/GateService

# The C and C++ examples, built through pkg-config against an installation in a scratch
# prefix, and run for two seconds each.
examples: cdeps
	$(MAKE) install-lib PREFIX=$(CURDIR)/$(CSCRATCH)/prefix
	# countdown.pc alone, as a system without libuv's -dev package (no libuv.pc) sees it: a
	# C program still finds its flags (the .pc names libuv in Libs.private, not Requires).
	PKG_CONFIG_LIBDIR=$(CURDIR)/$(CSCRATCH)/prefix/lib/pkgconfig pkg-config --cflags --libs countdown
	PKG_CONFIG_PATH=$(CURDIR)/$(CSCRATCH)/prefix/lib/pkgconfig; export PKG_CONFIG_PATH; \
	gcc $(CFLAGS_STRICT) Examples/c/kiosk.c $$(pkg-config --cflags --libs countdown) -o $(CSCRATCH)/kiosk && \
	g++ -std=c++17 -Wall -Wextra -Werror Examples/cpp/kiosk.cpp $$(pkg-config --cflags --libs countdown) -o $(CSCRATCH)/kiosk-cpp
	$(CSCRATCH)/kiosk 2
	$(CSCRATCH)/kiosk-cpp 2

# The header alone in C11 and C++17; every function and error path under AddressSanitizer;
# commands from six threads while events flow; no heap allocation in cd_format or on the
# tick path to the C callback (counted by an LD_PRELOAD malloc counter).
ctest: cdeps lib
	mkdir -p $(CSCRATCH)
	echo '#include "countdown.h"' | gcc $(CFLAGS_STRICT) -Iinclude -x c -c - -o /dev/null
	echo '#include "countdown.h"' | g++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude -x c++ -c - -o /dev/null
	gcc -std=c11 -Wall -Wextra -Werror -g -fsanitize=address -fno-omit-frame-pointer -Iinclude \
	  Tests/c/test_api.c -L.build/release -lcountdown -Wl,-rpath,$(CURDIR)/.build/release -lpthread -o $(CSCRATCH)/test_api
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan-c.supp $(CSCRATCH)/test_api
	gcc -std=c11 -Wall -Wextra -Werror -g -fsanitize=address -fno-omit-frame-pointer -Iinclude \
	  Tests/c/test_threads.c -L.build/release -lcountdown -Wl,-rpath,$(CURDIR)/.build/release -lpthread -o $(CSCRATCH)/test_threads
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan-c.supp $(CSCRATCH)/test_threads
	gcc -shared -fPIC -O2 Tests/c/malloc_count.c -o $(CSCRATCH)/malloc_count.so
	gcc -std=c11 -Wall -Wextra -Werror -O2 -Iinclude Tests/c/test_alloc.c $(CSCRATCH)/malloc_count.so \
	  -L.build/release -lcountdown -Wl,-rpath,$(CURDIR)/.build/release -Wl,-rpath,$(CURDIR)/$(CSCRATCH) -o $(CSCRATCH)/test_alloc
	LD_PRELOAD=$(CURDIR)/$(CSCRATCH)/malloc_count.so $(CSCRATCH)/test_alloc
