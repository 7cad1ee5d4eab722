#!/bin/bash
# The compute-share acceptance run on a GPU machine (shim host, docs/results/compute-h200.md). Writes to $OUT (or
# build/gpu-compute/out): results.jsonl (one record per benchmark phase), controller logs, and
# prints the summary table (analyze.py) last.
#   usage: tests/gpu/compute/run.sh [full|caps|clock]
#   full: everything, 5 s phases; caps: no two-tenant run, 4 s phases (device time is scarce);
#   clock: 4 s phases and the two-tenant run.
#   Both also run one matmul tenant with the clock weighting off (VGPU_COMPUTE_CLOCK=off, cap 50:
#   the time cap of the earlier runs, same script) and the long-block kernel with a fixed amount
#   of work (burn); nvidia-smi samples SM clock and power every 200 ms into smi.csv.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/compute
out=${OUT:-$root/build/gpu-compute/out}
mkdir -p "$out"
cd "$root"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader | tee "$out/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu --format=csv,noheader \
  -lms 200 >"$out/smi.csv" 2>/dev/null &
smi=$!
trap 'kill $smi 2>/dev/null' EXIT
"$here/build.sh" || exit 1
lib=$root/build/gpu-compute/libvgpu-compute-preload.so
res=$out/results.jsonl
: > "$res"
logs=$out/controller.log
: > "$logs"
export PYTHONUNBUFFERED=1
tmp=$(mktemp -d)

# One tenant under the preload, phases switched through the control file.
tenant() {  # tag workload phases [extra bench args...]
  local tag=$1 wl=$2 phases=$3
  shift 3
  VGPU_COMPUTE_CTL_FILE=$tmp/$tag.ctl VGPU_COMPUTE_LOG=$tmp/$tag.log LD_PRELOAD=$lib \
    python3 "$here/bench.py" --workload "$wl" --phases "$phases" --tag "$tag" "$@" >>"$res"
  local rc=$?
  { echo "== $tag (rc=$rc)"; cat "$tmp/$tag.log" 2>/dev/null; } >>"$logs"
}

# usage: run.sh [full|caps]   caps: no two-tenant run, shorter phases (device time is scarce)
what=${1:-full}
s=5
[[ $what == caps || $what == clock ]] && s=4
caps="100:cap:4,10:cap:$s,30:cap:$s,50:cap:$s,70:cap:$s,90:cap:$s"

# Uncapped overhead: the same loop with no preload at all, then with the preload at share 100.
python3 "$here/bench.py" --workload matmul --phases "100:cap:5" --tag bare >>"$res"
tenant matmul matmul "$caps"
# If gating did nothing (every cap ran free), the other cap runs would only repeat that.
if python3 - "$res" <<'PY'
import json, statistics, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
m = [x for x in r if x["tag"] == "matmul"]
base = statistics.median(w for x in m if x["share"] == 100 for w in x["per_s"][1:])
low = [statistics.median(x["per_s"][1:]) for x in m if x["share"] <= 30]
sys.exit(0 if low and max(low) < 0.6 * base else 1)
PY
then
  tenant graph graph "$caps"
  # The earlier runs' time cap, same script: clock weighting off, cap 50.
  VGPU_COMPUTE_CLOCK=off tenant timecap matmul "100:cap:4,50:cap:$s"
  tenant burn burn "100:cap:4,30:cap:12" --spin-ms 1000
else
  echo "caps had no effect on matmul: skipping graph and spin (see controller.log)"
fi

# Two tenants, weight 30/70, both saturating; B stops after 10 s, A runs 4 s more.
if [[ $what == full || $what == clock ]]; then
start=$(python3 -c 'import time; print(time.monotonic() + 20)')
VGPU_COMPUTE_SHARE=30 VGPU_COMPUTE_MODE=weight VGPU_COMPUTE_LOG=$tmp/wA.log LD_PRELOAD=$lib \
  python3 "$here/bench.py" --workload matmul --phases "30:weight:14" --tag weightA \
  --start-at "$start" >>"$res" &
a=$!
VGPU_COMPUTE_SHARE=70 VGPU_COMPUTE_MODE=weight VGPU_COMPUTE_LOG=$tmp/wB.log LD_PRELOAD=$lib \
  python3 "$here/bench.py" --workload matmul --phases "70:weight:10" --tag weightB \
  --start-at "$start" >>"$res" &
b=$!
wait $a $b
{ echo "== weightA"; cat "$tmp/wA.log"; echo "== weightB"; cat "$tmp/wB.log"; } >>"$logs" 2>/dev/null
fi

python3 "$here/analyze.py" "$res" | tee "$out/summary.txt"
