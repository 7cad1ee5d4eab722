#!/bin/bash
# A multi-process slot on the GPU (compute_measure.cc, "Multi-process slots"): two processes of one
# slot (one slot config, one shared ledger), both saturating the matmul loop, capped together at
# CAP (default 30) through the full libvgpu-shim.so. Each member meters the slot's GPU time, so
# their combined throughput, not each one's, must hold the cap. Reference: one bare process of the
# same loop in the same script. Prints each member's and the sum's share per 1 s window.
#   usage: tests/gpu/compute/slot2.sh [seconds] [--prebuilt]
set -uo pipefail
secs=${1:-8}
cap=${CAP:-30}
source "$(dirname "$0")/common.sh" slot2 "${2:-}"
slot=$(mktemp -d /tmp/vgpu-slot2.XXXXXX)
printf 'mem_quota = 100G\nslot_id = 7\ncompute_share = %s\ncompute_mode = cap\n' "$cap" \
  >"$slot/slot.conf"
timeout 60 python3 "$here/bench.py" --workload matmul --phases "100:cap:$secs" --warmup-s 3 \
  --tag bare >>"$res"
start=$(python3 -c 'import time; print(time.monotonic() + 22)')
for m in 1 2; do
  VGPU_CONFIG=$slot/slot.conf VGPU_COMPUTE_REF_CLOCK_MHZ=${REF_MHZ:-1500} \
    VGPU_COMPUTE_LOG="$out/member$m.log" LD_PRELOAD=$lib \
    timeout -k 5 $((secs + 60)) python3 "$here/bench.py" --workload matmul \
    --phases "$cap:cap:$secs" --warmup-s 3 --start-at "$start" --tag "member$m" >>"$res" &
done
wait
python3 - "$res" "$cap" <<'PY'
import json, statistics, sys
r = {x["tag"]: x for x in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{"))}
cap = int(sys.argv[2])
if "bare" not in r or "member1" not in r or "member2" not in r:
    print(f"slot2: missing runs: {sorted(r)}"); sys.exit(0)
base = statistics.median(r["bare"]["per_s"][1:])
a, b = r["member1"]["per_s"][1:], r["member2"]["per_s"][1:]
tot = [100.0 * (x + y) / base for x, y in zip(a, b)]
err = max(abs(t - cap) for t in tot)
print(f"two members of one slot at cap {cap}: bare {base:.0f} steps/s")
print(f"  member 1 (% of bare): {' '.join(f'{100 * x / base:.1f}' for x in a)}")
print(f"  member 2 (% of bare): {' '.join(f'{100 * y / base:.1f}' for y in b)}")
print(f"  slot total          : {' '.join(f'{t:.1f}' for t in tot)}")
print(f"  worst error {err:.1f} points: {'within 5' if err <= 5 else 'NOT within 5'}")
PY
