#!/bin/bash
# Builds the compute-share measurement preload (tests/gpu/compute/preload.cc + shim/compute +
# kmod/core/sched) on the GPU machine, with plain g++/gcc: the GPU image has no CMake deps.
# Output: build/gpu-compute/libvgpu-compute-preload.so
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=$root/build/gpu-compute
mkdir -p "$out"
cd "$root"
for c in kmod/core/sched/vcore_sched*.c; do
  gcc -std=c11 -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Werror -ffreestanding -c "$c" \
    -o "$out/$(basename "$c" .c).o"
done
g++ -std=c++20 -O2 -g -fPIC -Wall -Wextra -Werror -fno-exceptions -fvisibility=hidden \
  -I"$root" -Ikmod/core -shared -o "$out/libvgpu-compute-preload.so" \
  tests/gpu/compute/preload.cc shim/compute/compute_host.cc shim/compute/compute_gate.cc \
  shim/compute/compute_objects.cc shim/compute/ref_clock_probe.cc shim/compute/clock_scaling.cc \
  shim/compute/compute_measure.cc shim/compute/perfmon.cc shim/compute/sm_clock.cc \
  "$out"/vcore_sched*.o -lpthread -ldl -Wl,-z,now -Wl,--no-undefined
echo "built $out/libvgpu-compute-preload.so"
