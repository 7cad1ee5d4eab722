#!/bin/bash
# Builds the kernel modules (vgpu.ko from kmod/, and the test modules nvsim.ko and
# vmselftest.ko) against each installed Debian kernel's headers with W=1 and -Werror;
# --sparse runs sparse (C=2) instead and fails on any sparse warning.
#
# usage: kmod-build.sh [--sparse] [--kver REL]... [--kasan] [--module NAME]... [--out DIR]
#   --kver REL     build for this kernel (default: every release from tests/vm/harness/kernels.sh,
#                  i.e. the installed linux-headers-* packages; never `uname -r`)
#   --kasan        also build for the KASAN test kernel (tests/vm/kdebug/kasan-kernel.sh; it is
#                  built on a cache miss). Its release name is "kasan".
#   --module NAME  only these module dirs: vgpu (kmod/), nvsim (tests/vm/nvsim), selftest
#                  (tests/vm/selftest). Default: all that exist.
#   --out DIR      output root (default build/kmod); the .ko files end in DIR/<release>/mod/.
# Sources are copied to DIR/<release>/tree/ (kmod/ and uapi/ keep their relative layout, so
# kmod/Kbuild may use $(src)/../uapi): kbuild writes objects next to the sources, and two
# kernels built from one source dir would overwrite each other's objects.
# exit: 0 built (or sparse clean), 1 failure, 77 a requested module has no sources yet.
set -uo pipefail
root=$(dirname "$(dirname "$(realpath "$0")")")
sparse=0; kasan=0; kvers=(); mods=(); out=$root/build/kmod
while [ $# -gt 0 ]; do
  case $1 in
    --sparse) sparse=1;;
    --kasan) kasan=1;;
    --kver) kvers+=("$2"); shift;;
    --module) mods+=("$2"); shift;;
    --out) out=$(realpath -m "$2"); shift;;
    -h|--help) sed -n '2,19p' "$0"; exit 0;;
    *) echo "kmod-build: unknown argument $1" >&2; exit 1;;
  esac; shift
done

# name -> source dir (relative to the repo), and the file that says the sources exist.
declare -A moddir=([vgpu]=kmod [nvsim]=tests/vm/nvsim [selftest]=tests/vm/selftest)
present() { [ -f "$root/${moddir[$1]}/Kbuild" ]; }
if [ ${#mods[@]} -eq 0 ]; then
  for m in vgpu nvsim selftest; do
    if present "$m"; then mods+=("$m"); else echo "kmod-build: $m: ${moddir[$m]}/Kbuild not present yet, skipped"; fi
  done
else
  for m in "${mods[@]}"; do
    [ -n "${moddir[$m]:-}" ] || { echo "kmod-build: unknown module $m" >&2; exit 1; }
    present "$m" || { echo "kmod-build: $m: ${moddir[$m]}/Kbuild not present yet (SKIP)"; exit 77; }
  done
fi
[ ${#kvers[@]} -gt 0 ] || [ $kasan -eq 1 ] || mapfile -t kvers < <("$root/tests/vm/harness/kernels.sh")
[ ${#kvers[@]} -gt 0 ] || [ $kasan -eq 1 ] || { echo "kmod-build: no linux-headers-* package installed (make deps)" >&2; exit 1; }
[ $kasan -eq 0 ] || kvers+=(kasan)

jobs=${VGPU_KJOBS:-2}
fail=0
for kver in "${kvers[@]}"; do
  kcflags=-Werror
  if [ "$kver" = kasan ]; then
    entry=$("$root/tests/vm/kdebug/kasan-kernel.sh") || { echo "kmod-build: KASAN kernel unavailable" >&2; fail=1; continue; }
    kdir=$entry/out
    # tinyconfig leaves FRAME_WARN at 1024 and KASAN redzones inflate frames; the Debian
    # kernels (the production config) use 2048. KCFLAGS come last, so this one wins.
    kcflags="-Werror -Wframe-larger-than=2048"
  else
    kdir=/usr/src/linux-headers-$kver
    [ -f "$kdir/Makefile" ] || { echo "kmod-build: $kver: no tree at $kdir" >&2; fail=1; continue; }
  fi
  kout=$out/$kver; tree=$kout/tree
  mkdir -p "$kout/mod"
  for m in "${mods[@]}"; do
    # Drop what this module dir produced last time, so a failed build never leaves a stale .ko
    # for the guest suite to load. (sparse leaves the built modules alone.)
    if [ $sparse -eq 0 ]; then
      [ -f "$kout/$m.kos" ] && (cd "$kout/mod" && xargs -r rm -f < "$kout/$m.kos")
      rm -f "$kout/$m.kos"
    fi
    srcs=("${moddir[$m]}"); [ "$m" = vgpu ] && [ -d "$root/uapi" ] && srcs+=(uapi)
    for d in "${srcs[@]}"; do
      mkdir -p "$tree/$d"
      # tar keeps mtimes, so kbuild rebuilds only what changed; build products are not copied.
      tar -C "$root/$d" -cf - --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' --exclude='*.mod' \
        --exclude='*.mod.c' --exclude=Module.symvers --exclude=modules.order . | tar -C "$tree/$d" -xf -
    done
    mdir=$tree/${moddir[$m]}
    [ $sparse -eq 1 ] || rm -f "$mdir"/*.ko
    log=$kout/$m.$([ $sparse -eq 1 ] && echo sparse || echo build).log
    if [ $sparse -eq 1 ]; then
      # sparse never fails the build by itself (kmod-vm-harness.md §3): any warning/error line fails here.
      # C=2 re-checks every source even when the objects are up to date; with the same W=1
      # flags as the build, objects an earlier build left in this tree are not recompiled.
      make -C "$kdir" M="$mdir" C=2 W=1 KCFLAGS="$kcflags" -j"$jobs" modules >"$log" 2>&1; rc=$?
      if [ $rc -ne 0 ] || grep -qE '(warning|error):' "$log"; then
        echo "kmod-build: $m @ $kver: sparse FAILED:"; grep -E '(warning|error):' "$log" | head -40
        [ $rc -eq 0 ] || tail -20 "$log"
        fail=1; continue
      fi
      echo "kmod-build: $m @ $kver: sparse clean"
    else
      make -C "$kdir" M="$mdir" W=1 KCFLAGS="$kcflags" -j"$jobs" modules >"$log" 2>&1; rc=$?
      # W=1 warnings are errors through -Werror; a warning that escapes -Werror (modpost, objtool)
      # still fails the build here.
      if [ $rc -ne 0 ] || grep -E 'warning:' "$log" | grep -vq 'Skipping BTF generation'; then
        echo "kmod-build: $m @ $kver: build FAILED (W=1 -Werror):"; grep -E -B2 -A6 '(warning|error|Error)' "$log" | head -60
        fail=1; continue
      fi
      n=0
      for ko in "$mdir"/*.ko; do
        [ -f "$ko" ] || continue
        cp "$ko" "$kout/mod/"; basename "$ko" >> "$kout/$m.kos"; n=$((n + 1))
      done
      [ $n -gt 0 ] || { echo "kmod-build: $m @ $kver: no .ko produced" >&2; fail=1; continue; }
      echo "kmod-build: $m @ $kver: OK ($(cd "$mdir" && ls ./*.ko | xargs -n1 basename | tr '\n' ' '))"
    fi
  done
done
exit $fail
