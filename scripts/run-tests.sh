#!/bin/bash
# Runs every CTest suite of a configured build and ends with CTest's standard summary line.
# usage: run-tests.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: run-tests.sh BUILD_DIR}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Two parallel tests on a 2-core machine; each test sets its own timeout, so a hang fails, never stalls CI.
exec ctest --test-dir "$build" --output-on-failure -j "${CTEST_JOBS:-2}" --timeout "${CTEST_TIMEOUT:-900}"
