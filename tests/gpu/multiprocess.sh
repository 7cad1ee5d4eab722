#!/bin/bash
# Processes of ONE slot sharing GPU memory under libvgpu-shim.so (issue 16 item 4): CUDA IPC with
# legacy handles and with POSIX-fd handles (tests/gpu/progs/ipc_pair.c), torch.multiprocessing
# with a CUDA tensor, with and without expandable segments. Each run gets a fresh slot (config
# file + its shared ledger, quota QUOTA_MIB, default 4096) and passes when the program reports ok
# and the shim refused nothing. ipc_pair shares IPC_MIB (default 1536): with two contexts of
# ~518 MiB each (docs/nvidia-rm-abi.md §4.2) that fits a 4 GiB quota only if the shared buffer is
# charged once. Also runs each bare first (the same program must pass without the shim), unless
# NO_BARE=1. usage: tests/gpu/multiprocess.sh OUTDIR   (build/gpu must hold the shim and ipc_pair)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: multiprocess.sh OUTDIR}
mkdir -p "$out"
cd "$root"
B=$root/build/gpu
quota=$((${QUOTA_MIB:-4096} << 20))
ipc_mib=${IPC_MIB:-1536}
p=tests/gpu/progs
export PYTHONUNBUFFERED=1
fails=0
one() {  # NAME CMD...
  local name=$1; shift
  local log=$out/$name
  local bare=skipped
  if [[ ${NO_BARE:-0} != 1 ]]; then
    timeout 300 "$@" > "$log.bare.txt" 2>&1
    bare=$?
  fi
  local d
  d=$(mktemp -d /tmp/vgpu-slot.XXXXXX)
  printf 'memory_quota = %s\nslot_id = 1\n' "$quota" > "$d/slot.conf"
  timeout 300 env LD_PRELOAD="$B/libvgpu-shim.so" VGPU_CONFIG="$d/slot.conf" "$@" > "$log.shim.txt" 2>&1
  local rc=$?
  local refused ok verdict
  refused=$(grep -c 'refused' "$log.shim.txt")
  ok=$(grep -c '^RESULT .* ok$' "$log.shim.txt")
  verdict=PASS
  [[ $rc == 0 && $ok -ge 1 && $refused == 0 ]] || { verdict=FAIL; fails=$((fails + 1)); }
  echo "[$verdict] $name: bare rc=$bare, shim rc=$rc, refusals=$refused;" \
    "ledger: $("$B/vgpu-shim-ledger" "$d/ledger" 2>&1 | tail -1 | cut -d' ' -f1-3)"
  grep -m3 'refused' "$log.shim.txt"
  rm -rf "$d"
}
one ipc-legacy "$B/ipc_pair" legacy "$ipc_mib"
one ipc-fd "$B/ipc_pair" fd "$ipc_mib"
one torch-mp-ipc python3 $p/torch_mp_share.py
one torch-mp-expandable env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 $p/torch_mp_share.py
echo "multiprocess: $fails failed"
[[ $fails == 0 ]]
