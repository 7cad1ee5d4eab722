# The vgpu suite's programs talk netlink through kmodclient (static libnl: the guest has no
# shared libraries), and the suite ships a static vgpuctl built from the same sources (helpers in
# tests/vm/harness/CMakeLists.txt).
vmguest_add_vgpuctl()

# Hostile-input, lifetime and limit tests live in parts/ (the harness makes a program only of the
# suite folder's own *.c/*.cc) and join vgpu_gtest.
target_sources(vmguest_vgpu_vgpu_gtest PRIVATE ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_hostile.cc
  ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_tamper.cc ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_lifetime.cc
  ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_limits.cc ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_callpath.cc
  ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_settings.cc ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_gpus.cc
  ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_uvm_external.cc ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_fabric.cc
  ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_call_queue.cc ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_managed.cc
  ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_uvm_sealed.cc ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_class_swap.cc
  ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_rm_sealed.cc ${CMAKE_CURRENT_LIST_DIR}/parts/vgpu_uvm_ptables.cc)
foreach(tgt vmguest_vgpu_vgpu_gtest vmguest_vgpu_vgpu_bench vmguest_vgpu_vgpu_tenant)
  vmguest_use_kmodclient(${tgt})
endforeach()

# The RM_CONTROL overhead benchmark on its own (make bench, CTest label "bench"): one boot per
# Debian kernel with vgpu_bench_only=1 on the guest's command line (guest.sh then runs only
# vgpu_bench), after the modules are built (the harness's vm_mods_<tag> fixtures), alone on the
# machine (RUN_SERIAL) so that no other test's load lands in the timed rounds. It prints the
# ratios (tests/vm/guest/vgpu/vgpu_bench.cc) and fails only if the guest or a call fails. The
# suite's run inside vm_guest_<kver> measures the same thing among the other suites.
execute_process(COMMAND ${PROJECT_SOURCE_DIR}/tests/vm/harness/kernels.sh --bootable
  OUTPUT_VARIABLE vgpu_bench_kernels OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "\n" ";" vgpu_bench_kernels "${vgpu_bench_kernels}")
foreach(kver IN LISTS vgpu_bench_kernels)
  string(REGEX REPLACE "[^A-Za-z0-9_.-]" "_" tag "${kver}")
  set(work ${CMAKE_BINARY_DIR}/vm/bench-${tag})
  add_test(NAME vm_bench_vgpu_${tag} COMMAND sh -c
    "log=$(VM_APPEND=vgpu_bench_only=1 GUEST_TIMEOUT=300 \"$0\" --kernel \"$1\" --mods \"$2\" --bin \"$3\" --work \"$4\" --suite vgpu 2>&1) || { rc=$?; echo \"$log\" | tail -40; exit $rc; }; grep '^bench' \"$4/out/suites/vgpu/log.txt\""
    ${PROJECT_SOURCE_DIR}/tests/vm/harness/run-guest.sh ${kver} ${CMAKE_BINARY_DIR}/vm/kmod/${kver}/mod
    ${CMAKE_BINARY_DIR}/vm/guest-bin ${work})
  set_tests_properties(vm_bench_vgpu_${tag} PROPERTIES LABELS "bench;vm" TIMEOUT 360
    RUN_SERIAL TRUE SKIP_RETURN_CODE 77 FIXTURES_REQUIRED vm_mods_${tag})
endforeach()
