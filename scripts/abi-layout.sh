#!/bin/bash
# Regenerates tests/data/abi/rm-580.txt, the driver's own sizes, offsets and numbers for what the
# filter core relies on (list: tests/data/abi/rm-layout-list.h), by compiling
# tests/data/abi/rm-layout.c against NVIDIA's headers at a tag of a local clone of
# https://github.com/NVIDIA/open-gpu-kernel-modules.
# usage: scripts/abi-layout.sh OGKM_GIT_DIR [TAG=580.142] > tests/data/abi/rm-580.txt
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
git_dir=${1:?usage: abi-layout.sh OGKM_GIT_DIR [TAG]}
tag=${2:-580.142}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$git_dir" archive "$tag" src/common/sdk/nvidia/inc kernel-open/common/inc \
  src/nvidia/arch/nvalloc/unix/include kernel-open/nvidia-uvm | tar -x -C "$tmp"
inc=$tmp/src/common/sdk/nvidia/inc
{
  (cd "$inc" && for h in ctrl/*.h ctrl/*/*.h; do echo "#include \"$h\""; done)
  for h in "$inc"/class/*.h; do echo "#include \"class/$(basename "$h")\""; done
  for h in "$inc"/alloc/*.h; do echo "#include \"alloc/$(basename "$h")\""; done
  echo '#include "uvm_linux_ioctl.h"'
} > "$tmp/rm-layout-includes.h"
# Every name a row of the 580 tables carries (kmod/core/tables_580.c), with the driver's number.
tr '\n' ' ' < "$root/kmod/core/tables_580.c" |
  grep -oE '(ESC|ESC_ST|ESC_NS|ESC_NONE|CTRL|CTRL_H|CTRL_ANY|CLS|CLS0|UVM)\(\s*[A-Z][A-Za-z0-9_]+|\.(nr|cmd) = [A-Z][A-Za-z0-9_]+|"[A-Z][A-Z0-9_]+"' | grep -oE '[A-Z][A-Za-z0-9_]+$|[A-Z][A-Z0-9_]+"$' | tr -d '"' |
  grep -vE '^(ESC|ESC_ST|ESC_NS|ESC_NONE|CTRL|CTRL_H|CTRL_ANY|CLS|CLS0|UVM)$' | sort -u |
  while read -r n; do printf '#ifdef %s\nN(%s)\n#endif\n' "$n" "$n"; done > "$tmp/rm-layout-names.h"
${CC:-gcc} -w -I"$inc" -I"$inc/ctrl" -I"$tmp/kernel-open/common/inc" \
   -I"$tmp/src/nvidia/arch/nvalloc/unix/include" -I"$tmp/kernel-open/nvidia-uvm" -I"$tmp" -I"$root/tests/data/abi" \
  -o "$tmp/rm-layout" "$root/tests/data/abi/rm-layout.c"
echo "# NVIDIA/open-gpu-kernel-modules $tag ($(git -C "$git_dir" rev-parse "$tag^{commit}")), x86_64:"
echo "# scripts/abi-layout.sh over tests/data/abi/rm-layout-list.h"
"$tmp/rm-layout"
