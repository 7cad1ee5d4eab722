#!/bin/bash
# The main job without a GPU. Each part adds its step to scripts/demo.d/ (NN-name.sh, run in order,
# each given the build dir as $1); the demo prints what each step did and where to look, and ends
# with a summary: one line per step with its key figures. A step writes its line with
# `echo "..." >> "$VGPU_DEMO_SUMMARY"`; a step that writes none is listed by name.
set -euo pipefail
build=$(realpath "${1:?usage: demo.sh BUILD_DIR}")
here=$(dirname "$(realpath "$0")")
cd "$here/.."
shopt -s nullglob
steps=("$here"/demo.d/*.sh)
VGPU_DEMO_SUMMARY=$(mktemp)
export VGPU_DEMO_SUMMARY
trap 'rm -f "$VGPU_DEMO_SUMMARY"' EXIT
echo "vgpu demo: ${#steps[@]} steps, build at $build"
for step in "${steps[@]}"; do
  name=$(basename "$step" .sh)
  echo
  echo "=== $name"
  lines_before=$(wc -l <"$VGPU_DEMO_SUMMARY")
  bash "$step" "$build"
  if [ "$(wc -l <"$VGPU_DEMO_SUMMARY")" = "$lines_before" ]; then
    echo "$name: ran (its output is above)" >>"$VGPU_DEMO_SUMMARY"
  fi
done
echo
echo "=== what the demo showed"
sed 's/^/- /' "$VGPU_DEMO_SUMMARY"
echo
echo "Design: docs/design.md. Measured on a real H200: docs/results/. Open holes: README.md."
