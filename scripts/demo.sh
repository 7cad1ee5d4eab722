#!/bin/bash
# The main job without a GPU. Each part adds its step to scripts/demo.d/ (NN-name.sh, run in order,
# each given the build dir as $1); the demo prints what each step did and where to look.
set -euo pipefail
build=$(realpath "${1:?usage: demo.sh BUILD_DIR}")
here=$(dirname "$(realpath "$0")")
cd "$here/.."
shopt -s nullglob
steps=("$here"/demo.d/*.sh)
echo "vgpu demo: ${#steps[@]} steps, build at $build"
for step in "${steps[@]}"; do
  echo
  echo "=== $(basename "$step" .sh)"
  bash "$step" "$build"
done
echo
echo "vgpu demo: done"
