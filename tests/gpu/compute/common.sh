# Sourced by the full-shim GPU scripts (fullshim.sh, slot2.sh, uncapped.sh): the paths, the output
# folder and the build. usage: source common.sh NAME PREBUILT_FLAG
#   NAME: out-NAME under build/gpu-compute unless $OUT is set; results in $out/NAME.jsonl ($res)
#   PREBUILT_FLAG: "--prebuilt" uses build/gpu as it is; anything else builds it first
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
here=$root/tests/gpu/compute
out=${OUT:-$root/build/gpu-compute/out-$1}
mkdir -p "$out"
if [[ ${2:-} != --prebuilt ]]; then
  bash "$root/tests/gpu/build.sh" >"$out/build.txt" 2>&1 || { tail -20 "$out/build.txt"; exit 1; }
fi
lib=$root/build/gpu/libvgpu-shim.so
res=$out/$1.jsonl
: >"$res"
export PYTHONUNBUFFERED=1
