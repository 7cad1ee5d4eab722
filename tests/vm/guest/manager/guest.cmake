# The manager's SlotManager and kmod backend, built from their sources into one static program
# (the guest has no shared libraries): kmodclient over static libnl, the checkpoint over static
# zlib, the placer over topology/'s evaluators (vmguest_use_kmodclient: tests/vm/harness).
set(manager_guest_srcs
  daemon/manager/slot_manager.cc daemon/manager/slot_table.cc daemon/manager/allocate.cc
  daemon/manager/link.cc daemon/manager/preferred.cc daemon/manager/grant_builder.cc
  daemon/manager/reconcile.cc daemon/manager/log.cc
  daemon/checkpoint/checkpoint.cc daemon/checkpoint/checkpoint_writer.cc
  daemon/alloc/device_ids.cc daemon/alloc/placement.cc
  daemon/slots/kmod_backend.cc daemon/slots/shim_backend.cc
  daemon/slots/slot_config_file.cc daemon/slots/slot_record_json.cc
  shim/ledger/ledger_reader.cc
  topology/src/topology.cc topology/src/placement.cc topology/src/evaluators.cc)
list(TRANSFORM manager_guest_srcs PREPEND ${PROJECT_SOURCE_DIR}/)
target_sources(vmguest_manager_manager_kmod_test PRIVATE ${manager_guest_srcs})
vmguest_use_kmodclient(vmguest_manager_manager_kmod_test)
target_include_directories(vmguest_manager_manager_kmod_test PRIVATE
  ${PROJECT_SOURCE_DIR}/daemon/manager/include ${PROJECT_SOURCE_DIR}/daemon/checkpoint/include
  ${PROJECT_SOURCE_DIR}/daemon/alloc/include ${PROJECT_SOURCE_DIR}/daemon/slots/include
  ${PROJECT_SOURCE_DIR}/daemon/podresources/include ${PROJECT_SOURCE_DIR}/daemon/common/include
  ${PROJECT_SOURCE_DIR}/topology/include)
target_compile_definitions(vmguest_manager_manager_kmod_test PRIVATE VGPU_HAVE_KMOD_BACKEND=1)
target_link_libraries(vmguest_manager_manager_kmod_test PRIVATE /usr/lib/x86_64-linux-gnu/libz.a)
