# The compute suite talks netlink through kmodclient and ships a static vgpuctl, as the vgpu
# suite does (helpers in tests/vm/harness/CMakeLists.txt).
vmguest_add_vgpuctl()
vmguest_use_kmodclient(vmguest_compute_compute_test)
