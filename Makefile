# livegate — two commands do everything: `make run` and `make test`.
SWIFT ?= swift
SHARED ?= ../shared
CONFORMANCE := $(SHARED)/conformance/check.sh

.PHONY: run test deps build test-build test-unit test-integration test-tsan test-tsan-build test-tsan-run conformance bench bench-check clean openapi fuzz soak test-webcam

## Install missing Debian packages, build in release mode, start the gateway on its default
## (an emulated Sony camera) and print the URLs to open.
run: deps build
	./.build/release/livegate $(ARGS)

## The whole test suite, in tiers (README, "Testing"): the build, the unit tier (in memory, parallel),
## the integration tier (real processes, sockets, GStreamer and clients, one suite at a time), the
## in-process concurrency suites again under ThreadSanitizer, and the conformance suite for
## `livegate inspect` when ../shared/conformance is present. Prints each tier's duration at the end.
## The ThreadSanitizer build ('+': in the background, at the lowest CPU priority) is compiled while
## the integration tier runs, which mostly waits on sockets and clients; its tests run after it.
test: deps
	@./scripts/test-tiers.sh test-build test-unit +test-tsan-build test-integration test-tsan-run conformance

deps:
	@./deploy/install-deps.sh

build:
	$(SWIFT) build -c release --product livegate

# The debug build of the package and its tests (the livegate binary included, which the integration
# tests and the conformance suite run).
test-build:
	$(SWIFT) build --build-tests

## Tier (a), for the edit-test loop: every suite without the `integration` tag (Tests/TestSupport/Tags.swift;
## scripts/test-filter.sh turns a tag into the suites' names, which `swift test` filters on):
## parsers, the hub and pacer, channel handlers, state machines; in parallel, no subprocess, no sleep.
test-unit:
	$(SWIFT) test --skip '$(shell ./scripts/test-filter.sh integration)'

## Tier (b): the tests tagged `integration` (emulators over loopback, the gateway binary, GStreamer
## pipelines, ffmpeg/ffprobe/gst-launch, Chromium, aiortc, PipeWire, nginx-rtmp), one at a time: they
## share two cores with real-time streams. Each waits for events with deadlines.
test-integration:
	$(SWIFT) test --no-parallel --filter '$(shell ./scripts/test-filter.sh integration)'

# Tier (c): the suites tagged `sanitized` (hub, pacer, annotated stream, drivers against in-process
# emulators, camera services, HTTP) again under ThreadSanitizer, in their own build folder
# (.build-tsan) so the two builds never overwrite each other. -DLIVEGATE_TSAN gives `Mutex` the
# sanitizer-visible stand-in (Sources/LiveViewCore/Mutex.swift says why). Suites whose threads live in
# subprocesses or in GStreamer's own code are not in this tier.
# Reports go to files (one per process) and are printed after the run, so the end of the log shows
# them whatever came in between.
TSAN_OPTIONS_RUN ?= second_deadlock_stack=1 suppressions=$(CURDIR)/Tests/tsan-suppressions.txt
TSAN_REPORTS := $(CURDIR)/.build-tsan/reports
TSAN_FLAGS := --sanitize=thread -Xswiftc -DLIVEGATE_TSAN --scratch-path .build-tsan
test-tsan: test-tsan-build test-tsan-run
test-tsan-build:
	$(SWIFT) build --build-tests $(TSAN_FLAGS)
test-tsan-run:
	@rm -rf "$(TSAN_REPORTS)" && mkdir -p "$(TSAN_REPORTS)"
	@status=0; \
	TSAN_OPTIONS="$(TSAN_OPTIONS_RUN) log_path=$(TSAN_REPORTS)/tsan" $(SWIFT) test --skip-build --no-parallel \
		$(TSAN_FLAGS) --filter '$(shell ./scripts/test-filter.sh sanitized)' || status=$$?; \
	for f in "$(TSAN_REPORTS)"/tsan.*; do \
		[ -e "$$f" ] || continue; \
		status=1; \
		echo "==== ThreadSanitizer output of process $${f##*.} ($(TSAN_REPORTS)):"; head -c 60000 "$$f"; \
	done; \
	exit $$status

# `livegate inspect` on the shared captures, with the debug binary of test-build.
conformance:
	@if [ -x "$(CONFORMANCE)" ]; then \
		$(SWIFT) build --product livegate && "$(CONFORMANCE)" ./.build/debug/livegate; \
	else \
		echo "conformance: SKIPPED — $(CONFORMANCE) not found (it lives in ../shared beside the clone)"; \
	fi

## The virtual webcam against a real v4l2loopback device (not part of `make test`; ~3 min under TCG): boots
## Debian's kernel in QEMU with the host's root shared read-only, runs the release binary (or
## LIVEGATE=/path/to/livegate, then nothing is built) into /dev/video10 and reads it with ffmpeg,
## GStreamer, v4l2-compliance and Chromium (scripts/webcam-guest/run.sh; results and logs in
## .build-webcam/runs/latest/). Needs `./deploy/install-deps.sh --webcam`; prints "webcam: SKIPPED"
## without QEMU, a guest kernel or its v4l2loopback module.
test-webcam:
	@if [ -z "$(LIVEGATE)" ]; then $(MAKE) --no-print-directory build; fi
	LIVEGATE="$(or $(LIVEGATE),$(CURDIR)/.build/release/livegate)" ./scripts/webcam-guest/run.sh

## Benchmarks (not part of `make test`): see Benchmarks/README.md. Builds the Benchmarks package
## (scratch path Benchmarks/.build), runs the ordo-one suites (allocations per frame on the hot path,
## parse throughput per format), then the end-to-end ones (loopback RTSP latency, CPU vs ffmpeg,
## cameras per machine at 30 fps: `capacity`, ~11 min, each step ~15 s).
BENCH_FRAMES ?= 300
BENCH_CAPACITY_ARGS ?= --mode both --seconds 10
bench: deps
	cd Benchmarks && $(SWIFT) build -c release
	cd Benchmarks && $(SWIFT) package benchmark --no-progress
	./Benchmarks/.build/release/livegate-bench latency --frames $(BENCH_FRAMES)
	./Benchmarks/.build/release/livegate-bench cpu --frames 600
	./Benchmarks/.build/release/livegate-bench capacity $(BENCH_CAPACITY_ARGS)

## Allocation gate (not part of `make test`; CI runs it after): runs the HotPath benchmarks `hotpath.a` (Swift
## ingest → hub → raw consumer) and `hotpath.b` (ingest → hub → JPEG branch → appsrc ! fakesink) and
## fails when their p90 mallocs per frame exceed the committed thresholds in Benchmarks/Thresholds (0).
bench-check: deps
	cd Benchmarks && $(SWIFT) package benchmark thresholds check --target HotPath --no-progress \
		--filter 'hotpath\.a swift.*' --filter 'hotpath\.b gst.*'

## Long fuzzing (not part of `make test`, which runs 6 000 mutations per format): every wire parser,
## the JPEG scanner, the chunked decoder and the PTP/IP decoder get FUZZ_ITERATIONS mutated inputs each
## (the datagram reassemblers a quarter of that again, frame by frame), in a release
## build of the tests (build folder .build-fuzz). No crash, no hang, every input answered.
FUZZ_ITERATIONS ?= 1000000
fuzz: deps
	LIVEGATE_FUZZ_ITERATIONS=$(FUZZ_ITERATIONS) $(SWIFT) test -c release -Xswiftc -enable-testing \
		--scratch-path .build-fuzz --filter FuzzTests

## The reliability suite at length (not part of `make test`, which runs its short versions):
## SIGKILL during recording ×50 and a one-hour soak (flat memory, frame rate held). ~1 h 15 min.
SOAK_SECONDS ?= 3600
soak: deps
	LIVEGATE_RELIABILITY_ROUNDS=50 LIVEGATE_SOAK_SECONDS=$(SOAK_SECONDS) $(SWIFT) test --no-parallel \
		--filter 'RecordingKillTests|RTSPTimeoutTests|SoakTests'

## After editing docs/openapi.yaml: embed it into the gateway (served at /api/v1/openapi.yaml).
openapi:
	./scripts/embed-openapi.sh

clean:
	rm -rf .build .build-tsan .build-fuzz
