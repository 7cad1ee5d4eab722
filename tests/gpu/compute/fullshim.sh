#!/bin/bash
# Caps through the full libvgpu-shim.so (issue 9, shim host), not the standalone test preload
# that run.sh uses: one process per cap, the share set from the environment as the manager's
# slot config sets it, throughput per 1 s window relative to a bare run (no shim) of the same
# loop in the same script. A process capped from its first kernel never runs uncapped, so the
# saturated reference clock is configured (VGPU_COMPUTE_REF_CLOCK_MHZ, default 1500: the H200's
# clock under this loop uncapped, compute-h200.md). Writes $OUT/fullshim.jsonl and prints a table.
#   usage: tests/gpu/compute/fullshim.sh [seconds per cap]
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/compute
out=${OUT:-$root/build/gpu-compute/out-fullshim}
secs=${1:-5}
mkdir -p "$out"
bash "$root/tests/gpu/build.sh" >"$out/build.txt" 2>&1 || { tail -20 "$out/build.txt"; exit 1; }
lib=$root/build/gpu/libvgpu-shim.so
res=$out/fullshim.jsonl
: >"$res"
export PYTHONUNBUFFERED=1
for wl in matmul graph; do
  python3 "$here/bench.py" --workload $wl --phases "100:cap:$secs" --tag "bare-$wl" >>"$res"
  for c in 10 30 50 70 90; do
    VGPU_COMPUTE_SHARE=$c VGPU_COMPUTE_REF_CLOCK_MHZ=${REF_MHZ:-1500} \
      VGPU_COMPUTE_LOG="$out/$wl-$c.log" LD_PRELOAD=$lib \
      python3 "$here/bench.py" --workload $wl --phases "$c:cap:$secs" --tag "shim-$wl-$c" >>"$res"
  done
done
python3 - "$res" <<'PY'
import json, statistics, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("| workload | cap | windows after the first second (% of bare median) | worst error | within 5? |")
print("|---|---|---|---|---|")
for wl in ("matmul", "graph"):
    bare = [x for x in r if x["tag"] == f"bare-{wl}"]
    if not bare:
        print(f"| {wl} | - | no bare run | - | - |"); continue
    base = statistics.median(bare[0]["per_s"][1:])
    for x in r:
        if not x["tag"].startswith(f"shim-{wl}-"):
            continue
        w = [100.0 * v / base for v in x["per_s"][1:]]
        err = max(abs(v - x["share"]) for v in w)
        print(f"| {wl} | {x['share']} | {' '.join(f'{v:.1f}' for v in w)} | {err:.1f} | "
              f"{'yes' if err <= 5 else 'NO'} |")
    print(f"| {wl} | bare | {base:.0f} steps/s median | | |")
PY
