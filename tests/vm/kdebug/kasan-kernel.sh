#!/bin/bash
# Prints the directory of the KASAN + lockdep + UBSAN + kmemleak test kernel built from
# Debian's linux-source-6.1, building it first on a cache miss.
#   stdout: ENTRY  (ENTRY/out = kbuild tree for modules, ENTRY/out/arch/x86/boot/bzImage = kernel)
#   env:    VGPU_KCACHE  cache root outside the repo (default $VGPU_CACHE_DIR/kernel, i.e.
#                        /var/cache/vgpu/kernel; README.md names it), so a clean
#                        clone on the same machine reuses the ~3.5 min build
#           VGPU_KJOBS   make -j (default: nproc)
# The cache key hashes everything that decides the kernel: this script, debug.config, the
# linux-source package version and the compiler. The O= tree's Makefile includes the source
# tree by absolute path (docs/reference/kmod-vm-harness.md §7), so both live in one entry, built in
# place and marked complete only at the end; a concurrent caller waits on the lock.
set -euo pipefail
here=$(dirname "$(realpath "$0")")
cache=${VGPU_KCACHE:-${VGPU_CACHE_DIR:-/var/cache/vgpu}/kernel}
tarball=/usr/src/linux-source-6.1.tar.xz
[ -f "$tarball" ] || { echo "kasan-kernel: $tarball missing (make deps installs linux-source-6.1)" >&2; exit 1; }
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
# Comment lines of this script do not decide the kernel, so they stay out of the key.
key=$( { cat "$here/debug.config"; grep -v "^[[:space:]]*#" "$0"; echo "$srcver"; gcc --version | head -1; } | sha256sum | cut -c1-16)
entry=$cache/6.1-$key
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ -f "$entry/.complete" ]; then echo "$entry"; exit 0; fi
echo "kasan-kernel: cache miss ($entry), building (about 3.5 min on 2 idle cores)" >&2
t0=$(date +%s)
rm -rf "$entry"; mkdir -p "$entry"
tar xf "$tarball" -C "$entry"
src=$entry/linux-source-6.1; out=$entry/out
log=$entry/build.log
{
  make -C "$src" O="$out" tinyconfig
  "$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "$here/debug.config"
  make -C "$src" O="$out" olddefconfig
} >"$log" 2>&1 || { echo "kasan-kernel: configure failed, see $log" >&2; exit 1; }
# Every option of the fragment must have survived olddefconfig (a silently dropped KASAN
# would make the whole tier meaningless).
missing=0
while IFS= read -r line; do
  case $line in CONFIG_*=*) grep -qxF "$line" "$out/.config" || { echo "kasan-kernel: not in .config: $line" >&2; missing=1; };; esac
done < "$here/debug.config"
[ $missing -eq 0 ] || exit 1
nice -n 10 make -C "$src" O="$out" -j"${VGPU_KJOBS:-$(nproc)}" bzImage modules >>"$log" 2>&1 ||
  { echo "kasan-kernel: build failed, tail of $log:" >&2; tail -30 "$log" >&2; exit 1; }
# Keep the tree a module build needs, drop the rest of the objects (saves ~140 MB).
find "$out" -name '*.o' ! -path '*/scripts/*' ! -path '*/tools/*' -delete
echo "built in $(( $(date +%s) - t0 )) s" > "$entry/.complete"
# Older entries (other keys) are dead weight of ~1.7 GB each.
for old in "$cache"/6.1-*; do [ "$old" = "$entry" ] || rm -rf "$old"; done
echo "kasan-kernel: built in $(( $(date +%s) - t0 )) s" >&2
echo "$entry"
