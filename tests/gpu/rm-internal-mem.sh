#!/bin/bash
# Measures the driver's own video memory that no RM_ALLOC of memory shows (issue 17 F11.1), on a
# GPU machine: raw GR channels and their compute objects (progs/rm_channel_mem.cc), VA spaces, GR
# TSGs and page tables of RM_MAP_MEMORY_DMA mappings (progs/rm_vaspace_mem.cc), and page tables of
# one 2 MiB cuMemCreate mapped at many addresses through libcuda's UVM external mappings
# (progs/vmm_ptables.c). Each reads the driver's figures around its steps; results in
# docs/results/rm-internal-memory-h200.md. Not part of `make test` (it needs the GPU).
#   usage: tests/gpu/rm-internal-mem.sh OUTDIR [MAPS] [SECONDS]
#   (MAPS mappings per spacing, default 65536; SECONDS per spacing of vmm_ptables, default 40)
#   BIN=DIR takes rm-channel-mem, rm-vaspace-mem and vmm_ptables prebuilt from DIR (the GPU
#   image needs only libcuda then); otherwise they are built into build/gpu with g++ and nvcc.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: rm-internal-mem.sh OUTDIR [MAPS] [SECONDS]}
maps=${2:-65536}
secs=${3:-40}
bin=${BIN:-$root/build/gpu}
mkdir -p "$out" "$bin"
if [[ -z ${BIN:-} ]]; then
  for p in rm_channel_mem rm_vaspace_mem; do
    g++ -std=c++20 -O2 -static -I"$root" "$root/tests/gpu/progs/$p.cc" -o "$bin/${p//_/-}" || exit 1
  done
  nvcc -O2 -arch=sm_90 -o "$bin/vmm_ptables" "$root/tests/gpu/progs/vmm_ptables.c" -lcuda || exit 1
fi
{
  date -u
  cat /proc/driver/nvidia/version
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv
} 2>&1 | tee "$out/env.txt"
run() {  # NAME LIMIT COMMAND...
  local name=$1 limit=$2
  shift 2
  echo "== $name: $* ($(date -u +%T))"
  local t0=$EPOCHREALTIME
  timeout -k 5 "$limit" "$@"
  echo "rc=$? wall_s=$(awk "BEGIN{print $EPOCHREALTIME - $t0}")"
  # a killed program's teardown can hold the driver for minutes (the eager 64 TiB range of
  # docs/results/rm-internal-memory-h200.md): never wait on it unbounded
  timeout -k 2 10 nvidia-smi --query-gpu=memory.used --format=csv,noheader
} >>"$out/log.txt" 2>&1
run rm-channel-mem 60 "$bin/rm-channel-mem"
run vmm_ptables $((4 * secs + 30)) "$bin/vmm_ptables" "$maps" "$secs"
run rm-vaspace-mem 150 "$bin/rm-vaspace-mem" 64 "$maps"
cat "$out/log.txt"
