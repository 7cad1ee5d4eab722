/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * NVIDIA frontend escapes and their parameter structs, driver names verbatim.
 *
 * From NVIDIA/open-gpu-kernel-modules 580.142:
 *   src/nvidia/arch/nvalloc/unix/include/nv_escape.h (RM escapes 0x27..0x5f)
 *   kernel-open/common/inc/nv-ioctl-numbers.h, nv-ioctl-numa.h (NV_ESC_* >=
 * 200) kernel-open/common/inc/nv-ioctl.h (nv_ioctl_* structs) Sizes:
 * nvidia-rm-abi.md §2 and §3 ([C], x86_64). Data only, no logic.
 */
#ifndef VCORE_ABI_NV_ESCAPE_H
#define VCORE_ABI_NV_ESCAPE_H

#include "../vcore_types.h"

/* _IOC decoding (include/uapi/asm-generic/ioctl.h); the driver reads only
 * nr and size (nv.c:2403-2404, abi.md §1.3). */
#define VCORE_IOC_NR(req)   ((req)&0xffu)
#define VCORE_IOC_TYPE(req) (((req) >> 8) & 0xffu)
#define VCORE_IOC_SIZE(req) (((req) >> 16) & 0x3fffu)
#define VCORE_IOWR(type, nr, size)                                             \
	((3u << 30) | ((vcore_u32)(size) << 16) | ((vcore_u32)(type) << 8) |   \
	 (vcore_u32)(nr))
#define NV_IOCTL_MAGIC 'F'
#define NV_IOCTL_BASE  200
/* kernel-open/common/inc/nv.h:70 */
#define NV_ABSOLUTE_MAX_IOCTL_SIZE 16384

#define NV_ESC_RM_ALLOC_MEMORY		     0x27
#define NV_ESC_RM_ALLOC_OBJECT		     0x28
#define NV_ESC_RM_FREE			     0x29
#define NV_ESC_RM_CONTROL		     0x2A
#define NV_ESC_RM_ALLOC			     0x2B
#define NV_ESC_RM_CONFIG_GET		     0x32
#define NV_ESC_RM_CONFIG_SET		     0x33
#define NV_ESC_RM_DUP_OBJECT		     0x34
#define NV_ESC_RM_SHARE			     0x35
#define NV_ESC_RM_CONFIG_GET_EX		     0x37
#define NV_ESC_RM_CONFIG_SET_EX		     0x38
#define NV_ESC_RM_I2C_ACCESS		     0x39
#define NV_ESC_RM_IDLE_CHANNELS		     0x41
#define NV_ESC_RM_VID_HEAP_CONTROL	     0x4A
#define NV_ESC_RM_ACCESS_REGISTRY	     0x4D
#define NV_ESC_RM_MAP_MEMORY		     0x4E
#define NV_ESC_RM_UNMAP_MEMORY		     0x4F
#define NV_ESC_RM_GET_EVENT_DATA	     0x52
#define NV_ESC_RM_ALLOC_CONTEXT_DMA2	     0x54
#define NV_ESC_RM_ADD_VBLANK_CALLBACK	     0x56
#define NV_ESC_RM_MAP_MEMORY_DMA	     0x57
#define NV_ESC_RM_UNMAP_MEMORY_DMA	     0x58
#define NV_ESC_RM_BIND_CONTEXT_DMA	     0x59
#define NV_ESC_RM_EXPORT_OBJECT_TO_FD	     0x5C
#define NV_ESC_RM_IMPORT_OBJECT_FROM_FD	     0x5D
#define NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO 0x5E
#define NV_ESC_RM_LOCKLESS_DIAGNOSTIC	     0x5F

#define NV_ESC_CARD_INFO	   (NV_IOCTL_BASE + 0)
#define NV_ESC_REGISTER_FD	   (NV_IOCTL_BASE + 1)
#define NV_ESC_ALLOC_OS_EVENT	   (NV_IOCTL_BASE + 6)
#define NV_ESC_FREE_OS_EVENT	   (NV_IOCTL_BASE + 7)
#define NV_ESC_STATUS_CODE	   (NV_IOCTL_BASE + 9)
#define NV_ESC_CHECK_VERSION_STR   (NV_IOCTL_BASE + 10)
#define NV_ESC_IOCTL_XFER_CMD	   (NV_IOCTL_BASE + 11)
#define NV_ESC_ATTACH_GPUS_TO_FD   (NV_IOCTL_BASE + 12)
#define NV_ESC_QUERY_DEVICE_INTR   (NV_IOCTL_BASE + 13)
#define NV_ESC_SYS_PARAMS	   (NV_IOCTL_BASE + 14)
#define NV_ESC_NUMA_INFO	   (NV_IOCTL_BASE + 15)
#define NV_ESC_SET_NUMA_STATUS	   (NV_IOCTL_BASE + 16)
#define NV_ESC_EXPORT_TO_DMABUF_FD (NV_IOCTL_BASE + 17)
#define NV_ESC_WAIT_OPEN_COMPLETE  (NV_IOCTL_BASE + 18)

/* nv-ioctl.h: the XFER wrapper; the outer size must be exactly 16. */
typedef struct nv_ioctl_xfer {
	vcore_u32 cmd;
	vcore_u32 size;
	vcore_u64 ptr;
} nv_ioctl_xfer_t;
_Static_assert(sizeof(nv_ioctl_xfer_t) == 16, "nv_ioctl_xfer_t");
_Static_assert(__builtin_offsetof(nv_ioctl_xfer_t, ptr) == 8, "xfer.ptr");

typedef struct nv_ioctl_pci_info {
	vcore_u32 domain;
	vcore_u8 bus;
	vcore_u8 slot;
	vcore_u8 function;
	vcore_u8 pad0;
	vcore_u16 vendor_id;
	vcore_u16 device_id;
} nv_ioctl_pci_info_t;

typedef struct nv_ioctl_card_info {
	vcore_u8 valid;
	vcore_u8 pad0[3];
	nv_ioctl_pci_info_t pci_info;
	vcore_u32 gpu_id;
	vcore_u16 interrupt_line;
	vcore_u8 pad1[2];
	vcore_u64 reg_address;
	vcore_u64 reg_size;
	vcore_u64 fb_address;
	vcore_u64 fb_size;
	vcore_u32 minor_number;
	vcore_u8 dev_name[10];
	vcore_u8 pad2[2];
} nv_ioctl_card_info_t;
_Static_assert(sizeof(nv_ioctl_card_info_t) == 72, "nv_ioctl_card_info_t");
_Static_assert(__builtin_offsetof(nv_ioctl_card_info_t, fb_size) == 48,
	       "card_info.fb_size");
_Static_assert(__builtin_offsetof(nv_ioctl_card_info_t, minor_number) == 56,
	       "card_info.minor_number");

typedef struct nv_ioctl_register_fd {
	vcore_s32 ctl_fd;
} nv_ioctl_register_fd_t;
_Static_assert(sizeof(nv_ioctl_register_fd_t) == 4, "register_fd");

typedef struct nv_ioctl_alloc_os_event {
	vcore_u32 hClient;
	vcore_u32 hDevice;
	vcore_u32 fd;
	vcore_u32 Status;
} nv_ioctl_alloc_os_event_t;
_Static_assert(sizeof(nv_ioctl_alloc_os_event_t) == 16, "alloc_os_event");
typedef nv_ioctl_alloc_os_event_t nv_ioctl_free_os_event_t;

typedef struct nv_ioctl_status_code {
	vcore_u32 domain;
	vcore_u8 bus;
	vcore_u8 slot;
	vcore_u8 pad0[2];
	vcore_u32 status;
} nv_ioctl_status_code_t;
_Static_assert(sizeof(nv_ioctl_status_code_t) == 12, "status_code");

/* cmd: 0 strict, '1' relaxed, '2' query (nv-ioctl.h). */
#define NV_RM_API_VERSION_CMD_STRICT	0
#define NV_RM_API_VERSION_CMD_RELAXED	'1'
#define NV_RM_API_VERSION_CMD_QUERY	'2'
#define NV_RM_API_VERSION_STRING_LENGTH 64
typedef struct nv_ioctl_rm_api_version {
	vcore_u32 cmd;
	vcore_u32 reply;
	char versionString[NV_RM_API_VERSION_STRING_LENGTH];
} nv_ioctl_rm_api_version_t;
_Static_assert(sizeof(nv_ioctl_rm_api_version_t) == 72, "rm_api_version");

typedef struct nv_ioctl_query_device_intr {
	vcore_u32 intrStatus;
	vcore_u32 status;
} nv_ioctl_query_device_intr;
_Static_assert(sizeof(nv_ioctl_query_device_intr) == 8, "query_device_intr");

typedef struct nv_ioctl_sys_params {
	vcore_u64 memblock_size;
} nv_ioctl_sys_params_t;
_Static_assert(sizeof(nv_ioctl_sys_params_t) == 8, "sys_params");

/* nv-ioctl-numa.h */
#define NV_IOCTL_NUMA_INFO_MAX_OFFLINE_ADDRESSES 64
typedef struct offline_addresses {
	vcore_u64 addresses[NV_IOCTL_NUMA_INFO_MAX_OFFLINE_ADDRESSES];
	vcore_u32 numEntries;
	vcore_u32 pad0;
} nv_offline_addresses_t;
typedef struct nv_ioctl_numa_info {
	vcore_s32 nid;
	vcore_s32 status;
	vcore_u64 memblock_size;
	vcore_u64 numa_mem_addr;
	vcore_u64 numa_mem_size;
	vcore_u8 use_auto_online;
	vcore_u8 pad0[7];
	nv_offline_addresses_t offline_addresses;
} nv_ioctl_numa_info_t;
#define NV_IOCTL_NUMA_INFO_SIZE sizeof(nv_ioctl_numa_info_t)
typedef struct nv_ioctl_set_numa_status {
	vcore_s32 status;
} nv_ioctl_set_numa_status_t;
#define NV_IOCTL_SET_NUMA_STATUS_SIZE sizeof(nv_ioctl_set_numa_status_t)
/* nv-ioctl.h, the 580.65.06 layout (mappingType, bAllowMmap), abi.md §3. */
#define NV_DMABUF_EXPORT_MAX_HANDLES 128
typedef struct nv_ioctl_export_to_dma_buf_fd {
	vcore_s32 fd;
	vcore_u32 hClient;
	vcore_u32 totalObjects;
	vcore_u32 numObjects;
	vcore_u32 index;
	vcore_u32 pad0;
	vcore_u64 totalSize;
	vcore_u8 mappingType;
	vcore_u8 bAllowMmap;
	vcore_u8 pad1[2];
	vcore_u32 handles[NV_DMABUF_EXPORT_MAX_HANDLES];
	vcore_u64 offsets[NV_DMABUF_EXPORT_MAX_HANDLES];
	vcore_u64 sizes[NV_DMABUF_EXPORT_MAX_HANDLES];
	vcore_u32 status;
	vcore_u32 pad2;
} nv_ioctl_export_to_dma_buf_fd_t;
#define NV_IOCTL_EXPORT_TO_DMABUF_FD_SIZE                                      \
	sizeof(nv_ioctl_export_to_dma_buf_fd_t)
#define NV_IOCTL_EXPORT_TO_DMABUF_FD_STATUS_OFF                                \
	__builtin_offsetof(nv_ioctl_export_to_dma_buf_fd_t, status)

typedef struct nv_ioctl_wait_open_complete {
	vcore_s32 rc;
	vcore_u32 adapterStatus;
} nv_ioctl_wait_open_complete_t;
_Static_assert(sizeof(nv_ioctl_wait_open_complete_t) == 8, "wait_open");

/* NV_ESC_CARD_INFO takes an array; libcuda and NVML pass 32 entries. */
#define NV_CARD_INFO_MAX_ENTRIES 32

#endif /* VCORE_ABI_NV_ESCAPE_H */
