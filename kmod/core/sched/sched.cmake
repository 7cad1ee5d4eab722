# The share controller as a userspace static library (the same sources go into vgpu.ko through
# sched.mk). Included by every CMake folder that needs it; defined once.
if(NOT TARGET vcore_sched)
  add_library(vcore_sched STATIC
    ${CMAKE_CURRENT_LIST_DIR}/vcore_sched.c
    ${CMAKE_CURRENT_LIST_DIR}/vcore_sched_cap.c
    ${CMAKE_CURRENT_LIST_DIR}/vcore_sched_weight.c
    ${CMAKE_CURRENT_LIST_DIR}/vcore_sched_stats.c
    ${CMAKE_CURRENT_LIST_DIR}/vcore_sched_ctrl.c)
  target_include_directories(vcore_sched PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  # Freestanding like the rest of the core: no libc headers may creep in.
  target_compile_options(vcore_sched PRIVATE -ffreestanding -nostdinc)
endif()
