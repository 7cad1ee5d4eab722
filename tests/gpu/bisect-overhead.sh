#!/bin/bash
# Splits the shim's overhead on one benchmark into interposition and filtering: the same
# command without the shim, with the shim in VGPU_SHIM_PASSTHROUGH=1 (wrappers only), with the
# shim and no quota, and with the shim and a 100 GiB slot quota; interleaved, rotating order.
# usage: tests/gpu/bisect-overhead.sh ROUNDS KEY CMD...   (build/gpu must exist)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
B=$root/build/gpu
rounds=$1 key=$2
shift 2
d=$(mktemp -d /tmp/vgpu-bisect.XXXXXX)
printf 'mem_quota = 100G\n' > "$d/slot.conf"
variants=(base pass noquota quota)
declare -A vals
run() {
  case $1 in
    base) "${@:2}" ;;
    pass) VGPU_SHIM_PASSTHROUGH=1 env LD_PRELOAD="$B/libvgpu-shim.so" "${@:2}" ;;
    noquota) env LD_PRELOAD="$B/libvgpu-shim.so" "${@:2}" ;;
    quota) VGPU_CONFIG=$d/slot.conf env LD_PRELOAD="$B/libvgpu-shim.so" "${@:2}" ;;
  esac
}
for r in $(seq 1 "$rounds"); do
  for i in 0 1 2 3; do
    v=${variants[$(((i + r) % 4))]}
    o=$(run "$v" "$@" 2>&1 | grep RESULT | sed -n "s/.*\b$key=\([^ ]*\).*/\1/p")
    vals[$v]="${vals[$v]:-} $o"
  done
done
python3 - "${vals[base]}" "${vals[pass]}" "${vals[noquota]}" "${vals[quota]}" <<'PY'
import statistics, sys
names = ["base", "pass", "noquota", "quota"]
v = {n: [float(x) for x in a.split()] for n, a in zip(names, sys.argv[1:])}
for n in names:
    if not v[n]:
        print(f"{n}: no values"); continue
    print(f"{n}: min {min(v[n]):.4f} med {statistics.median(v[n]):.4f} "
          f"ratio(min) {min(v[n]) / min(v['base']):.4f} ratio(med) "
          f"{statistics.median(v[n]) / statistics.median(v['base']):.4f}  values {v[n]}")
PY
