# The compute suite talks netlink through kmodclient (static libnl: the guest has no shared
# libraries) and ships a static vgpuctl built from the same sources, as the vgpu suite does.
set(compute_guest_client_srcs
  ${PROJECT_SOURCE_DIR}/daemon/kmodclient/kmodclient.cc
  ${PROJECT_SOURCE_DIR}/daemon/common/status.cc)
set(compute_guest_includes
  ${PROJECT_SOURCE_DIR}/daemon/kmodclient/include
  ${PROJECT_SOURCE_DIR}/daemon/common/include
  ${PROJECT_SOURCE_DIR}/daemon/vgpuctl
  /usr/include/libnl3)
set(compute_guest_libs
  /usr/lib/x86_64-linux-gnu/libnl-genl-3.a /usr/lib/x86_64-linux-gnu/libnl-3.a Threads::Threads)

add_executable(vmguest_compute_vgpuctl
  ${PROJECT_SOURCE_DIR}/daemon/vgpuctl/main.cc
  ${PROJECT_SOURCE_DIR}/daemon/vgpuctl/cli.cc
  ${PROJECT_SOURCE_DIR}/daemon/vgpuctl/commands.cc
  ${compute_guest_client_srcs})
set_target_properties(vmguest_compute_vgpuctl PROPERTIES OUTPUT_NAME vgpuctl
  RUNTIME_OUTPUT_DIRECTORY ${VM_GUEST_BIN}/${VMGUEST_SUITE})
target_include_directories(vmguest_compute_vgpuctl PRIVATE ${PROJECT_SOURCE_DIR} ${compute_guest_includes})
target_compile_definitions(vmguest_compute_vgpuctl PRIVATE VGPUCTL_NO_TOPO)
target_link_options(vmguest_compute_vgpuctl PRIVATE -static)
target_link_libraries(vmguest_compute_vgpuctl PRIVATE ${compute_guest_libs})
list(APPEND VMGUEST_TARGETS vmguest_compute_vgpuctl)

target_sources(vmguest_compute_compute_test PRIVATE ${compute_guest_client_srcs})
target_include_directories(vmguest_compute_compute_test PRIVATE ${compute_guest_includes})
target_link_libraries(vmguest_compute_compute_test PRIVATE ${compute_guest_libs})
