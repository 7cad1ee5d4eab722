# Sourced by tests/gpu/e2e.sh and tests/gpu/dra.sh (which set $bundle and $e2e first): running
# programs the way the product path needs on the GPU machine.
#   row NAME RESULT DETAIL  one check of the summary (ROWS), echoed as it happens
#   run PROG ARGS...        a bundled program through the carried loader and libraries; replaces
#                           the caller (exec), so $! of `(run ...) &` is the program itself
#   util CMD ARGS...        e2e_util.py (grant-sh, grant-env, metric, control)
#   in_pod GRANT CMD...     CMD started as a container with that grant or CDI spec: its mounts
#                           bound in a private mount namespace, its environment exported over the
#                           machine's own without any VGPU_* or LD_PRELOAD (nothing set by hand)
#   bare CMD...             CMD without any VGPU_* or LD_PRELOAD of the machine's
# shellcheck shell=bash
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
