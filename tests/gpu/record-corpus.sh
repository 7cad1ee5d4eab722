#!/bin/bash
# Records the real-traffic corpus on a GPU machine and prints the machine's
# identity. usage: tests/gpu/record-corpus.sh OUTDIR   (writes OUTDIR/traces/*.jsonl.gz)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
outdir=${1:?usage: record-corpus.sh OUTDIR}
mkdir -p "$outdir/traces"
cd "$root"
{
  echo "== date"; date -u
  echo "== uname"; uname -a
  echo "== driver"; cat /proc/driver/nvidia/version 2>&1
  echo "== nvidia-smi"; nvidia-smi 2>&1
  echo "== glibc"; ldd --version 2>&1 | head -1
  echo "== nvcc"; nvcc --version 2>&1 | tail -2
  echo "== torch"; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1
  echo "== dev"; ls -l /dev/nvidia* 2>&1
  echo "== runtime"; (dmesg 2>/dev/null | head -3; cat /proc/version) 2>&1
} > "$outdir/env.txt" 2>&1
cat "$outdir/env.txt"

tests/gpu/build.sh --no-shim || exit 1
b=$root/build/gpu
rec() {
  local name=$1; shift
  echo "== record $name: $*"
  "$b/vgpu-trace-record" -o "$outdir/traces/$name.jsonl" -- "$@" 2>&1 | tail -15
  echo "rc=${PIPESTATUS[0]} lines=$(wc -l < "$outdir/traces/$name.jsonl")"
}
rec cuda-driver-api "$b/drv_corpus"
rec pytorch-train-step python3 tests/gpu/progs/torch_train.py 3
rec nvidia-smi nvidia-smi
rec nvidia-smi-query nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv
rec nvml-query python3 tests/gpu/progs/nvml_query.py
gzip -9 "$outdir"/traces/*.jsonl
ls -l "$outdir/traces"
