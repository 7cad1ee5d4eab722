#!/bin/bash
# Copies vgpu.ko's sources into a DKMS source tree and registers them (dkms add).
# usage: dkms/install.sh [--sourcetree DIR] [--dkmstree DIR] [--build KVER]...
#   defaults: /usr/src and /var/lib/dkms (the system's); --build also runs dkms build for KVER.
# Then `dkms install vgpu/0.1 -k KVER` installs into /lib/modules/KVER/updates/dkms.
set -euo pipefail
root=$(dirname "$(dirname "$(realpath "$0")")")
src=/usr/src; tree=; builds=()
while [ $# -gt 0 ]; do
  case $1 in
    --sourcetree) src=$2; shift;;
    --dkmstree) tree=$2; shift;;
    --build) builds+=("$2"); shift;;
    *) echo "install.sh: unknown argument $1" >&2; exit 1;;
  esac; shift
done
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$root/dkms/dkms.conf")
dest=$src/vgpu-$ver
rm -rf "$dest"; mkdir -p "$dest"
cp "$root/dkms/dkms.conf" "$dest/"
for d in kmod uapi; do
  mkdir -p "$dest/$d"
  tar -C "$root/$d" -cf - --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' --exclude='*.mod' \
    --exclude='*.mod.c' --exclude=Module.symvers --exclude=modules.order --exclude=CMakeLists.txt \
    --exclude='*_test.cc' . | tar -C "$dest/$d" -xf -
done
opts=(--sourcetree "$src"); [ -n "$tree" ] && opts+=(--dkmstree "$tree")
dkms "${opts[@]}" add "vgpu/$ver"
for k in "${builds[@]}"; do
  dkms "${opts[@]}" build "vgpu/$ver" -k "$k"
done
