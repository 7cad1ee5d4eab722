#!/bin/bash
# vgpu.ko demo: boots the newest installed Debian kernel under QEMU/TCG with nvsim.ko (the
# simulated driver) and vgpu.ko, creates two slots with vgpuctl, runs one tenant in each until
# its quota refuses, and shows what vgpuctl, the driver and dmesg report.
# usage: 30-kmod.sh BUILD_DIR   (the release build: guest programs under BUILD/vm/guest-bin)
set -euo pipefail
build=$(realpath "${1:?usage: 30-kmod.sh BUILD_DIR}")
root=$(dirname "$(dirname "$(dirname "$(realpath "$0")")")")
kver=$("$root/tests/vm/harness/kernels.sh" | tail -1)
if [ -z "$kver" ]; then echo "kmod demo: no Debian kernel headers installed; skipped"; exit 0; fi
out=$build/vm/demo-kmod
echo "kmod demo: building vgpu.ko and nvsim.ko for $kver (kbuild, W=1)"
"$root/scripts/kmod-build.sh" --kver "$kver" --module vgpu --module nvsim --out "$out" >"$out.build.log" 2>&1 ||
  { echo "kmod demo: module build failed:"; tail -20 "$out.build.log"; exit 1; }
bin=$build/vm/guest-bin
[ -x "$bin/vgpu/vgpu_tenant" ] || cmake --build "$build" --target vm_guest_programs >/dev/null
echo "kmod demo: booting $kver under QEMU/TCG (demo script: tests/vm/guest/vgpu/demo.sh)"
rc=0
VM_APPEND=vgpu_demo=1 GUEST_TIMEOUT=${GUEST_TIMEOUT:-150} "$root/tests/vm/harness/run-guest.sh" \
  --kernel "$kver" --mods "$out/$kver/mod" --bin "$bin" --work "$out/run" --suite vgpu >"$out/run.log" 2>&1 || rc=$?
log=$out/run/out/suites/vgpu/log.txt
[ -f "$log" ] && sed 's/^/  guest| /' "$log"
if [ $rc -ne 0 ]; then echo "kmod demo: guest run failed:"; tail -30 "$out/run.log"; exit 1; fi
echo "kmod demo: OK. Guest console: $out/run/out/console.log; guest dmesg: $out/run/out/dmesg.txt"
echo "kmod: vgpu.ko in front of the simulated driver on Linux $kver (QEMU): two slots of 256 and 128 MiB on one 1 GiB GPU, each tenant held to its own quota; $(grep -c 'refused' "$log" || true) refusals logged by the module (guest| lines above)" >>"${VGPU_DEMO_SUMMARY:-/dev/null}"
