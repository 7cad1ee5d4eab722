// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * tables_580.c - the RM ABI of the 580 driver branch, as data.
 *
 * One table set per branch; a later branch is a struct vcore_abi whose
 * parent is this one and whose rows are only what changed (add, replace,
 * or a *_REMOVED row), the way gVisor builds its version tree
 * (nvproxy/version.go, STYLE.md §2). The delta file of a branch is that
 * branch's ABI changelog.
 *
 * Implementors adding a row: the number comes from nv_escape.h,
 * nv-ioctl-numbers.h, ctrl/ctrlXXXX/ctrlXXXXyyy.h or class/clXXXX.h of the
 * branch; the size from the params struct, defined in kmod/core/abi/ with the
 * driver's name and layout and named by the row; add the struct to
 * tests/data/abi/rm-layout-list.h and regenerate rm-580.txt
 * (scripts/abi-layout.sh): abi_layout_test then holds the row to the driver.
 * Give it a handler only if the core must act on it.
 */
#include "vcore_internal.h"
#include "abi/nv_escape.h"
#include "abi/ctrl.h"
#include "abi/classes.h"
#include "abi/uvm.h"

/*
 * A row names the driver's params struct (kmod/core/abi/, the driver's name):
 * its size and status offset come from that definition, so each is spelled
 * once, and tests/unit/core/abi_layout_test.cc checks both against NVIDIA's
 * headers (tests/data/abi/rm-580.txt).
 */
#define ESC(nr_, type_, pre_)                                                  \
	{                                                                      \
		.nr = nr_, .size = sizeof(type_),                              \
		.status_off = VCORE_OFF(type_, status), .pre = pre_,           \
		.name = #nr_, .params = #type_                                 \
	}
/* ... whose status field has another name */
#define ESC_ST(nr_, type_, status_, pre_)                                      \
	{                                                                      \
		.nr = nr_, .size = sizeof(type_),                              \
		.status_off = VCORE_OFF(type_, status_), .pre = pre_,          \
		.name = #nr_, .params = #type_                                 \
	}
/* ... without a status field */
#define ESC_NS(nr_, type_, pre_)                                               \
	{                                                                      \
		.nr = nr_, .size = sizeof(type_),                              \
		.flags = VCORE_ESC_NO_STATUS, .pre = pre_, .name = #nr_,       \
		.params = #type_                                               \
	}
/* an escape RmIoctl has no handler for: no params */
#define ESC_NONE(nr_, pre_)                                                    \
	{                                                                      \
		.nr = nr_, .flags = VCORE_ESC_NO_STATUS, .pre = pre_,          \
		.name = #nr_                                                   \
	}

/* nvidia-rm-abi.md §2: every escape of the branch with its exact size. */
static const struct vcore_esc_row esc_580[] = {
	/* nv-unix-nvos-params-wrappers.h */
	ESC_ST(NV_ESC_RM_ALLOC_MEMORY, nv_ioctl_nvos02_parameters_with_fd,
	       params.status, vcore_esc_rm_alloc_memory),
	/* nvos.h */
	ESC(NV_ESC_RM_ALLOC_OBJECT, NVOS05_PARAMETERS,
	    vcore_esc_rm_alloc_object),
	ESC(NV_ESC_RM_FREE, NVOS00_PARAMETERS, vcore_esc_rm_free),
	ESC(NV_ESC_RM_CONTROL, NVOS54_PARAMETERS, vcore_esc_rm_control),
	/* NVOS64 (48) or NVOS21 (32); status at 40 in NVOS64 and 28 in
	 * NVOS21 -- the handler fixes the offset per size. */
	{.nr = NV_ESC_RM_ALLOC,
	 .size = sizeof(NVOS64_PARAMETERS),
	 .alt_size = sizeof(NVOS21_PARAMETERS),
	 .status_off = VCORE_OFF(NVOS64_PARAMETERS, status),
	 .pre = vcore_esc_rm_alloc,
	 .name = "NV_ESC_RM_ALLOC",
	 .params = "NVOS64_PARAMETERS"},
	ESC_NONE(NV_ESC_RM_CONFIG_GET, vcore_esc_no_driver_handler),
	ESC_NONE(NV_ESC_RM_CONFIG_SET, vcore_esc_no_driver_handler),
	ESC(NV_ESC_RM_DUP_OBJECT, NVOS55_PARAMETERS, vcore_esc_rm_dup_object),
	ESC(NV_ESC_RM_SHARE, NVOS57_PARAMETERS, vcore_esc_rm_share),
	ESC_NONE(NV_ESC_RM_CONFIG_GET_EX, vcore_esc_no_driver_handler),
	ESC_NONE(NV_ESC_RM_CONFIG_SET_EX, vcore_esc_no_driver_handler),
	ESC(NV_ESC_RM_I2C_ACCESS, NVOS_I2C_ACCESS_PARAMS, vcore_esc_pass),
	ESC(NV_ESC_RM_IDLE_CHANNELS, NVOS30_PARAMETERS,
	    vcore_esc_idle_channels),
	ESC(NV_ESC_RM_VID_HEAP_CONTROL, NVOS32_PARAMETERS,
	    vcore_esc_vid_heap_control),
	ESC(NV_ESC_RM_ACCESS_REGISTRY, NVOS38_PARAMETERS, vcore_esc_privileged),
	ESC_ST(NV_ESC_RM_MAP_MEMORY, nv_ioctl_nvos33_parameters_with_fd,
	       params.status, vcore_esc_map_memory),
	ESC(NV_ESC_RM_UNMAP_MEMORY, NVOS34_PARAMETERS, vcore_esc_pass),
	ESC(NV_ESC_RM_GET_EVENT_DATA, NVOS41_PARAMETERS,
	    vcore_esc_get_event_data),
	ESC(NV_ESC_RM_ALLOC_CONTEXT_DMA2, NVOS39_PARAMETERS, vcore_esc_pass),
	ESC_NONE(NV_ESC_RM_ADD_VBLANK_CALLBACK, vcore_esc_no_driver_handler),
	ESC(NV_ESC_RM_MAP_MEMORY_DMA, NVOS46_PARAMETERS,
	    vcore_esc_map_memory_dma),
	ESC(NV_ESC_RM_UNMAP_MEMORY_DMA, NVOS47_PARAMETERS,
	    vcore_esc_map_memory_dma),
	ESC(NV_ESC_RM_BIND_CONTEXT_DMA, NVOS49_PARAMETERS, vcore_esc_pass),
	ESC_NONE(NV_ESC_RM_EXPORT_OBJECT_TO_FD, vcore_esc_no_driver_handler),
	ESC_NONE(NV_ESC_RM_IMPORT_OBJECT_FROM_FD, vcore_esc_no_driver_handler),
	ESC(NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO, NVOS56_PARAMETERS,
	    vcore_esc_pass),
	ESC_NONE(NV_ESC_RM_LOCKLESS_DIAGNOSTIC, vcore_esc_privileged),
	/* nv-ioctl.h, nv-ioctl-numa.h */
	{.nr = NV_ESC_CARD_INFO,
	 .size = sizeof(nv_ioctl_card_info_t),
	 .flags = VCORE_ESC_SIZE_MULTIPLE | VCORE_ESC_NO_STATUS,
	 .pre = vcore_esc_card_info,
	 .name = "NV_ESC_CARD_INFO",
	 .params = "nv_ioctl_card_info_t"},
	ESC_NS(NV_ESC_REGISTER_FD, nv_ioctl_register_fd_t,
	       vcore_esc_register_fd),
	ESC_ST(NV_ESC_ALLOC_OS_EVENT, nv_ioctl_alloc_os_event_t, Status,
	       vcore_esc_pass),
	ESC_ST(NV_ESC_FREE_OS_EVENT, nv_ioctl_free_os_event_t, Status,
	       vcore_esc_pass),
	ESC(NV_ESC_STATUS_CODE, nv_ioctl_status_code_t, vcore_esc_pass),
	ESC_NS(NV_ESC_CHECK_VERSION_STR, nv_ioctl_rm_api_version_t,
	       vcore_esc_pass),
	/* NV_ESC_IOCTL_XFER_CMD is unwrapped before the lookup. */
	{.nr = NV_ESC_ATTACH_GPUS_TO_FD,
	 .size = sizeof(vcore_u32), /* NvU32 gpu_id[] */
	 .flags = VCORE_ESC_SIZE_MULTIPLE | VCORE_ESC_NO_STATUS,
	 .pre = vcore_esc_attach_gpus_to_fd,
	 .name = "NV_ESC_ATTACH_GPUS_TO_FD"},
	ESC(NV_ESC_QUERY_DEVICE_INTR, nv_ioctl_query_device_intr,
	    vcore_esc_pass),
	ESC_NS(NV_ESC_SYS_PARAMS, nv_ioctl_sys_params_t, vcore_esc_pass),
	ESC(NV_ESC_NUMA_INFO, nv_ioctl_numa_info_t, vcore_esc_pass),
	ESC_NS(NV_ESC_SET_NUMA_STATUS, nv_ioctl_set_numa_status_t,
	       vcore_esc_privileged),
	ESC(NV_ESC_EXPORT_TO_DMABUF_FD, nv_ioctl_export_to_dma_buf_fd_t,
	    vcore_esc_export_dmabuf),
	ESC_NS(NV_ESC_WAIT_OPEN_COMPLETE, nv_ioctl_wait_open_complete_t,
	       vcore_esc_pass),
};

#define CTRL(cmd_, type_)                                                      \
	{                                                                      \
		.cmd = cmd_, .size = sizeof(type_), .name = #cmd_,             \
		.params = #type_                                               \
	}
#define CTRL_ANY(cmd_)                                                         \
	{                                                                      \
		.cmd = cmd_, .size = RMAPI_PARAM_COPY_MAX_PARAMS_SIZE,         \
		.flags = VCORE_CTRL_ANY_SIZE, .name = #cmd_                    \
	}
#define CTRL_H(cmd_, type_, pre_)                                              \
	{                                                                      \
		.cmd = cmd_, .size = sizeof(type_), .pre = pre_,               \
		.name = #cmd_, .params = #type_                                \
	}
/* A reply view (views.c): no pre handler, a rewrite after the driver. */
#define CTRL_VIEW(cmd_, type_, view_)                                          \
	{                                                                      \
		.cmd = cmd_, .size = sizeof(type_),                            \
		.flags = VCORE_CTRL_VIEW(view_), .name = #cmd_,                \
		.params = #type_                                               \
	}
/* Reserved to the compute controller (rm_control.c), any size. */
#define CTRL_RESERVED(cmd_)                                                    \
	{                                                                      \
		.cmd = cmd_, .size = RMAPI_PARAM_COPY_MAX_PARAMS_SIZE,         \
		.flags = VCORE_CTRL_ANY_SIZE,                                  \
		.pre = vcore_ctrl_sched_reserved, .name = #cmd_                \
	}

/* Calls that list or name the node's GPUs (gpus.c), any size. */
#define CTRL_GPU(cmd_, pre_)                                                   \
	{                                                                      \
		.cmd = cmd_, .size = RMAPI_PARAM_COPY_MAX_PARAMS_SIZE,         \
		.flags = VCORE_CTRL_ANY_SIZE, .pre = pre_, .name = #cmd_       \
	}

/* Other tenants' processes, or node-wide state (rm_control.c), any size. */
#define CTRL_NODE_PRIVATE(cmd_)                                                \
	{                                                                      \
		.cmd = cmd_, .size = RMAPI_PARAM_COPY_MAX_PARAMS_SIZE,         \
		.flags = VCORE_CTRL_ANY_SIZE, .pre = vcore_ctrl_node_private,  \
		.name = #cmd_                                                  \
	}

/*
 * Controls with behaviour (exact sizes), then the pass-through controls
 * named in nvidia-rm-abi.md or seen from libcuda/NVML by gVisor (ctrl.go).
 * Pass rows whose params layout this table does not pin use CTRL_ANY: the
 * driver still checks paramsSize exactly (control.c:453-461).
 */
static const struct vcore_ctrl_row ctrl_580[] = {
	/* views (views.c) */
	CTRL_VIEW(NV2080_CTRL_CMD_FB_GET_INFO_V2,
		  NV2080_CTRL_FB_GET_INFO_V2_PARAMS, VCORE_VIEW_FB_INFO_V2),
	CTRL_VIEW(NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2,
		  NV2080_CTRL_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2_PARAMS,
		  VCORE_VIEW_PERFMON_SAMPLES),
	CTRL_H(NV2080_CTRL_CMD_FB_GET_INFO, NV2080_CTRL_FB_GET_INFO_PARAMS,
	       vcore_ctrl_fb_get_info),
	CTRL_H(NV2080_CTRL_CMD_GPU_GET_PIDS, NV2080_CTRL_GPU_GET_PIDS_PARAMS,
	       vcore_ctrl_get_pids),
	CTRL_H(NV2080_CTRL_CMD_GPU_GET_PID_INFO,
	       NV2080_CTRL_GPU_GET_PID_INFO_PARAMS, vcore_ctrl_get_pid_info),
	/* fds the driver fget()s (abi.md §9.3) */
	CTRL_H(NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD,
	       NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS,
	       vcore_ctrl_unix_export_object_to_fd),
	CTRL_H(NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD,
	       NV0000_CTRL_OS_UNIX_IMPORT_OBJECT_FROM_FD_PARAMS,
	       vcore_ctrl_unix_fd_at0),
	CTRL_H(NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO,
	       NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS,
	       vcore_ctrl_unix_fd_at0),
	CTRL_H(NV0000_CTRL_CMD_OS_UNIX_CREATE_EXPORT_OBJECT_FD,
	       NV0000_CTRL_OS_UNIX_CREATE_EXPORT_OBJECT_FD_PARAMS,
	       vcore_ctrl_unix_create_export_fd),
	CTRL_H(NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD,
	       NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS,
	       vcore_ctrl_unix_export_objects),
	CTRL_H(NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD,
	       NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS,
	       vcore_ctrl_unix_import_objects),
	CTRL_H(NV00FD_CTRL_CMD_ATTACH_GPU, NV00FD_CTRL_ATTACH_GPU_PARAMS,
	       vcore_ctrl_attach_gpu),
	CTRL_H(NV00E0_CTRL_CMD_EXPORT_MEM, NV00E0_CTRL_EXPORT_MEM_PARAMS,
	       vcore_ctrl_export_mem),
	CTRL_ANY(NV00E0_CTRL_CMD_IMPORT_MEM),
	CTRL(NV0000_CTRL_CMD_OS_UNIX_FLUSH_USER_CACHE,
	     NV0000_CTRL_OS_UNIX_FLUSH_USER_CACHE_PARAMS),
	CTRL(NV0000_CTRL_CMD_OS_UNIX_GET_CONTROL_FILE_DESCRIPTOR,
	     NV0000_CTRL_OS_UNIX_GET_CONTROL_FILE_DESCRIPTOR_PARAMS),
	CTRL(NV0000_CTRL_CMD_OS_GET_GPU_INFO,
	     NV0000_CTRL_OS_GET_GPU_INFO_PARAMS),
	/* TSG and channel scheduling (abi.md §6.2) */
	CTRL_H(NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
	       NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS, vcore_ctrl_tsg_schedule),
	CTRL_ANY(NVA06C_CTRL_CMD_BIND),
	CTRL_H(NVA06C_CTRL_CMD_SET_TIMESLICE, NVA06C_CTRL_TIMESLICE_PARAMS,
	       vcore_ctrl_tsg_set_timeslice),
	CTRL(NVA06C_CTRL_CMD_GET_TIMESLICE, NVA06C_CTRL_TIMESLICE_PARAMS),
	CTRL_H(NVA06C_CTRL_CMD_PREEMPT, NVA06C_CTRL_PREEMPT_PARAMS,
	       vcore_ctrl_tsg_preempt),
	CTRL(NVA06C_CTRL_CMD_GET_INFO, NVA06C_CTRL_GET_INFO_PARAMS),
	CTRL_RESERVED(NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL),
	CTRL(NVA06C_CTRL_CMD_GET_INTERLEAVE_LEVEL,
	     NVA06C_CTRL_INTERLEAVE_LEVEL_PARAMS),
	CTRL_RESERVED(NVA06C_CTRL_CMD_MAKE_REALTIME),
	CTRL_RESERVED(NVA06F_CTRL_CMD_GPFIFO_SCHEDULE),
	CTRL_ANY(NVA06F_CTRL_CMD_BIND),
	CTRL_RESERVED(NVA06F_CTRL_CMD_RESTART_RUNLIST),
	CTRL_ANY(NVA06F_CTRL_CMD_STOP_CHANNEL),
	CTRL_RESERVED(NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS),
	CTRL_RESERVED(NV2080_CTRL_CMD_FIFO_RUNLIST_SET_SCHED_POLICY),
	CTRL_ANY(NV2080_CTRL_CMD_FIFO_GET_ALLOCATED_CHANNELS),
	CTRL_ANY(NV2080_CTRL_CMD_FIFO_OBJSCHED_GET_STATE),
	CTRL_RESERVED(NV2080_CTRL_CMD_FIFO_OBJSCHED_SET_STATE),
	CTRL_ANY(NV2080_CTRL_CMD_FIFO_OBJSCHED_GET_CAPS),
	CTRL_ANY(NV0080_CTRL_CMD_FIFO_GET_CHANNELLIST),
	CTRL_RESERVED(NV0080_CTRL_CMD_FIFO_STOP_RUNLIST),
	CTRL_RESERVED(NV0080_CTRL_CMD_FIFO_START_RUNLIST),
	/* memory sizes elsewhere: privileged/debug, forwarded */
	CTRL_ANY(NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO),
	CTRL_ANY(NV2080_CTRL_CMD_FB_GET_CLIENT_ALLOCATION_INFO),
	/* pass-through (gVisor ctrl.go, abi.md §5.2, §6) */
	CTRL_ANY(NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION),
	CTRL_ANY(NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS),
	CTRL_ANY(NV0000_CTRL_CMD_SYSTEM_GET_FABRIC_STATUS),
	CTRL_ANY(NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX),
	CTRL_GPU(NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
		 vcore_ctrl_gpu_attached_ids),
	CTRL_GPU(NV0000_CTRL_CMD_GPU_GET_ID_INFO, vcore_ctrl_gpu_id_at0),
	CTRL_GPU(NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, vcore_ctrl_gpu_id_at0),
	CTRL_GPU(NV0000_CTRL_CMD_GPU_GET_PROBED_IDS, vcore_ctrl_gpu_probed_ids),
	CTRL_GPU(NV0000_CTRL_CMD_GPU_ATTACH_IDS, vcore_ctrl_gpu_attach_ids),
	CTRL_GPU(NV0000_CTRL_CMD_GPU_DETACH_IDS, vcore_ctrl_gpu_detach_ids),
	CTRL_GPU(NV0000_CTRL_CMD_GPU_GET_PCI_INFO, vcore_ctrl_gpu_id_at0),
	CTRL_GPU(NV0000_CTRL_CMD_GPU_QUERY_DRAIN_STATE, vcore_ctrl_gpu_id_at0),
	CTRL_ANY(NV0000_CTRL_CMD_GPU_GET_MEMOP_ENABLE),
	CTRL_ANY(NV0000_CTRL_CMD_SYNC_GPU_BOOST_GROUP_INFO),
	CTRL_NODE_PRIVATE(NV0000_CTRL_CMD_GPUACCT_SET_ACCOUNTING_STATE),
	CTRL_ANY(NV0000_CTRL_CMD_GPUACCT_GET_ACCOUNTING_STATE),
	CTRL_NODE_PRIVATE(NV0000_CTRL_CMD_GPUACCT_GET_PROC_ACCOUNTING_INFO),
	CTRL_NODE_PRIVATE(NV0000_CTRL_CMD_GPUACCT_GET_ACCOUNTING_PIDS),
	CTRL_NODE_PRIVATE(NV0000_CTRL_CMD_GPUACCT_CLEAR_ACCOUNTING_DATA),
	CTRL_ANY(NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE),
	CTRL_ANY(NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY),
	CTRL_ANY(NV0080_CTRL_CMD_GPU_GET_CLASSLIST),
	CTRL_ANY(NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES),
	CTRL_ANY(NV0080_CTRL_CMD_GPU_QUERY_SW_STATE_PERSISTENCE),
	CTRL_ANY(NV0080_CTRL_CMD_GPU_GET_VIRTUALIZATION_MODE),
	CTRL_ANY(NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2),
	CTRL_ANY(NV0080_CTRL_CMD_FB_GET_CAPS_V2),
	CTRL_ANY(NV0080_CTRL_CMD_HOST_GET_CAPS_V2),
	CTRL_ANY(NV00DE_CTRL_CMD_REQUEST_DATA_POLL),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_GET_INFO_V2),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_GET_NAME_STRING),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_GET_SHORT_NAME_STRING),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_GET_SIMULATION_INFO),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_QUERY_ECC_STATUS),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_QUERY_COMPUTE_MODE_RULES),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_RELEASE_COMPUTE_MODE_RESERVATION),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_GET_GID_INFO),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_GET_ENGINES_V2),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_GET_ACTIVE_PARTITION_IDS),
	CTRL_ANY(NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG),
	CTRL_ANY(NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO),
	CTRL_ANY(NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO),
	CTRL_ANY(NV2080_CTRL_CMD_GR_GET_INFO),
	CTRL_ANY(NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE),
	CTRL_ANY(NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE),
	CTRL_ANY(NV2080_CTRL_CMD_GR_GET_GLOBAL_SM_ORDER),
	CTRL_ANY(NV2080_CTRL_CMD_GR_GET_CAPS_V2),
	CTRL_ANY(NV2080_CTRL_CMD_GR_GET_GPC_MASK),
	CTRL_ANY(NV2080_CTRL_CMD_GR_GET_TPC_MASK),
	CTRL_ANY(NV2080_CTRL_CMD_MC_GET_ARCH_INFO),
	CTRL_ANY(NV2080_CTRL_CMD_MC_SERVICE_INTERRUPTS),
	CTRL_ANY(NV2080_CTRL_CMD_BUS_GET_PCI_INFO),
	CTRL_ANY(NV2080_CTRL_CMD_BUS_GET_PCI_BAR_INFO),
	CTRL_ANY(NV2080_CTRL_CMD_BUS_GET_INFO_V2),
	CTRL_ANY(NV2080_CTRL_CMD_BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS),
	CTRL_ANY(NV2080_CTRL_CMD_PERF_BOOST),
	CTRL_ANY(NV2080_CTRL_CMD_RC_GET_WATCHDOG_INFO),
	CTRL_ANY(NV2080_CTRL_CMD_RC_RELEASE_WATCHDOG_REQUESTS),
	CTRL_ANY(NV2080_CTRL_CMD_RC_SOFT_DISABLE_WATCHDOG),
	CTRL_ANY(NV2080_CTRL_CMD_CE_GET_ALL_CAPS),
	CTRL_ANY(NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS),
	CTRL_ANY(NV2080_CTRL_CMD_GSP_GET_FEATURES),
	CTRL_ANY(NV503C_CTRL_CMD_REGISTER_VA_SPACE),
	CTRL_ANY(NV503C_CTRL_CMD_REGISTER_VIDMEM),
	CTRL_ANY(NV503C_CTRL_CMD_UNREGISTER_VIDMEM),
	CTRL_ANY(NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK),
	CTRL_ANY(NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES),
	CTRL_ANY(NV83DE_CTRL_CMD_DEBUG_CLEAR_ALL_SM_ERROR_STATES),
	CTRL_ANY(NV906F_CTRL_GET_CLASS_ENGINEID),
	CTRL_ANY(NV906F_CTRL_CMD_RESET_CHANNEL),
	CTRL_ANY(
		NV90E6_CTRL_CMD_MASTER_GET_VIRTUAL_FUNCTION_ERROR_CONT_INTR_MASK),
	CTRL_ANY(NVC36F_CTRL_GET_CLASS_ENGINEID),
	CTRL_ANY(NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN),
	CTRL_ANY(NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_CAPABILITIES),
};

/*
 * More pass-through controls libcuda, NVML and nvidia-smi issue, by number:
 * gVisor nvproxy's allowlist for these branches (version.go) with the
 * numbers from the driver's ctrl headers. The 580 H200 recordings in
 * tests/data/traces/ use 0x1f0, 0x288, 0x289, 0x801909, 0x20800133,
 * 0x2080014b, 0x20800157, 0x20801230, 0x20801357, 0x20801802, 0x2080182b,
 * 0x20803801 and 0x208f1105 from this list. `nvidia-smi -q` added the
 * NVENC/NVFBC session stats, chip details, recovery action, offlined pages,
 * PEX counters, PCIe atomics caps, NVLink platform info, ECC repair status,
 * ECC unrepairable-memory flag and InfoROM BBX rows (names and numbers from
 * ctrl2080gpu.h, ctrl2080fb.h, ctrl2080bus.h, ctrl2080nvlink.h,
 * ctrl2080ecc.h and ctrl90e7bbx.h of 580.142; 0x20803406 is named only from
 * 590.48.01's ctrl2080ecc.h on, and the 580.159.04 driver serves it).
 */
static const struct vcore_ctrl_row ctrl_580_pass[] = {
	{0x00000102, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO", VCORE_NULL},
	{0x0000012b, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2", VCORE_NULL},
	{0x000001f0, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0000_CTRL_CMD_SYSTEM_GET_FEATURES", VCORE_NULL},
	{0x00000204, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0000_CTRL_CMD_GPU_GET_DEVICE_IDS", VCORE_NULL},
	{0x00000275, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 vcore_ctrl_gpu_id_at0, "NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID",
	 VCORE_NULL},
	{0x00000288, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 vcore_ctrl_gpu_active_device_ids,
	 "NV0000_CTRL_CMD_GPU_GET_ACTIVE_DEVICE_IDS", VCORE_NULL},
	{0x00000289, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 vcore_ctrl_gpu_id_at0, "NV0000_CTRL_CMD_GPU_ASYNC_ATTACH_ID",
	 VCORE_NULL},
	{0x00000290, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 vcore_ctrl_gpu_id_at0, "NV0000_CTRL_CMD_GPU_WAIT_ATTACH_ID",
	 VCORE_NULL},
	{0x00000301, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0000_CTRL_CMD_GSYNC_GET_ATTACHED_IDS", VCORE_NULL},
	{0x00410110, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0041_CTRL_CMD_GET_SURFACE_INFO", VCORE_NULL},
	{0x0080028b, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "UNKNOWN_CONTROL_COMMAND_80028B", VCORE_NULL},
	{0x00801102, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_GR_GET_CAPS", VCORE_NULL},
	{0x00801104, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_GR_GET_INFO", VCORE_NULL},
	{0x00801109, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_GR_GET_CAPS_V2", VCORE_NULL},
	{0x00801301, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_FB_GET_CAPS", VCORE_NULL},
	{0x00801701, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_FIFO_GET_CAPS", VCORE_NULL},
	{0x00801707, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_FIFO_GET_ENGINE_CONTEXT_PROPERTIES",
	 VCORE_NULL},
	{0x00801713, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_FIFO_GET_CAPS_V2", VCORE_NULL},
	{0x00801806, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_DMA_ADV_SCHED_GET_VA_CAPS", VCORE_NULL},
	{0x0080180d, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_DMA_GET_CAPS", VCORE_NULL},
	{0x00801909, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_PERF_CUDA_LIMIT_SET_CONTROL", VCORE_NULL},
	{0x00801b01, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_MSENC_GET_CAPS", VCORE_NULL},
	{0x00801c02, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV0080_CTRL_CMD_BSP_GET_CAPS_V2", VCORE_NULL},
	{0x00da0002, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV_SEMAPHORE_SURFACE_CTRL_CMD_BIND_CHANNEL", VCORE_NULL},
	{0x00da0006, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV_SEMAPHORE_SURFACE_CTRL_CMD_UNBIND_CHANNEL",
	 VCORE_NULL},
	{0x00f80103, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV00F8_CTRL_CMD_ATTACH_MEM", VCORE_NULL},
	{0x00fd0101, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV00FD_CTRL_CMD_GET_INFO", VCORE_NULL},
	{0x00fd0102, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV00FD_CTRL_CMD_ATTACH_MEM", VCORE_NULL},
	{0x00fd0105, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV00FD_CTRL_CMD_DETACH_MEM", VCORE_NULL},
	{0x20800123, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_GET_ENGINES", VCORE_NULL},
	{0x20800133, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_QUERY_ECC_CONFIGURATION", VCORE_NULL},
	{0x2080013f, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_GET_OEM_BOARD_INFO", VCORE_NULL},
	{0x20800142, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_GET_ID", VCORE_NULL},
	{0x20800147, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_GET_ENGINE_PARTNERLIST", VCORE_NULL},
	{0x2080014b, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_GET_INFOROM_OBJECT_VERSION",
	 VCORE_NULL},
	{0x20800156, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_GET_INFOROM_IMAGE_VERSION",
	 VCORE_NULL},
	{0x20800157, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_QUERY_INFOROM_ECC_SUPPORT",
	 VCORE_NULL},
	{0x2080016c, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_GET_ENCODER_CAPACITY", VCORE_NULL},
	{0x2080016d, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_GPU_GET_NVENC_SW_SESSION_STATS", VCORE_NULL},
	{0x2080017b, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_GPU_GET_NVFBC_SW_SESSION_STATS", VCORE_NULL},
	{0x208001a4, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_GET_CHIP_DETAILS", VCORE_NULL},
	{0x208001b2, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GPU_GET_RECOVERY_ACTION", VCORE_NULL},
	{0x20800301, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_EVENT_SET_NOTIFICATION", VCORE_NULL},
	{0x20800403, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_TIMER_GET_TIME", VCORE_NULL},
	{0x20800407, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_TIMER_SET_GR_TICK_FREQ", VCORE_NULL},
	{0x20800513, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_THERMAL_SYSTEM_EXECUTE_V2", VCORE_NULL},
	{0x20800802, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_BIOS_GET_INFO", VCORE_NULL},
	{0x20801206, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GR_GET_ZCULL_INFO", VCORE_NULL},
	{0x20801208, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GR_CTXSW_ZCULL_BIND", VCORE_NULL},
	{0x20801230, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GR_GET_SM_ISSUE_RATE_MODIFIER",
	 VCORE_NULL},
	{0x2080123c, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GR_GET_SM_ISSUE_RATE_MODIFIER_V2",
	 VCORE_NULL},
	{0x20801315, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_FB_GET_GPU_CACHE_INFO", VCORE_NULL},
	{0x20801322, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_FB_GET_OFFLINED_PAGES", VCORE_NULL},
	{0x20801352, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_FB_GET_SEMAPHORE_SURFACE_LAYOUT",
	 VCORE_NULL},
	{0x20801357, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_FB_QUERY_DRAM_ENCRYPTION_INFOROM_SUPPORT",
	 VCORE_NULL},
	{0x20801358, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_FB_QUERY_DRAM_ENCRYPTION_STATUS",
	 VCORE_NULL},
	{0x20801802, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_BUS_GET_INFO", VCORE_NULL},
	{0x20801813, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_BUS_GET_PEX_COUNTERS", VCORE_NULL},
	{0x20801819, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_BUS_GET_PEX_UTIL_COUNTERS", VCORE_NULL},
	{0x20801829, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_BUS_GET_PCIE_REQ_ATOMICS_CAPS",
	 VCORE_NULL},
	{0x2080182b, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_BUS_GET_C2C_INFO", VCORE_NULL},
	{0x20801830, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_BUS_GET_PCIE_CPL_ATOMICS_CAPS",
	 VCORE_NULL},
	{0x20802068, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_PERF_GET_CURRENT_PSTATE", VCORE_NULL},
	{0x20802a02, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK", VCORE_NULL},
	{0x20802a03, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_CE_GET_CAPS_V2", VCORE_NULL},
	{0x20803001, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_CAPS", VCORE_NULL},
	{0x20803083, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_NVLINK_GET_PLATFORM_INFO", VCORE_NULL},
	{0x20803125, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_FLCN_GET_CTX_BUFFER_SIZE", VCORE_NULL},
	{0x20803404, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_ECC_GET_REPAIR_STATUS", VCORE_NULL},
	{0x20803406, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_ECC_GET_UNREPAIRABLE_MEMORY_FLAG",
	 VCORE_NULL},
	{0x20803801, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_GRMGR_GET_GR_FS_INFO", VCORE_NULL},
	{0x20803d07, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV2080_CTRL_CMD_OS_UNIX_VIDMEM_PERSISTENCE_STATUS",
	 VCORE_NULL},
	{0x208f1105, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV208F_CTRL_CMD_GPU_VERIFY_INFOROM", VCORE_NULL},
	{0x90960101, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV9096_CTRL_CMD_SET_ZBC_COLOR_CLEAR", VCORE_NULL},
	{0x90960106, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV9096_CTRL_CMD_GET_ZBC_CLEAR_TABLE_SIZE", VCORE_NULL},
	{0x90960107, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV9096_CTRL_CMD_GET_ZBC_CLEAR_TABLE_ENTRY", VCORE_NULL},
	{0x90e70113, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV90E7_CTRL_CMD_BBX_GET_LAST_FLUSH_TIME", VCORE_NULL},
	{0xc36f010a, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NVC36F_CTRL_CMD_GPFIFO_SET_WORK_SUBMIT_TOKEN_NOTIF_INDEX",
	 VCORE_NULL},
	{0xc56f010b, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NVC56F_CTRL_CMD_GET_KMB", VCORE_NULL},
	{0xcb330104, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_GPUS_STATE",
	 VCORE_NULL},
	{0xcb33010b, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV_CONF_COMPUTE_CTRL_CMD_GPU_GET_NUM_SECURE_CHANNELS",
	 VCORE_NULL},
	{0xcb33010c, RMAPI_PARAM_COPY_MAX_PARAMS_SIZE, VCORE_CTRL_ANY_SIZE,
	 VCORE_NULL, "NV_CONF_COMPUTE_CTRL_CMD_GPU_GET_KEY_ROTATION_STATE",
	 VCORE_NULL},
};

#define CLS(c, type_, kind)                                                    \
	{                                                                      \
		c, sizeof(type_), kind, #c, #type_, 0                          \
	}
/* a class whose params the core never reads */
#define CLS0(c, kind)                                                          \
	{                                                                      \
		c, 0, kind, #c, VCORE_NULL, 0                                  \
	}

/*
 * The driver's own video memory behind one TSG, one channel and one VA
 * space, which no RM_ALLOC of memory reports (instance blocks, USERD, GR
 * context and preemption buffers, page directories): charged per object as
 * a fixed estimate, by class alone (issue 17 F11.1; the TSG's engine type
 * is the tenant's, and the driver reads it again). Measured on the H200 with
 * 580.159.04 (docs/results/context-memory-h200.md, tests/gpu/ctx-mem.sh and
 * tests/gpu/progs/rm_vaspace_mem.cc): every channel more takes 64 KiB of
 * HEAP_FREE; a GR TSG made alone by raw RM calls 4.3125 MiB (its GR context
 * buffers; a copy-engine TSG far less: libcuda's further context, 1 GR and 3
 * copy-engine TSGs, takes 4.3125 MiB beyond its channels); the first VA
 * space with default flags 64 KiB, each further one about 20 KiB (libcuda's
 * externally owned one, flags 0x48, none of RM's).
 */
#define RM_INTERNAL_TSG_580	0x450000ull /* 4.3125 MiB */
#define RM_INTERNAL_CHANNEL_580 0x10000ull  /* 64 KiB */
#define RM_INTERNAL_VASPACE_580 0x10000ull  /* 64 KiB */

/*
 * The page tables of an eager GPU virtual range (issue 17 F11.1):
 * virtmemConstruct_IMPL (virtual_mem.c) reserves them for the whole range
 * at allocation unless NVOS32_ALLOC_FLAGS_LAZY. Measured on the H200 with
 * 580.159.04 (docs/results/rm-internal-memory-h200.md): 273.0625 MiB for
 * 128 GiB, which is Hopper's format exactly: 8 B per 4 KiB page, 8 B per
 * 64 KiB page, 16 B per 2 MiB (range/512 + range/8192 + range/131072), in
 * 64 KiB pieces, and one piece more (the upper levels, the tables a range
 * not aligned to them touches at its ends). A lazy range needs them only as
 * it is mapped, but the driver reads the flags again after the core's check
 * (a sibling's store can clear LAZY): so every range is charged this, from
 * the driver's own size where the host can ask it.
 */
#define VA_PTABLE_PIECE_580 0x10000ull /* 64 KiB */

vcore_u64 vcore_va_range_ptables(vcore_u64 range)
{
	vcore_u64 b = (range >> 9) + (range >> 13) + (range >> 17);

	return (b + VA_PTABLE_PIECE_580 - 1) / VA_PTABLE_PIECE_580 *
		       VA_PTABLE_PIECE_580 +
	       VA_PTABLE_PIECE_580;
}

/*
 * UVM's page tables for one external mapping (issue 17 F11.1). UVM builds
 * them in video memory when it maps (uvm_map_external.c
 * uvm_va_range_map_rm_allocation -> uvm_mmu.c uvm_page_table_range_vec_init:
 * try_get_ptes allocates every missing directory from depth 1 down to the
 * mapping's page-table depth) and frees a directory with the last mapping
 * under it (uvm_page_tree_put_ptes_async); no RM client is charged for them.
 * Hopper's format (580.142 uvm_hopper_mmu.c): every directory and every
 * 4 KiB-page table is a 4 KiB allocation (allocation_size_hopper; a 64 KiB-
 * page table 256 B); a depth-1 directory covers 2^56 B, depth 2 2^47,
 * depth 3 2^38 (256 GiB), depth 4 2^29 (512 MiB), a PTE table 2 MiB
 * (va_base[], index_bits_hopper). The most one mapping of [base, base +
 * length) can make UVM allocate is then, at 4 KiB pages (the deepest tree:
 * page_table_depth_hopper; the page size is the memory's, which the core
 * does not know, or smaller, uvm_map_external_allocation_on_gpu), a 4 KiB
 * page for each directory of depths 1-4 and each 2 MiB PTE table the span
 * touches, as if it were the first mapping under each: a span crossing a
 * boundary touches two. Measured on the H200 with 580.159.04
 * (docs/results/rm-internal-memory-h200.md): a 2 MiB mapping alone in its
 * 1 GiB took 4 KiB (its depth-4 directory holding 2 MiB PTEs), alone in its
 * 512 GiB 8 KiB; this charges it 20 KiB. UVM's allocator takes these pages
 * from 2 MiB chunks (uvm_pmm_gpu.c), which this does not count: the slot's
 * cap on these charges bounds what the chunks keep (vcore_uvm_ptables_cap,
 * uvm_external.c).
 */
#define UVM_PT_PAGE_580	       0x1000ull /* one directory or PTE table */
#define UVM_PT_TABLE_SHIFT_580 21	 /* a 4 KiB-page table: 2 MiB */
static const vcore_u8 uvm_pt_dir_shift_580[] = {56, 47, 38, 29};

vcore_u64 vcore_uvm_map_ptables(vcore_u64 base, vcore_u64 length)
{
	vcore_u64 last = base + length - 1, pages;
	vcore_u32 i;

	if (!length)
		return 0;
	pages = (last >> UVM_PT_TABLE_SHIFT_580) -
		(base >> UVM_PT_TABLE_SHIFT_580) + 1;
	for (i = 0; i < sizeof(uvm_pt_dir_shift_580); i++)
		pages += (last >> uvm_pt_dir_shift_580[i]) -
			 (base >> uvm_pt_dir_shift_580[i]) + 1;
	return pages * UVM_PT_PAGE_580;
}

/* a class charged its RM-internal estimate */
#define CLS_INTERNAL(c, type_, kind, internal)                                 \
	{                                                                      \
		c, sizeof(type_), kind, #c, #type_, internal                   \
	}
#define CLS_CHANNEL(c)                                                         \
	{                                                                      \
		c, sizeof(NV_CHANNEL_ALLOC_PARAMS), VCORE_CLS_CHANNEL, #c,     \
			"NV_CHANNEL_ALLOC_PARAMS", RM_INTERNAL_CHANNEL_580     \
	}

static const struct vcore_class_row cls_580[] = {
	CLS(NV01_ROOT, NV0000_ALLOC_PARAMETERS, VCORE_CLS_ROOT),
	CLS(NV01_ROOT_NON_PRIV, NV0000_ALLOC_PARAMETERS, VCORE_CLS_ROOT),
	CLS(NV01_ROOT_CLIENT, NV0000_ALLOC_PARAMETERS, VCORE_CLS_ROOT),
	CLS(NV01_DEVICE_0, NV0080_ALLOC_PARAMETERS, VCORE_CLS_DEVICE),
	CLS(NV20_SUBDEVICE_0, NV2080_ALLOC_PARAMETERS, VCORE_CLS_SUBDEVICE),
	CLS0(NV2081_BINAPI, VCORE_CLS_PASS),
	CLS0(NV20_SUBDEVICE_DIAG, VCORE_CLS_PASS),
	CLS(NV01_EVENT, NV0005_ALLOC_PARAMETERS, VCORE_CLS_EVENT),
	CLS(NV01_EVENT_OS_EVENT, NV0005_ALLOC_PARAMETERS, VCORE_CLS_EVENT),
	CLS(NV01_EVENT_KERNEL_CALLBACK, NV0005_ALLOC_PARAMETERS,
	    VCORE_CLS_EVENT),
	CLS(NV01_EVENT_KERNEL_CALLBACK_EX, NV0005_ALLOC_PARAMETERS,
	    VCORE_CLS_EVENT),
	CLS0(NV01_CONTEXT_DMA, VCORE_CLS_PASS),
	CLS0(NV04_DISPLAY_COMMON, VCORE_CLS_PASS),
	/* memory (abi.md §4.1) */
	CLS(NV01_MEMORY_LOCAL_USER, NV_MEMORY_ALLOCATION_PARAMS,
	    VCORE_CLS_VIDMEM),
	CLS(NV01_MEMORY_LOCAL_PRIVILEGED, NV_MEMORY_ALLOCATION_PARAMS,
	    VCORE_CLS_VIDMEM),
	CLS(NV_MEMORY_FABRIC, NV00F8_ALLOCATION_PARAMETERS, VCORE_CLS_FABRIC),
	CLS(NV01_MEMORY_SYSTEM, NV_MEMORY_ALLOCATION_PARAMS, VCORE_CLS_SYSMEM),
	CLS(NV50_MEMORY_VIRTUAL, NV_MEMORY_ALLOCATION_PARAMS,
	    VCORE_CLS_VA_RANGE),
	CLS(NV01_MEMORY_VIRTUAL, NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS,
	    VCORE_CLS_UNCHARGED_MEM),
	CLS(NV01_MEMORY_SYSTEM_OS_DESCRIPTOR,
	    NV_OS_DESC_MEMORY_ALLOCATION_PARAMS, VCORE_CLS_UNCHARGED_MEM),
	CLS(RM_USER_SHARED_DATA, NV00DE_ALLOC_PARAMETERS,
	    VCORE_CLS_UNCHARGED_MEM),
	CLS(NV01_MEMORY_LOCAL_PHYSICAL, NV_PHYSICAL_MEMORY_ALLOCATION_PARAMS,
	    VCORE_CLS_QUOTA_REFUSED),
	CLS0(NV_MEMORY_MULTICAST_FABRIC, VCORE_CLS_QUOTA_REFUSED),
	CLS0(NV_MEMORY_EXPORT, VCORE_CLS_QUOTA_REFUSED),
	CLS0(NV_MEMORY_FABRIC_IMPORTED_REF, VCORE_CLS_QUOTA_REFUSED),
	CLS0(NV_MEMORY_MAPPER, VCORE_CLS_QUOTA_REFUSED),
	CLS0(NV01_MEMORY_FLA, VCORE_CLS_QUOTA_REFUSED),
	CLS0(NV01_MEMORY_HW_RESOURCES, VCORE_CLS_QUOTA_REFUSED),
	CLS0(NV01_MEMORY_DEVICELESS, VCORE_CLS_QUOTA_REFUSED),
	CLS0(NV_IMEX_SESSION, VCORE_CLS_QUOTA_REFUSED),
	/* device children */
	CLS0(NV50_P2P, VCORE_CLS_PASS),
	CLS(NV50_THIRD_PARTY_P2P, NV503C_ALLOC_PARAMETERS, VCORE_CLS_PASS),
	CLS0(GT200_DEBUGGER, VCORE_CLS_PASS),
	CLS0(MPS_COMPUTE, VCORE_CLS_PASS),
	CLS(FERMI_CONTEXT_SHARE_A, NV_CTXSHARE_ALLOCATION_PARAMETERS,
	    VCORE_CLS_PASS),
	CLS_INTERNAL(FERMI_VASPACE_A, NV_VASPACE_ALLOCATION_PARAMETERS,
		     VCORE_CLS_VASPACE, RM_INTERNAL_VASPACE_580),
	CLS0(GF100_ZBC_CLEAR, VCORE_CLS_PASS),
	CLS0(GF100_PROFILER, VCORE_CLS_PASS),
	CLS0(GF100_SUBDEVICE_MASTER, VCORE_CLS_PASS),
	CLS0(GF100_SUBDEVICE_INFOROM, VCORE_CLS_PASS), /* nvidia-smi -q */
	CLS(FERMI_TWOD_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(KEPLER_INLINE_TO_MEMORY_B, NV_GR_ALLOCATION_PARAMETERS,
	    VCORE_CLS_PASS),
	CLS0(MAXWELL_PROFILER_DEVICE, VCORE_CLS_PASS),
	CLS0(NV_CONFIDENTIAL_COMPUTE, VCORE_CLS_PASS),
	CLS0(HOPPER_SEC2_WORK_LAUNCH_A, VCORE_CLS_PASS),
	CLS0(AMPERE_SMC_PARTITION_REF, VCORE_CLS_PASS),
	CLS0(AMPERE_SMC_EXEC_PARTITION_REF, VCORE_CLS_PASS),
	CLS0(AMPERE_SMC_CONFIG_SESSION, VCORE_CLS_PASS),
	CLS0(AMPERE_SMC_MONITOR_SESSION, VCORE_CLS_PASS),
	/* scheduling (abi.md §6) */
	CLS_INTERNAL(KEPLER_CHANNEL_GROUP_A,
		     NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS, VCORE_CLS_TSG,
		     RM_INTERNAL_TSG_580),
	CLS_CHANNEL(VOLTA_CHANNEL_GPFIFO_A),
	CLS_CHANNEL(TURING_CHANNEL_GPFIFO_A),
	CLS_CHANNEL(AMPERE_CHANNEL_GPFIFO_A),
	CLS_CHANNEL(HOPPER_CHANNEL_GPFIFO_A),
	CLS_CHANNEL(BLACKWELL_CHANNEL_GPFIFO_A),
	CLS_CHANNEL(BLACKWELL_CHANNEL_GPFIFO_B),
	CLS0(VOLTA_USERMODE_A, VCORE_CLS_PASS),
	CLS0(TURING_USERMODE_A, VCORE_CLS_PASS),
	CLS(HOPPER_USERMODE_A, NV_HOPPER_USERMODE_A_PARAMS, VCORE_CLS_PASS),
	CLS(BLACKWELL_USERMODE_A, NV_HOPPER_USERMODE_A_PARAMS, VCORE_CLS_PASS),
	/* engines under channels */
	CLS(VOLTA_COMPUTE_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(TURING_COMPUTE_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(AMPERE_COMPUTE_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(AMPERE_COMPUTE_B, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(ADA_COMPUTE_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(HOPPER_COMPUTE_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(BLACKWELL_COMPUTE_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(BLACKWELL_COMPUTE_B, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(VOLTA_DMA_COPY_A, NVB0B5_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(TURING_DMA_COPY_A, NVB0B5_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(AMPERE_DMA_COPY_A, NVB0B5_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(AMPERE_DMA_COPY_B, NVB0B5_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(HOPPER_DMA_COPY_A, NVB0B5_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(BLACKWELL_DMA_COPY_A, NVB0B5_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(BLACKWELL_DMA_COPY_B, NVB0B5_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(TURING_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(AMPERE_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(ADA_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(HOPPER_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(BLACKWELL_A, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
	CLS(BLACKWELL_B, NV_GR_ALLOCATION_PARAMETERS, VCORE_CLS_PASS),
};

#define UVM(c, size)                                                           \
	{                                                                      \
		c, size, #c, 0                                                 \
	}
/* The core decides on these params and the driver reads them again: the host
 * runs them from a sealed copy of exactly @size bytes (vcore_sealed_size,
 * seal.c).
 */
#define UVM_SEALED(c, size)                                                    \
	{                                                                      \
		c, size, #c, VCORE_UVM_SEALED                                  \
	}

/* nvidia-uvm (abi.md §7): plain numbers; the core reads MM_INITIALIZE and
 * the external-mapping calls (uvm_external.c). */
static const struct vcore_uvm_row uvm_580[] = {
	UVM(UVM_INITIALIZE, 0),
	UVM(UVM_DEINITIALIZE, 0),
	UVM(UVM_RESERVE_VA, 0),
	UVM(UVM_RELEASE_VA, 0),
	UVM(UVM_CREATE_RANGE_GROUP, 0),
	UVM(UVM_DESTROY_RANGE_GROUP, 0),
	UVM(UVM_REGISTER_GPU_VASPACE, 0),
	UVM(UVM_UNREGISTER_GPU_VASPACE, 0),
	UVM(UVM_REGISTER_CHANNEL, 0),
	UVM(UVM_UNREGISTER_CHANNEL, 0),
	UVM(UVM_ENABLE_PEER_ACCESS, 0),
	UVM(UVM_DISABLE_PEER_ACCESS, 0),
	UVM(UVM_SET_RANGE_GROUP, 0),
	UVM_SEALED(UVM_MAP_EXTERNAL_ALLOCATION,
		   UVM_MAP_EXTERNAL_ALLOCATION_SIZE),
	UVM_SEALED(UVM_FREE, UVM_FREE_SIZE),
	UVM(UVM_MEM_MAP, 0),
	UVM(UVM_REGISTER_GPU, 0),
	UVM(UVM_UNREGISTER_GPU, 0),
	UVM(UVM_PAGEABLE_MEM_ACCESS, 0),
	UVM(UVM_PREVENT_MIGRATION_RANGE_GROUPS, 0),
	UVM(UVM_ALLOW_MIGRATION_RANGE_GROUPS, 0),
	UVM(UVM_SET_PREFERRED_LOCATION, 0),
	UVM(UVM_UNSET_PREFERRED_LOCATION, 0),
	UVM(UVM_ENABLE_READ_DUPLICATION, 0),
	UVM(UVM_DISABLE_READ_DUPLICATION, 0),
	UVM(UVM_SET_ACCESSED_BY, 0),
	UVM(UVM_UNSET_ACCESSED_BY, 0),
	UVM(UVM_MIGRATE, 0),
	UVM(UVM_MIGRATE_RANGE_GROUP, 0),
	UVM(UVM_ENABLE_SYSTEM_WIDE_ATOMICS, 0),
	UVM(UVM_DISABLE_SYSTEM_WIDE_ATOMICS, 0),
	UVM(UVM_MAP_DYNAMIC_PARALLELISM_REGION, 0),
	UVM_SEALED(UVM_UNMAP_EXTERNAL, UVM_UNMAP_EXTERNAL_SIZE),
	UVM(UVM_ALLOC_SEMAPHORE_POOL, 0),
	UVM(UVM_CLEAN_UP_ZOMBIE_RESOURCES, 0),
	UVM(UVM_PAGEABLE_MEM_ACCESS_ON_GPU, 0),
	UVM(UVM_POPULATE_PAGEABLE, 0),
	UVM(UVM_VALIDATE_VA_RANGE, 0),
	UVM_SEALED(UVM_CREATE_EXTERNAL_RANGE, UVM_CREATE_EXTERNAL_RANGE_SIZE),
	UVM_SEALED(UVM_MAP_EXTERNAL_SPARSE, UVM_MAP_EXTERNAL_SPARSE_SIZE),
	/* The kernel host runs it from a kernel thread whose only user memory
	 * must be the sealed copy (kmod/kthread_call.c). */
	UVM_SEALED(UVM_MM_INITIALIZE, sizeof(UVM_MM_INITIALIZE_PARAMS)),
	UVM(UVM_ALLOC_DEVICE_P2P, 0),
	UVM(UVM_CLEAR_ALL_ACCESS_COUNTERS, 0),
	UVM(UVM_DISCARD, 0),
	UVM(UVM_IS_8_SUPPORTED, 0),
};

const struct vcore_abi vcore_abi_580 = {
	.name = "580",
	.parent = VCORE_NULL,
	.esc = esc_580,
	.n_esc = VCORE_ARRAY_SIZE(esc_580),
	.ctrl = ctrl_580,
	.n_ctrl = VCORE_ARRAY_SIZE(ctrl_580),
	.ctrl_pass = ctrl_580_pass,
	.n_ctrl_pass = VCORE_ARRAY_SIZE(ctrl_580_pass),
	.cls = cls_580,
	.n_cls = VCORE_ARRAY_SIZE(cls_580),
	.uvm = uvm_580,
	.n_uvm = VCORE_ARRAY_SIZE(uvm_580),
};

/* ---- lookups: newest delta first, then the parents ---- */

const struct vcore_esc_row *vcore_abi_esc(const struct vcore_abi *abi,
					  vcore_u32 nr)
{
	vcore_size_t i;

	for (; abi; abi = abi->parent)
		for (i = 0; i < abi->n_esc; i++)
			if (abi->esc[i].nr == nr)
				return (abi->esc[i].flags & VCORE_ESC_REMOVED)
					       ? VCORE_NULL
					       : &abi->esc[i];
	return VCORE_NULL;
}

const struct vcore_ctrl_row *vcore_abi_ctrl(const struct vcore_abi *abi,
					    vcore_u32 cmd)
{
	vcore_size_t i;

	for (; abi; abi = abi->parent) {
		for (i = 0; i < abi->n_ctrl; i++)
			if (abi->ctrl[i].cmd == cmd)
				return (abi->ctrl[i].flags & VCORE_CTRL_REMOVED)
					       ? VCORE_NULL
					       : &abi->ctrl[i];
		for (i = 0; i < abi->n_ctrl_pass; i++)
			if (abi->ctrl_pass[i].cmd == cmd)
				return (abi->ctrl_pass[i].flags &
					VCORE_CTRL_REMOVED)
					       ? VCORE_NULL
					       : &abi->ctrl_pass[i];
	}
	return VCORE_NULL;
}

const struct vcore_class_row *vcore_abi_class(const struct vcore_abi *abi,
					      vcore_u32 cls)
{
	vcore_size_t i;

	for (; abi; abi = abi->parent)
		for (i = 0; i < abi->n_cls; i++)
			if (abi->cls[i].cls == cls)
				return abi->cls[i].kind == VCORE_CLS_REMOVED
					       ? VCORE_NULL
					       : &abi->cls[i];
	return VCORE_NULL;
}

const struct vcore_uvm_row *vcore_abi_uvm(const struct vcore_abi *abi,
					  vcore_u32 cmd)
{
	vcore_size_t i;

	for (; abi; abi = abi->parent)
		for (i = 0; i < abi->n_uvm; i++)
			if (abi->uvm[i].cmd == cmd)
				return &abi->uvm[i];
	return VCORE_NULL;
}
