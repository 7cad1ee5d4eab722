#!/bin/bash
# Demo step: GPU link matrices of recorded machines as `vgpuctl topo` prints them, this
# machine's own discovery (no GPU here: an empty result and a degraded-mode note), and the
# placement simulator's evaluator table with decision latencies. No GPU needed; < 60 s.
set -euo pipefail
build=${1:?usage: 60-topology.sh BUILD_DIR}
data=tests/data/topology
topo=$build/daemon/vgpuctl/vgpuctl
if [[ -x "$topo" ]]; then
  topo=("$topo" topo)
else
  topo=("$build/topology/vgpu-topo")
fi

for machine in pcie-8gpu-2socket-nvlink-pairs dgx-h100-8gpu-nvswitch; do
  echo "--- ${topo[*]##*/} --fixture $data/$machine.json"
  "${topo[@]}" --fixture "$data/$machine.json" | sed '/^$/,$d'
done
for recorded in "$data"/h200-*.json; do
  [[ -f "$recorded" ]] || continue
  echo "--- recorded on the real H200 machine: $recorded"
  "${topo[@]}" --fixture "$recorded" --gpus | sed '/^Legend/,/^$/d'
done
echo "--- this machine (discovery: NVML via dlopen + sysfs PCI walk)"
"${topo[@]}" 2>&1 || true

bench=$build/tests/bench/placement/placement_bench
if [[ -x "$bench" ]]; then
  echo "--- placement simulator, standard stream (1 latency round)"
  timeout 50 "$bench" 1
else
  echo "placement_bench not built at $bench; skipped"
fi
