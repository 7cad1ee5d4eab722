# The compute share controller's kernel host (kmod/compute.c) against nvsim's GPU-time model:
# caps, a weight split with hand-over, no tenant left disabled, counters over netlink, sysfs and
# vgpuctl, and the controller's unload path. compute_test.cc explains the bounds.
set -e
[ -d /sys/kernel/debug/nvsim ] || grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
# GPUs 0-4: one capped tenant each, all at once; GPU 5: the weight pair. 100 us preemption
# granule (nvsim's default) keeps the model close to a runlist.
insmod ./mod/nvsim.ko num_gpus=6 vidmem_mib=256 reserved_mib=16
insmod ./mod/vgpu.ko driver_version=580.159.04

# The KASAN kernel runs ~50x slower: two caps and one judged window there (the same bounds).
case $KREL in
  *-amd64) ;;
  *) export VGPU_COMPUTE_CAPS=30,70 VGPU_COMPUTE_WINDOWS=1 ;;
esac
./compute_test --gtest_brief=1 --gtest_output=xml:$OUT/compute_test.xml

# vgpuctl shows mode, busy, throttled and the achieved shares (table, detail and JSON).
./vgpuctl create --gpu 1 --name ctl-demo --share 40 --mode cap > $OUT/create.txt
id=$(sed -n 's/^slot \([0-9]*\) .*/\1/p' $OUT/create.txt)
./vgpuctl list | tee $OUT/list.txt | grep -q "MODE"
grep -q "40%  *cap" $OUT/list.txt
./vgpuctl inspect $id | tee $OUT/inspect.txt | grep -q "compute         busy"
./vgpuctl --json inspect $id > $OUT/inspect.json
grep -q '"compute_mode": "cap"' $OUT/inspect.json
grep -q '"share_1s_pm"' $OUT/inspect.json
./vgpuctl set $id --mode weight --share 60 > /dev/null
[ "$(cat /sys/class/vgpu/vgpuctl$id/compute_mode)" = weight ]
[ -r /sys/class/vgpu/vgpuctl$id/stats/throttled_ns ]
if ./vgpuctl set $id --mode fair 2>$OUT/err.txt; then echo "vgpuctl accepted --mode fair"; exit 1; fi
grep -q "'fair' is not one of cap | weight" $OUT/err.txt

# Unload with a controlled slot (its thread running): the thread stops, re-opens every gate and
# drops its slot reference before the slot table goes (a leaked reference WARNs, which panics
# the guest); its RM client is freed, so nvsim unloads after vgpu.
ps | grep -q "[v]gpu-compute/1" || { echo "no controller thread for GPU 1"; exit 1; }
rmmod vgpu
if ps | grep -q "[v]gpu-compute"; then echo "controller thread left after rmmod"; exit 1; fi
rmmod nvsim
echo "compute: suite done"
