#!/bin/bash
# Lays out vgpu.ko's sources as a DKMS source tree (<sourcetree>/vgpu-<version>/: kmod/, uapi/,
# dkms.conf) and registers them (dkms add). The version comes from the repository's VERSION
# file, its one home; dkms.conf's @VGPU_VERSION@ is filled from it here. Used by the
# module-installer image (deploy/images/module-installer/vgpu-install-module) and by
# dkms/dkms-test.sh, so the image's layout is the tested one.
# usage: dkms/install.sh [--sourcetree DIR] [--dkmstree DIR] [--no-add] [--print-version]
#   defaults: /usr/src and the system's DKMS tree. --no-add only lays out the sources.
# Then `dkms build vgpu/<version> -k KVER` and `dkms install ...` build and install it.
set -euo pipefail
root=$(dirname "$(dirname "$(realpath "$0")")")
src=/usr/src; tree=; add=1
ver=$(tr -d ' \n' < "$root/VERSION")
[[ $ver =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "install.sh: bad VERSION '$ver'" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case $1 in
    --sourcetree) src=$2; shift;;
    --dkmstree) tree=$2; shift;;
    --no-add) add=0;;
    --print-version) echo "$ver"; exit 0;;
    *) echo "install.sh: unknown argument $1" >&2; exit 1;;
  esac; shift
done
dest=$src/vgpu-$ver
rm -rf "$dest"; mkdir -p "$dest"
sed "s/@VGPU_VERSION@/$ver/g" "$root/dkms/dkms.conf" > "$dest/dkms.conf"
for d in kmod uapi; do
  mkdir -p "$dest/$d"
  tar -C "$root/$d" -cf - --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' --exclude='*.mod' \
    --exclude='*.mod.c' --exclude=Module.symvers --exclude=modules.order --exclude=CMakeLists.txt \
    --exclude='*_test.cc' . | tar -C "$dest/$d" -xf -
done
[ $add -eq 1 ] || exit 0
opts=(--sourcetree "$src"); [ -n "$tree" ] && opts+=(--dkmstree "$tree")
# Already added (an earlier run, or the same version re-laid out) is fine.
if ! dkms "${opts[@]}" status -m vgpu -v "$ver" 2>/dev/null | grep -q .; then
  dkms "${opts[@]}" add "vgpu/$ver"
fi
