# Sourced by tests/gpu/e2e.sh and tests/gpu/dra.sh (which set $root, $bundle, $e2e and $out
# first): running programs the way the product path needs on the GPU machine.
#   build_shim [--prebuilt] tests/gpu/build.sh (log in $out/logs/build.txt) unless --prebuilt;
#                           sets shim= build/gpu/libvgpu-shim.so, fails when it is not there
#   row NAME RESULT DETAIL  one check of the summary (ROWS), echoed as it happens
#   run PROG ARGS...        a bundled program through the carried loader and libraries; replaces
#                           the caller (exec), so $! of `(run ...) &` is the program itself
#   util CMD ARGS...        e2e_util.py (grant-sh, grant-env, metric, control)
#   in_pod GRANT CMD...     CMD started as a container with that grant or CDI spec: its mounts
#                           bound in a private mount namespace, its environment exported over the
#                           machine's own without any VGPU_* or LD_PRELOAD (nothing set by hand)
#   bare CMD...             CMD without any VGPU_* or LD_PRELOAD of the machine's
#   mem_in_pod GRANT SLOT [CMD...]  e2e/mem.py in_pod GRANT (its JSON line in $out/mem.json);
#                           while it holds what it got: smi= the driver's per-process MiB for it,
#                           charged= and peak= slot SLOT's metrics from $url, then CMD
# shellcheck shell=bash
build_shim() {
  if [[ ${1:-} != --prebuilt ]]; then
    bash "$root/tests/gpu/build.sh" >"$out/logs/build.txt" 2>&1 || { tail -20 "$out/logs/build.txt"; return 1; }
  fi
  shim=$root/build/gpu/libvgpu-shim.so
  [[ -f $shim ]] || { echo "no $shim"; return 1; }
}
ROWS=()
row() { ROWS+=("| $1 | $2 | $3 |"); echo "[$2] $1: $3"; }
run() { exec "$bundle/lib/ld-linux-x86-64.so.2" --library-path "$bundle/lib" "$@"; }
util() { python3 "$e2e/e2e_util.py" "$@"; }
unset_vgpu=(-u LD_PRELOAD)
for v in $(env | sed -n 's/^\(VGPU_[A-Z0-9_]*\)=.*/\1/p'); do unset_vgpu+=(-u "$v"); done
in_pod() {
  local g=$1
  shift
  env "${unset_vgpu[@]}" unshare -m --propagation private \
    bash -c "$(util grant-sh "$g")"$'\nexec "$@"' in_pod "$@"
}
bare() { env "${unset_vgpu[@]}" "$@"; }
mem_in_pod() {
  local g=$1 slot=$2 m pid
  shift 2
  rm -f "$work/ready"
  in_pod "$g" python3 "$e2e/mem.py" "$work/ready" 6 >"$out/mem.json" 2>"$out/logs/mem.err" &
  m=$!
  for _ in $(seq 300); do [[ -e $work/ready ]] && break; kill -0 $m 2>/dev/null || break; sleep 0.1; done
  sleep 2  # one metrics sample period and a bit
  pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$out/mem.json" 2>/dev/null)
  smi=$(bare nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits |
    awk -F', ' -v p="$pid" '$1 == p {print $2}')
  charged=$(util metric "$url" vgpu_slot_memory_charged_bytes slot="$slot")
  peak=$(util metric "$url" vgpu_slot_memory_peak_bytes slot="$slot")
  "$@"
  wait $m
}
