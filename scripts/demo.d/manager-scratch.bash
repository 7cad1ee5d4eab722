# Sourced (not a step: demo.sh runs only *.sh) by the steps that run vgpu-manager in the
# background: a scratch directory $work, and an EXIT trap that stops the manager whose pid is in
# $pid (if any) and removes $work. Usage: . manager-scratch.bash NAME  (NAME goes into $work's name)
work=$(mktemp -d "/tmp/vgpu-demo-${1:?usage: . manager-scratch.bash NAME}-XXXXXX")
pid=
cleanup() {
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
