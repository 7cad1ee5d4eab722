# The replay suite's program links the offline replayer (shim/trace/replay*.cc) and the filter
# core it runs (kmod/core), compiled here again without sanitizers: the guest program is static
# and the guest has no libasan. It compares, call by call, what vgpu.ko + nvsim.ko do with a
# recording against what the same core does offline with the recording as the driver.
set(replay_core_dir ${PROJECT_SOURCE_DIR}/kmod/core)
file(GLOB replay_core_srcs CONFIGURE_DEPENDS ${replay_core_dir}/*.c ${replay_core_dir}/sched/*.c)
add_library(vmguest_replay_vcore STATIC ${replay_core_srcs})
target_include_directories(vmguest_replay_vcore PUBLIC ${replay_core_dir} ${replay_core_dir}/sched)
target_compile_options(vmguest_replay_vcore PRIVATE -ffreestanding -nostdinc -O2)

set(replay_vgpu_dir ${PROJECT_SOURCE_DIR}/tests/vm/guest/vgpu)
target_sources(vmguest_replay_replay_test PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/parts/guest_replayer.cc
  ${PROJECT_SOURCE_DIR}/shim/trace/replay.cc
  ${PROJECT_SOURCE_DIR}/shim/trace/replay_host.cc)
vmguest_use_kmodclient(vmguest_replay_replay_test)
# replay_host.cc fills vcore_host_ops with designated initializers: a member appended to the
# ops (optional ones are NULL) must not break this copy before its owner catches up.
set_source_files_properties(${PROJECT_SOURCE_DIR}/shim/trace/replay_host.cc TARGET_DIRECTORY
  vmguest_replay_replay_test PROPERTIES COMPILE_OPTIONS -Wno-missing-field-initializers)
# Optimized: under TCG the JSON parsing of the corpus dominates the suite's time at -O0.
target_compile_options(vmguest_replay_replay_test PRIVATE -O2)
target_link_libraries(vmguest_replay_replay_test PRIVATE vmguest_replay_vcore
  /usr/lib/x86_64-linux-gnu/libz.a)

# The corpus travels with the program (run-guest.sh copies BIN/replay/* into the guest), gzipped
# as recorded: the program reads it with zlib, so the guest needs no gunzip.
file(GLOB_RECURSE replay_traces CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/data/traces/*.jsonl.gz)
set(replay_staged)
foreach(t IN LISTS replay_traces)
  get_filename_component(n ${t} NAME)
  set(dst ${VM_GUEST_BIN}/replay/${n})
  add_custom_command(OUTPUT ${dst} COMMAND ${CMAKE_COMMAND} -E copy ${t} ${dst} DEPENDS ${t}
    COMMENT "replay suite: stage trace ${n}")
  list(APPEND replay_staged ${dst})
endforeach()
add_custom_target(vmguest_replay_traces DEPENDS ${replay_staged})
add_dependencies(vmguest_replay_replay_test vmguest_replay_traces)

# CTest: one result per kernel for this suite. The boot itself (vm_guest_<kver>, harness
# CMakeLists) runs every suite; vm_replay_<kver> runs after it and reports the replay suite's own
# exit status with its per-trace summary lines (FAIL when the boot ran without it, SKIP when there
# was no boot for that kernel).
execute_process(COMMAND ${PROJECT_SOURCE_DIR}/tests/vm/harness/kernels.sh
  OUTPUT_VARIABLE replay_kernels OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE replay_kernels_rc)
if(replay_kernels_rc EQUAL 0 AND NOT replay_kernels STREQUAL "")
  string(REPLACE "\n" ";" replay_kernels "${replay_kernels}")
  foreach(kver IN LISTS replay_kernels ITEMS kasan)
    string(REGEX REPLACE "[^A-Za-z0-9_.-]" "_" tag "${kver}")
    set(o ${CMAKE_BINARY_DIR}/vm/run-${tag}/out/suites/replay)
    add_test(NAME vm_replay_${tag} COMMAND sh -c
      "[ -d '${CMAKE_BINARY_DIR}/vm/run-${tag}/out' ] || { echo 'no boot for ${kver}: vm_guest_${tag} skipped or not run'; exit 77; }; \
       [ -f '${o}/rc' ] || { echo 'the boot did not run the replay suite: see vm_guest_${tag}'; exit 1; }; \
       cat '${o}/replay-summary.txt' 2>/dev/null; rc=$(cat '${o}/rc'); echo \"replay suite exit $rc\"; \
       [ \"$rc\" = 77 ] && tail -1 '${o}/log.txt'; exit $rc")
    set_tests_properties(vm_replay_${tag} PROPERTIES DEPENDS vm_guest_${tag} TIMEOUT 30
      SKIP_RETURN_CODE 77 LABELS "vm")
  endforeach()
endif()
