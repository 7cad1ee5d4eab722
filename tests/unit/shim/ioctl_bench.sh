#!/bin/bash
# Benchmark (CTest label bench): ioctl cost with and without libvgpu-shim.so, interleaved
# rounds, min and median ratios. Non-NVIDIA fd: the fast path every other ioctl in a GPU
# process takes. Fake ctl node: the full core path (the fake driver stands in for nvidia.ko,
# so the ratio overstates what a real ~10-100 us RM call would see; the ns difference is the
# number that matters). alloc: 2 MiB RM_ALLOC + RM_FREE through the core and the slot's shared
# ledger (the charge/refund path). usage: ioctl_bench.sh SHIM FAKENV BENCH
set -euo pipefail
shim=$1 fake=$2 bench=$3
dir=$(mktemp -d /tmp/vshim-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
touch "$dir/nvidiactl"
value() { sed -n 's/.*ns_per_ioctl=\([0-9.]*\).*/\1/p'; }
printf 'mem_quota = 100G\n' > "$dir/slot.conf"
for mode in other rm alloc; do
  base=() with=()
  for r in 1 2 3 4 5 6; do
    if [[ $mode == other ]]; then  # no fake driver: shim alone against plain libc
      b=$("$bench" "$mode" 20000 | value)
      s=$(LD_PRELOAD=$shim "$bench" "$mode" 20000 | value)
    else
      b=$(VGPU_DEV_DIR=$dir LD_PRELOAD=$fake "$bench" "$mode" 20000 | value)
      # alloc: a slot config, so charges go through the shared ledger as in production
      cfg=(); [[ $mode == alloc ]] && cfg=(VGPU_CONFIG="$dir/slot.conf")
      s=$(env "${cfg[@]}" VGPU_DEV_DIR="$dir" LD_PRELOAD="$shim:$fake" "$bench" "$mode" 20000 | value)
    fi
    base+=("$b") with+=("$s")
  done
  python3 - "$mode" "${base[*]}" "${with[*]}" <<'PY'
import statistics, sys
mode, b, s = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
print(f"ioctl {mode:5s}: without shim min {min(b):.1f} med {statistics.median(b):.1f} ns; "
      f"with shim min {min(s):.1f} med {statistics.median(s):.1f} ns; "
      f"ratio min {min(s) / min(b):.3f} median {statistics.median(s) / statistics.median(b):.3f}; "
      f"added {statistics.median(s) - statistics.median(b):.1f} ns/ioctl (median)")
PY
done
