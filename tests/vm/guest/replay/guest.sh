# The corpus through /dev/vgpu*: vgpu.ko in front of nvsim.ko, compared call by call with the
# offline replay (README.md). nvsim gets room for the largest trace's peak (3.1 GiB + context)
# and a reserve, so TOTAL_RAM - HEAP_SIZE is visible in the relation it checks.
set -e
[ -f ./mod/vgpu.ko ] || { echo "vgpu.ko not built"; exit 77; }
insmod ./mod/nvsim.ko num_gpus=1 vidmem_mib=8192 reserved_mib=512
insmod ./mod/vgpu.ko driver_version=580.159.04
# The KASAN kernel runs everything ~50x slower: the two smallest traces, one quota run.
case $KREL in
  *-amd64) ;;
  *) export REPLAY_TRACES="nvidia-smi-query.jsonl.gz cuda-context-nvos21-noevents.jsonl.gz"
     export REPLAY_QUOTA_RUNS=1 ;;
esac
rc=0
./replay_test --gtest_brief=1 --gtest_output=xml:$OUT/replay_test.xml || rc=$?
rmmod vgpu
rmmod nvsim
exit $rc
