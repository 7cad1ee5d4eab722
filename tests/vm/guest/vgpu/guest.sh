# vgpu.ko in front of nvsim.ko: slots over netlink, forwarding, enforcement, hostile input,
# unload rules, and the RM_CONTROL overhead benchmark (tests/vm/guest/vgpu/README in vgpu_gtest.cc).
set -e
# scripts/demo.d/30-kmod.sh boots the same payload with vgpu_demo=1 on the command line.
if grep -q vgpu_demo=1 /proc/cmdline; then exec sh ./demo.sh; fi
[ -d /sys/kernel/debug/nvsim ] || grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
# Two GPUs: a slot on GPU 0 must not see or attach GPU 1 (parts/vgpu_gpus.cc).
insmod ./mod/nvsim.ko num_gpus=2 vidmem_mib=1024 reserved_mib=64
# nvsim has no /sys/module/nvsim/version: name the ABI it serves.
insmod ./mod/vgpu.ko driver_version=580.159.04
./vgpuctl driver
# VM_APPEND=vgpu_bench_only=1: only the benchmark (for measuring the hot path quickly).
if grep -q vgpu_bench_only=1 /proc/cmdline; then
  ./vgpu_bench | tee $OUT/bench.txt
  rmmod vgpu; rmmod nvsim
  exit 0
fi
# VM_APPEND=vgpu_gtest_filter=PATTERN: only those vgpu_gtest cases (iterating on a few tests).
filter=$(sed -n 's/.*vgpu_gtest_filter=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$filter" ]; then
  ./vgpu_gtest --gtest_filter="$filter" --gtest_output=xml:$OUT/vgpu_gtest.xml
  rmmod vgpu; rmmod nvsim
  exit 0
fi
./vgpu_gtest --gtest_brief=1 --gtest_output=xml:$OUT/vgpu_gtest.xml

# The CLI end to end (as root): create, list (table and JSON), inspect, set, destroy.
./vgpuctl create --gpu 0 --name demo --memory 256Mi --share 50 > $OUT/create.txt
cat $OUT/create.txt
id=$(sed -n 's/^slot \([0-9]*\) .*/\1/p' $OUT/create.txt)
./vgpuctl list
./vgpuctl --json list | grep -q '"name": "demo"'
./vgpuctl set $id --memory 128Mi | grep -q '128.0 MiB'
if ./vgpuctl create --gpu 0 --bogus 2>$OUT/err.txt; then echo "vgpuctl accepted --bogus"; exit 1; fi
grep -q "no flag --bogus" $OUT/err.txt
./vgpuctl destroy $id
[ ! -e /dev/vgpuctl$id ] || { echo "node /dev/vgpuctl$id left after destroy"; exit 1; }

# The KASAN kernel runs everything ~50x slower: a short benchmark there (its ratio means little).
case $KREL in *-amd64) ;; *) export VGPU_BENCH_ROUNDS=9 VGPU_BENCH_CALLS=100 ;; esac
./vgpu_bench | tee $OUT/bench.txt

# Unload while a proxy file is open is refused (the fops own the module), then succeeds.
./vgpuctl create --gpu 0 --name unload > $OUT/create2.txt
id=$(sed -n 's/^slot \([0-9]*\) .*/\1/p' $OUT/create2.txt)
exec 3</dev/vgpuctl$id
if rmmod vgpu 2>/dev/null; then echo "vgpu: rmmod succeeded with /dev/vgpuctl$id open"; exit 1; fi
exec 3<&-
rmmod vgpu   # a slot without open files is torn down by module exit
rmmod nvsim
echo "vgpu: suite done"
