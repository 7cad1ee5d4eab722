#!/bin/bash
# A DRA claim's CDI environment on a GPU machine (issue 18): the real vgpu-manager
# --kubelet-api=dra --enforcement=shim with real NVML prepares a claim for "4Gi and 30 % of one
# GPU", and a PyTorch workload runs with exactly what the CDI spec the manager wrote for that claim
# carries.
#  - The manager's counterparts are one program, vgpu-dra-e2e-cluster (tests/integration/dra:
#    the fake API server serving the claim, the fake kubelet registering the plugin and calling
#    NodePrepareResources / NodeUnprepareResources on the real unix sockets). It and the manager
#    are built on the build machine and carried with their libraries and loader
#    (tests/gpu/e2e/bundle.sh): the GPU machine has no gRPC.
#  - The workload (tests/gpu/e2e/mem.py: allocates 64 MiB blocks until CUDA refuses) runs under
#    `unshare -m` with the spec's mounts bound at their container paths and the spec's environment
#    exported over the machine's own, from which every VGPU_* and LD_PRELOAD was removed
#    (e2e_util.py grant-sh, as tests/gpu/e2e.sh applies a grant): nothing is set by hand.
# Checks (PASS/FAIL rows, OUTDIR/summary.md): the claim is prepared and its CDI ID names a device of
# the spec; the slot has the claim's memory and cores; the workload stops within the claim's memory
# by the driver's per-process figure (nvidia-smi --query-compute-apps); torch.cuda.mem_get_info's
# total is the claim's memory; the slot's metrics agree with the driver; unprepare reclaims the slot
# and removes the spec.
#   usage: tests/gpu/dra.sh BUNDLE [OUTDIR] [--prebuilt]
#   BUNDLE: bin/ and lib/ from  tests/gpu/e2e/bundle.sh BUILD OUT daemon/manager/vgpu-manager \
#             tests/integration/dra/vgpu-dra-e2e-cluster
#   --prebuilt: build/gpu/libvgpu-shim.so as it is (else tests/gpu/build.sh builds it)
#   DRA_MANAGER_FLAGS: extra manager flags, e.g. --gpu-fixture=F for a dry run without a GPU
#   (DRA_PARTS="claim" then stops before the workload)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
e2e=$root/tests/gpu/e2e
bundle=$(cd "$1" && pwd)
out=${2:-$root/build/gpu/dra}
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
source "$e2e/pod.sh"  # build_shim, row, run, util, in_pod, bare, mem_in_pod
build_shim "${3:-}" || exit 1
export PYTHONUNBUFFERED=1
DRIVER=gpu.vgpu.io
NODE=dra-gpu-node
MEMORY=4Gi QUOTA=$((4 << 30)) CORES=30  # the claim: "4Gi and 30 % of one GPU"
CLAIM=(default dra-mem uid-dra-mem)
parts=" ${DRA_PARTS:-claim mem} "
work=/tmp/vgpu-dra.$$  # short: unix socket paths
mkdir -p "$work"
port=$((20000 + $$ % 10000))
url=http://127.0.0.1:$port/metrics
json_get() {  # JSON KEY...: the value at that path (lists by index); booleans as true/false
  python3 -c 'import json, sys
v = json.loads(sys.argv[1])
for k in sys.argv[2:]:
    v = v[int(k)] if isinstance(v, list) else v[k]
print(str(v).lower() if isinstance(v, bool) else v)' "$@"
}
slots_json() { util control "$work/vm/vgpu-manager.sock" '{"op":"list"}'; }
finish() {
  { echo "# vgpu DRA claim on the GPU ($(date -u +%FT%TZ))"; echo
    echo "| check | result | detail |"; echo "|---|---|---|"; printf '%s\n' "${ROWS[@]}"; } >"$out/summary.md"
  local fails
  fails=$(printf '%s\n' "${ROWS[@]}" | grep -c '| FAIL |')
  echo "summary: ${#ROWS[@]} checks, $fails failed ($out/summary.md)"
  [[ $fails -eq 0 && ${#ROWS[@]} -gt 0 ]]
}

# --- the cluster's side and the manager ---------------------------------------------------------
mgr=
trap '[[ -n $mgr ]] && kill $mgr 2>/dev/null; [[ -n ${CLUSTER_PID:-} ]] && kill $CLUSTER_PID 2>/dev/null; rm -rf "$work"' EXIT
coproc CLUSTER { run "$bundle/bin/vgpu-dra-e2e-cluster" "$work/kubelet" "$work/kubeconfig" 2>"$out/logs/cluster.log"; }
cluster() {  # one command to vgpu-dra-e2e-cluster; prints its JSON answer
  echo "$*" >&"${CLUSTER[1]}"
  local line
  read -r -t 60 line <&"${CLUSTER[0]}" && echo "$line"
}
for _ in $(seq 50); do [[ -s $work/kubeconfig ]] && break; sleep 0.1; done
(run "$bundle/bin/vgpu-manager" --kubelet-api=dra --enforcement=shim --shim-library="$shim" \
  --kubelet-dir="$work/kubelet" --kubeconfig="$work/kubeconfig" --hostname-override=$NODE \
  --cdi-spec-dir="$work/cdi" --virtual-manager-path="$work/vm" --slot-path="$work/vm" --checkpoint-path="$work/cp" \
  --device-plugin-path="$work" --kubelet-socket="$work/kubelet.sock" \
  --pod-resources-socket="$work/pod-resources.sock" --query-port=$port --sample-period=1 \
  ${DRA_MANAGER_FLAGS:-} >"$out/logs/manager.log" 2>&1) &
mgr=$!
reg=$(cluster register $DRIVER)
if [[ $(json_get "$reg" ok) != true ]]; then
  row "plugin registration" FAIL "no registration: $reg; $(tail -3 "$out/logs/manager.log" | tr '\n' ' ')"
  finish; exit 1
fi
cluster slices >"$out/slices.json"
row "plugin registration and slices" PASS "registered; $(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["slices"]; print(sum(len(x["spec"].get("devices", [])) for x in s), "devices in", len(s), "slices")' "$out/slices.json")"

# --- prepare ------------------------------------------------------------------------------------
cluster share "${CLAIM[@]}" $NODE 0 $MEMORY $CORES >/dev/null
prep=$(cluster prepare "${CLAIM[@]}")
echo "$prep" >"$out/prepare.json"
spec=$work/cdi/$DRIVER-claim_${CLAIM[2]}.json
id=$(json_get "$prep" cdi_ids 0 2>/dev/null)
if [[ $(json_get "$prep" ok) == true && -f $spec ]] &&
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); k,n=sys.argv[2].split("="); sys.exit(0 if s["kind"]==k and [d["name"] for d in s["devices"]]==[n] else 1)' "$spec" "$id"; then
  cp "$spec" "$out/claim-cdi.json"
  row "claim prepared" PASS "CDI ID $id, a device of $(basename "$spec")"
else
  row "claim prepared" FAIL "$prep"
  finish; exit 1
fi
slot=$(util grant-env "$spec" VGPU_SLOT_ID)
slot_row=$(slots_json | python3 -c 'import json,sys; s=[x for x in json.load(sys.stdin)["slots"] if str(x["id"])==sys.argv[1]]; print(json.dumps(s[0]) if s else "")' "$slot")
if [[ -n $slot_row && $(json_get "$slot_row" mem_quota) == "$QUOTA" && $(json_get "$slot_row" compute_share) == "$CORES" ]]; then
  row "slot of the claim" PASS "slot $slot: mem_quota $QUOTA B, compute_share $CORES %, $(json_get "$slot_row" name)"
else
  row "slot of the claim" FAIL "slot $slot: ${slot_row:-not listed}"
fi

# --- the workload in the claim's CDI environment ------------------------------------------------
if [[ $parts == *" mem "* ]]; then
  mem_in_pod "$spec" "$slot"
  python3 - "$QUOTA" "$out/mem.json" "${smi:-x}" "${charged:-x}" "${peak:-x}" >"$work/memrows" <<'PY'
import json, sys
q, path, smi, charged, peak = int(sys.argv[1]), sys.argv[2], *sys.argv[3:]
mib = 1 << 20
def num(x):
    try: return float(x)
    except ValueError: return None
try: j = json.load(open(path))
except Exception: j = {}
smi, charged, peak = map(num, (smi, charged, peak))
ok = smi is not None and smi * mib <= q and j.get("refusal")
print(f"workload held to the claim's memory|{'PASS' if ok else 'FAIL'}|nvidia-smi used_memory {smi} MiB "
      f"for pid {j.get('pid')}, claim {q // mib} MiB; torch allocated {j.get('allocated_mib')} MiB, "
      f"then: {j.get('refusal', '')[:80]}")
ok = j.get("view_total") == q
print(f"torch.cuda.mem_get_info total is the claim|{'PASS' if ok else 'FAIL'}|total {j.get('view_total')} B, "
      f"claim {q} B")
ok = (None not in (charged, peak, smi) and charged <= q and peak <= q and peak >= charged
      and abs(charged - smi * mib) <= 256 * mib)
print(f"slot metrics agree with the driver|{'PASS' if ok else 'FAIL'}|vgpu_slot_memory_charged_bytes "
      f"{charged}, peak {peak}, driver {None if smi is None else smi * mib} B (within 256 MiB, <= claim)")
PY
  while IFS='|' read -r name res detail; do row "$name" "$res" "$detail"; done <"$work/memrows"
  [[ -s $out/logs/mem.err ]] && tail -3 "$out/logs/mem.err" | sed 's/^/    /'
fi

# --- unprepare ----------------------------------------------------------------------------------
un=$(cluster unprepare "${CLAIM[@]}")
left=$(slots_json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["slots"]))')
if [[ $(json_get "$un" ok) == true && $left == 0 && ! -e $spec ]]; then
  row "unprepare reclaims the slot" PASS "no slot left, spec removed"
else
  row "unprepare reclaims the slot" FAIL "$un; slots left $left; spec $([[ -e $spec ]] && echo kept || echo removed)"
fi
cluster quit >/dev/null
finish
