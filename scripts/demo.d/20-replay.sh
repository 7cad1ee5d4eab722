#!/bin/bash
# Demo step (filter core, issue 3): replay real CUDA/NVML traffic recorded on an H200 through the
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
for f in "${files[@]}"; do
  printf '%-28s strict, no quota: ' "$(basename "$f" .jsonl.gz)"
  "$trace" replay --policy strict "$f"
done
echo
echo "cuda-driver-api under a 1 GiB quota (allocations past it are refused with NV_ERR_NO_MEMORY,"
echo "cuMemGetInfo/NVML see total = 1 GiB):"
"$trace" replay --quota 1G "$traces/cuda-driver-api.jsonl.gz"
echo "what the format means: uapi/vgpu_trace.h"
