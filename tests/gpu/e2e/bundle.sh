#!/bin/bash
# Collects the programs tests/gpu/e2e.sh runs that need gRPC, which the GPU machine does not have:
# vgpu-manager and vgpu-e2e-kubelet (the fake kubelet, tests/integration/manager), built on the
# build machine, with every shared library ldd names and the dynamic loader, stripped, into
# OUT/bin and OUT/lib. On the GPU machine they run through the carried loader:
#   OUT/lib/ld-linux-x86-64.so.2 --library-path OUT/lib OUT/bin/vgpu-manager ...
# so no library of the GPU machine is mixed in.
#   usage: tests/gpu/e2e/bundle.sh BUILD_DIR OUT [PROGRAM...]
#   BUILD_DIR: a CMake build with the programs built; PROGRAM: their paths in it (default: the
#   two of e2e.sh; tests/gpu/dra.sh names vgpu-manager and tests/integration/dra/vgpu-dra-e2e-cluster)
set -euo pipefail
build=$1
out=$2
shift 2
progs=("$@")
[[ ${#progs[@]} -gt 0 ]] || progs=(daemon/manager/vgpu-manager tests/integration/manager/vgpu-e2e-kubelet)
mkdir -p "$out/bin" "$out/lib"
for prog in "${progs[@]}"; do
  [[ -x $build/$prog ]] || { echo "missing $build/$prog (build it first)"; exit 1; }
  cp "$build/$prog" "$out/bin/"
  ldd "$build/$prog" | awk '/=> \// {print $3} /^\s*\/.*ld-linux/ {print $1}' | while read -r lib; do
    cp -L "$lib" "$out/lib/"
  done
done
cp -L /lib64/ld-linux-x86-64.so.2 "$out/lib/ld-linux-x86-64.so.2"
strip --strip-unneeded "$out"/bin/* "$out"/lib/*.so* 2>/dev/null || true
du -sh "$out"
