#!/bin/bash
# Idempotent install of everything the build and the tests need, on Debian 12.
# Installs only packages that are not already in state "ii", so a warm machine pays ~1 s.
set -euo pipefail
here=$(dirname "$(realpath "$0")")
mapfile -t pkgs < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/deps-packages.txt")
missing=()
for p in "${pkgs[@]}"; do
  [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" = "ii " ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#pkgs[@]} packages present"
  exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# INITRD=No: the kernel images are only booted by QEMU with our own initramfs; skipping
# update-initramfs saves ~35 s per kernel (docs/reference/kmod-vm-harness.md §2).
$SUDO env INITRD=No apt-get update -qq || true
$SUDO env INITRD=No apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
