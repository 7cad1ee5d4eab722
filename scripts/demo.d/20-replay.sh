#!/bin/bash
# Demo step (filter core): replay real CUDA/NVML traffic recorded on an H200 through the
# filter core, first as recorded, then under a 1 GiB video-memory quota.
set -euo pipefail
build=${1:?usage: 20-replay.sh BUILD_DIR}
here=$(dirname "$(realpath "$0")")
root=$(realpath "$here/../..")
trace=$build/shim/trace/vgpu-trace
traces=$root/tests/data/traces
if [[ ! -x $trace ]]; then
  echo "vgpu-trace not built at $trace; skipping"
  exit 0
fi
shopt -s nullglob
files=("$traces"/*.jsonl.gz)
if ((${#files[@]} == 0)); then
  echo "no recordings under $traces; skipping"
  exit 0
fi
# vgpu-trace replay prints one JSON summary line; this renders it as a sentence.
render() {
  python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
unknown = sum(len(v) for v in r["unknown"].values())
print("%d ioctls, peak charge %.1f MiB, %.1f MiB at the end, %d refused for the quota, %d unknown, "
      "%d replies rewritten to the slot view" % (r["ioctls"], r["charged_peak_bytes"] / 2**20,
      r["charged_end_bytes"] / 2**20, r["denied"], unknown, r["views_rewritten"]))'
}
total=0
for f in "${files[@]}"; do
  printf '%-28s strict, no quota: ' "$(basename "$f" .jsonl.gz)"
  "$trace" replay --policy strict "$f" | render
  total=$((total + 1))
done
echo
echo "cuda-driver-api under a 1 GiB quota (allocations past it are refused with NV_ERR_NO_MEMORY,"
echo "cuMemGetInfo/NVML see total = 1 GiB):"
quota=$("$trace" replay --quota 1G "$traces/cuda-driver-api.jsonl.gz" | render)
echo "  $quota"
echo "what the format means: uapi/vgpu_trace.h"
echo "replay: $total recordings of real CUDA/NVML traffic from an H200 run through the filter core; cuda-driver-api under a 1 GiB quota: $quota" >>"${VGPU_DEMO_SUMMARY:-/dev/null}"
