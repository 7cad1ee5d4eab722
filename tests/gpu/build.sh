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
flags=(-O2 -g -fPIC -Wall -Wextra -fvisibility=hidden -fvisibility-inlines-hidden -fno-exceptions -I"$root")
base=(shim/base/real_calls.cc shim/base/fd_table.cc shim/base/rm_abi.cc)

"$CXX" -std=c++20 "${flags[@]}" -shared -o "$out/libvgpu-trace-record.so" \
  shim/trace/record_preload.cc "${base[@]}" -ldl -lpthread -Wl,-z,now
"$CXX" -std=c++20 -O2 -I"$root" -o "$out/vgpu-trace-record" shim/trace/record.cc shim/trace/record_main.cc
echo "built recorder"

if [[ "${1:-}" != --no-shim && -f kmod/core/vcore.h && -f shim/preload/build-sources.txt ]]; then
  mapfile -t core_c < <(ls kmod/core/*.c 2>/dev/null)
  mapfile -t shim_cc < <(sed 's/#.*//;/^$/d' shim/preload/build-sources.txt)
  objs=()
  for c in "${core_c[@]}"; do
    o=$out/core-$(basename "$c" .c).o
    "$CC" -std=gnu11 -O2 -g -fPIC -fvisibility=hidden -I"$root" -Ikmod/core -c "$c" -o "$o"
    objs+=("$o")
  done
  "$CXX" -std=c++20 "${flags[@]}" -Ikmod/core -shared -o "$out/libvgpu-shim.so" \
    "${shim_cc[@]}" "${base[@]}" "${objs[@]}" -ldl -lpthread -lrt -Wl,-z,now -Wl,--no-undefined
  echo "built shim"
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
