# vgpu: the single entry point. `make demo` and `make test` each do all set-up on a fresh
# Debian 12 machine (they depend on `deps`, an idempotent apt install).
SHELL := /bin/bash
BUILD ?= build/test
BENCH_BUILD ?= build/release
JOBS ?= $(shell nproc)

.PHONY: all deps configure build test demo bench format format-check kmod sparse clean help

all: build

help:
	@echo "make deps    install build and test packages (apt, idempotent)"
	@echo "make test    build everything (ASan+UBSan) and run every suite that needs no GPU"
	@echo "make demo    run the main job on this machine (no GPU needed)"
	@echo "make bench   release build + benchmarks (ratios against an in-run baseline)"
	@echo "make kmod    build vgpu.ko for each installed Debian kernel (W=1, -Werror)"
	@echo "make sparse  run sparse (C=2) over vgpu.ko; any warning fails"
	@echo "make format  clang-format every C/C++ source in place"

deps:
	@scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVGPU_SANITIZE=ON >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@scripts/run-tests.sh $(BUILD)

demo: deps
	@cmake -S . -B $(BENCH_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BENCH_BUILD) -j $(JOBS)
	@scripts/demo.sh $(BENCH_BUILD)

bench: deps
	@cmake -S . -B $(BENCH_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BENCH_BUILD) -j $(JOBS)
	@scripts/run-bench.sh $(BENCH_BUILD)

kmod: deps
	@scripts/kmod-build.sh

sparse: deps
	@scripts/kmod-build.sh --sparse

format:
	@git ls-files '*.c' '*.h' '*.cc' '*.hpp' '*.cpp' | xargs -r clang-format -i

format-check:
	@git ls-files '*.c' '*.h' '*.cc' '*.hpp' '*.cpp' | xargs -r clang-format --dry-run -Werror

clean:
	rm -rf build
