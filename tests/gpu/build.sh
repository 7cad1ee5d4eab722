#!/bin/bash
# Builds what the real-GPU suites need, on the GPU machine, without the top-level CMake
# (which needs gRPC, GTest... that the GPU image does not have): the trace recorder, the shim
# (once the filter core exists), and the CUDA test programs. Output: build/gpu/.
# usage: tests/gpu/build.sh [--no-shim]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/build/gpu
mkdir -p "$out"
cd "$root"
CXX=${CXX:-g++}
CC=${CC:-gcc}
flags=(-O2 -g -fPIC -Wall -Wextra -fvisibility=hidden -fvisibility-inlines-hidden -fno-exceptions -I"$root" -I"$root/base/include")
base=(shim/base/real_calls.cc shim/base/fd_table.cc shim/base/rm_abi.cc)

# The core's sources as its CMakeLists lists them (VCORE_SOURCES), plus the share controller:
# both preload libraries take the RM ABI from the core's tables.
mapfile -t core_c < <(grep -oE 'CMAKE_CURRENT_SOURCE_DIR}/[A-Za-z0-9_/]*\.c\b' kmod/core/CMakeLists.txt |
                      sed 's|CMAKE_CURRENT_SOURCE_DIR}/|kmod/core/|')
mapfile -t sched_c < <(ls kmod/core/sched/*.c 2>/dev/null)
core_objs=()
for c in "${core_c[@]}"; do
  o=$out/core-$(basename "$c" .c).o
  "$CC" -std=gnu11 -O2 -g -fPIC -fvisibility=hidden -I"$root" -Ikmod/core -Ikmod/core/sched -c "$c" -o "$o"
  core_objs+=("$o")
done

"$CXX" -std=c++20 "${flags[@]}" -shared -o "$out/libvgpu-trace-record.so" \
  shim/trace/record_preload.cc "${base[@]}" "${core_objs[@]}" -ldl -lpthread -Wl,-z,now
"$CXX" -std=c++20 -O2 -I"$root" -o "$out/vgpu-trace-record" shim/trace/record.cc shim/trace/record_main.cc
echo "built recorder"

if [[ "${1:-}" != --no-shim && -f kmod/core/CMakeLists.txt ]]; then
  mapfile -t shim_cc < <(sed 's/#.*//;/^$/d' shim/preload/build-sources.txt)
  mapfile -t compute_src < <(ls shim/compute/*.c shim/compute/*.cc 2>/dev/null)
  objs=("${core_objs[@]}")
  for c in "${sched_c[@]}"; do
    o=$out/core-$(basename "$c" .c).o
    "$CC" -std=gnu11 -O2 -g -fPIC -fvisibility=hidden -I"$root" -Ikmod/core -Ikmod/core/sched -c "$c" -o "$o"
    objs+=("$o")
  done
  link_shim() {
    "$CXX" -std=c++20 "${flags[@]}" -Ikmod/core -Ikmod/core/sched -shared -o "$out/libvgpu-shim.so" \
      "${shim_cc[@]}" "${base[@]}" "${objs[@]}" "$@" -ldl -lpthread -lrt -Wl,-z,now -Wl,--no-undefined
  }
  if ! link_shim "${compute_src[@]}"; then
    echo "WARNING: shim/compute sources did not build; libvgpu-shim.so built without them"
    link_shim
  fi
  "$CXX" -std=c++20 -O2 -I"$root" -I"$root/base/include" -o "$out/vgpu-shim-ledger" shim/tools/ledger_main.cc shim/preload/ledger.cc shim/ledger/ledger_reader.cc
  echo "built shim ($(ls "${compute_src[@]}" 2>/dev/null | wc -l) compute sources)"
fi

if command -v nvcc >/dev/null; then
  for src in tests/gpu/progs/*.c tests/gpu/progs/*.cu; do
    [[ -f "$src" ]] || continue
    name=$(basename "${src%.*}")
    nvcc -O2 -arch=sm_90 -o "$out/$name" "$src" -lcuda 2>&1 | grep -v 'deprecated' || true
    [[ -x "$out/$name" ]] || { echo "build of $src failed"; exit 1; }
  done
  echo "built CUDA programs"
fi
