# The vgpu.ko demo (scripts/demo.d/30-kmod.sh boots it with vgpu_demo=1): two tenants on one
# simulated 1 GiB GPU, each held to its own quota and seeing only its own memory.
set -e
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
insmod ./mod/nvsim.ko num_gpus=1 vidmem_mib=1024 reserved_mib=64
insmod ./mod/vgpu.ko driver_version=580.159.04
echo "## vgpuctl create: two slots on GPU 0"
./vgpuctl create --gpu 0 --name team-a --memory 256Mi --share 60 | head -3
./vgpuctl create --gpu 0 --name team-b --memory 128Mi --share 40 | head -3
ls -l /dev/vgpuctl0 /dev/vgpu0 /dev/vgpuctl1 /dev/vgpu1 /dev/nvidiactl
echo "## tenants allocate 48 MiB chunks until their quota refuses (they keep their memory)"
TENANT_HOLD=1 ./vgpu_tenant 0 48 > $OUT/tenant0.txt & a=$!
TENANT_HOLD=1 ./vgpu_tenant 1 48 > $OUT/tenant1.txt & b=$!
sleep 3; cat $OUT/tenant0.txt $OUT/tenant1.txt
echo "## vgpuctl list"
./vgpuctl list
echo "## the simulated driver's own count (nvsim debugfs)"
head -1 /sys/kernel/debug/nvsim/gpu0
echo "## vgpuctl --json inspect 1 (counters)"
./vgpuctl --json inspect 1 | grep -E '"(mem_charged|mem_denials|ioctls|pids)"' -A0
kill $a $b; wait $a $b 2>/dev/null || true
echo "## dmesg (refusals name slot, pid, comm and why)"
dmesg | grep 'vgpu:' | grep -E 'refused|created' | tail -4
./vgpuctl destroy 0 >/dev/null; ./vgpuctl destroy 1 >/dev/null
rmmod vgpu; rmmod nvsim
echo "demo: done"
