#!/bin/bash
# Proves `dkms add` and `dkms build` work for the installed Debian kernel headers, in a
# throw-away DKMS tree (nothing under /usr/src or /var/lib/dkms is touched: DKMS's module
# signing key and certificate, which it makes on first use, are kept in
# ${VGPU_CACHE_DIR:-/var/cache/vgpu}/dkms-test, named in README.md). Builds for the
# first installed kernel (a DKMS build takes minutes on 2 busy cores); DKMS_ALL_KERNELS=1
# builds for every one.
# exit 0 all built; 1 a failure; 77 dkms or kernel headers missing.
set -uo pipefail
root=$(dirname "$(dirname "$(realpath "$0")")")
command -v dkms >/dev/null || { echo "dkms-test: dkms not installed (make deps)"; exit 77; }
mapfile -t kvers < <("$root/tests/vm/harness/kernels.sh" 2>/dev/null)
[ ${#kvers[@]} -gt 0 ] || { echo "dkms-test: no linux-headers package installed"; exit 77; }
[ "${DKMS_ALL_KERNELS:-0}" = 1 ] || kvers=("${kvers[0]}")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/tree"
# DKMS 3.0 takes the key's paths from these variables unless /etc/dkms/framework.conf sets them
# (Debian's ships them commented out); otherwise it makes /var/lib/dkms/mok.{key,pub}.
keys=${VGPU_CACHE_DIR:-/var/cache/vgpu}/dkms-test
mkdir -p "$keys"
export mok_signing_key=$keys/mok.key mok_certificate=$keys/mok.pub
args=(--sourcetree "$work/src" --dkmstree "$work/tree")
for k in "${kvers[@]}"; do args+=(--build "$k"); done
if ! "$root/dkms/install.sh" "${args[@]}" > "$work/log" 2>&1; then
  echo "dkms-test: FAILED"; tail -40 "$work/log"
  find "$work/tree" -name make.log -exec tail -30 {} \; 2>/dev/null
  exit 1
fi
fail=0
for k in "${kvers[@]}"; do
  ko=$(find "$work/tree/vgpu" -path "*/$k/*" -name 'vgpu.ko*' | head -1)
  if [ -n "$ko" ]; then echo "dkms-test: vgpu/0.1 built for $k ($(basename "$ko"))"
  else echo "dkms-test: no vgpu.ko for $k"; fail=1; fi
done
exit $fail
