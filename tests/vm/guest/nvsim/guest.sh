# nvsim.ko's own contract tests (docs/nvidia-rm-abi.md §9), then unload rules.
set -e
insmod ./mod/nvsim.ko num_gpus=2 vidmem_mib=1024 reserved_mib=64
./nvsim_test --gtest_brief=1 --gtest_output=xml:$OUT/nvsim_test.xml
./nvsim_share_test --gtest_brief=1 --gtest_output=xml:$OUT/nvsim_share_test.xml
# Unloading while a file is open must be refused (the fops own the module), then succeed.
exec 3</dev/nvidiactl
if rmmod nvsim 2>/dev/null; then echo "nvsim: rmmod succeeded with /dev/nvidiactl open"; exit 1; fi
exec 3<&-
rmmod nvsim
echo "nvsim: load, contract tests, refused busy unload, unload: OK"
