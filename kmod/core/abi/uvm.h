/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * nvidia-uvm ioctls: plain numbers, not _IOC-encoded (UVM_IOCTL_BASE(i) = i,
 * kernel-open/nvidia-uvm/uvm_ioctl.h:38-40; INITIALIZE/DEINITIALIZE in
 * uvm_linux_ioctl.h:32,40). nvidia-rm-abi.md §7. Data only.
 */
#ifndef VCORE_ABI_UVM_H
#define VCORE_ABI_UVM_H

#include "../vcore_types.h"

#define UVM_INITIALIZE			      0x30000001
#define UVM_DEINITIALIZE		      0x30000002
#define UVM_RESERVE_VA			      1
#define UVM_RELEASE_VA			      2
#define UVM_REGION_COMMIT		      3
#define UVM_REGION_DECOMMIT		      4
#define UVM_REGION_SET_STREAM		      5
#define UVM_SET_STREAM_RUNNING		      6
#define UVM_SET_STREAM_STOPPED		      7
#define UVM_RUN_TEST			      9
#define UVM_ADD_SESSION			      10
#define UVM_REMOVE_SESSION		      11
#define UVM_ENABLE_COUNTERS		      12
#define UVM_MAP_COUNTER			      13
#define UVM_CREATE_EVENT_QUEUE		      14
#define UVM_REMOVE_EVENT_QUEUE		      15
#define UVM_MAP_EVENT_QUEUE		      16
#define UVM_EVENT_CTRL			      17
#define UVM_REGISTER_MPS_SERVER		      18
#define UVM_REGISTER_MPS_CLIENT		      19
#define UVM_GET_GPU_UUID_TABLE		      20
#define UVM_CREATE_RANGE_GROUP		      23
#define UVM_DESTROY_RANGE_GROUP		      24
#define UVM_REGISTER_GPU_VASPACE	      25
#define UVM_UNREGISTER_GPU_VASPACE	      26
#define UVM_REGISTER_CHANNEL		      27
#define UVM_UNREGISTER_CHANNEL		      28
#define UVM_ENABLE_PEER_ACCESS		      29
#define UVM_DISABLE_PEER_ACCESS		      30
#define UVM_SET_RANGE_GROUP		      31
#define UVM_MAP_EXTERNAL_ALLOCATION	      33
#define UVM_FREE			      34
#define UVM_MEM_MAP			      35
#define UVM_DEBUG_ACCESS_MEMORY		      36
#define UVM_REGISTER_GPU		      37
#define UVM_UNREGISTER_GPU		      38
#define UVM_PAGEABLE_MEM_ACCESS		      39
#define UVM_PREVENT_MIGRATION_RANGE_GROUPS    40
#define UVM_ALLOW_MIGRATION_RANGE_GROUPS      41
#define UVM_SET_PREFERRED_LOCATION	      42
#define UVM_UNSET_PREFERRED_LOCATION	      43
#define UVM_ENABLE_READ_DUPLICATION	      44
#define UVM_DISABLE_READ_DUPLICATION	      45
#define UVM_SET_ACCESSED_BY		      46
#define UVM_UNSET_ACCESSED_BY		      47
#define UVM_MIGRATE			      51
#define UVM_MIGRATE_RANGE_GROUP		      53
#define UVM_ENABLE_SYSTEM_WIDE_ATOMICS	      54
#define UVM_DISABLE_SYSTEM_WIDE_ATOMICS	      55
#define UVM_TOOLS_INIT_EVENT_TRACKER	      56
#define UVM_TOOLS_SET_NOTIFICATION_THRESHOLD  57
#define UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS   58
#define UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS  59
#define UVM_TOOLS_ENABLE_COUNTERS	      60
#define UVM_TOOLS_DISABLE_COUNTERS	      61
#define UVM_TOOLS_READ_PROCESS_MEMORY	      62
#define UVM_TOOLS_WRITE_PROCESS_MEMORY	      63
#define UVM_TOOLS_GET_PROCESSOR_UUID_TABLE    64
#define UVM_MAP_DYNAMIC_PARALLELISM_REGION    65
#define UVM_UNMAP_EXTERNAL		      66
#define UVM_TOOLS_FLUSH_EVENTS		      67
#define UVM_ALLOC_SEMAPHORE_POOL	      68
#define UVM_CLEAN_UP_ZOMBIE_RESOURCES	      69
#define UVM_PAGEABLE_MEM_ACCESS_ON_GPU	      70
#define UVM_POPULATE_PAGEABLE		      71
#define UVM_VALIDATE_VA_RANGE		      72
#define UVM_CREATE_EXTERNAL_RANGE	      73
#define UVM_MAP_EXTERNAL_SPARSE		      74
#define UVM_MM_INITIALIZE		      75
#define UVM_TOOLS_INIT_EVENT_TRACKER_V2	      76
#define UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2 77
#define UVM_ALLOC_DEVICE_P2P		      78
#define UVM_CLEAR_ALL_ACCESS_COUNTERS	      79
#define UVM_DISCARD			      80
#define UVM_IS_8_SUPPORTED		      2047

/* UVM_MM_INITIALIZE_PARAMS {NvS32 uvmFd; NV_STATUS rmStatus}: uvmFd is
 * fget()-ed and checked against uvm_fops (uvm.c:49-56). */
typedef struct UVM_MM_INITIALIZE_PARAMS {
	vcore_s32 uvmFd;
	vcore_u32 rmStatus;
} UVM_MM_INITIALIZE_PARAMS;
_Static_assert(sizeof(UVM_MM_INITIALIZE_PARAMS) == 8, "UVM_MM_INITIALIZE");

/*
 * External mappings (uvm_ioctl.h, uvm_types.h): only the fields the core
 * reads. UVM_MAP_EXTERNAL_ALLOCATION_PARAMS is {NvU64 base, length, offset;
 * UvmGpuMappingAttributes perGpuAttributes[UVM_MAX_GPUS] (36 B each,
 * NvProcessorUuid gpuUuid first; UVM_MAX_GPUS = NV_MAX_DEVICES 32 x
 * UVM_PARENT_ID_MAX_SUB_PROCESSORS 8); NvU64 gpuAttributesCount; NvS32
 * rmCtrlFd; NvU32 hClient, hMemory; NV_STATUS rmStatus}: 9264 B.
 * UVM_CREATE_EXTERNAL_RANGE_PARAMS and UVM_FREE_PARAMS {base, length,
 * rmStatus}: 24 B; UVM_UNMAP_EXTERNAL_PARAMS and
 * UVM_MAP_EXTERNAL_SPARSE_PARAMS {base, length, NvProcessorUuid gpuUuid,
 * rmStatus}: 40 B. base and length lead every one.
 */
#define UVM_MAX_GPUS				 256u
#define UVM_GPU_MAPPING_ATTRIBUTES_SIZE		 36u
#define VCORE_UVM_UUID_SIZE			 16u /* NvProcessorUuid */
#define UVM_MAP_EXTERNAL_ALLOCATION_GPU_UUID_OFF 24u /* perGpuAttributes[0] */
#define UVM_MAP_EXTERNAL_ALLOCATION_COUNT_OFF                                  \
	(24u + UVM_MAX_GPUS * UVM_GPU_MAPPING_ATTRIBUTES_SIZE)
#define UVM_MAP_EXTERNAL_ALLOCATION_HCLIENT_OFF                                \
	(UVM_MAP_EXTERNAL_ALLOCATION_COUNT_OFF + 8u + 4u)
#define UVM_MAP_EXTERNAL_ALLOCATION_RMSTATUS_OFF                               \
	(UVM_MAP_EXTERNAL_ALLOCATION_HCLIENT_OFF + 8u)
#define UVM_MAP_EXTERNAL_ALLOCATION_SIZE       9264u
#define UVM_CREATE_EXTERNAL_RANGE_SIZE	       24u
#define UVM_FREE_SIZE			       24u
#define UVM_UNMAP_EXTERNAL_SIZE		       40u
#define UVM_MAP_EXTERNAL_SPARSE_SIZE	       40u
#define UVM_CREATE_EXTERNAL_RANGE_RMSTATUS_OFF 16u
#define UVM_FREE_RMSTATUS_OFF		       16u
#define UVM_UNMAP_EXTERNAL_GPU_UUID_OFF	       16u /* also MAP_EXTERNAL_SPARSE's */
#define UVM_UNMAP_EXTERNAL_RMSTATUS_OFF	       32u
#define UVM_MAP_EXTERNAL_SPARSE_RMSTATUS_OFF   32u
_Static_assert(UVM_MAP_EXTERNAL_ALLOCATION_RMSTATUS_OFF + 4u ==
		       UVM_MAP_EXTERNAL_ALLOCATION_SIZE,
	       "UVM_MAP_EXTERNAL_ALLOCATION.rmStatus");
_Static_assert(UVM_MAP_EXTERNAL_ALLOCATION_HCLIENT_OFF == 9252,
	       "UVM_MAP_EXTERNAL_ALLOCATION.hClient");

#endif /* VCORE_ABI_UVM_H */
