#!/bin/bash
# The stream-ordered pool at a real GPU's edge, without the shim: does the driver behave as it
# does at a slot's edge (one 32 MiB chunk request, no smaller retry), or does it fall back when
# the real driver is out of memory? `async_pool edge` fills the whole GPU with cuMemAlloc, frees
# down to K MiB, and asks each pool for 2 MiB; every ioctl is recorded. The same program under
# the shim (4 GiB slot, every refusal logged) runs beside it for comparison.
# usage: tests/gpu/async-native.sh OUTDIR   (after tests/gpu/build.sh)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: async-native.sh OUTDIR}
B=$root/build/gpu
mkdir -p "$out"
nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv > "$out/smi-before.txt" 2>&1
echo "== native edge (recorded)"
timeout 240 "$B/vgpu-trace-record" -o "$out/native-edge.jsonl" -- "$B/async_pool" edge \
  > "$out/native-edge.txt" 2>&1
echo "rc=$?" >> "$out/native-edge.txt"
grep -E "EDGE|RESULT|MARK filled" "$out/native-edge.txt"
gzip -f "$out/native-edge.jsonl"
echo "== shim edge (4 GiB slot)"
d=$(mktemp -d /tmp/vgpu-slot.XXXXXX)
printf 'memory_quota = %s\nslot_id = 1\n' $((4 << 30)) > "$d/slot.conf"
VGPU_CONFIG=$d/slot.conf VGPU_LOG=info LD_PRELOAD=$B/libvgpu-shim.so timeout 120 \
  "$B/async_pool" edge > "$out/shim-edge.txt" 2>&1
echo "rc=$?" >> "$out/shim-edge.txt"
grep -E "EDGE|RESULT" "$out/shim-edge.txt"
