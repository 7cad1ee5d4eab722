#!/bin/bash
# The module install path as the DaemonSet runs it: the module-installer image's own script
# (deploy/images/module-installer/vgpu-install-module) against scratch DKMS source, DKMS and
# install trees, with the repository as the image lays it out. Nothing under /usr/src,
# /var/lib/dkms or /lib/modules is written: DKMS's module signing key and certificate, which it
# makes on first use, are kept in ${VGPU_CACHE_DIR:-/var/cache/vgpu}/dkms-test (README.md).
#   1. a good run builds and installs vgpu.ko for the kernel (every kernel with
#      DKMS_ALL_KERNELS=1), "loads" it (a stand-in modprobe) and reports "kmod <VERSION>";
#   2. the same trees with nvidia-uvm's HMM on: refused, "shim ... uvm_disable_hmm ...";
#   3. sources that do not build: "shim dkms build failed ...", an ERROR line, exit 1;
#   4. the version is VERSION's everywhere: dkms.conf laid out, image tags, the guide.
# exit 0 all passed; 1 a failure; 77 dkms or kernel headers missing.
set -uo pipefail
root=$(dirname "$(dirname "$(realpath "$0")")")
command -v dkms >/dev/null || { echo "dkms-test: dkms not installed (make deps)"; exit 77; }
mapfile -t kvers < <("$root/tests/vm/harness/kernels.sh" 2>/dev/null)
[ ${#kvers[@]} -gt 0 ] || { echo "dkms-test: no linux-headers package installed"; exit 77; }
[ "${DKMS_ALL_KERNELS:-0}" = 1 ] || kvers=("${kvers[0]}")
version=$(tr -d ' \n' < "$root/VERSION")
# DKMS 3.0 takes the key's paths from these variables unless /etc/dkms/framework.conf sets them
# (Debian's ships them commented out); otherwise it makes /var/lib/dkms/mok.{key,pub}.
cache=${VGPU_CACHE_DIR:-/var/cache/vgpu}/dkms-test
mkdir -p "$cache"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail=0
check() {  # check DESCRIPTION CONDITION...
  local what=$1; shift
  if "$@"; then echo "dkms-test: ok: $what"; else echo "dkms-test: FAILED: $what"; fail=1; fi
}

# The image's layout: the repository's VERSION, kmod/, uapi/, dkms/ under one directory.
img=$work/image; mkdir -p "$img"
cp "$root/VERSION" "$img/"
for d in kmod uapi dkms; do cp -a "$root/$d" "$img/"; done
find "$img/kmod" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' \) -delete

# A stand-in modprobe: "loads" vgpu by recording its srcversion where /sys/module shows it.
mkdir -p "$work/bin" "$work/sys/module"
cat > "$work/bin/modprobe" <<MP
#!/bin/bash
[ "\$1" = vgpu ] || exit 1
ko=\$(find "$work/root/lib/modules/${kvers[0]}" -name 'vgpu.ko*' | head -1)
[ -n "\$ko" ] || { echo "modprobe: FATAL: Module vgpu not found"; exit 1; }
mkdir -p "$work/sys/module/vgpu"
modinfo -F srcversion "\$ko" > "$work/sys/module/vgpu/srcversion"
MP
chmod +x "$work/bin/modprobe"

run() {  # run TREE_NAME SRC: runs the installer once; its output in $work/TREE_NAME.log
  local t=$work/$1
  mkdir -p "$t/src" "$t/dkms"
  for k in "${kvers[@]}"; do mkdir -p "$work/root/lib/modules/$k"; done  # as on a node
  env VGPU_SRC="$2" VGPU_STATE_FILE="$t/module.state" VGPU_HOST_USR_SRC= \
    VGPU_DKMS_SOURCE="$t/src" VGPU_DKMS_TREE="$t/dkms" VGPU_INSTALL_TREE="$work/root/lib/modules" \
    VGPU_SYS_MODULE="$work/sys/module" VGPU_KERNELS="${kvers[*]}" VGPU_RUNNING_KERNEL="${kvers[0]}" \
    VGPU_MODPROBE="$work/bin/modprobe" VGPU_ONESHOT=1 \
    mok_signing_key="$cache/mok.key" mok_certificate="$cache/mok.pub" \
    "$root/deploy/images/module-installer/vgpu-install-module" > "$t.log" 2>&1
}

# 1. Good sources, HMM off.
mkdir -p "$work/sys/module/nvidia_uvm/parameters"
echo Y > "$work/sys/module/nvidia_uvm/parameters/uvm_disable_hmm"
run good "$img"; rc=$?
check "installer exits 0" test $rc = 0
check "state 'kmod $version'" test "$(cat "$work/good/module.state" 2>/dev/null)" = "kmod $version"
check "dkms.conf laid out with VERSION's $version" \
  grep -q "^PACKAGE_VERSION=\"$version\"$" "$work/good/src/vgpu-$version/dkms.conf"
for k in "${kvers[@]}"; do
  ko=$(find "$work/root/lib/modules/$k" -name 'vgpu.ko*' 2>/dev/null | head -1)
  check "vgpu.ko installed for $k ($(basename "${ko:-none}"))" test -n "$ko"
  # docs/operator-guide.md's uninstall removes /lib/modules/*/updates/dkms/vgpu.ko*.
  check "installed where the guide's uninstall removes it" \
    test "$(dirname "${ko:-x}")" = "$work/root/lib/modules/$k/updates/dkms"
done
check "vgpu loaded (stand-in modprobe)" test -s "$work/sys/module/vgpu/srcversion"
[ $rc = 0 ] || tail -40 "$work/good.log"

# 2. The same trees, nvidia-uvm with HMM on: refused loudly, nothing loaded anew.
rm -rf "$work/sys/module/vgpu"
echo N > "$work/sys/module/nvidia_uvm/parameters/uvm_disable_hmm"
run good "$img"; rc=$?
check "HMM on: installer exits 1" test $rc = 1
check "HMM on: state names uvm_disable_hmm" grep -q '^shim .*uvm_disable_hmm=N' "$work/good/module.state"
check "HMM on: an ERROR line in the log" grep -q 'ERROR: nvidia-uvm runs with HMM' "$work/good.log"
check "HMM on: vgpu not loaded" test ! -e "$work/sys/module/vgpu"

# 3. Sources that do not build: reported, never a silent fallback.
cp -a "$img" "$work/broken-image"
echo 'this is not C;' >> "$work/broken-image/kmod/main.c"
echo Y > "$work/sys/module/nvidia_uvm/parameters/uvm_disable_hmm"
rm -rf "$work/root/lib/modules"
run broken "$work/broken-image"; rc=$?
check "broken build: installer exits 1" test $rc = 1
check "broken build: state 'shim dkms build failed for ${kvers[0]}...'" \
  grep -q "^shim dkms build failed for ${kvers[0]}" "$work/broken/module.state"
check "broken build: an ERROR line in the log" grep -q 'ERROR: dkms build failed' "$work/broken.log"
[ $rc = 1 ] || tail -20 "$work/broken.log"

# 4. One version: what the image tags and the guide's commands say is VERSION's.
for f in deploy/overlays/module/kustomization.yaml deploy/overlays/shim/kustomization.yaml; do
  bad=$(grep -o 'newTag: .*' "$root/$f" | grep -v "newTag: $version$" || true)
  check "$f tags are $version" test -z "$bad"
done
check "docs/operator-guide.md's uninstall removes the installed module" \
  grep -q 'rm -f /lib/modules/\*/updates/dkms/vgpu.ko\*' "$root/docs/operator-guide.md"
bad=$(grep -ho 'vgpu[a-z-]*:[0-9][0-9.]*\|vgpu/[0-9][0-9.]*' "$root/docs/operator-guide.md" \
  "$root"/deploy/images/*/Dockerfile | grep -v "[:/]$version$" || true)
check "no other version in the guide and Dockerfiles${bad:+ ($bad)}" test -z "$bad"
exit $fail
