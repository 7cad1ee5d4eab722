#!/bin/bash
# Demo step (libvgpu-shim.so; real-GPU results: docs/results/shim-h200.md): the filter core in-process, against a fake NVIDIA driver
# (no GPU here). Two processes share one slot's 64 MiB quota through the shared ledger; the
# second is refused like the driver refuses (NV_ERR_NO_MEMORY) with one diagnostic line; once
# the first is SIGKILLed its memory returns to the slot. The real-GPU proof of the same is
# docs/results/shim-h200.md.
set -euo pipefail
build=${1:?usage: 40-shim.sh BUILD_DIR}
shim=$build/shim/preload/libvgpu-shim.so
fake=$build/tests/unit/shim/libvshim-fakenv.so
client=$build/tests/unit/shim/vshim_fake_client
ledger=$build/shim/tools/vgpu-shim-ledger
for f in "$shim" "$fake" "$client" "$ledger"; do
  if [[ ! -e $f ]]; then
    echo "$f not built; skipping"
    exit 0
  fi
done
dir=$(mktemp -d /tmp/vgpu-shim-demo.XXXXXX)
trap 'kill -9 ${holder:-0} 2>/dev/null || true; rm -rf "$dir"' EXIT
touch "$dir/nvidiactl" "$dir/nvidia0" "$dir/nvidia-uvm"
printf 'mem_quota = 64M\nslot_id = 7\n' > "$dir/slot.conf"
run() { env VGPU_DEV_DIR="$dir" VGPU_CONFIG="$dir/slot.conf" LD_PRELOAD="$shim:$fake" "$client" "$@"; }
echo "slot 7: quota 64 MiB (config $dir/slot.conf, ledger beside it); fake driver: 16 GiB"
env VGPU_DEV_DIR="$dir" VGPU_CONFIG="$dir/slot.conf" LD_PRELOAD="$shim:$fake" "$client" hold 20 \
  > "$dir/holder.out" 2>&1 &
holder=$!
for _ in $(seq 1 100); do grep -q READY "$dir/holder.out" && break; sleep 0.05; done
echo "process A (pid $holder) holds: $(grep ALLOCS "$dir/holder.out")  (2 MiB each)"
echo "ledger: $("$ledger" "$dir/ledger" | tail -1)"
echo "process B allocates 2 MiB at a time until refused:"
run quota 2>&1 | sed 's/^/  B: /' | grep -E 'ALLOCS|VIEW before|vgpu-shim'
kill -9 "$holder"
wait "$holder" 2>/dev/null || true
echo "A SIGKILLed; B again:"
again=$(run quota 2>&1 | grep -E 'ALLOCS|VIEW before')
echo "$again" | sed 's/^/  B: /'
echo "ledger: $("$ledger" "$dir/ledger" | tail -1)"
echo "shim: libvgpu-shim.so held two processes of one slot to 64 MiB together through a shared ledger; after A was killed its charge was reaped and B got: $(echo "$again" | grep ALLOCS | tr -s ' ')" >>"${VGPU_DEMO_SUMMARY:-/dev/null}"
