# The vgpu suite's programs talk netlink through kmodclient (static libnl: the guest has no
# shared libraries), and the suite ships a static vgpuctl built from the same sources (helpers in
# tests/vm/harness/CMakeLists.txt).
vmguest_add_vgpuctl()

# Hostile-input tests live in a .cpp (the harness globs only *.c/*.cc) and join vgpu_gtest.
target_sources(vmguest_vgpu_vgpu_gtest PRIVATE ${CMAKE_CURRENT_LIST_DIR}/vgpu_hostile.cpp)
foreach(tgt vmguest_vgpu_vgpu_gtest vmguest_vgpu_vgpu_bench vmguest_vgpu_vgpu_tenant)
  vmguest_use_kmodclient(${tgt})
endforeach()
