#!/bin/bash
# The compute-share acceptance (docs/results/compute-h200.md) through the product's own libvgpu-shim.so (not the standalone test preload
# that run.sh uses), each tenant configured from the environment as the manager's slot config
# configures it, and capped from its first kernel (the share cannot change in a running shim):
#  1. caps 10/30/50/70/90 on the matmul and the CUDA graph loop: throughput per 1 s window
#     relative to a bare run (no shim) of the same loop in the same script;
#  2. the long-block kernel (burn) at cap 30 against its bare rate;
#  3. two tenants at weight 30/70, both saturating, then B stops: split and hand-over;
#  4. no stall: a capped tenant SIGKILLed mid-run, then a bare run right after it.
# A tenant capped from its first kernel never runs uncapped, so the saturated reference clock is
# configured (VGPU_COMPUTE_REF_CLOCK_MHZ, default 1500: the H200's clock under this loop
# uncapped, compute-h200.md). Every process runs under `timeout`, so a stalled tenant costs a
# bounded time and shows as missing windows. Writes $OUT/fullshim.jsonl and the controller logs.
#   usage: [PARTS="caps burn weight kill"] tests/gpu/compute/fullshim.sh [seconds per cap] [--prebuilt]
#   PARTS: the parts to run (default all; the table reports what ran)
set -uo pipefail
secs=${1:-5}
source "$(dirname "$0")/common.sh" fullshim "${2:-}"
bound=$((secs + 35))
shim() {  # share mode tag workload seconds [bench args...]; VGPU_COMPUTE_SETTLE_MS passes through
  local share=$1 mode=$2 tag=$3 wl=$4 s=$5
  shift 5
  VGPU_COMPUTE_SHARE=$share VGPU_COMPUTE_MODE=$mode VGPU_COMPUTE_REF_CLOCK_MHZ=${REF_MHZ:-1500} \
    VGPU_COMPUTE_LOG="$out/$tag.log" LD_PRELOAD=$lib \
    timeout -k 5 $((s + 35)) python3 "$here/bench.py" --workload "$wl" --phases "$share:$mode:$s" \
    --warmup-s "$warm" --tag "$tag" "$@"
}
warm=${WARMUP_S:-3}
parts=" ${PARTS:-caps burn weight kill} "
[[ $parts == *" caps "* ]] && for wl in matmul graph; do
  timeout $bound python3 "$here/bench.py" --workload $wl --phases "100:cap:$secs" \
    --warmup-s "$warm" --tag "bare-$wl" >>"$res"
  for c in 10 30 50 70 90; do
    shim $c cap "shim-$wl-$c" $wl "$secs" >>"$res"
  done
done

# The long-block kernel: 1 s of dependent FMAs per block, all blocks resident.
if [[ $parts == *" burn "* ]]; then
# The capped run gets the bare run's calibration: calibrated under its cap it would size its own
# kernels to the cap, and kernels/s would no longer compare work.
timeout 60 python3 "$here/bench.py" --workload burn --phases "100:cap:6" --spin-ms 1000 \
  --tag bare-burn >>"$res"
iters=$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if "bare-burn" in l][-1]["iters"])' "$res")
shim 30 cap shim-burn-30 burn 12 --burn-iters "$iters" >>"$res"
fi

# Two tenants, weight 30/70 (analyze.py's weightA/weightB): B stops after 10 s, A runs 4 more.
if [[ $parts == *" weight "* ]]; then
start=$(python3 -c 'import time; print(time.monotonic() + 20)')
shim 30 weight weightA matmul 14 --start-at "$start" >>"$res" &
a=$!
shim 70 weight weightB matmul 10 --start-at "$start" >>"$res" &
b=$!
wait $a $b
fi

# No stall: SIGKILL a tenant capped at 10 in the middle of its run; a bare run follows at once.
if [[ $parts == *" kill "* ]]; then
shim 10 cap shim-killed matmul 30 >/dev/null &
k=$!
sleep 15
kill -9 $k 2>/dev/null
wait $k 2>/dev/null
timeout $bound python3 "$here/bench.py" --workload matmul --phases "100:cap:3" \
  --tag after-kill >>"$res"
fi

python3 - "$res" <<'PY'
import json, statistics, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
tags = {x["tag"]: x for x in r}
print("| workload | cap | windows after the first second (% of bare median) | worst error | within 5? |")
print("|---|---|---|---|---|")
for wl in ("matmul", "graph"):
    bare = tags.get(f"bare-{wl}")
    if not bare:
        print(f"| {wl} | - | no bare run | - | - |"); continue
    base = statistics.median(bare["per_s"][1:])
    for c in (10, 30, 50, 70, 90):
        x = tags.get(f"shim-{wl}-{c}")
        if not x:
            print(f"| {wl} | {c} | no result (stalled or failed: see its log) | - | NO |"); continue
        w = [100.0 * v / base for v in x["per_s"][1:]]
        err = max(abs(v - c) for v in w)
        print(f"| {wl} | {c} | {' '.join(f'{v:.1f}' for v in w)} | {err:.1f} | "
              f"{'yes' if err <= 5 else 'NO'} |")
    print(f"| {wl} | bare | {base:.0f} steps/s median | | |")
b, s = tags.get("bare-burn"), tags.get("shim-burn-30")
if b and s:
    # Work per second: kernels/s times each kernel's iterations (the same in both, fullshim.sh).
    rate = sum(b["per_s"]) / b["seconds"] * b.get("iters", 1)
    got = sum(s["per_s"]) / s["seconds"] * s.get("iters", 1)
    print(f"\nlong-block kernel (burn) at cap 30: {got / 1e6:.1f} vs bare {rate / 1e6:.1f} M FMA "
          f"iterations/s per thread = {100 * got / rate:.1f} %; kernels per 1 s: {s['per_s']} "
          f"({s.get('iters')} vs {b.get('iters')} iterations per kernel)")
k, m = tags.get("after-kill"), tags.get("bare-matmul")
if k and m:
    print(f"\nafter SIGKILL of a cap-10 tenant: bare matmul {statistics.median(k['per_s'])} steps/s "
          f"vs {statistics.median(m['per_s'][1:])} before")
PY
python3 "$here/analyze.py" "$res" | sed -n '/weight 30\/70/,$p'
