#!/bin/bash
# usage: expect-fail.sh PATTERN CMD...  Passes iff CMD fails AND its output contains PATTERN
# (a fixed string). Used to prove the guest harness reports injected kernel faults.
set -uo pipefail
pattern=$1; shift
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out" | tail -n 40
if [ $rc -eq 0 ]; then echo "expect-fail: the command PASSED, but it had to fail with: $pattern"; exit 1; fi
if ! printf '%s\n' "$out" | grep -qF -- "$pattern"; then
  echo "expect-fail: the command failed (rc $rc) without the expected message: $pattern"; exit 1
fi
echo "expect-fail: failed as expected (rc $rc, found: $pattern)"
