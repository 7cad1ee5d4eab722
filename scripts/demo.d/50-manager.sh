#!/bin/bash
# Demo step: vgpu-manager in standalone mode (no kubelet) on a recorded 8-GPU machine,
# shim enforcement: two tenants' slots created through the local control API, the slot config
# files libvgpu-shim.so reads, a manager restart that keeps every slot, a corrupt checkpoint
# rebuilt, and cleanup. Then the kubelet-facing scenarios against the fake kubelet. No GPU; < 60 s.
set -euo pipefail
build=$(realpath "${1:?usage: 50-manager.sh BUILD_DIR}")
root=$(realpath "$(dirname "$(realpath "$0")")/../..")
mgr=$build/daemon/manager/vgpu-manager
if [[ ! -x $mgr ]]; then
  echo "vgpu-manager not built at $mgr; skipping"
  exit 0
fi
work=$(mktemp -d /tmp/vgpu-demo-manager-XXXXXX)
pid=
cleanup() {
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

start() {
  "$mgr" --standalone --enforcement=shim --query-port=0 \
    --gpu-fixture="$root/tests/data/topology/dgx-h100-8gpu-nvswitch.json" \
    --virtual-manager-path="$work/vm" --slot-path="$work/vm" --checkpoint-path="$work/cp" 2>>"$work/manager.log" &
  pid=$!
  for _ in $(seq 100); do [[ -S $work/vm/vgpu-manager.sock ]] && return 0; sleep 0.05; done
  echo "manager did not start:"; cat "$work/manager.log"; exit 1
}
stop() { kill "$pid"; wait "$pid" || true; pid=; }
ctl() {  # one JSON request on the control socket, reply on stdout
  python3 - "$work/vm/vgpu-manager.sock" "$1" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall((sys.argv[2] + "\n").encode()); f = s.makefile()
print(f.readline().strip())
PY
}
summary() {  # list -> one line per slot
  ctl '{"op":"list"}' | python3 -c '
import json, sys
for s in json.load(sys.stdin)["slots"]:
    print("  slot %(id)s %(name)-10s gpu%(gpu)s memory=%(mem_quota)s core=%(compute_share)s%% mode=%(compute_mode)s tenant=%(pod_name)s" % s)'
}

start
echo "manager up (standalone, shim backend); start-up steps:"
grep -o 'event=startup step=[a-z-]*[^"]*' "$work/manager.log" | sed 's/^/  /'
echo
echo "create two tenants' slots through the control API ($work/vm/vgpu-manager.sock):"
ctl '{"op":"create","mem_quota":4294967296,"compute_share":30,"label":"tenant-a"}'
ctl '{"op":"create","mem_quota":2147483648,"compute_share":50,"gpu":0,"label":"tenant-b"}'
echo "bad request -> clear error:"
ctl '{"op":"create","mem_quota":1,"compute_share":0}'
summary
echo
echo "slot 0 config file (what libvgpu-shim.so reads via VGPU_CONFIG):"
sed 's/^/  /' "$work/vm/slots/0/config"
echo
echo "restart the manager: slots and files unchanged"
before=$(md5sum "$work"/vm/slots/*/config)
stop; start
summary
[[ $before == "$(md5sum "$work"/vm/slots/*/config)" ]] && echo "  slot files identical across the restart"
echo
echo "corrupt the checkpoint and restart: detected, kept aside, state rebuilt from live slots"
printf 'garbage' >"$work/cp/vgpu-manager.checkpoint"
stop; start
grep -o 'event=checkpoint_corrupt.*' "$work/manager.log" | sed 's/^/  /'
summary
ls "$work/cp" | sed 's/^/  /'
echo
ctl '{"op":"delete","id":1}' >/dev/null && echo "deleted slot 1; remaining:" && summary
stop

it=$build/tests/integration/manager/manager_integration_test
if [[ -x $it ]]; then
  echo
  echo "kubelet-facing scenarios (fake kubelet on real unix sockets):"
  "$it" --gtest_filter='*TwoPods*:*KubeletRestart*:*CrashPoint*:*CorruptCheckpoint*' 2>/dev/null |
    grep -E '^\[ +(OK|FAILED|PASSED) +\]' | sed 's/^/  /' || true
  echo "  (all scenarios: ctest -R ManagerScenario / CrashPointScenario in a test build)"
fi
