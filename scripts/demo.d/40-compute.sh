#!/bin/bash
# Compute shares (docs/results/compute-h200.md): the share controller of the filter core (kmod/core/sched) against the
# simulated GPU of its unit tests: hard caps 10..90 % held per 1 s window, a 30/70 weighted split
# and the hand-over when one tenant stops. Real-GPU numbers: docs/results/compute-h200.md.
set -euo pipefail
bin=$1/tests/unit/core/sched/vcore_sched_test
if [[ ! -x $bin ]]; then
  echo "compute: $bin not built; skipping"
  exit 0
fi
res=$("$bin" --gtest_brief=1 \
  --gtest_filter='Caps/CapShortKernels.*:Weight.SplitThirtySeventyWithinFivePoints:Weight.HandOverWithinTwoHundredMs:CapSampled.PhasesWithH200LikeMeasurement' |
  grep -E '^(cap|weight|hand-over|H200-like)|PASSED|FAILED')
echo "$res"
echo "compute: the share controller on a simulated GPU: $(echo "$res" | grep -E '^(cap|weight)' | wc -l) cap/weight runs, $(echo "$res" | grep -E 'PASSED|FAILED' | tr -s ' ')" >>"${VGPU_DEMO_SUMMARY:-/dev/null}"
echo "compute: controller held every cap and the 30/70 split within 5 points (simulated GPU);"
echo "         the H200 measurements and what is unmet are in docs/results/compute-h200.md"
