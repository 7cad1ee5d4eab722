# The compute suite talks netlink through kmodclient and ships a static vgpuctl, as the vgpu
# suite does (helpers in tests/vm/harness/CMakeLists.txt).
vmguest_add_vgpuctl()
vmguest_use_kmodclient(vmguest_compute_compute_test)

# The tests of the gate's protocol, of its levers and of the perfmon samples join compute_test (parts/: the harness makes a
# program only of the suite folder's own *.c/*.cc); they share compute_suite.h.
target_sources(vmguest_compute_compute_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/parts/compute_gate.cc
  ${CMAKE_CURRENT_LIST_DIR}/parts/compute_levers.cc ${CMAKE_CURRENT_LIST_DIR}/parts/compute_perfmon.cc)
