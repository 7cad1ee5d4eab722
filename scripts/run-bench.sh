#!/bin/bash
# Runs every benchmark registered under the CTest label "bench" (release build, no sanitizers).
set -uo pipefail
build=${1:?usage: run-bench.sh BUILD_DIR}
exec ctest --test-dir "$build" -L bench --output-on-failure -V
