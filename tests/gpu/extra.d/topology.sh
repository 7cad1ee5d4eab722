#!/bin/bash
# GPU-machine hook: builds the topology recorder with g++ alone (no CMake project, no
# nlohmann-json needed) and records this machine as a fixture for tests/data/topology/.
# usage: tests/gpu/extra.d/topology.sh OUTDIR
# Writes OUTDIR/topology/{topology-h200.json, nvidia-smi-topo.txt, vgpu-topo.txt, sysfs.txt,
# build.log}. Exits 0 when the fixture was written. Runs in well under 60 s (8 small files).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
outdir=${1:?usage: topology.sh OUTDIR}/topology
mkdir -p "$outdir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"

# A vgpu-topo built elsewhere and carried (e.g. build/gpu/vgpu-topo) is used when it runs here.
prebuilt=${VGPU_TOPO:-$root/build/gpu/vgpu-topo}
CXX=${CXX:-g++}
srcs=(topology/src/topology.cc topology/src/fixture_write.cc topology/src/sysfs_source.cc
      topology/src/nvml_source.cc topology/src/discovery.cc topology/src/matrix.cc
      base/status.cc base/text.cc topology/tools/topo_command.cc topology/tools/vgpu_topo_main.cc)
flags=(-std=c++20 -O1 -g0 -Wall -Wextra -Itopology/include -Ibase/include -Itopology/tools
       -DVGPU_TOPO_NO_FIXTURE_READ)
pids=()
if [[ -x "$prebuilt" ]] && "$prebuilt" --help >/dev/null 2>&1; then
  cp "$prebuilt" "$work/vgpu-topo"
  echo "topology: using prebuilt $prebuilt"
  srcs=()
fi
for src in "${srcs[@]}"; do
  timeout "${VGPU_TOPO_COMPILE_TIMEOUT:-50}" "$CXX" "${flags[@]}" -c "$src" -o "$work/$(basename "$src" .cc).o" >>"$outdir/build.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || { echo "topology: compile failed (or timed out)"; cat "$outdir/build.log"; exit 1; }; done
if [[ ! -x "$work/vgpu-topo" ]]; then
  timeout 20 "$CXX" -o "$work/vgpu-topo" "$work"/*.o -ldl >>"$outdir/build.log" 2>&1 \
    || { echo "topology: link failed"; cat "$outdir/build.log"; exit 1; }
  echo "topology: built vgpu-topo"
fi

if command -v nvidia-smi >/dev/null; then
  timeout 20 nvidia-smi topo -m >"$outdir/nvidia-smi-topo.txt" 2>"$outdir/nvidia-smi-topo.err" ||
    { echo "topology: nvidia-smi topo -m failed"; : >"$outdir/nvidia-smi-topo.txt"; }
fi
# Where the kernel puts each NVIDIA function in the PCI tree (for checking the recorded path).
for dev in /sys/bus/pci/devices/*; do
  [[ "$(cat "$dev/vendor" 2>/dev/null)" == 0x10de ]] || continue
  echo "$(basename "$dev") class=$(cat "$dev/class") numa=$(cat "$dev/numa_node" 2>/dev/null)" \
       "cpus=$(cat "$dev/local_cpulist" 2>/dev/null) path=$(readlink -f "$dev")"
done >"$outdir/sysfs.txt"

# Embed nvidia-smi's matrix only when it printed one (the unit tests compare it with ours).
smi_args=()
grep -q '^GPU0' "$outdir/nvidia-smi-topo.txt" 2>/dev/null &&
  smi_args=(--nvidia-smi-topo "$outdir/nvidia-smi-topo.txt")
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
# For trying the hook off the GPU machine: a fake sysfs tree and a fake NVML library.
[[ -n "${VGPU_TOPO_SYSFS:-}" ]] && smi_args+=(--sysfs "$VGPU_TOPO_SYSFS")
[[ -n "${VGPU_TOPO_NVML:-}" ]] && smi_args+=(--nvml "$VGPU_TOPO_NVML")
timeout 20 "$work/vgpu-topo" --gpus --record "$outdir/topology-h200.json" \
  --machine "nvidia-h200 device machine, ${gpus} GPU(s), host $(hostname)" "${smi_args[@]}" \
  >"$outdir/vgpu-topo.txt" 2>&1
rc=$?
cat "$outdir/vgpu-topo.txt"
[[ -s "$outdir/nvidia-smi-topo.txt" ]] && { echo "--- nvidia-smi topo -m"; cat "$outdir/nvidia-smi-topo.txt"; }
if [[ $rc -ne 0 || ! -s "$outdir/topology-h200.json" ]]; then
  echo "topology: recording failed (rc=$rc)"
  exit 1
fi
echo "topology: fixture at $outdir/topology-h200.json"
