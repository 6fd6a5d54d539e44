# Countdown: the two commands of the README are `make run` and `make test`.
# Both install libuv (Debian libuv1-dev) first when it is missing.

SWIFT ?= swift

.PHONY: run test deps lint build release tsan asan bench-format

deps:
	@pkg-config --exists libuv 2>/dev/null || { \
	  echo "installing libuv1-dev"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libuv1-dev; }

# The main job: the kiosk scenario, replayed on the virtual clock by a release build.
run: deps
	$(SWIFT) build -c release --product countdown
	.build/release/countdown replay Examples/kiosk.jsonl

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

lint:
	$(SWIFT) format lint --strict -r Sources Tests Package.swift Benchmarks/Sources Benchmarks/Package.swift

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Formatting throughput beside Foundation (release build of the Benchmarks package).
bench-format: deps
	cd Benchmarks && $(SWIFT) build -c release && .build/release/countdown-bench format

# ThreadSanitizer over the real-loop tests (own scratch path, so the debug build stays).
tsan: deps
	$(SWIFT) test --scratch-path .build-tsan --sanitize=thread --filter CountdownLoopTests

# AddressSanitizer with LeakSanitizer over the real-loop tests.
asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan.supp $(SWIFT) test --scratch-path .build-asan --sanitize=address --filter CountdownLoopTests
