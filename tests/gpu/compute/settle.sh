#!/bin/bash
# How long a new context must run before its TSG may be gated (compute_objects.cc, "Scheduled TSGs
# only"): the CUDA graph loop capped at 10 from its first kernel, for each settle time, each
# under `timeout` (a stalled tenant prints no windows). Then the whole shim-host acceptance
# (fullshim.sh) with the shortest settle that never stalled. Output under $OUT.
#   usage: tests/gpu/compute/settle.sh [settle ms ...]
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/compute
out=${OUT:-$root/build/gpu-compute/out-settle}
mkdir -p "$out"
bash "$root/tests/gpu/build.sh" >"$out/build.txt" 2>&1 || { tail -20 "$out/build.txt"; exit 1; }
lib=$root/build/gpu/libvgpu-shim.so
export PYTHONUNBUFFERED=1
chosen=
(($#)) || set -- 250 500 1000
for ms in "$@"; do
  VGPU_COMPUTE_SHARE=10 VGPU_COMPUTE_SETTLE_MS=$ms VGPU_COMPUTE_REF_CLOCK_MHZ=1500 \
    VGPU_COMPUTE_LOG="$out/settle-$ms.log" LD_PRELOAD=$lib timeout -k 3 30 \
    python3 "$here/bench.py" --workload graph --phases "10:cap:4" --tag "settle-$ms" \
    >"$out/settle-$ms.json" 2>"$out/settle-$ms.err"
  echo "settle $ms ms: rc=$? $(cat "$out/settle-$ms.json" | python3 -c 'import json,sys; print([json.loads(l)["per_s"] for l in sys.stdin if l.startswith("{")])')"
  if [[ -z $chosen ]] && grep -q '"per_s"' "$out/settle-$ms.json" &&
     python3 -c 'import json,sys; x=json.load(open(sys.argv[1])); sys.exit(0 if min(x["per_s"][1:]) > 0 else 1)' "$out/settle-$ms.json"; then
    chosen=$ms
  fi
done
echo "chosen settle: ${chosen:-none} ms"
[[ -n $chosen ]] || exit 1
VGPU_COMPUTE_SETTLE_MS=$chosen bash "$here/fullshim.sh" "${SECS:-4}" --prebuilt
