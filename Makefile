# vgpu: the single entry point. `make demo` and `make test` each do all set-up on a fresh
# Debian 12 machine (they depend on `deps`, an idempotent apt install).
SHELL := /bin/bash
BUILD ?= build/test
BENCH_BUILD ?= build/release
DEMO_BUILD ?= build/demo
JOBS ?= $(shell nproc)

.PHONY: all deps configure build test demo release bench format format-check kmod sparse clean help

all: build

help:
	@echo "make deps    install build and test packages (apt, idempotent)"
	@echo "make test    build everything (ASan+UBSan) and run every suite that needs no GPU"
	@echo "make demo    run the main job on this machine (no GPU needed)"
	@echo "make release the Release build (-O3) that bench uses, without running anything"
	@echo "make bench   release build + benchmarks (ratios against an in-run baseline)"
	@echo "make kmod    build vgpu.ko for each installed Debian kernel (W=1, -Werror)"
	@echo "make sparse  run sparse (C=2) over vgpu.ko; any warning fails"
	@echo "make format  clang-format every C/C++ source in place (format-check: only check)"

deps:
	@scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVGPU_SANITIZE=ON >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@scripts/run-tests.sh $(BUILD)

demo: deps
	@cmake -S . -B $(DEMO_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(DEMO_BUILD) -j $(JOBS)
	@scripts/demo.sh $(DEMO_BUILD)

# The Release configuration (-O3 -Werror) that make bench runs; CI builds it so that warnings
# only an optimizing build sees cannot break make bench unnoticed.
release: deps
	@cmake -S . -B $(BENCH_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BENCH_BUILD) -j $(JOBS)

bench: release
	@scripts/run-bench.sh $(BENCH_BUILD)

kmod: deps
	@scripts/kmod-build.sh

sparse: deps
	@scripts/kmod-build.sh --sparse

# Every C/C++ file git tracks, each under the nearest .clang-format: Google style for userspace,
# kernel style for kmod/ and uapi/, none for the kernel-style test modules (tests/vm/nvsim,
# tests/vm/selftest: DisableFormat, see their .clang-format).
format:
	@git ls-files '*.c' '*.h' '*.cc' | xargs -r clang-format -i

format-check:
	@git ls-files '*.c' '*.h' '*.cc' | xargs -r clang-format --dry-run -Werror
	@echo "format-check: clean"

clean:
	rm -rf build
