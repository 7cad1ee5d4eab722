# Runs inside the guest (busybox ash) from /init, with /payload as cwd. Runs every suite
# in suites/<name>/ (tests/vm/README.md is the contract), one after the other:
#   cwd = suites/<name> (its guest.sh, data files and built programs), ./mod -> /payload/mod
#   env OUT (write result files there), KREL (uname -r), VMTEST_FAULT (harness self-test)
#   exit 0 = pass, 77 = skipped (say why on stdout), anything else = fail
# Per suite it records out/suites/<name>/{rc,log.txt,splat.txt,seconds}. A suite also fails if it
# leaves a module loaded or if new kernel splat lines appear in dmesg while it runs.
# After all suites: kmemleak scan where the kernel has it (the Debian kernels do not).
set -o pipefail
P=/payload
SPLAT='BUG:|WARNING:|Oops|KASAN|UBSAN|general protection|possible recursive locking|circular locking|list_(add|del) corruption|inconsistent lock state|sleeping function called'
export KREL=$(uname -r)
VMTEST_FAULT=$(sed -n 's/.*vmtest\.fault=\([a-z]*\).*/\1/p' /proc/cmdline); export VMTEST_FAULT
SUITE_TIMEOUT=$(sed -n 's/.*vmtest\.suite_timeout=\([0-9]*\).*/\1/p' /proc/cmdline); SUITE_TIMEOUT=${SUITE_TIMEOUT:-360}
KML=/sys/kernel/debug/kmemleak
if [ -w $KML ]; then
  # Forget what boot itself left behind: only leaks made by the suites count.
  echo scan > $KML; echo clear > $KML
  echo "harness: kmemleak active"
else
  echo "harness: kmemleak not available in this kernel (no CONFIG_DEBUG_KMEMLEAK): leak check skipped"
fi
# /proc/modules lists the newest module first: a module that uses another was loaded after it.
mods() { cut -d' ' -f1 /proc/modules; }
# Unloads what a suite left loaded, newest first, in passes until nothing more goes: a module in
# use by a later one (nvsim by vgpu's RM clients) unloads once that one is gone; in name order
# nvsim's rmmod fails first and nvsim stays, and every later suite's insmod fails with "File
# exists". Prints what could not be unloaded.
unload() {
  pending=$*
  while [ -n "$pending" ]; do
    kept=
    for m in $pending; do rmmod $m 2>/dev/null || kept="$kept $m"; done
    kept=${kept# }
    [ "$kept" = "$pending" ] && break
    pending=$kept
  done
  echo "$pending"
}
# Processes whose cwd is $1, but busybox timeout's watcher (it polls once a second whether the
# suite's shell is still there, then exits by itself), also when it exits during the scan (its
# comm then reads empty: a passing nvsim suite was failed for it once).
strays() {
  for p in /proc/[0-9]*; do
    c=$(cat $p/comm 2>/dev/null)
    [ -n "$c" ] && [ "$c" != timeout ] && [ "$(readlink $p/cwd 2>/dev/null)" = "$1" ] &&
      printf "%s " ${p#/proc/}
  done
}
overall=0
for d in $P/suites/*/; do
  s=$(basename $d); o=$P/out/suites/$s; mkdir -p $o
  mods > /tmp/mods.before; n0=$(dmesg | wc -l)
  t0=$(cut -d' ' -f1 /proc/uptime)
  echo "harness: suite $s: begin"
  echo "vmtest: suite $s begin" > /dev/kmsg
  ln -sfn $P/mod $d/mod
  # What a failed or timed-out suite left running (its programs' cwd is the suite's directory)
  # holds this pipe and its modules' files open: killed before the pipe can end.
  ( cd $d && OUT=$o timeout $SUITE_TIMEOUT sh ./guest.sh 2>&1; echo $? > $o/rc
    # A process found in its exit (a test's child between its last write and the reaper) is no
    # stray: only what is still there a second later counts.
    cd / && strays ${d%/} > /tmp/strays
    [ -s /tmp/strays ] && sleep 1 && strays ${d%/} > /tmp/strays
    [ -s /tmp/strays ] && kill -KILL $(cat /tmp/strays) 2>/dev/null
  ) | tee $o/log.txt
  rc=$(cat $o/rc 2>/dev/null || echo 1)
  [ "$rc" = 143 ] && echo "harness: suite $s: killed after ${SUITE_TIMEOUT}s (vmtest.suite_timeout)" | tee -a $o/log.txt
  echo "vmtest: suite $s end rc=$rc" > /dev/kmsg
  if [ -s /tmp/strays ]; then
    echo "harness: suite $s left processes running: $(cat /tmp/strays)(killed)" | tee -a $o/log.txt
    [ "$rc" = 0 ] && rc=103
    sleep 1 # their files close as they exit
  fi
  mods > /tmp/mods.after
  # Not grep -vxFf: busybox reads an empty pattern file (no module before the first suite) as
  # one empty pattern that matches every line, so nothing was ever "left" after the first suite.
  left=
  for m in $(cat /tmp/mods.after); do grep -qxF $m /tmp/mods.before || left="$left$m "; done
  if [ -n "$left" ]; then
    echo "harness: suite $s left modules loaded: $left(suites must rmmod what they load)" | tee -a $o/log.txt
    [ "$rc" = 0 ] && rc=102
    stuck=$(unload $left)
    [ -z "$stuck" ] || echo "harness: could not unload $stuck (later suites may fail to load it)" | tee -a $o/log.txt
  fi
  dmesg | tail -n +$((n0 + 1)) | grep -E -A25 "$SPLAT" > $o/splat.txt
  if [ -s $o/splat.txt ]; then
    echo "harness: suite $s: kernel splat in dmesg:" | tee -a $o/log.txt; head -60 $o/splat.txt | tee -a $o/log.txt
    [ "$rc" = 0 ] || [ "$rc" = 77 ] && rc=101
  fi
  echo "$rc" > $o/rc
  echo "$t0 $(cut -d' ' -f1 /proc/uptime)" | awk '{printf "%.2f\n", $2 - $1}' > $o/seconds
  echo "harness: suite $s: end rc=$rc"
  [ "$rc" = 0 ] || [ "$rc" = 77 ] || overall=1
done
if [ -w $KML ]; then
  # kmemleak reports an object only when it is older than 5 s, unreachable, and its contents
  # did not change since the previous scan (the first scan records a checksum): two scans.
  sleep 5; echo scan > $KML; echo scan > $KML; cat $KML > $P/out/kmemleak.txt
  if [ -s $P/out/kmemleak.txt ]; then
    echo "harness: kmemleak found leaks:"; head -80 $P/out/kmemleak.txt; overall=1
  else
    echo "harness: kmemleak: no leaks"
  fi
fi
exit $overall
