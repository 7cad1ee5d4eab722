#!/bin/bash
# The real-GPU suite for libvgpu-shim.so (docs/results/shim-h200.md): builds everything on the GPU machine, runs
# CUDA (driver and runtime API), PyTorch, NVML and nvidia-smi under the shim, and prints a
# summary table (also written to OUTDIR/summary.md; per-test logs in OUTDIR/logs/).
# usage: tests/gpu/run-all.sh [OUTDIR] [--quick] [--prebuilt] [--no-overhead]
#   --quick: fewer benchmark rounds (too few to decide the overhead targets);
#   --prebuilt: use build/gpu as it is (built elsewhere, carried)
#   --no-overhead: skip section 7 (run tests/gpu/overhead.py on its own, with its own rounds)
# Results: PASS, FAIL; UNDECIDED (an overhead whose 95 % interval straddles its target: not a
# pass); DEVIATION (the quota held, but the stream-ordered pool stops one pool chunk, not one
# 2 MiB granule, below it, because the driver asks for nothing smaller: see shim-h200.md).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build/gpu/results}
quick=0
prebuilt=0
overhead=1
for a in "${@:2}"; do
  [[ $a == --no-overhead ]] && overhead=0
  [[ $a == --quick ]] && quick=1
  [[ $a == --prebuilt ]] && prebuilt=1
done
mkdir -p "$out/logs"
cd "$root"
if [[ $prebuilt == 0 ]]; then
  tests/gpu/build.sh > "$out/logs/build.txt" 2>&1 || { cat "$out/logs/build.txt"; echo "build failed"; exit 1; }
fi
B=$root/build/gpu
SHIM=$B/libvgpu-shim.so
[[ -f $SHIM ]] || { echo "libvgpu-shim.so was not built"; exit 1; }
QUOTA=$((4 << 30))
MiB=$((1 << 20))
export PYTHONUNBUFFERED=1
ROWS=()
row() {  # name result detail
  ROWS+=("| $1 | $2 | $3 |")
  echo "[$2] $1: $3"
}
newslot() {  # a slot directory with a 4 GiB quota; prints its config path
  local d
  d=$(mktemp -d /tmp/vgpu-slot.XXXXXX)
  printf 'mem_quota = %s\nslot_id = 1\n' "$QUOTA" > "$d/slot.conf"
  echo "$d/slot.conf"
}
ledger() { "$B/vgpu-shim-ledger" "$(dirname "$1")/ledger"; }  # config path
field() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" <<< "$1" | tail -1; }
under_shim() { env LD_PRELOAD="$SHIM" "$@"; }
wait_for() {  # file pattern [tries] [pid]: gives up early when pid has exited
  for _ in $(seq 1 "${3:-600}"); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    [[ -n "${4:-}" ]] && ! kill -0 "$4" 2>/dev/null && { grep -q "$2" "$1" 2>/dev/null; return; }
    sleep 0.1
  done
  return 1
}
smi_used_mib() {  # pid: the driver's own per-process figure, read without the shim
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
    awk -F', ' -v p="$1" '$1 == p {print $2}'
}

# --- 1. Quota: allocate until refusal through three driver-API paths -------------------------
# First the bare GPU's own edge, without the shim: the whole GPU filled with cuMemAlloc, then
# each pool asked for 2 MiB with K MiB really free. The largest K it refused is how far from
# the end of real memory a stream-ordered pool stops on this driver: the yardstick for the
# async row (a slot cannot do better than the driver's own smallest pool growth). Every ioctl is
# recorded (logs/async-edge-bare.jsonl.gz): it shows the driver's one 32 MiB request per attempt.
timeout 240 "$B/vgpu-trace-record" -o "$out/logs/async-edge-bare.jsonl" -- "$B/async_pool" edge \
  > "$out/logs/async-edge-bare.txt" 2>&1
gzip -f "$out/logs/async-edge-bare.jsonl" 2>/dev/null
bare_refused=$(awk '/^EDGE/ && /OUT_OF_MEMORY/ {sub("slot_free_mib=", "", $3); v = $3 + 0; if (v > m) m = v}
                    END {print m + 0}' "$out/logs/async-edge-bare.txt")
bare_granted=$(awk '/^EDGE/ && /CUDA_SUCCESS/ {sub("slot_free_mib=", "", $3); v = $3 + 0; if (m == "" || v < m) m = v}
                    END {print m + 0}' "$out/logs/async-edge-bare.txt")
for mode in alloc vmm async; do
  cfg=$(newslot)
  log=$out/logs/quota-$mode.txt
  # VGPU_LOG=info: every refusal is one stderr line naming its request (the first alone is
  # printed at the default level), so the log shows every size the driver asked for.
  VGPU_CONFIG=$cfg VGPU_LOG=info timeout 300 env LD_PRELOAD="$SHIM" "$B/drv_quota" "$mode" hold > "$log" 2>&1 &
  pid=$!
  if wait_for "$log" HOLD 1200 "$pid"; then
    res=$(grep RESULT "$log")
    hp=$(sed -n 's/HOLD pid=//p' "$log")
    smi=$(smi_used_mib "$hp")
    led=$(ledger "$cfg" | tail -1)
    charged=$(field "$led" total); peak=$(field "$led" peak)
    total=$(field "$res" total_after); free=$(field "$res" free_after)
    refusal=$(field "$res" refusal); alloc=$(field "$res" allocated)
    # The smallest request the shim refused (refusal lines: "...; quota Q, charged C, request R").
    minreq=$(grep -o 'quota exceeded; quota [0-9]*, charged [0-9]*, request [0-9]*' "$log" |
             awk '{print $NF}' | sort -n | head -1)
    nref=$(grep -c 'quota exceeded; quota' "$log")
    ok=PASS
    [[ $refusal == CUDA_ERROR_OUT_OF_MEMORY ]] || ok=FAIL
    (( peak <= QUOTA && charged <= QUOTA )) || ok=FAIL
    (( total == QUOTA )) || ok=FAIL
    (( free == QUOTA - charged )) || ok=FAIL
    if (( QUOTA - charged >= 2 * MiB )) && [[ $ok == PASS ]]; then
      # Not within one granule. Acceptable as a documented deviation only when every request
      # the driver made was bigger than what was left: then nothing could be granted without
      # the charge passing the quota.
      ok=FAIL
      [[ -n $minreq ]] && (( minreq > QUOTA - charged )) && ok=DEVIATION
    fi
    row "quota 4 GiB, $mode until refusal" $ok "refused with $refusal after $((alloc / MiB)) MiB; driver-reported charge (context included) $charged B = $((charged / MiB)) MiB, peak $peak B (quota $QUOTA); gap to quota $(((QUOTA - charged) / 1024)) KiB; $nref refusals, smallest request ${minreq:-?} B$([[ $ok == DEVIATION ]] && echo " > gap: within one pool chunk, not one 2 MiB granule; the bare GPU (no shim, this run) refused the pool's 2 MiB with up to ${bare_refused} MiB really free and granted it with ${bare_granted} MiB"); cuMemGetInfo total $total free $free; nvidia-smi per-process used ${smi:-?} MiB"
  else
    row "quota 4 GiB, $mode until refusal" FAIL "no HOLD line: $(tail -3 "$log" | tr '\n' ' ')"
  fi
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  grep -h "vgpu-shim" "$log" | head -2 | sed 's/^/    stderr: /'
done

# --- 1b. How the stream-ordered pool grows (evidence for the async row; not a table row) ------
cfg=$(newslot)
sed -i 's/^mem_quota.*/mem_quota = 100G/' "$cfg"
VGPU_CONFIG=$cfg timeout 120 env LD_PRELOAD="$SHIM" "$B/async_pool" growth > "$out/logs/async-growth.txt" 2>&1
cfg=$(newslot)
VGPU_CONFIG=$cfg VGPU_LOG=info timeout 120 env LD_PRELOAD="$SHIM" "$B/async_pool" edge > "$out/logs/async-edge.txt" 2>&1
echo "async pool growth (logs/async-growth.txt, async-edge.txt):"
grep -E '^(GROWTH|MAXSIZE|EDGE|POOL)' "$out/logs/async-growth.txt" "$out/logs/async-edge.txt" | sed 's/^[^:]*://; s/^/    /'
# The requests the driver made between each EDGE attempt's markers.
awk '/^MARK begin/ {p = $3 " " $4; r = ""; n = 0} /quota exceeded; quota/ {n++; r = r " " $NF}
     /^MARK end/ {print "    refusals " p ": " n (n ? " (requests" r ")" : "")}' "$out/logs/async-edge.txt"

# --- 2. PyTorch until torch.OutOfMemoryError --------------------------------------------------
cfg=$(newslot)
log=$out/logs/torch-oom.txt
VGPU_CONFIG=$cfg timeout 300 env LD_PRELOAD="$SHIM" python3 tests/gpu/progs/torch_oom.py > "$log" 2>&1
res=$(grep RESULT "$log")
led=$(ledger "$cfg" | tail -1); peak=$(field "$led" peak)
exc=$(field "$res" exc); total=$(field "$res" total); free=$(field "$res" free); alloc=$(field "$res" allocated)
ok=PASS
[[ $exc == torch.OutOfMemoryError ]] || ok=FAIL
(( total == QUOTA && peak <= QUOTA && QUOTA - peak < 2 * MiB )) 2>/dev/null || ok=FAIL
row "PyTorch until OOM" $ok "exception $exc after $((alloc / MiB)) MiB of tensors; ledger peak $peak B (gap $(((QUOTA - peak) / 1024)) KiB); torch.cuda.mem_get_info total $total free $free"

# --- 3. Views: a holder keeps 1 GiB in the slot; readers in the same slot ---------------------
cfg=$(newslot)
hlog=$out/logs/views-holder.txt
VGPU_CONFIG=$cfg env LD_PRELOAD="$SHIM" "$B/drv_hold" hold 1024 > "$hlog" 2>&1 &
holder=$!
if wait_for "$hlog" "HOLD ok" 600 "$holder"; then
  held=$(field "$(ledger "$cfg" | tail -1)" total)
  # NVML and nvidia-smi create no CUDA context: free must equal quota - slot charge exactly.
  nv=$(VGPU_CONFIG=$cfg under_shim python3 tests/gpu/progs/nvml_query.py 2>&1 | tee "$out/logs/views-nvml.txt" | grep mem_v1)
  ok=PASS
  (( $(field "$nv" total) == QUOTA && $(field "$nv" free) == QUOTA - held )) 2>/dev/null || ok=FAIL
  row "NVML memory info (pynvml) under shim" $ok "slot charge $held B; $nv"
  smi=$(VGPU_CONFIG=$cfg under_shim nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv,noheader,nounits 2>&1 | tee "$out/logs/views-smi.txt" | head -1)
  IFS=', ' read -r st su sf <<< "$smi"
  ok=PASS
  (( st == QUOTA / MiB && sf == (QUOTA - held) / MiB )) 2>/dev/null || ok=FAIL
  row "nvidia-smi --query-gpu under shim" $ok "total/used/free MiB = $smi (expect $((QUOTA / MiB)) / - / $(((QUOTA - held) / MiB)))"
  VGPU_CONFIG=$cfg under_shim nvidia-smi > "$out/logs/views-smi-default.txt" 2>&1
  rc=$?
  mem=$(grep -o '[0-9]*MiB / *[0-9]*MiB' "$out/logs/views-smi-default.txt" | head -1)
  ok=PASS; [[ $rc == 0 && $mem =~ /\ *4096MiB$ ]] || ok=FAIL
  row "nvidia-smi (default view) under shim" $ok "exit $rc; memory column '$mem'; processes: $(grep -c ' C ' "$out/logs/views-smi-default.txt") listed (holder pid $holder)"
  # CUDA readers have a context of their own: free = quota - (holder + own context).
  rt=$(VGPU_CONFIG=$cfg under_shim "$B/rt_views" meminfo 2>&1 | tee "$out/logs/views-rt.txt" | grep RESULT)
  ok=PASS
  f=$(field "$rt" free)
  (( $(field "$rt" total) == QUOTA && f <= QUOTA - held && f > QUOTA - held - 1024 * MiB )) 2>/dev/null || ok=FAIL
  row "cudaMemGetInfo under shim" $ok "$rt (quota - holder = $((QUOTA - held)); the rest is this process's context)"
  tq=$(VGPU_CONFIG=$cfg under_shim python3 -c 'import torch; f,t=torch.cuda.mem_get_info(); print(f"RESULT free={f} total={t}")' 2>&1 | tee "$out/logs/views-torch.txt" | grep RESULT)
  ok=PASS
  f=$(field "$tq" free)
  (( $(field "$tq" total) == QUOTA && f <= QUOTA - held && f > QUOTA - held - 1024 * MiB )) 2>/dev/null || ok=FAIL
  row "torch.cuda.mem_get_info under shim" $ok "$tq"
else
  row "views" FAIL "holder did not start: $(tail -3 "$hlog" | tr '\n' ' ')"
fi
kill -9 "$holder" 2>/dev/null; wait "$holder" 2>/dev/null

# --- 4. Managed memory policy ----------------------------------------------------------------
for pol in refuse allow-uncounted; do
  log=$out/logs/managed-$pol.txt
  VGPU_MEMORY_QUOTA=4G VGPU_MANAGED=$pol timeout 120 env LD_PRELOAD="$SHIM" "$B/rt_views" managed > "$log" 2>&1
  rc=$?
  res=$(grep RESULT "$log")
  want=ok; [[ $pol == refuse ]] && want=fail
  ok=PASS; [[ $rc == 0 && $(field "$res" ctx) == ok && $(field "$res" managed) == "$want" ]] || ok=FAIL
  row "cudaMallocManaged under $pol" $ok "exit $rc; $res; $(grep -m1 vgpu-shim "$log" | cut -c1-160)"
done

# --- 5. Two processes, one slot; SIGKILL returns the holder's memory -------------------------
cfg=$(newslot)
d=$(dirname "$cfg")
VGPU_CONFIG=$cfg env LD_PRELOAD="$SHIM" "$B/drv_hold" hold 2048 > "$out/logs/two-a.txt" 2>&1 &
a=$!
if wait_for "$out/logs/two-a.txt" "HOLD ok" 600 "$a"; then
  before=$(ledger "$cfg" | tail -1)
  VGPU_CONFIG=$cfg timeout 120 env LD_PRELOAD="$SHIM" "$B/drv_hold" try 3072 "$d/go" > "$out/logs/two-b.txt" 2>&1 &
  b=$!
  wait_for "$out/logs/two-b.txt" TRY1 600 "$b"
  kill -9 "$a"; wait "$a" 2>/dev/null
  touch "$d/go"
  wait_for "$out/logs/two-b.txt" TRY2 600 "$b"
  wait "$b" 2>/dev/null
  after=$(ledger "$cfg" | tail -1)
  t1=$(sed -n 's/TRY1 //p' "$out/logs/two-b.txt"); t2=$(sed -n 's/TRY2 //p' "$out/logs/two-b.txt")
  ok=PASS; [[ $t1 == fail && $t2 == ok ]] || ok=FAIL
  row "two processes share one quota; SIGKILL frees" $ok "A holds 2 GiB (slot: $before); B's 3 GiB: before kill $t1, after kill $t2; ledger after: $after"
else
  row "two processes share one quota; SIGKILL frees" FAIL "holder did not start"
fi
kill -9 "$a" 2>/dev/null

# --- 6. The corpus program and a training step run clean under the shim (strict policy) ------
log=$out/logs/strict-drv.txt
VGPU_MEMORY_QUOTA=100G VGPU_MANAGED=allow-uncounted VGPU_LOG=info timeout 120 env LD_PRELOAD="$SHIM" "$B/drv_corpus" > "$log" 2>&1
rc=$?
ok=PASS; [[ $rc == 0 ]] || ok=FAIL
row "driver-API corpus program under shim (strict)" $ok "exit $rc; $(grep -c 'refused' "$log") refusal lines; $(grep -m1 'refused' "$log" | cut -c1-200)"
log=$out/logs/strict-torch.txt
VGPU_MEMORY_QUOTA=100G VGPU_LOG=info timeout 300 env LD_PRELOAD="$SHIM" python3 tests/gpu/progs/torch_train.py 20 2 > "$log" 2>&1
rc=$?
ok=PASS; [[ $rc == 0 ]] || ok=FAIL
row "PyTorch training under shim (strict)" $ok "exit $rc; $(grep -c 'refused' "$log") refusal lines; $(grep -m1 -E 'refused|Error' "$log" | cut -c1-200)"

# --- 7. Overhead: same programs with and without the shim, paired rounds in random order ---
# tests/gpu/overhead.py: steady-state figures, many rounds, a 95 % interval of the median paired
# ratio decides PASS / FAIL / UNDECIDED; a VGPU_SHIM_COUNT=1 run counts the calls the measured
# loop made through the shim (0: the shim ran no code during the loop).
qarg=(); [[ $quick == 1 ]] && qarg=(--quick)
if [[ $overhead == 1 ]]; then
  while IFS='|' read -r tag name verdict detail; do
    [[ $tag == ROW ]] && row "$name" "$verdict" "$detail"
  done < <(python3 tests/gpu/overhead.py "$SHIM" "$B" "$out/logs" "${qarg[@]}" 2>&1 | tee -a "$out/logs/overhead-stdout.txt")
fi

# --- summary ---------------------------------------------------------------------------------
{
  echo "| test | result | measured |"
  echo "|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
} > "$out/summary.md"
echo
echo "== summary ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(uname -r))"
cat "$out/summary.md"
fails=$(grep -c '| FAIL |' "$out/summary.md")
undecided=$(grep -c '| UNDECIDED |' "$out/summary.md")
deviations=$(grep -c '| DEVIATION |' "$out/summary.md")
echo "$(grep -c '| PASS |' "$out/summary.md") passed, $fails failed, $undecided undecided, $deviations deviations"
[[ $fails == 0 && $undecided == 0 && $deviations == 0 ]]
