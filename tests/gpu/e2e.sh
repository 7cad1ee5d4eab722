#!/bin/bash
# The product path on a GPU machine (issue 16 item 5): the real vgpu-manager hands out slots the way
# pods get them, and every workload runs with exactly what its grant carries.
#  - vgpu-manager runs with real NVML, --enforcement=shim, and a fake kubelet (vgpu-e2e-kubelet,
#    tests/integration/manager: the kubelet's Registration, Allocate/PreStartContainer and
#    pod-resources over the device-plugin gRPC). Both are built on the build machine and carried
#    with their libraries and loader (tests/gpu/e2e/bundle.sh): the GPU machine has no gRPC.
#  - A pod is admitted with tencent.com/vcuda-core and tencent.com/vcuda-memory; its workload runs
#    under `unshare -m` with the answer's mounts bound at their container paths (the slot dir at
#    /etc/vgpu, the shim at /usr/local/vgpu/libvgpu-shim.so, ...) and the answer's environment
#    (VGPU_CONFIG, LD_PRELOAD, ...) exported over the machine's own (the "image"), from which every
#    VGPU_* and LD_PRELOAD was removed: nothing is set by hand. The devices are the machine's.
#  - Weight mode is chosen per slot through the standalone control API (a pod annotation needs an
#    API server). Those slots' grants are the CDI specs the manager writes for its slots when it
#    starts with --cdi-kind (e2e restarts it after creating them).
# Checks (PASS/FAIL rows, summary last): memory within the quota by the driver's own per-process
# figure; the views show the quota; caps 10/30/50/70/90 within 3 points of the bare loop's
# throughput in every 1 s window after the first, on a bf16 matmul loop and a CUDA-graph loop;
# weight 30/70 and 10/90 within 3 points on both loops, each tenant in its own slot; the slot's
# metrics agree with what was measured; CUDA IPC between two processes of one slot (legacy handles
# and cuMemExportToShareableHandle fds) works and is charged once; the cap slots carry the GPU's
# reference clock the manager measured (from the bare run: daemon/reference_clock).
# Part "contexts": a second CUDA context (cuCtxCreate) in a 2 GiB slot is created,
# allocates, and contexts are refused by the quota only once it is full (tests/gpu/e2e/contexts.py).
#   usage: [E2E_PARTS="mem ipc contexts caps weight"] [E2E_CAPS="10 30 50 70 90"] [E2E_LOOPS="matmul graph"]
#          [E2E_PAIRS="30:70 10:90"] tests/gpu/e2e.sh BUNDLE [OUTDIR] [--prebuilt]
#   BUNDLE: bin/ and lib/ from tests/gpu/e2e/bundle.sh; --prebuilt: build/gpu as it is
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
e2e=$root/tests/gpu/e2e
bench=$root/tests/gpu/compute/bench.py
bundle=$(cd "$1" && pwd)
out=${2:-$root/build/gpu/e2e}
mkdir -p "$out/logs" "$out/grants"
out=$(cd "$out" && pwd)
source "$e2e/pod.sh"  # build_shim, row, run, util, in_pod, bare, mem_in_pod
build_shim "${3:-}" || exit 1
export PYTHONUNBUFFERED=1
SECS=${E2E_SECS:-5}     # measured seconds per cap run
WARM=${E2E_WARMUP_S:-3} # unmeasured: the settle and the start-up probe (ref_clock_probe.h: c's reference spans)
# The bare run's unmeasured start, longer: the manager learns the GPU's reference clock from a
# stretch of >= 5 saturated NVML samples (daemon/reference_clock), and the cap slots admitted after
# the bare run get it in their configs.
BARE_WARM=${E2E_BARE_WARMUP_S:-$((WARM + 3))}
QUOTA_UNITS=16          # vcuda-memory IDs of 256 MiB: 4 GiB
QUOTA=$((QUOTA_UNITS << 28))
work=/tmp/vgpu-e2e.$$  # short: unix socket paths
mkdir -p "$work"
port=$((20000 + $$ % 10000))
url=http://127.0.0.1:$port/metrics
parts=" ${E2E_PARTS:-mem ipc contexts caps weight} "
CAPS=${E2E_CAPS:-10 30 50 70 90}
LOOPS=${E2E_LOOPS:-matmul graph}
PAIRS=${E2E_PAIRS:-30:70 10:90}
part() { [[ $parts == *" $1 "* ]]; }
slot_of() { util grant-env "$out/grants/$1.json" VGPU_SLOT_ID; }  # the metrics' slot label

# --- the manager with a fake kubelet ------------------------------------------------------------
mkdir -p "$work/k"
mgr=
trap '[[ -n $mgr ]] && kill $mgr 2>/dev/null; [[ -n ${KUBELET_PID:-} ]] && kill $KUBELET_PID 2>/dev/null' EXIT
coproc KUBELET { run "$bundle/bin/vgpu-e2e-kubelet" "$work/k" 2>"$out/logs/kubelet.log"; }
kube() {  # one command to the fake kubelet; prints its JSON answer
  echo "$*" >&"${KUBELET[1]}"
  local line
  read -r -t 60 line <&"${KUBELET[0]}" && echo "$line"
}
start_manager() {  # LOG FLAGS...
  local log=$1
  shift
  # E2E_MANAGER_FLAGS: extra flags, e.g. --gpu-fixture=... for a dry run without a GPU
  (run "$bundle/bin/vgpu-manager" --enforcement=shim --shim-library="$shim" --query-port=$port \
    --sample-period=1 ${E2E_MANAGER_FLAGS:-} "$@" >"$log" 2>&1) &  # $! is the manager itself
  mgr=$!
  for _ in $(seq 100); do
    util control "$work/vm/vgpu-manager.sock" '{"op":"list"}' 2>/dev/null | grep -q '"ok":true' && return 0
    kill -0 $mgr 2>/dev/null || break
    sleep 0.2
  done
  echo "manager did not start:"; tail -20 "$log"; return 1
}
stop_manager() {  # SIGTERM, and the port and sockets free before the next one starts
  kill -TERM $mgr 2>/dev/null
  wait $mgr 2>/dev/null
  mgr=
}
slots() { util control "$work/vm/vgpu-manager.sock" '{"op":"list"}' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["slots"]))'; }
admit() {  # NAME CORE MEM_UNITS: admits pod NAME, writes its grant to $out/grants/NAME.json
  kube admit "$1" app tencent.com/vcuda-memory="$3" tencent.com/vcuda-core="$2" >"$out/grants/$1.json"
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); sys.exit(0 if a["ok"] else print(a["error"]) or 1)' "$out/grants/$1.json"
}
release() {  # NAME: the pod is gone; waits until the manager reclaimed its slot
  local before
  before=$(slots)
  kube remove "$1" >/dev/null
  for _ in $(seq 50); do [[ $(slots) -lt $before ]] && return 0; sleep 0.2; done
  echo "slot of $1 not reclaimed"
}
start_manager "$out/logs/manager.log" --virtual-manager-path="$work/vm" --slot-path="$work/vm" --checkpoint-path="$work/cp" \
  --device-plugin-path="$work/k" --kubelet-socket="$work/k/kubelet.sock" \
  --pod-resources-socket="$work/k/pod-resources.sock" --allocation-check-period=1 || exit 1
[[ $(kube wait tencent.com/vcuda-core tencent.com/vcuda-memory) == *true* ]] ||
  { echo "the manager did not register"; tail "$out/logs/manager.log"; exit 1; }

# --- memory and views ----------------------------------------------------------------------------
if ! part mem; then
  :
elif admit mem 100 $QUOTA_UNITS; then
  read_view() { view=$(in_pod "$out/grants/mem.json" nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>"$out/logs/view.err" | head -1); }
  mem_in_pod "$out/grants/mem.json" "$(slot_of mem)" read_view
  read -r alloc vtotal < <(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["allocated_mib"], j["view_total"])' "$out/mem.json" 2>/dev/null)
  python3 - "$QUOTA" "${smi:-x}" "${charged:-x}" "${peak:-x}" "${alloc:-x}" "${vtotal:-x}" "${view:-x}" >"$work/memrows" <<'PY'
import sys
q, smi, charged, peak, alloc, vtotal, view = sys.argv[1:]
q = int(q); mib = 1 << 20
def num(x):
    try: return float(x)
    except ValueError: return None
smi, charged, peak, alloc, vtotal, view = map(num, (smi, charged, peak, alloc, vtotal, view))
ok = smi is not None and smi * mib <= q
print(f"memory: driver's per-process figure within the quota|{'PASS' if ok else 'FAIL'}|"
      f"nvidia-smi used_memory {smi} MiB for the pid, quota {q // mib} MiB; torch allocated {alloc} MiB")
ok = vtotal == q and view is not None and abs(view - q / mib) <= 1
print(f"views show the quota|{'PASS' if ok else 'FAIL'}|torch mem_get_info total {vtotal} B, "
      f"nvidia-smi memory.total {view} MiB in the pod, quota {q} B")
ok = (charged is not None and peak is not None and smi is not None and charged <= q and
      peak <= q and peak >= charged and abs(charged - smi * mib) <= 256 * mib)
print(f"metrics: charged and peak|{'PASS' if ok else 'FAIL'}|vgpu_slot_memory_charged_bytes {charged}, "
      f"peak {peak}; driver {None if smi is None else smi * mib:.0f} B (agree within 256 MiB, <= quota)"
      if smi is not None else f"metrics: charged and peak|FAIL|charged {charged} peak {peak}, no driver figure")
PY
  while IFS='|' read -r name res detail; do row "$name" "$res" "$detail"; done <"$work/memrows"
  release mem
else
  row "memory and views" FAIL "admission refused: $(cat "$out/grants/mem.json")"
fi

# --- a second CUDA context under the quota (not in the default parts) ----------------------------
if part contexts; then
  if admit contexts 100 8; then  # 2 GiB
    rm -f "$work/ready"
    in_pod "$out/grants/contexts.json" python3 "$e2e/contexts.py" "$work/ready" 4 >"$out/contexts.json" \
      2>"$out/logs/contexts.err" &
    p=$!
    for _ in $(seq 300); do [[ -e $work/ready ]] && break; kill -0 $p 2>/dev/null || break; sleep 0.1; done
    sleep 2  # one metrics sample period and a bit
    c=$(util metric "$url" vgpu_slot_memory_charged_bytes slot="$(slot_of contexts)")
    wait $p
    res=$(python3 - "$out/contexts.json" "${c:-0}" $((8 << 28)) <<'PY'
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception: j = {}
charged, quota, mib = float(sys.argv[2]), int(sys.argv[3]), 1 << 20
f = {k: v / mib for k, v in j.items() if k.startswith("free_")}
ok = (j.get("second_create") == 0 and j.get("second_alloc") == 0 and j.get("more_refused") == 2
      and 0 < charged <= quota and f.get("free_second_alloc", 0) < f.get("free_second", 0))
print(f"{'PASS' if ok else 'FAIL'}|cuCtxCreate of a 2nd context: CUresult {j.get('second_create')}, its "
      f"256 MiB: {j.get('second_alloc')}; then {j.get('more_contexts')} more until CUresult "
      f"{j.get('more_refused')}; view free MiB " + ", ".join(f"{k[5:]} {v:.1f}" for k, v in f.items())
      + f"; slot charged {charged / mib:.1f} MiB of {quota / mib:.0f} (2 contexts + 512 MiB)")
PY
)
    row "second CUDA context under a quota" "${res%%|*}" "${res#*|}"
    [[ ${res%%|*} == FAIL ]] && tail -5 "$out/logs/contexts.err" | sed 's/^/    /'
    release contexts
  else
    row "second CUDA context under a quota" FAIL "admission refused: $(cat "$out/grants/contexts.json")"
  fi
fi

# --- CUDA IPC between two processes of one slot -------------------------------------------------
for conf in legacy expandable; do
  part ipc || break
  name=ipc-$conf
  admit "$name" 100 64 || { row "IPC $conf" FAIL "admission refused"; continue; }
  rm -f "$work/stage" "$work/go"
  alloc_env=()
  [[ $conf == expandable ]] && alloc_env=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)
  in_pod "$out/grants/$name.json" env "${alloc_env[@]}" python3 "$e2e/ipc.py" 4096 "$work/stage" "$work/go" \
    >"$out/$name.json" 2>"$out/logs/$name.err" &
  p=$!
  c1= c2=
  for _ in $(seq 600); do [[ $(cat "$work/stage" 2>/dev/null) == parent ]] && break; kill -0 $p 2>/dev/null || break; sleep 0.1; done
  sleep 2.5 && c1=$(util metric "$url" vgpu_slot_memory_charged_bytes slot="$(slot_of $name)")
  for _ in $(seq 450); do [[ $(cat "$work/stage" 2>/dev/null) == child ]] && break; kill -0 $p 2>/dev/null || break; sleep 0.1; done
  sleep 2.5 && c2=$(util metric "$url" vgpu_slot_memory_charged_bytes slot="$(slot_of $name)")
  touch "$work/go"
  wait $p
  rc=$?
  res=$(python3 - "$out/$name.json" "${c1:-0}" "${c2:-0}" "$rc" <<'PY'
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception: j = {}
c1, c2, rc = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
gib = 1 << 30
once = c1 > 4 * gib and c2 - c1 < 2 * gib  # the child adds its context, not another 4 GiB
ok = rc == 0 and j.get("shared_write_ok") and once
print(f"{'PASS' if ok else 'FAIL'}|exit {rc}, child read {j.get('child_read_ok')}, shared write "
      f"{j.get('shared_write_ok')}; slot charged {c1 / gib:.2f} GiB with the 4 GiB tensor in the "
      f"parent, {c2 / gib:.2f} GiB with the child mapping it ({'once' if once else 'NOT once'})")
PY
)
  row "CUDA IPC ($conf: $([[ $conf == legacy ]] && echo cudaIpcMemHandle || echo cuMemExportToShareableHandle fd))" "${res%%|*}" "${res#*|}"
  [[ ${res%%|*} == FAIL ]] && tail -5 "$out/logs/$name.err" | sed 's/^/    /'
  release "$name"
done

# --- caps ----------------------------------------------------------------------------------------
scrape() {  # TAG: the slot's achieved share and the GPU's utilization once a second, until killed
  while :; do  # CLOCK_MONOTONIC, as bench.py's t0: the verdict picks the measured windows' scrapes
    echo "$(python3 -c 'import time; print(time.monotonic())') $(util metric "$url" vgpu_slot_core_achieved_ratio slot="$(slot_of "$1")") $(bare nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits)"
    sleep 1
  done
}
res=$out/e2e.jsonl
: >"$res"
for wl in $LOOPS; do
  part caps || break
  bare timeout 60 python3 "$bench" --workload $wl --phases "100:cap:$SECS" --warmup-s "$BARE_WARM" --tag "bare-$wl" >>"$res"
  refs=
  for c in $CAPS; do
    name=cap-$wl-$c
    admit "$name" $c $QUOTA_UNITS || { row "cap $c $wl" FAIL "admission refused"; continue; }
    refs+=" $(sed -n 's/^compute_ref_clock_mhz=//p' "$work/vm/slots/$(slot_of "$name")/config")"
    scrape "$name" >"$out/logs/$name.scrape" &
    s=$!
    in_pod "$out/grants/$name.json" timeout 90 python3 "$bench" --workload $wl --phases "$c:cap:$SECS" \
      --warmup-s "$WARM" --tag "$name" >>"$res" 2>"$out/logs/$name.err"
    kill $s
    wait $s 2>/dev/null
    release "$name"
  done
  # The manager measured the GPU's saturated clock (from the bare run or earlier) and wrote it into
  # every cap slot: no cap row depends on its own start-up probe's reference.
  learned=$(grep -o 'event=reference_clock_learned [^ ]* reference_clock_mhz=[0-9]*' "$out/logs/manager.log" | sed 's/.*=//' | tr '\n' ' ')
  [[ -n ${refs// /} && ! " $refs " =~ " 0 " ]] && res_ref=PASS || res_ref=FAIL
  row "reference clock in the cap slots, $wl" $res_ref "slot configs' compute_ref_clock_mhz:$refs; manager learned (MHz, in order): ${learned:-none}"
done
stop_manager
echo quit >&"${KUBELET[1]}"

# --- weight: slots of the standalone control API --------------------------------------------------
# A second manager, standalone, on its own paths. Each tenant's slot is created through the control
# API with its share and mode; the manager is then restarted with --cdi-kind so that it writes a CDI
# spec (containerEdits: the grant a container runtime applies) for every slot it holds.
sa=(--standalone --virtual-manager-path="$work/vm" --slot-path="$work/vm" --checkpoint-path="$work/cp2"
  --cdi-kind=vgpu.io/slot --cdi-spec-dir="$work/cdi")
rm -rf "$work/vm"
sock=$work/vm/vgpu-manager.sock
create() {  # SHARE: a weight slot through the control API; prints its id
  local a
  a=$(util control "$sock" "{\"op\":\"create\",\"mem_quota\":$QUOTA,\"compute_share\":$1,\"compute_mode\":\"weight\",\"label\":\"w$1\"}")
  if [[ $a != *'"ok":true'* ]]; then
    # A manager from before the one slot schema (uapi/vgpu_slot_fields.h): its names, no mode.
    echo "create with compute_mode refused: $a" >>"$out/logs/weight-create.txt"
    a=$(util control "$sock" "{\"op\":\"create\",\"memory_bytes\":$QUOTA,\"core_percent\":$1,\"label\":\"w$1\"}")
  fi
  echo "$a" >>"$out/logs/weight-create.txt"
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["slot"]["id"])' "$a" 2>/dev/null
}
for pair in $PAIRS; do
  part weight || break
  a=${pair%:*} b=${pair#*:}
  start_manager "$out/logs/manager-standalone-$a.log" "${sa[@]}" ||
    { row "weight $a/$b" FAIL "the standalone manager did not start"; continue; }
  ida=$(create $a) idb=$(create $b)
  stop_manager  # restarted: it writes every slot's CDI spec at start (Reconcile)
  start_manager "$out/logs/manager-standalone-$a-restart.log" "${sa[@]}" ||
    { row "weight $a/$b" FAIL "the standalone manager did not restart"; continue; }
  for x in "$a:$ida" "$b:$idb"; do
    cp "$work/cdi/vgpu.io-slot_slot${x#*:}.json" "$out/grants/w${x%:*}.json" 2>/dev/null
    cp "$work/vm/slots/${x#*:}/config" "$out/grants/w${x%:*}.config" 2>/dev/null
  done
  for wl in $LOOPS; do
    if [[ ! -f $out/grants/w$a.json || ! -f $out/grants/w$b.json ]]; then
      row "weight $a/$b $wl" FAIL "no CDI spec for the control API's slots (ids '$ida' '$idb')"; continue
    fi
    st=$(python3 -c 'import time; print(time.monotonic() + 20)')
    in_pod "$out/grants/w$a.json" timeout 90 python3 "$bench" --workload $wl --phases "$a:weight:8" \
      --warmup-s 1 --start-at "$st" --tag "weight-$wl-$a-A" >>"$res" 2>"$out/logs/weight-$wl-$a-A.err" &
    ta=$!
    in_pod "$out/grants/w$b.json" timeout 90 python3 "$bench" --workload $wl --phases "$b:weight:8" \
      --warmup-s 1 --start-at "$st" --tag "weight-$wl-$a-B" >>"$res" 2>"$out/logs/weight-$wl-$a-B.err" &
    wait $ta $!  # not a bare wait: the manager is a child too
  done
  for id in $ida $idb; do util control "$sock" "{\"op\":\"delete\",\"id\":$id}" >/dev/null; done
  stop_manager
done

# --- verdicts on throughput ------------------------------------------------------------------------
CAPS_RUN=$CAPS python3 - "$res" "$out/logs" "$out/grants" >"$work/rows" <<'PY'
import glob, json, os, statistics as S, sys
r = {}
for line in open(sys.argv[1]):
    if line.startswith("{"):
        j = json.loads(line); r[j["tag"]] = j
logs, grants = sys.argv[2], sys.argv[3]
for wl in ("matmul", "graph"):
    bare = r.get(f"bare-{wl}")
    base = S.median(bare["per_s"][1:]) if bare else None
    if not bare and any(k.startswith(f"cap-{wl}") for k in r):
        print(f"caps {wl}|FAIL|no bare run")
    for c in [int(c) for c in os.environ["CAPS_RUN"].split()] if bare else ():
        x = r.get(f"cap-{wl}-{c}")
        if not x:
            print(f"cap {c} {wl}|FAIL|no result (see logs/cap-{wl}-{c}.err)"); continue
        w = [100.0 * v / base for v in x["per_s"][1:]]
        err = max(abs(v - c) for v in w)
        # The slot's achieved share is the controller's measure of the slot's *work*: GPU time
        # weighted by the SM clock relative to the saturated clock (docs/operator-guide.md,
        # "Metrics"), i.e. a throughput share of the bare GPU. So it is checked against the
        # throughput measured here (windows after the first), within the caps' 3 points; the
        # driver's utilization (GPU time, below the cap where the duty-cycled clock boosts) is
        # printed beside it, not compared.
        # The scrapes taken while the measured windows after the first ran: the metric is the
        # controller's last 1 s, published once a second and sampled by the manager once a second,
        # so a scrape at T covers about [T - 3, T - 1]; [t0 + 2, t0 + secs] keeps the probe's
        # ungated second and the process's exit out.
        m, u = [], []
        scrape = os.path.join(logs, f"cap-{wl}-{c}.scrape")
        t0, secs = x["t0"], x["seconds"]
        for l in open(scrape) if os.path.exists(scrape) else ():
            p = l.split()
            if len(p) == 3 and t0 + 2 <= float(p[0]) <= t0 + secs:
                m.append(100 * float(p[1])); u.append(float(p[2]))
        measured = S.median(w)
        if m:
            am, au = S.median(m), S.median(u)
            ok_m = abs(am - measured) <= 3
            agree = (f"achieved-share metric {am:.1f} % (median of the scrapes in the measured "
                     f"windows: {' '.join(f'{v:.1f}' for v in m)}) vs measured throughput "
                     f"{measured:.1f} % of bare, difference {abs(am - measured):.1f}; driver "
                     f"GPU-time util {au:.0f} %")
        else:
            ok_m, agree = False, "no scrape in the measured windows"
        print(f"cap {c} {wl}|{'PASS' if err <= 3 else 'FAIL'}|windows {' '.join(f'{v:.1f}' for v in w)} "
              f"% of bare ({base:.0f} steps/s), worst error {err:.1f}")
        print(f"metrics: achieved share, cap {c} {wl}|{'PASS' if ok_m else 'FAIL'}|{agree}")
    for a, b in ((30, 70), (10, 90)):
        A, B = r.get(f"weight-{wl}-{a}-A"), r.get(f"weight-{wl}-{a}-B")
        if not (A and B):
            continue
        mode = open(os.path.join(grants, f"w{a}.config")).read() if os.path.exists(os.path.join(grants, f"w{a}.config")) else ""
        s = [100.0 * x / (x + y) for x, y in zip(A["per_s"][1:], B["per_s"][1:]) if x + y]
        err = max(abs(v - a) for v in s) if s else 99
        print(f"weight {a}/{b} {wl}|{'PASS' if err <= 3 else 'FAIL'}|A's share per window "
              f"{' '.join(f'{v:.1f}' for v in s)}, worst error {err:.1f}; slot config mode line: "
              f"{[l for l in mode.splitlines() if 'mode' in l] or 'none'}")
PY
while IFS='|' read -r name res detail; do row "$name" "$res" "$detail"; done <"$work/rows"
rm -rf "$work"
{
  echo "| check | result | detail |"
  echo "|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
} | tee "$out/summary.md"
