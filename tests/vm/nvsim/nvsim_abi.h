/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The subset of the NVIDIA RM ioctl ABI (open kernel modules 580.x) that nvsim.ko serves,
 * shared by the module and the in-guest test programs. Layouts, numbers and sizes are from
 * docs/nvidia-rm-abi.md §1-§6 (x86_64); every struct is pinned by a
 * static assertion on its size and key offsets.
 *
 * nvsim keeps its own copy instead of including kmod/core/abi/: the simulator is the oracle
 * the filter core is tested against, so a layout mistake there must not be mirrored here.
 */
#ifndef NVSIM_ABI_H
#define NVSIM_ABI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#ifdef __KERNEL__
#include <linux/build_bug.h>
#include <linux/stddef.h>
#define NVSIM_ASSERT(c, m) static_assert(c, m)
#else
#include <stddef.h>
#ifdef __cplusplus
#define NVSIM_ASSERT(c, m) static_assert(c, m)
#else
#define NVSIM_ASSERT(c, m) _Static_assert(c, m)
#endif
#endif

/* §1.1 nodes */
#define NV_MAJOR_DEVICE_NUMBER 195
#define NV_CTL_MINOR 255
#define NV_VERSION_STRING "580.159.04"

/* §1.3, §2 escapes (the ioctl nr; the driver decodes only nr and size) */
#define NV_IOCTL_MAGIC 'F'
#define NV_ESC_RM_ALLOC_MEMORY 0x27
#define NV_ESC_RM_ALLOC_OBJECT 0x28
#define NV_ESC_RM_FREE 0x29
#define NV_ESC_RM_CONTROL 0x2A
#define NV_ESC_RM_ALLOC 0x2B

/*
 * RM function numbers (nvos.h): what nvidia_kernel_rmapi_ops_t.op holds for an in-kernel caller
 * (nv-kernel-rmapi-ops.h), where the ioctl path numbers the same calls by escape.
 */
#define NV01_FREE 0x00
#define NV04_ALLOC 0x15
#define NV04_CONTROL 0x36
#define NV_ESC_RM_DUP_OBJECT 0x34
#define NV_ESC_RM_SHARE 0x35
#define NV_ESC_RM_VID_HEAP_CONTROL 0x4A
#define NV_ESC_RM_MAP_MEMORY 0x4E
#define NV_ESC_RM_UNMAP_MEMORY 0x4F
#define NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO 0x5E
#define NV_ESC_CARD_INFO 0xC8
#define NV_ESC_REGISTER_FD 0xC9
#define NV_ESC_ALLOC_OS_EVENT 0xCE
#define NV_ESC_FREE_OS_EVENT 0xCF
#define NV_ESC_STATUS_CODE 0xD1
#define NV_ESC_CHECK_VERSION_STR 0xD2
#define NV_ESC_IOCTL_XFER_CMD 0xD3
#define NV_ESC_ATTACH_GPUS_TO_FD 0xD4
#define NV_ESC_SYS_PARAMS 0xD6
#define NV_ESC_NUMA_INFO 0xD7
#define NV_ESC_WAIT_OPEN_COMPLETE 0xDA
#define NV_ABSOLUTE_MAX_IOCTL_SIZE 16384

#define NV_IOCTL(nr, size) _IOC(_IOC_READ | _IOC_WRITE, NV_IOCTL_MAGIC, nr, size)

/* §4.3 status codes (src/common/sdk/nvidia/inc/nvstatuscodes.h) */
#define NV_OK 0x00
#define NV_ERR_GENERIC 0xFFFF
#define NV_ERR_INSERT_DUPLICATE_NAME 0x19
#define NV_ERR_INSUFFICIENT_RESOURCES 0x1A
#define NV_ERR_INSUFFICIENT_PERMISSIONS 0x1B
#define NV_ERR_INVALID_ADDRESS 0x1E
#define NV_ERR_INVALID_ARGUMENT 0x1F
#define NV_ERR_PAGE_TABLE_NOT_AVAIL 0x5D
#define NV_ERR_INVALID_CLASS 0x22
#define NV_ERR_INVALID_CLIENT 0x23
#define NV_ERR_INVALID_DEVICE 0x26
#define NV_ERR_INVALID_FLAGS 0x29
#define NV_ERR_INVALID_OBJECT_HANDLE 0x33
#define NV_ERR_INVALID_OBJECT_PARENT 0x36
#define NV_ERR_INVALID_PARAM_STRUCT 0x3A
#define NV_ERR_INVALID_POINTER 0x3D
#define NV_ERR_NO_MEMORY 0x51
#define NV_ERR_NOT_SUPPORTED 0x56
#define NV_ERR_OBJECT_NOT_FOUND 0x57
#define NV_ERR_STATE_IN_USE 0x63

/* §4.1, §6 classes */
#define NV01_ROOT 0x0
#define NV01_ROOT_NON_PRIV 0x1
#define NV01_ROOT_CLIENT 0x41
#define NV01_DEVICE_0 0x80
#define NV20_SUBDEVICE_0 0x2080
#define NV01_MEMORY_SYSTEM 0x3e
#define NV01_MEMORY_LOCAL_USER 0x40
#define NV01_MEMORY_SYSTEM_OS_DESCRIPTOR 0x71
#define NV01_MEMORY_LOCAL_PHYSICAL 0xc2 /* all of FB, root clients only */
#define NV01_MEMORY_SYSTEM_DYNAMIC 0x70 /* NV01_MEMORY_VIRTUAL */
#define NV04_DISPLAY_COMMON 0x73
#define NV50_MEMORY_VIRTUAL 0x50a0
#define KEPLER_CHANNEL_GROUP_A 0xa06c
#define FERMI_VASPACE_A 0x90f1 /* a plain object here: nvsim has no page tables */
#define RM_USER_SHARED_DATA 0xde
/* Channels are the classes 0x??6f (0xc86f Hopper; §6.3). */
#define NVSIM_IS_CHANNEL_CLASS(c) (((c) & 0xff) == 0x6f && (c) >= 0xc36f && (c) <= 0xcfff)

/* §3 parameter structs */
struct nvos00 { /* RM_FREE */
	__u32 hRoot;
	__u32 hObjectParent;
	__u32 hObjectOld;
	__u32 status;
};
NVSIM_ASSERT(sizeof(struct nvos00) == 16, "NVOS00 is 16 B");

struct nvos21 { /* RM_ALLOC, 32 B form */
	__u32 hRoot;
	__u32 hObjectParent;
	__u32 hObjectNew;
	__u32 hClass;
	__u64 pAllocParms;
	__u32 paramsSize;
	__u32 status;
};
NVSIM_ASSERT(sizeof(struct nvos21) == 32, "NVOS21 is 32 B");
NVSIM_ASSERT(offsetof(struct nvos21, status) == 28, "NVOS21.status @28");

struct nvos64 { /* RM_ALLOC, 48 B form (libcuda, NVML) */
	__u32 hRoot;
	__u32 hObjectParent;
	__u32 hObjectNew;
	__u32 hClass;
	__u64 pAllocParms;
	__u64 pRightsRequested;
	__u32 paramsSize;
	__u32 flags;
	__u32 status;
	__u32 pad;
};
NVSIM_ASSERT(sizeof(struct nvos64) == 48, "NVOS64 is 48 B");
NVSIM_ASSERT(offsetof(struct nvos64, status) == 40, "NVOS64.status @40");

struct nvos54 { /* RM_CONTROL */
	__u32 hClient;
	__u32 hObject;
	__u32 cmd;
	__u32 flags;
	__u64 params;
	__u32 paramsSize;
	__u32 status;
};
NVSIM_ASSERT(sizeof(struct nvos54) == 32, "NVOS54 is 32 B");
#define NVOS54_FLAGS_IRQL_RAISED 0x1
#define NVOS54_FLAGS_LOCK_BYPASS 0x2

struct nvos02_with_fd { /* RM_ALLOC_MEMORY */
	__u32 hRoot;
	__u32 hObjectParent;
	__u32 hObjectNew;
	__u32 hClass;
	__u32 flags;
	__u32 pad0;
	__u64 pMemory;
	__u64 limit;
	__u32 status;
	__u32 pad1;
	__s32 fd;
	__u32 pad2;
};
NVSIM_ASSERT(sizeof(struct nvos02_with_fd) == 56, "NVOS02 + fd is 56 B");
NVSIM_ASSERT(offsetof(struct nvos02_with_fd, limit) == 32, "NVOS02.limit @32");
NVSIM_ASSERT(offsetof(struct nvos02_with_fd, fd) == 48, "NVOS02 wrapper fd @48");

struct nvos33_with_fd { /* RM_MAP_MEMORY */
	__u32 hClient;
	__u32 hDevice;
	__u32 hMemory;
	__u32 pad0;
	__u64 offset;
	__u64 length;
	__u64 pLinearAddress;
	__u32 status;
	__u32 flags;
	__s32 fd;
	__u32 pad1;
};
NVSIM_ASSERT(sizeof(struct nvos33_with_fd) == 56, "NVOS33 + fd is 56 B");
NVSIM_ASSERT(offsetof(struct nvos33_with_fd, status) == 40, "NVOS33.status @40");
NVSIM_ASSERT(offsetof(struct nvos33_with_fd, fd) == 48, "NVOS33 wrapper fd @48");

struct nvos34 { /* RM_UNMAP_MEMORY */
	__u32 hClient;
	__u32 hDevice;
	__u32 hMemory;
	__u32 pad0;
	__u64 pLinearAddress;
	__u32 status;
	__u32 flags;
};
NVSIM_ASSERT(sizeof(struct nvos34) == 32, "NVOS34 is 32 B");

struct nvos56 { /* RM_UPDATE_DEVICE_MAPPING_INFO */
	__u32 hClient;
	__u32 hDevice;
	__u32 hMemory;
	__u32 pad0;
	__u64 pOldCpuAddress;
	__u64 pNewCpuAddress;
	__u32 status;
	__u32 pad1;
};
NVSIM_ASSERT(sizeof(struct nvos56) == 40, "NVOS56 is 40 B");

struct nvos32 { /* RM_VID_HEAP_CONTROL */
	__u32 hRoot;
	__u32 hObjectParent;
	__u32 function;
	__u32 hVASpace;
	__s16 ivcHeapNumber;
	__u16 pad0;
	__u32 status;
	__u64 total;
	__u64 free;
	__u8 data[144];
};
NVSIM_ASSERT(sizeof(struct nvos32) == 184, "NVOS32 is 184 B");
NVSIM_ASSERT(offsetof(struct nvos32, total) == 24, "NVOS32.total @24");
NVSIM_ASSERT(offsetof(struct nvos32, data) == 40, "NVOS32.data @40");
#define NVOS32_FUNCTION_INFO 5
#define NVOS32_FUNCTION_ALLOC_SIZE 2
/* NVOS32 data.AllocSize fields (nvos.h), offsets into struct nvos32.data */
#define NVOS32_ALLOCSIZE_HMEMORY_DOFF 4
#define NVOS32_ALLOCSIZE_FLAGS_DOFF 12
#define NVOS32_ALLOCSIZE_ATTR_DOFF 16
#define NVOS32_ALLOCSIZE_SIZE_DOFF 48
#define NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED 0x00004000
#define NVOS32_ALLOC_FLAGS_VIRTUAL 0x00080000
#define NVOS32_ALLOC_FLAGS_LAZY 0x00000400 /* nvos.h:1455 at 580.142 */
#define NVOS32_ALLOC_FLAGS_EXTERNALLY_MANAGED 0x00400000
#define NVOS32_ALLOC_FLAGS_SPARSE 0x04000000
#define NVOS32_ATTR_LOCATION(a) (((a) >> 25) & 0x3u)

/* NV_ESC structs (kernel-open/common/inc/nv-ioctl.h) */
struct nv_ioctl_xfer {
	__u32 cmd;
	__u32 size;
	__u64 ptr;
};
NVSIM_ASSERT(sizeof(struct nv_ioctl_xfer) == 16, "nv_ioctl_xfer_t is 16 B");

struct nv_ioctl_card_info {
	__u8 valid;
	__u8 pad0[3];
	struct {
		__u32 domain;
		__u8 bus;
		__u8 slot;
		__u8 function;
		__u8 pad;
		__u16 vendor_id;
		__u16 device_id;
	} pci_info;
	__u32 gpu_id;
	__u16 interrupt_line;
	__u8 pad1[2];
	__u64 reg_address;
	__u64 reg_size;
	__u64 fb_address;
	__u64 fb_size;
	__u32 minor_number;
	__u8 dev_name[10];
	__u8 pad2[2];
};
NVSIM_ASSERT(sizeof(struct nv_ioctl_card_info) == 72, "card info is 72 B");
NVSIM_ASSERT(offsetof(struct nv_ioctl_card_info, gpu_id) == 16, "card_info.gpu_id @16");
NVSIM_ASSERT(offsetof(struct nv_ioctl_card_info, fb_size) == 48, "card_info.fb_size @48");
NVSIM_ASSERT(offsetof(struct nv_ioctl_card_info, minor_number) == 56, "card_info.minor @56");
NVSIM_ASSERT(offsetof(struct nv_ioctl_card_info, dev_name) == 60, "card_info.dev_name @60");

struct nv_ioctl_register_fd {
	__s32 ctl_fd;
};
NVSIM_ASSERT(sizeof(struct nv_ioctl_register_fd) == 4, "register_fd is 4 B");

struct nv_ioctl_rm_api_version {
	__u32 cmd;
	__u32 reply;
	char versionString[64];
};
NVSIM_ASSERT(sizeof(struct nv_ioctl_rm_api_version) == 72, "rm_api_version is 72 B");
#define NV_RM_API_VERSION_CMD_STRICT 0
#define NV_RM_API_VERSION_CMD_RELAXED '1'
#define NV_RM_API_VERSION_CMD_QUERY '2'
#define NV_RM_API_VERSION_REPLY_UNRECOGNIZED 0
#define NV_RM_API_VERSION_REPLY_RECOGNIZED 1

struct nv_ioctl_os_event { /* ALLOC_OS_EVENT / FREE_OS_EVENT */
	__u32 hClient;
	__u32 hDevice;
	__u32 fd;
	__u32 Status;
};
NVSIM_ASSERT(sizeof(struct nv_ioctl_os_event) == 16, "os event is 16 B");

struct nv_ioctl_sys_params {
	__u64 memblock_size;
};
struct nv_ioctl_wait_open_complete {
	__s32 rc;
	__u32 adapterStatus;
};
struct nv_ioctl_status_code {
	__u32 domain;
	__u8 bus;
	__u8 slot;
	__u16 pad;
	__u32 status;
};
NVSIM_ASSERT(sizeof(struct nv_ioctl_status_code) == 12, "status code is 12 B");
#define NV_IOCTL_NUMA_INFO_SIZE 560

/* §4.1 class parameters */
struct nv0080_alloc_params { /* NV01_DEVICE_0 */
	__u32 deviceId;
	__u32 hClientShare;
	__u32 hTargetClient;
	__u32 hTargetDevice;
	__u32 flags;
	__u32 pad0;
	__u64 vaSpaceSize;
	__u64 vaStartInternal;
	__u64 vaLimitInternal;
	__u32 vaMode;
	__u32 pad1;
};
NVSIM_ASSERT(sizeof(struct nv0080_alloc_params) == 56, "NV0080 params are 56 B");

struct nv_memory_allocation_params { /* classes 0x40, 0x3e, 0x50a0 */
	__u32 owner;
	__u32 type;
	__u32 flags;
	__u32 width;
	__u32 height;
	__s32 pitch;
	__u32 attr;
	__u32 attr2;
	__u32 format;
	__u32 comprCovg;
	__u32 zcullCovg;
	__u32 pad0;
	__u64 rangeLo;
	__u64 rangeHi;
	__u64 size;
	__u64 alignment;
	__u64 offset;
	__u64 limit;
	__u64 address;
	__u32 ctagOffset;
	__u32 hVASpace;
	__u32 internalflags;
	__u32 tag;
	__s32 numaNode;
	__u32 pad1;
};
NVSIM_ASSERT(sizeof(struct nv_memory_allocation_params) == 128, "NV_MEMORY_ALLOCATION_PARAMS is 128 B");
NVSIM_ASSERT(offsetof(struct nv_memory_allocation_params, size) == 64, "memory params size @64");
NVSIM_ASSERT(offsetof(struct nv_memory_allocation_params, numaNode) == 120, "numaNode @120");

struct nv_channel_group_alloc_params { /* KEPLER_CHANNEL_GROUP_A */
	__u32 hObjectError;
	__u32 hObjectEccError;
	__u32 hVASpace;
	__u32 engineType;
	__u8 bIsCallingContextVgpuPlugin;
	__u8 pad[3];
};
NVSIM_ASSERT(sizeof(struct nv_channel_group_alloc_params) == 20, "TSG params are 20 B");

struct nv_vaspace_alloc_params { /* FERMI_VASPACE_A (nvos.h NV_VASPACE_ALLOCATION_PARAMETERS) */
	__u32 index;
	__u32 flags;
	__u64 vaSize;
	__u64 vaStartInternal;
	__u64 vaLimitInternal;
	__u32 bigPageSize;
	__u32 pad0;
	__u64 vaBase;
	__u32 pasid;
	__u32 pad1;
};
NVSIM_ASSERT(sizeof(struct nv_vaspace_alloc_params) == 56, "VA space params are 56 B");

/* §5, §6 controls: command words and parameter sizes */
#define NV2080_CTRL_CMD_FB_GET_INFO 0x20801301
#define NV2080_CTRL_CMD_FB_GET_INFO_V2 0x20801303
#define NV2080_CTRL_CMD_GPU_GET_PIDS 0x2080018d
#define NV2080_CTRL_CMD_GPU_GET_PID_INFO 0x2080018e
#define NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS 0x2080110b
#define NVA06C_CTRL_CMD_GPFIFO_SCHEDULE 0xa06c0101
#define NVA06C_CTRL_CMD_SET_TIMESLICE 0xa06c0103
#define NVA06C_CTRL_CMD_GET_TIMESLICE 0xa06c0104
#define NVA06C_CTRL_CMD_PREEMPT 0xa06c0105
/*
 * nvsim only (no such control exists in the real driver): the simulated GPU time a TSG has
 * consumed. Lets in-guest tests observe the time model without debugfs.
 */
#define NVSIM_CTRL_CMD_TSG_GET_RUNTIME 0xa06c01f0

#define NV2080_CTRL_FB_INFO_INDEX_BAR1_SIZE 0x05
#define NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE 0x07
#define NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE 0x08
#define NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE 0x09
#define NV2080_CTRL_FB_INFO_INDEX_MAPPABLE_HEAP_SIZE 0x0A
#define NV2080_CTRL_FB_INFO_INDEX_FB_TAX_SIZE_KB 0x10
#define NV2080_CTRL_FB_INFO_INDEX_LARGEST_FREE_REGION_SIZE_KB 0x12
#define NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE 0x16
#define NV2080_CTRL_FB_INFO_INDEX_USABLE_RAM_SIZE 0x20
#define NV2080_CTRL_FB_INFO_INDEX_HEAP_OFFLINE_SIZE 0x27
#define NV2080_CTRL_FB_INFO_MAX_LIST_SIZE 128

struct nv2080_fb_info {
	__u32 index;
	__u32 data;
};
struct nv2080_fb_get_info_v2_params {
	__u32 fbInfoListSize;
	struct nv2080_fb_info fbInfoList[NV2080_CTRL_FB_INFO_MAX_LIST_SIZE];
};
NVSIM_ASSERT(sizeof(struct nv2080_fb_get_info_v2_params) == 1028, "FB_GET_INFO_V2 is 1028 B");

struct nv2080_fb_get_info_params { /* deprecated: nested pointer to the list */
	__u32 fbInfoListSize;
	__u32 pad;
	__u64 fbInfoList;
};
NVSIM_ASSERT(sizeof(struct nv2080_fb_get_info_params) == 16, "FB_GET_INFO is 16 B");

#define NV2080_CTRL_GPU_MAX_PIDS 950
struct nv2080_gpu_get_pids_params {
	__u32 idType;
	__u32 id;
	__u32 pidTblCount;
	__u32 pidTbl[NV2080_CTRL_GPU_MAX_PIDS];
};
NVSIM_ASSERT(sizeof(struct nv2080_gpu_get_pids_params) == 3812, "GET_PIDS is 3812 B");

#define NV2080_CTRL_GPU_PID_INFO_INDEX_VIDEO_MEMORY_USAGE 0
#define NV2080_CTRL_GPU_MAX_PID_INFO 200
struct nv2080_gpu_pid_info {
	__u32 pid;
	__u32 index;
	__u32 result;
	__u32 pad0;
	__u64 memPrivate;
	__u64 memSharedOwned;
	__u64 memSharedDuped;
	__u8 rest[32]; /* protected usage, smcSubscription */
};
NVSIM_ASSERT(sizeof(struct nv2080_gpu_pid_info) == 72, "pid info entry is 72 B");
NVSIM_ASSERT(offsetof(struct nv2080_gpu_pid_info, memPrivate) == 16, "memPrivate @16");
struct nv2080_gpu_get_pid_info_params {
	__u32 pidInfoListCount;
	__u32 pad;
	struct nv2080_gpu_pid_info pidInfoList[NV2080_CTRL_GPU_MAX_PID_INFO];
};
NVSIM_ASSERT(sizeof(struct nv2080_gpu_get_pid_info_params) == 14408, "GET_PID_INFO is 14408 B");

#define NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES 64
struct nv2080_fifo_disable_channels_params {
	__u8 bDisable;
	__u8 pad0[3];
	__u32 numChannels;
	__u8 bOnlyDisableScheduling;
	__u8 bRewindGpPut;
	__u8 pad1[6];
	__u64 pRunlistPreemptEvent;
	__u32 hClientList[NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES];
	__u32 hChannelList[NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES];
};
NVSIM_ASSERT(sizeof(struct nv2080_fifo_disable_channels_params) == 536, "DISABLE_CHANNELS is 536 B");
NVSIM_ASSERT(offsetof(struct nv2080_fifo_disable_channels_params, hChannelList) == 280, "hChannelList @280");

struct nva06c_gpfifo_schedule_params {
	__u8 bEnable;
	__u8 bSkipSubmit;
	__u8 bSkipEnable;
};
NVSIM_ASSERT(sizeof(struct nva06c_gpfifo_schedule_params) == 3, "GPFIFO_SCHEDULE is 3 B");

struct nva06c_timeslice_params {
	__u64 timesliceUs;
};
struct nva06c_preempt_params {
	__u8 bWait;
	__u8 bManualTimeout;
	__u8 pad[2];
	__u32 timeoutUs;
};
NVSIM_ASSERT(sizeof(struct nva06c_preempt_params) == 8, "PREEMPT is 8 B");

struct nvsim_tsg_runtime_params {
	__u64 consumedNs;   /* simulated GPU time this TSG has run */
	__u64 timesliceUs;  /* effective timeslice (rounded to the granularity) */
	__u32 runnable;     /* scheduled, has an enabled channel */
	__u32 preemptions;  /* PREEMPT calls that took it off the GPU */
	__u64 gpuBusyNs;    /* total simulated time any TSG of this GPU ran */
};
NVSIM_ASSERT(sizeof(struct nvsim_tsg_runtime_params) == 32, "nvsim runtime is 32 B");

/*
 * §6.3 per-process utilisation samples (ctrl2080perf.h, ctrl2080gpumon.h of 580.142): a
 * 16-byte header and a ring of 72 samples of 776 B; a sample is a timestamp (ns) and one
 * engine sample each for fb, gr, nvenc, nvdec, nvjpg and nvofa.
 */
#define NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2 0x20802096
#define NV2080_CTRL_GPUMON_SAMPLE_TYPE_PERFMON_UTIL 2
#define NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL 72
#define NV2080_GPUMON_PID_INVALID 0xffffffffu
struct nv2080_gpumon_engine_util_sample {
	__u32 util;          /* busy over the sample's period, 0.01 % units */
	__u32 vgpuScale;
	__u32 procId;        /* the process on the engine when the sample was taken */
	__u32 subProcessID;
	char subProcessName[100];
	__u32 pad0;
	__u64 pOsPidInfo;    /* the driver's struct pid; 0 once translated */
};
NVSIM_ASSERT(sizeof(struct nv2080_gpumon_engine_util_sample) == 128, "engine sample is 128 B");
struct nv2080_gpumon_perfmon_util_sample {
	__u64 timeStamp;
	struct nv2080_gpumon_engine_util_sample fb, gr, nvenc, nvdec, nvjpg, nvofa;
};
NVSIM_ASSERT(sizeof(struct nv2080_gpumon_perfmon_util_sample) == 776, "perfmon sample is 776 B");
NVSIM_ASSERT(offsetof(struct nv2080_gpumon_perfmon_util_sample, gr) == 136, "sample.gr @136");
struct nv2080_perf_get_gpumon_perfmon_util_samples_v2_params {
	__u8 type;
	__u8 pad0[3];
	__u32 bufSize;       /* must be 72 * 776 */
	__u32 count;
	__u32 tracker;
	struct nv2080_gpumon_perfmon_util_sample
		samples[NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL];
};
NVSIM_ASSERT(sizeof(struct nv2080_perf_get_gpumon_perfmon_util_samples_v2_params) == 55888,
	     "PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2 is 55888 B");

/* §7 UVM (/dev/nvidia-uvm): plain ioctl numbers, size implied by the command. */
#define UVM_INITIALIZE 0x30000001
#define UVM_DEINITIALIZE 0x30000002
#define UVM_REGISTER_GPU 37
#define UVM_UNREGISTER_GPU 38
#define UVM_MM_INITIALIZE 75
/* Not served (no managed memory): counted in uvm_migrate_calls, answered -EINVAL. */
#define UVM_MIGRATE 51

/* uvm_ioctl.h: uvmFd is fget()-ed and must be a va-space file of nvidia-uvm (uvm.c:59-75). */
struct uvm_mm_initialize_params {
	__s32 uvmFd;
	__u32 rmStatus;
};
NVSIM_ASSERT(sizeof(struct uvm_mm_initialize_params) == 8, "UVM_MM_INITIALIZE is 8 B");

struct uvm_initialize_params {
	__u64 flags;
	__u32 rmStatus;
	__u32 pad;
};
NVSIM_ASSERT(sizeof(struct uvm_initialize_params) == 16, "UVM_INITIALIZE is 16 B");

struct uvm_register_gpu_params {
	__u8 gpu_uuid[16];
	__u8 numaEnabled;
	__u8 pad[3];
	__s32 numaNodeId;
	__s32 rmCtrlFd;
	__u32 hClient;
	__u32 hSmcPartRef;
	__u32 rmStatus;
};
NVSIM_ASSERT(sizeof(struct uvm_register_gpu_params) == 40, "UVM_REGISTER_GPU is 40 B");
NVSIM_ASSERT(offsetof(struct uvm_register_gpu_params, rmCtrlFd) == 24, "rmCtrlFd @24");
NVSIM_ASSERT(offsetof(struct uvm_register_gpu_params, rmStatus) == 36, "rmStatus @36");

struct uvm_unregister_gpu_params {
	__u8 gpu_uuid[16];
	__u32 rmStatus;
};

/* nvsim's GPU UUIDs: "nvsim-gpu" then zeros, the GPU index in the last byte. */
#define NVSIM_GPU_UUID_PREFIX "nvsim-gpu"

/* External mappings (kernel-open/nvidia-uvm/uvm_ioctl.h, uvm_types.h of 580.142): UVM_MAX_GPUS =
 * NV_MAX_DEVICES (32) x UVM_PARENT_ID_MAX_SUB_PROCESSORS (8). */
#define UVM_MAP_EXTERNAL_ALLOCATION 33
#define UVM_FREE 34
#define UVM_UNMAP_EXTERNAL 66
#define UVM_CREATE_EXTERNAL_RANGE 73
#define UVM_MAX_GPUS 256

struct uvm_create_external_range_params {
	__u64 base;
	__u64 length;
	__u32 rmStatus;
	__u32 pad;
};
NVSIM_ASSERT(sizeof(struct uvm_create_external_range_params) == 24, "CREATE_EXTERNAL_RANGE 24 B");

struct uvm_gpu_mapping_attributes {
	__u8 gpuUuid[16];
	__u32 gpuMappingType;
	__u32 gpuCachingType;
	__u32 gpuFormatType;
	__u32 gpuElementBits;
	__u32 gpuCompressionType;
};
NVSIM_ASSERT(sizeof(struct uvm_gpu_mapping_attributes) == 36, "UvmGpuMappingAttributes 36 B");

struct uvm_map_external_allocation_params {
	__u64 base;
	__u64 length;
	__u64 offset;
	struct uvm_gpu_mapping_attributes perGpuAttributes[UVM_MAX_GPUS];
	__u64 gpuAttributesCount;
	__s32 rmCtrlFd;
	__u32 hClient;
	__u32 hMemory;
	__u32 rmStatus;
};
NVSIM_ASSERT(sizeof(struct uvm_map_external_allocation_params) == 9264, "MAP_EXTERNAL 9264 B");
NVSIM_ASSERT(offsetof(struct uvm_map_external_allocation_params, hClient) == 9252, "hClient @9252");

struct uvm_free_params {
	__u64 base;
	__u64 length;
	__u32 rmStatus;
	__u32 pad;
};
NVSIM_ASSERT(sizeof(struct uvm_free_params) == 24, "UVM_FREE 24 B");

struct uvm_unmap_external_params {
	__u64 base;
	__u64 length;
	__u8 gpuUuid[16];
	__u32 rmStatus;
	__u32 pad;
};
NVSIM_ASSERT(sizeof(struct uvm_unmap_external_params) == 40, "UNMAP_EXTERNAL 40 B");

/*
 * Object sharing between clients (open-gpu-kernel-modules 580:
 * src/common/sdk/nvidia/inc/nvos.h NVOS55/NVOS57, src/common/sdk/nvidia/inc/rs_access.h,
 * src/common/sdk/nvidia/inc/ctrl/ctrl0000/ctrl0000unix.h).
 */
struct nvos55 { /* RM_DUP_OBJECT */
	__u32 hClient;
	__u32 hParent;
	__u32 hObject;    /* in: the new handle (0: RM picks), out: the handle */
	__u32 hClientSrc;
	__u32 hObjectSrc;
	__u32 flags;
	__u32 status;
};
NVSIM_ASSERT(sizeof(struct nvos55) == 28, "NVOS55 is 28 B");

struct rs_share_policy {
	__u32 target;
	__u32 accessMask; /* RS_ACCESS_MASK, one limb */
	__u16 type;       /* RS_SHARE_TYPE_ */
	__u8 action;      /* RS_SHARE_ACTION_FLAG_ */
	__u8 pad;
};
#define RS_SHARE_TYPE_ALL 1
#define RS_SHARE_TYPE_CLIENT 3
#define RS_SHARE_TYPE_PID 4
#define RS_SHARE_ACTION_FLAG_REVOKE 0x1

struct nvos57 { /* RM_SHARE */
	__u32 hClient;
	__u32 hObject;
	struct rs_share_policy sharePolicy;
	__u32 status;
};
NVSIM_ASSERT(sizeof(struct nvos57) == 24, "NVOS57 is 24 B");

#define NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO 0x3d08
#define NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD 0x3d0b
#define NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD 0x3d0c
#define NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE 64
#define NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_MAX_OBJECTS 512
#define NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_TO_FD_MAX_OBJECTS 128
#define NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_NONE 0
#define NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_VIDMEM 1
#define NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_SYSMEM 2
#define NV_ERR_INVALID_PARAMETER 0x3B
#define NV_ERR_OUT_OF_RANGE 0x5B
#define NV_ERR_INVALID_REQUEST 0x3F

struct nv0000_get_export_object_info_params {
	__s32 fd;
	__u32 deviceInstance;
	__u32 gpuInstanceId;
	__u16 maxObjects;
	__u8 metadata[NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE];
	__u8 pad[2];
};
NVSIM_ASSERT(sizeof(struct nv0000_get_export_object_info_params) == 80, "GET_EXPORT_OBJECT_INFO is 80 B");

struct nv0000_export_objects_to_fd_params {
	__s32 fd;
	__u32 hDevice;
	__u16 maxObjects;
	__u8 metadata[NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE];
	__u8 pad[2];
	__u32 objects[NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_MAX_OBJECTS];
	__u16 numObjects;
	__u16 index;
};
NVSIM_ASSERT(sizeof(struct nv0000_export_objects_to_fd_params) == 2128, "EXPORT_OBJECTS_TO_FD is 2128 B");
NVSIM_ASSERT(offsetof(struct nv0000_export_objects_to_fd_params, objects) == 76, "objects @76");

struct nv0000_import_objects_from_fd_params {
	__s32 fd;
	__u32 hParent;
	__u32 objects[NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_TO_FD_MAX_OBJECTS];
	__u8 objectTypes[NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_TO_FD_MAX_OBJECTS];
	__u16 numObjects;
	__u16 index;
};
NVSIM_ASSERT(sizeof(struct nv0000_import_objects_from_fd_params) == 652, "IMPORT_OBJECTS_FROM_FD is 652 B");

#endif /* NVSIM_ABI_H */
