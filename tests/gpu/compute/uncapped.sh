#!/bin/bash
# Uncapped overhead of libvgpu-shim.so's compute share on the matmul loop (docs/results/compute-h200.md: <= 1 %):
# rounds of three fresh processes in a random order per round -- bare (no shim), the shim with
# cap 100 (no control thread is started), and the shim in weight mode 30 alone on the GPU (the
# control thread measures and sets timeslices; work-conserving, so it should get the whole GPU).
# Each process reports the median of its 1 s windows after the first; each round gives the ratios
# shim / bare, and the script prints their min and median over the rounds.
#   usage: tests/gpu/compute/uncapped.sh [rounds=4] [seconds=4] [--prebuilt]
set -uo pipefail
rounds=${1:-4}
secs=${2:-4}
source "$(dirname "$0")/common.sh" uncapped "${3:-}"
one() {  # variant round
  local v=$1 r=$2 env=()
  case $v in
    cap100) env=(LD_PRELOAD=$lib VGPU_COMPUTE_SHARE=100) ;;
    weight30) env=(LD_PRELOAD=$lib VGPU_COMPUTE_SHARE=30 VGPU_COMPUTE_MODE=weight
                   VGPU_COMPUTE_LOG=$out/weight30-$r.log) ;;
  esac
  env "${env[@]}" timeout 60 python3 "$here/bench.py" --workload matmul --phases "100:cap:$secs" \
    --warmup-s 2 --tag "$v-$r" >>"$res" 2>/dev/null
}
for r in $(seq 1 "$rounds"); do
  for v in $(printf 'bare\ncap100\nweight30\n' | shuf); do
    one "$v" "$r"
  done
done
python3 - "$res" "$rounds" <<'PY'
import json, statistics, sys
r = {x["tag"]: x for x in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{"))}
n = int(sys.argv[2])
med = lambda t: statistics.median(r[t]["per_s"][1:]) if t in r else None
for v in ("cap100", "weight30"):
    ratios = [med(f"{v}-{i}") / med(f"bare-{i}") for i in range(1, n + 1)
              if med(f"{v}-{i}") and med(f"bare-{i}")]
    if not ratios:
        print(f"{v}: no complete round"); continue
    print(f"{v} / bare, steps/s per round: {' '.join(f'{x:.4f}' for x in ratios)}; "
          f"min {min(ratios):.4f} median {statistics.median(ratios):.4f}; overhead at the median "
          f"{100 * (1 - statistics.median(ratios)):.2f} % ({len(ratios)} rounds)")
print("bare steps/s per round:", [med(f"bare-{i}") for i in range(1, n + 1)])
PY
