# The manager's kmod backend (daemon/slots/kmod_backend.cc) and SlotManager against vgpu.ko in
# front of nvsim.ko with two GPUs: slots for allocations, reattach after a restart, orphan
# reclaim, usage counters (manager_kmod_test.cc). ~4 s on the Debian kernels (6.12, TCG); the
# ~50x slower KASAN kernel runs only the two tests whose kernel paths KASAN is for (open files
# across a restart, destroy refused then done at last close).
set -e
[ -f ./mod/vgpu.ko ] || { echo "vgpu.ko not built for $KREL"; exit 77; }
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
insmod ./mod/nvsim.ko num_gpus=2 vidmem_mib=1024 reserved_mib=64
insmod ./mod/vgpu.ko driver_version=580.159.04
filter='*'
case $KREL in *-amd64) ;; *) filter='*Restart*:*Orphans*' ;; esac
rc=0
./manager_kmod_test --gtest_brief=1 --gtest_filter="$filter" \
    --gtest_output=xml:$OUT/manager_kmod_test.xml || rc=$?
rmmod vgpu
rmmod nvsim
[ $rc -eq 0 ] || exit $rc
echo "manager: suite done"
