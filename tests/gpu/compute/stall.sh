#!/bin/bash
# Diagnoses a capped tenant that makes no progress: runs the CUDA graph loop capped at 10 under
# several host set-ups, each under `timeout`; for a process still running after 20 s it records
# where every thread waits (/proc wchan and syscall) and what nvidia-smi sees. Output under $OUT.
#   usage: tests/gpu/compute/stall.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/compute
out=${OUT:-$root/build/gpu-compute/out-stall}
mkdir -p "$out"
bash "$root/tests/gpu/build.sh" >"$out/build.txt" 2>&1 || { tail -20 "$out/build.txt"; exit 1; }
bash "$here/build.sh" >>"$out/build.txt" 2>&1 || { tail -20 "$out/build.txt"; exit 1; }
shim=$root/build/gpu/libvgpu-shim.so
pre=$root/build/gpu-compute/libvgpu-compute-preload.so
export PYTHONUNBUFFERED=1 VGPU_COMPUTE_REF_CLOCK_MHZ=1500
probe() {  # tag phases env...
  local tag=$1 phases=$2
  shift 2
  env "$@" VGPU_COMPUTE_LOG="$out/$tag.log" timeout -k 3 32 \
    python3 "$here/bench.py" --workload graph --phases "$phases" --tag "$tag" \
    >>"$out/results.jsonl" 2>"$out/$tag.err" &
  local p=$!
  sleep 22
  local py
  py=$(pgrep -f -- "^python3 .*--tag $tag" | head -1)  # not the timeout wrapper
  if [[ -n $py ]]; then
    {
      echo "== $tag still running after 22 s (pid $py)"
      for t in /proc/$py/task/*; do
        echo "$(basename "$t") $(cat "$t/comm") wchan=$(cat "$t/wchan") sys=$(cut -d' ' -f1-3 "$t/syscall")"
      done
      nvidia-smi --query-gpu=utilization.gpu,clocks.sm,power.draw --format=csv,noheader
    } >>"$out/stall.txt" 2>&1
  fi
  wait $p
  echo "$tag rc=$? $(tail -c 300 "$out/$tag.log" | tail -1 | cut -c1-200)"
}
probe pre-from-start "10:cap:4" VGPU_COMPUTE_SHARE=10 LD_PRELOAD=$pre
probe pre-after-warm "100:cap:4,10:cap:4" VGPU_COMPUTE_SHARE=100 \
  VGPU_COMPUTE_CTL_FILE=$out/ctl LD_PRELOAD=$pre
probe shim-strict "10:cap:4" VGPU_COMPUTE_SHARE=10 VGPU_LOG=info LD_PRELOAD=$shim
probe shim-permissive "10:cap:4" VGPU_COMPUTE_SHARE=10 VGPU_POLICY=allow-log LD_PRELOAD=$shim
probe shim-settle2s "10:cap:4" VGPU_COMPUTE_SHARE=10 VGPU_COMPUTE_SETTLE_MS=2000 LD_PRELOAD=$shim
python3 - "$out/results.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{"):
        x = json.loads(l); print(x["tag"], x["share"], x["per_s"])
PY
