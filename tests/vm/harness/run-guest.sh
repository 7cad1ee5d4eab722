#!/bin/bash
# Boots one kernel under QEMU/TCG with every in-guest suite and reports each suite on the host.
#
# usage: run-guest.sh --kernel REL|kasan --mods DIR --bin DIR [--work DIR] [--suite NAME]...
#   --kernel  a Debian release (boots /boot/vmlinuz-REL) or "kasan" (tests/vm/kdebug kernel)
#   --mods    directory of .ko files built for that kernel (scripts/kmod-build.sh --out X: X/REL/mod)
#   --bin     directory of static guest programs, BIN/<suite>/<program> (tests/vm/harness/CMakeLists.txt)
#   --work    scratch + results (default: a temp dir); results stay in WORK/out after the run
#   --suite   run only these suites of tests/vm/guest/ (default: all with a guest.sh)
# env: GUEST_TIMEOUT (s, default 300) bounds the whole VM; GUEST_SMP (2); GUEST_MEM (1G);
#      ACCEL (tcg; never auto-select kvm: /dev/kvm here is PVM and hangs, kmod-vm-harness.md §1);
#      VM_SUITES "a b" = --suite a --suite b (to run a subset under ctest);
#      VM_APPEND extra kernel command line (e.g. vmtest.fault=warn for the harness self-test).
# exit: 0 every suite passed or skipped and the kernel stayed clean; 1 otherwise; 77 no such kernel image.
set -uo pipefail
here=$(dirname "$(realpath "$0")")
root=$(realpath "$here/../../..")
kernel=; mods=; bin=; work=; suites=()
while [ $# -gt 0 ]; do
  case $1 in
    --kernel) kernel=$2; shift;; --mods) mods=$2; shift;; --bin) bin=$2; shift;;
    --work) work=$2; shift;; --suite) suites+=("$2"); shift;;
    *) echo "run-guest: unknown argument $1" >&2; exit 1;;
  esac; shift
done
[ -n "$kernel" ] && [ -n "$mods" ] && [ -n "$bin" ] || { sed -n '2,16p' "$0"; exit 1; }
label=$kernel
if [ "$kernel" = kasan ]; then
  entry=$("$root/tests/vm/kdebug/kasan-kernel.sh") || { echo "[vm kasan] FAIL: KASAN kernel unavailable"; exit 1; }
  image=$entry/out/arch/x86/boot/bzImage
else
  image=/boot/vmlinuz-$kernel
  [ -f "$image" ] || { echo "[vm $label] SKIP: $image not installed (linux-image-$kernel)"; exit 77; }
fi
if [ -z "$work" ]; then work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work"; work=$(realpath "$work")
rm -rf "$work/payload" "$work/out" "$work/ttyS1.tar"
P=$work/payload; mkdir -p "$P/mod" "$P/suites" "$work/out"

# --- payload: runner, modules, suites (their non-source files + built programs) ---
cp "$here/guest-run.sh" "$P/"
cp "$mods"/*.ko "$P/mod/" 2>/dev/null
[ ${#suites[@]} -eq 0 ] && [ -n "${VM_SUITES:-}" ] && read -ra suites <<< "$VM_SUITES"
if [ ${#suites[@]} -eq 0 ]; then
  for d in "$root"/tests/vm/guest/*/; do [ -f "$d/guest.sh" ] && suites+=("$(basename "$d")"); done
fi
for s in "${suites[@]}"; do
  src=$root/tests/vm/guest/$s
  [ -f "$src/guest.sh" ] || { echo "[vm $label] FAIL: suite $s has no tests/vm/guest/$s/guest.sh"; exit 1; }
  mkdir -p "$P/suites/$s"
  tar -C "$src" -cf - --exclude='*.c' --exclude='*.cc' --exclude='*.h' --exclude='*.cmake' \
    --exclude=CMakeLists.txt . | tar -C "$P/suites/$s" -xf -
  [ -d "$bin/$s" ] && cp "$bin/$s"/* "$P/suites/$s/" 2>/dev/null
done
echo "[vm $label] modules: $(cd "$P/mod" && ls 2>/dev/null | tr '\n' ' ')"
echo "[vm $label] suites: ${suites[*]}"

# --- initramfs: busybox + /init, then the payload under /payload (newc archives concatenate) ---
base=$work/root; rm -rf "$base"; mkdir -p "$base"/{bin,dev,proc,sys,tmp,etc}
cp /bin/busybox "$base/bin/busybox"; install -m755 "$here/init" "$base/init"
(cd "$base" && find . -print0 | cpio --null -o -H newc --quiet) > "$work/initrd.cpio"
mkdir -p "$work/pl"; rm -f "$work/pl/payload"; ln -s "$P" "$work/pl/payload"
(cd "$work/pl" && find -L payload -print0 | cpio --null -o -H newc --quiet -L) >> "$work/initrd.cpio"
rm -rf "$base"

# --- boot ---
Q=(-m "${GUEST_MEM:-1G}" -smp "${GUEST_SMP:-2}" -nodefaults -display none -no-reboot
   -serial "file:$work/out/console.log" -serial "file:$work/ttyS1.tar"
   -device isa-debug-exit,iobase=0xf4,iosize=0x01)
case ${ACCEL:-tcg} in kvm) Q+=(-accel kvm -cpu host);; *) Q+=(-accel tcg -cpu max);; esac
limit=${GUEST_TIMEOUT:-300}
boot() {
  rm -f "$work/ttyS1.tar"
  t0=$(date +%s.%N)
  timeout --foreground -k 5 "$limit" qemu-system-x86_64 "${Q[@]}" -kernel "$image" -initrd "$work/initrd.cpio" \
    -append "console=ttyS0 panic=-1 oops=panic panic_on_warn=1 loglevel=7 ${VM_APPEND:-}" </dev/null \
    >"$work/out/qemu.txt" 2>&1
  qrc=$?
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
}
boot
# A kernel that died during its own boot, before /init printed its first line, ran none of our
# code (our modules are loaded by guest-run.sh, from the initramfs). Seen once under multi-threaded
# TCG on a loaded host: an int3 Oops in the 6.12 kernel's own static-key patching during
# inet_init (text_poke_bp racing the other vCPU's translated code). That says nothing about the
# module under test, so the guest is booted once more; the first crash stays in the log.
if [ "$qrc" -eq 0 ] && ! grep -aq 'init: kernel ' "$work/out/console.log"; then
  echo "[vm $label] the guest kernel crashed during its own boot, before /init ran (no module of ours loaded):"
  grep -a -m1 -E 'BUG:|Oops|Kernel panic|general protection' "$work/out/console.log" | sed "s/^/[vm $label]   /"
  grep -a -m1 -E '^\[ *[0-9.]*\] RIP:' "$work/out/console.log" | sed "s/^/[vm $label]   /"
  mv "$work/out/console.log" "$work/out/console-boot1.log"
  echo "[vm $label] booting once more (first console: $work/out/console-boot1.log)"
  boot
# A guest whose kernel calibrated its TSC against a PIT that TCG on a loaded host ran unevenly
# ("PIT calibration deviates from HPET: 58583 2094238", "Detected 58.583 MHz processor", seen
# once at load ~15) keeps time ~36x too fast: every timed test measures nothing (a 200 ms sleep
# took 5.3 s of nvsim's model time, the compute controller woke 34 s late in total). Nothing of
# ours ran yet when that was decided: booted once more, the first console kept.
elif grep -aq 'tsc: Using PIT calibration value' "$work/out/console.log"; then
  echo "[vm $label] the guest's clock was calibrated wrongly at boot (its timed tests would measure nothing):"
  grep -a -m2 -E 'PIT calibration deviates|tsc: Detected' "$work/out/console.log" | sed "s/^/[vm $label]   /"
  mv "$work/out/console.log" "$work/out/console-boot1.log"
  echo "[vm $label] booting once more (first console: $work/out/console-boot1.log)"
  boot
fi
[ -s "$work/ttyS1.tar" ] && tar xf "$work/ttyS1.tar" -C "$work" 2>/dev/null  # -> $work/out/...

# --- per-suite report ---
fail=0
running=$(grep -a -o 'harness: suite [^ ]*: begin' "$work/out/console.log" 2>/dev/null | tail -1 | cut -d' ' -f3 | tr -d :)
for s in "${suites[@]}"; do
  o=$work/out/suites/$s
  if [ -f "$o/rc" ]; then
    rc=$(cat "$o/rc"); t=$(cat "$o/seconds" 2>/dev/null || echo ?)
    case $rc in
      0) echo "[vm $label] suite $s: PASS (${t}s)";;
      77) echo "[vm $label] suite $s: SKIP (${t}s): $(grep -v '^harness:' "$o/log.txt" | tail -1)";;
      *) fail=1; echo "[vm $label] suite $s: FAIL (exit $rc, ${t}s); guest output:"
         tail -n 40 "$o/log.txt" | sed "s/^/[vm $label]   $s| /"
         if [ -s "$o/splat.txt" ]; then
           echo "[vm $label] suite $s: kernel splat while it ran (start; all in out/suites/$s/splat.txt):"
           head -n 15 "$o/splat.txt" | sed "s/^/[vm $label]   $s! /"
         fi;;
    esac
  else
    fail=1
    if [ "$s" = "$running" ]; then
      echo "[vm $label] suite $s: CRASHED the guest while running (see kernel console below); its output:"
      awk -v s="harness: suite $s: begin" 'f; index($0, s) {f=1}' "$work/out/console.log" | grep -av '^\[ *[0-9.]*\]' |
        tail -n 25 | sed "s/^/[vm $label]   $s| /"
    else
      echo "[vm $label] suite $s: NOT RUN (the guest stopped before it)"
    fi
  fi
done
if [ -s "$work/out/kmemleak.txt" ]; then
  fail=1; echo "[vm $label] kmemleak: LEAKS (out/kmemleak.txt):"; head -60 "$work/out/kmemleak.txt" | sed "s/^/[vm $label]   /"
elif grep -aq 'harness: kmemleak: no leaks' "$work/out/console.log"; then
  echo "[vm $label] kmemleak: no leaks"
else
  echo "[vm $label] kmemleak: not available in this kernel (Debian builds it out); leaks unchecked here, see the kasan run"
fi
case $qrc in
  1) why=;;
  0) why="the guest kernel panicked (oops, WARN with panic_on_warn, KASAN) or /init died";;
  124|137) why="timeout: the VM did not finish within GUEST_TIMEOUT=${limit}s (hang)";;
  *) if [ $((qrc & 1)) -eq 1 ]; then why="guest-run.sh exit $((qrc >> 1))"; else why="qemu error $qrc: $(tail -3 "$work/out/qemu.txt")"; fi;;
esac
[ -n "$why" ] && fail=1
[ -f "$work/out/dmesg.txt" ] || cp "$work/out/console.log" "$work/out/dmesg.txt" 2>/dev/null
if [ $fail -eq 0 ]; then
  echo "[vm $label] PASS: $(uname -m) TCG boot + ${#suites[@]} suites in ${secs}s; guest dmesg: $work/out/dmesg.txt"
  exit 0
fi
# The console matters when the kernel died, hung or QEMU failed; a suite's own failure was
# already shown above with its output.
if [ -n "$why" ] && { [ $((qrc & 1)) -eq 0 ] || [ "$qrc" -ge 124 ]; }; then
  # Show the first kernel splat (it names the fault) rather than only the end of the panic dump.
  first=$(grep -a -n -m1 -E 'BUG:|WARNING:|Oops|Kernel panic|general protection' "$work/out/console.log" | cut -d: -f1)
  if [ -n "$first" ]; then
    echo "[vm $label] kernel console from the first splat:"
    tail -n +"$first" "$work/out/console.log" | head -n 70 | sed "s/^/[vm $label]   /"
    grep -a -m1 'Kernel panic' "$work/out/console.log" | sed "s/^/[vm $label]   /"
  else
    echo "[vm $label] kernel console tail:"; tail -n 50 "$work/out/console.log" | sed "s/^/[vm $label]   /"
  fi
fi
echo "[vm $label] FAIL${why:+: $why} (${secs}s); full console: $work/out/console.log, guest dmesg: $work/out/dmesg.txt"
exit 1
