#!/bin/bash
# Demo step 70 (operating vgpu): the real vgpu-manager in standalone mode serves
# Prometheus metrics on --query-port; two slots are created through its control API and the
# scrape shows them. Then the deployment overlays are rendered. No GPU; a few seconds.
set -euo pipefail
build=$(realpath "${1:?usage: 70-ops.sh BUILD_DIR}")
root=$(realpath "$(dirname "$(realpath "$0")")/../..")
mgr=$build/daemon/manager/vgpu-manager
work=$(mktemp -d /tmp/vgpu-demo-ops-XXXXXX)
pid=
cleanup() {
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

if [[ -x $mgr ]]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$mgr" --standalone --enforcement=shim --query-port="$port" --sample-period=1 \
    --hostname-override=demo-node \
    --gpu-fixture="$root/tests/integration/manager/data/two-gpu-16g.json" \
    --virtual-manager-path="$work/vm" --slot-path="$work/vm" --checkpoint-path="$work/cp" 2>>"$work/manager.log" &
  pid=$!
  for _ in $(seq 100); do [[ -S $work/vm/vgpu-manager.sock ]] && break; sleep 0.05; done
  ctl() {
    python3 - "$work/vm/vgpu-manager.sock" "$1" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall((sys.argv[2] + "\n").encode()); print(s.makefile().readline().strip()[:100])
PY
  }
  echo "ops: vgpu-manager (standalone) with --query-port=$port; two slots through the control API:"
  ctl '{"op":"create","gpu":0,"mem_quota":4294967296,"compute_share":25,"label":"trainer-0"}' | sed 's/^/  /'
  ctl '{"op":"create","gpu":1,"mem_quota":2147483648,"compute_share":50,"label":"notebook-x"}' | sed 's/^/  /'
  sleep 1.2  # one --sample-period
  if curl -sf "http://127.0.0.1:$port/metrics" >"$work/metrics"; then
    echo "ops: curl http://127.0.0.1:$port/metrics (excerpt):"
    grep -E '^(# TYPE vgpu_slot_memory_quota_bytes|vgpu_slot_memory_quota_bytes|vgpu_slot_core_share_ratio|vgpu_gpu_(healthy|slots|memory_committed_bytes)|vgpu_allocations_total)' \
      "$work/metrics" | sed 's/^/  /'
    echo "ops: $(grep -c '^# TYPE' "$work/metrics") metric families, $(grep -vc '^#' "$work/metrics") series"
    echo "ops: the manager's Prometheus endpoint served $(grep -c '^# TYPE' "$work/metrics") metric families, $(grep -vc '^#' "$work/metrics") series for two slots" >>"${VGPU_DEMO_SUMMARY:-/dev/null}"
  else
    echo "ops: the manager does not answer on --query-port; its log:"
    sed 's/^/  /' "$work/manager.log" | tail -5
  fi
else
  echo "ops: vgpu-manager not built at $mgr; skipping the metrics scrape"
fi

if command -v kubectl >/dev/null; then
  for overlay in module shim; do
    kinds=$(kubectl kustomize "$root/deploy/overlays/$overlay" | awk '/^kind:/{print $2}' | sort |
            uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
    echo "ops: deploy/overlays/$overlay renders: $kinds"
  done
else
  echo "ops: FAIL: no kubectl on PATH, cannot render deploy/overlays (README.md, Dependencies)" >&2
  exit 1
fi
