# Countdown: the two commands of the README are `make run` and `make test`.
# Both install libuv (Debian libuv1-dev) first when it is missing.

SWIFT ?= swift

.PHONY: run replay plot test deps lint build release tsan asan bench-format consumer fuzz

deps:
	@pkg-config --exists libuv 2>/dev/null || { \
	  echo "installing libuv1-dev"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libuv1-dev; }

# The main job: countdown-bench's default suite (release build, about 2½ minutes on 2 cores):
# the machine's wake-up floor, tick latency of our driver beside one uv_timer_t per activity,
# SwiftNIO and Dispatch, then formatting and operations. Results land in bench-results/ (JSON and .hgrm files).
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

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

lint:
	$(SWIFT) format lint --strict -r Sources Tests Fuzz Examples/consumer Package.swift Benchmarks/Sources Benchmarks/Package.swift

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Formatting throughput beside Foundation (release build of the Benchmarks package).
bench-format: deps
	cd Benchmarks && $(SWIFT) build -c release && .build/release/countdown-bench format

# ThreadSanitizer over the real-loop tests and the service's socket tests (own scratch path,
# so the debug build stays).
tsan: deps
	$(SWIFT) test --scratch-path .build-tsan --sanitize=thread --filter 'CountdownLoopTests|ServerProtocolTests'

# AddressSanitizer with LeakSanitizer over the real-loop tests and the formatter, which writes
# through raw pointers and builds small strings in place.
asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan.supp $(SWIFT) test --scratch-path .build-asan --sanitize=address --filter 'CountdownLoopTests|FormatterTests|FormatCLI|HardeningTests|ServerProtocolTests'


# A package that depends on Countdown as a service would, one executable per library product,
# each linking that product alone; both are built and run (own scratch path).
consumer: deps
	cd Examples/consumer && $(SWIFT) build --scratch-path ../../.build-consumer
	.build-consumer/debug/CoreOnly
	.build-consumer/debug/LoopOnly

# libFuzzer over the wire decoder and a replay session (Fuzz/FuzzWire.swift), with
# AddressSanitizer and the engine's invariant checks, for FUZZ_SECONDS (default 60). The
# Countdown sources and the target are compiled as one module; the corpus starts from the
# replay fixtures and grows in .build-fuzz/corpus; a crash is saved as .build-fuzz/crash-*.
FUZZ_SECONDS ?= 60
FUZZ_SOURCES := $(wildcard Sources/Countdown/*.swift) Fuzz/FuzzWire.swift

.build-fuzz/fuzz-wire: $(FUZZ_SOURCES)
	mkdir -p .build-fuzz
	$(SWIFT)c -sanitize=fuzzer,address -O -g -D DEBUG -parse-as-library -use-ld=lld \
	  -module-name CountdownFuzz -package-name countdown $(FUZZ_SOURCES) -o $@

fuzz: .build-fuzz/fuzz-wire
	mkdir -p .build-fuzz/corpus
	cp Tests/CountdownTests/Fixtures/*.jsonl .build-fuzz/corpus/
	cp Examples/kiosk.jsonl .build-fuzz/corpus/example-kiosk.jsonl
	.build-fuzz/fuzz-wire -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -timeout=10 \
	  -dict=Fuzz/wire.dict -artifact_prefix=.build-fuzz/ -print_final_stats=1 .build-fuzz/corpus
