#!/bin/bash
# Prints, one per line, the kernel releases whose headers are installed as Debian packages
# (linux-headers-<release> in dpkg state "ii" with a configured build tree). The versions come
# from dpkg, never from `uname -r` (the host kernel has no headers) or "newest in /lib/modules"
# (docs/reference/kmod-vm-harness.md §10 pitfall 3).
#   --bootable   only those whose image (/boot/vmlinuz-<release>) is installed too
set -euo pipefail
bootable=0; [ "${1:-}" = --bootable ] && bootable=1
dpkg-query -W -f='${Package}\t${db:Status-Abbrev}\n' 'linux-headers-*' 2>/dev/null |
while IFS=$'\t' read -r pkg st; do
  [ "$st" = "ii " ] || continue
  rel=${pkg#linux-headers-}
  # Meta packages (linux-headers-amd64) and -common halves have no configured tree.
  # (Debian's include/config/kernel.release holds the upstream version, so it cannot be used.)
  [ -f "/usr/src/linux-headers-$rel/.config" ] && [ -f "/usr/src/linux-headers-$rel/Module.symvers" ] || continue
  [ $bootable -eq 0 ] || [ -f "/boot/vmlinuz-$rel" ] || continue
  echo "$rel"
done | sort -V
