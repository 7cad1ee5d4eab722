# The vgpu suite's programs talk netlink through kmodclient (static libnl: the guest has no
# shared libraries), and the suite ships a static vgpuctl built from the same sources.
set(vgpu_guest_client_srcs
  ${PROJECT_SOURCE_DIR}/daemon/kmodclient/kmodclient.cc
  ${PROJECT_SOURCE_DIR}/daemon/common/status.cc)
set(vgpu_guest_includes
  ${PROJECT_SOURCE_DIR}/daemon/kmodclient/include
  ${PROJECT_SOURCE_DIR}/daemon/common/include
  ${PROJECT_SOURCE_DIR}/daemon/vgpuctl
  /usr/include/libnl3)
set(vgpu_guest_libs
  /usr/lib/x86_64-linux-gnu/libnl-genl-3.a /usr/lib/x86_64-linux-gnu/libnl-3.a Threads::Threads)

add_executable(vmguest_vgpu_vgpuctl
  ${PROJECT_SOURCE_DIR}/daemon/vgpuctl/main.cc
  ${PROJECT_SOURCE_DIR}/daemon/vgpuctl/cli.cc
  ${PROJECT_SOURCE_DIR}/daemon/vgpuctl/commands.cc
  ${vgpu_guest_client_srcs})
set_target_properties(vmguest_vgpu_vgpuctl PROPERTIES OUTPUT_NAME vgpuctl
  RUNTIME_OUTPUT_DIRECTORY ${VM_GUEST_BIN}/${VMGUEST_SUITE})
target_include_directories(vmguest_vgpu_vgpuctl PRIVATE ${PROJECT_SOURCE_DIR} ${vgpu_guest_includes})
target_compile_definitions(vmguest_vgpu_vgpuctl PRIVATE VGPUCTL_NO_TOPO)
target_link_options(vmguest_vgpu_vgpuctl PRIVATE -static)
target_link_libraries(vmguest_vgpu_vgpuctl PRIVATE ${vgpu_guest_libs})
list(APPEND VMGUEST_TARGETS vmguest_vgpu_vgpuctl)

# Hostile-input tests live in a .cpp (the harness globs only *.c/*.cc) and join vgpu_gtest.
target_sources(vmguest_vgpu_vgpu_gtest PRIVATE ${CMAKE_CURRENT_LIST_DIR}/vgpu_hostile.cpp)
foreach(tgt vmguest_vgpu_vgpu_gtest vmguest_vgpu_vgpu_bench vmguest_vgpu_vgpu_tenant)
  target_sources(${tgt} PRIVATE ${vgpu_guest_client_srcs})
  target_include_directories(${tgt} PRIVATE ${vgpu_guest_includes})
  target_link_libraries(${tgt} PRIVATE ${vgpu_guest_libs})
endforeach()
