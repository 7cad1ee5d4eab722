#!/bin/bash
# Measures the video memory the driver uses per CUDA context beyond libcuda's own class-0x40
# allocations (RM-internal: TSGs, channels, GR context buffers; issue 17 F11.1), on a GPU machine.
# Each run creates 1 + 5 contexts (tests/gpu/progs/ctx_mem.py) under the trace recorder, with
# CUDA_DEVICE_MAX_CONNECTIONS 1, 8, 32 and unset (the compute TSG's channels), and once with a
# kernel launched in every context; tests/gpu/ctx_mem_split.py splits each recording at every
# cuMemGetInfo. Results: docs/nvidia-rm-abi.md §4.2.
#   usage: tests/gpu/ctx-mem.sh OUTDIR [RECORDER_DIR]   (RECORDER_DIR: vgpu-trace-record and its
#   library, default build/gpu of tests/gpu/build.sh --no-shim)
#          tests/gpu/ctx-mem.sh --shim OUTDIR LIB...   contexts created until the quota refuses one,
#   under each shim library LIB with VGPU_MEMORY_QUOTA=2082M: 4 x 518 MiB of libcuda's class-0x40
#   memory fit, 4 x (518 MiB + the per-context estimate) do not. Managed memory is allowed
#   uncounted, so that only libcuda's allocations and the estimate count: libcuda maps 2 MiB of
#   /dev/nvidia-uvm for every context after a process's first, which the default policy refused
#   under a quota until 2026-12-02 (docs/results/context-memory-h200.md) and now charges.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ ${1:-} == --shim ]]; then
  out=${2:?usage: ctx-mem.sh --shim OUTDIR LIB...}
  shift 2
  mkdir -p "$out"
  for lib in "$@"; do
    echo "== $lib, VGPU_MEMORY_QUOTA=2082M"
    LD_PRELOAD=$(realpath "$lib") VGPU_MEMORY_QUOTA=2082M VGPU_MANAGED=allow-uncounted VGPU_LOG=warn \
      timeout 120 \
      python3 "$root/tests/gpu/progs/ctx_mem.py" 6 until-refused
    echo "rc=$?"
  done 2>&1 | tee "$out/shim.txt"
  exit 0
fi
out=${1:?usage: ctx-mem.sh OUTDIR [RECORDER_DIR]}
rec=${2:-$root/build/gpu}/vgpu-trace-record
mkdir -p "$out"
{
  date -u
  cat /proc/driver/nvidia/version
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv
} 2>&1 | tee "$out/env.txt"
run() {  # NAME CONNS ARGS...
  local name=$1 conns=$2
  shift 2
  echo "== $name (CUDA_DEVICE_MAX_CONNECTIONS=${conns:-unset})"
  if [[ -n $conns ]]; then
    CUDA_DEVICE_MAX_CONNECTIONS=$conns timeout 120 "$rec" -o "$out/$name.jsonl" -- \
      python3 "$root/tests/gpu/progs/ctx_mem.py" "$@"
  else
    timeout 120 "$rec" -o "$out/$name.jsonl" -- python3 "$root/tests/gpu/progs/ctx_mem.py" "$@"
  fi
  echo "rc=$?"
  python3 "$root/tests/gpu/ctx_mem_split.py" "$out/$name.jsonl"
}
run ctx-c1 1 5
run ctx-c8 8 5
run ctx-c32 32 5
run ctx-default "" 5
run ctx-c8-launch 8 5 launch
echo "== without the recorder (CUDA_DEVICE_MAX_CONNECTIONS unset)"
timeout 60 python3 "$root/tests/gpu/progs/ctx_mem.py" 5
(cd "$out" && tar -czf traces.tar.gz ./*.jsonl && rm -f ./*.jsonl)
ls -l "$out"
