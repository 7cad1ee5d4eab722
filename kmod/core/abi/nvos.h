/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * RM escape parameter structs (NVOSxx), driver names verbatim.
 *
 * From src/common/sdk/nvidia/inc/nvos.h and
 * src/nvidia/arch/nvalloc/unix/include/nv-unix-nvos-params-wrappers.h
 * (580.142). Offsets: nvidia-rm-abi.md §3 ([C], x86_64). Every struct ends
 * with the u32 status RM writes; the core writes its refusals there too.
 */
#ifndef VCORE_ABI_NVOS_H
#define VCORE_ABI_NVOS_H

#include "../vcore_types.h"

typedef vcore_u32 NvHandle;
typedef vcore_u64 NvP64;
typedef vcore_u32 NV_STATUS;

#define VCORE_OFF(type, field) __builtin_offsetof(type, field)

/*
 * RM functions (nvos.h): how the driver's in-kernel entry numbers its calls
 * (rm_kernel_rmapi_op, nvidia_kernel_rmapi_ops_t.op), where the ioctl path
 * numbers them by escape.
 */
#define NV01_FREE    0x00000000
#define NV04_ALLOC   0x00000015
#define NV04_CONTROL 0x00000036

/* NV_ESC_RM_FREE */
typedef struct NVOS00_PARAMETERS {
	NvHandle hRoot;
	NvHandle hObjectParent;
	NvHandle hObjectOld;
	NV_STATUS status;
} NVOS00_PARAMETERS;
_Static_assert(sizeof(NVOS00_PARAMETERS) == 16, "NVOS00");

/* NV_ESC_RM_ALLOC_MEMORY (legacy), with the unix fd wrapper. */
typedef struct NVOS02_PARAMETERS {
	NvHandle hRoot;
	NvHandle hObjectParent;
	NvHandle hObjectNew;
	vcore_u32 hClass;
	vcore_u32 flags;
	vcore_u32 pad0;
	NvP64 pMemory;
	vcore_u64 limit;
	NV_STATUS status;
	vcore_u32 pad1;
} NVOS02_PARAMETERS;
_Static_assert(sizeof(NVOS02_PARAMETERS) == 48, "NVOS02");
_Static_assert(VCORE_OFF(NVOS02_PARAMETERS, limit) == 32, "NVOS02.limit");
_Static_assert(VCORE_OFF(NVOS02_PARAMETERS, status) == 40, "NVOS02.status");

typedef struct nv_ioctl_nvos02_parameters_with_fd {
	NVOS02_PARAMETERS params;
	vcore_s32 fd;
	vcore_u32 pad0;
} nv_ioctl_nvos02_parameters_with_fd;
_Static_assert(sizeof(nv_ioctl_nvos02_parameters_with_fd) == 56, "NVOS02+fd");
_Static_assert(VCORE_OFF(nv_ioctl_nvos02_parameters_with_fd, fd) == 48,
	       "NVOS02.fd");

/* NV_ESC_RM_ALLOC_OBJECT */
typedef struct NVOS05_PARAMETERS {
	NvHandle hRoot;
	NvHandle hObjectParent;
	NvHandle hObjectNew;
	vcore_u32 hClass;
	NV_STATUS status;
} NVOS05_PARAMETERS;
_Static_assert(sizeof(NVOS05_PARAMETERS) == 20, "NVOS05");

/* NV_ESC_RM_ALLOC, 32-byte form. */
typedef struct NVOS21_PARAMETERS {
	NvHandle hRoot;
	NvHandle hObjectParent;
	NvHandle hObjectNew;
	vcore_u32 hClass;
	NvP64 pAllocParms;
	vcore_u32 paramsSize;
	NV_STATUS status;
} NVOS21_PARAMETERS;
_Static_assert(sizeof(NVOS21_PARAMETERS) == 32, "NVOS21");
_Static_assert(VCORE_OFF(NVOS21_PARAMETERS, status) == 28, "NVOS21.status");

/* NV_ESC_RM_ALLOC, 48-byte form, picked when dataSize == 48
 * (escape.c:381-430). The first five fields line up with NVOS21. */
typedef struct NVOS64_PARAMETERS {
	NvHandle hRoot;
	NvHandle hObjectParent;
	NvHandle hObjectNew;
	vcore_u32 hClass;
	NvP64 pAllocParms;
	NvP64 pRightsRequested;
	vcore_u32 paramsSize;
	vcore_u32 flags;
	NV_STATUS status;
	vcore_u32 pad0;
} NVOS64_PARAMETERS;
_Static_assert(sizeof(NVOS64_PARAMETERS) == 48, "NVOS64");
_Static_assert(VCORE_OFF(NVOS64_PARAMETERS, pAllocParms) == 16, "NVOS64.p");
_Static_assert(VCORE_OFF(NVOS64_PARAMETERS, pRightsRequested) == 24,
	       "NVOS64.rights");
_Static_assert(VCORE_OFF(NVOS64_PARAMETERS, status) == 40, "NVOS64.status");
/* RS_ACCESS_MASK: NV_PRIV_ACCESS... one NvU32 limb in 580 (rs_access.h). */
#define RS_ACCESS_MASK_SIZE 4

/* NV_ESC_RM_VID_HEAP_CONTROL (184 B); only the fields the core reads. */
#define NVOS32_FUNCTION_ALLOC_SIZE		 2
#define NVOS32_FUNCTION_FREE			 3
#define NVOS32_FUNCTION_INFO			 5
#define NVOS32_FUNCTION_ALLOC_TILED_PITCH_HEIGHT 6
#define NVOS32_FUNCTION_ALLOC_SIZE_RANGE	 14
#define NVOS32_FUNCTION_REACQUIRE_COMPR		 15
#define NVOS32_FUNCTION_RELEASE_COMPR		 16
#define NVOS32_FUNCTION_GET_MEM_ALIGNMENT	 18
#define NVOS32_FUNCTION_HW_ALLOC		 19
#define NVOS32_FUNCTION_HW_FREE			 20
#define NVOS32_FUNCTION_ALLOC_OS_DESCRIPTOR	 27
typedef struct NVOS32_PARAMETERS {
	NvHandle hRoot;
	NvHandle hObjectParent;
	vcore_u32 function;
	NvHandle hVASpace;
	vcore_s16 ivcHeapNumber;
	vcore_u16 pad0;
	NV_STATUS status;
	vcore_u64 total;
	vcore_u64 free;
	vcore_u8 data[144]; /* union, see the offsets below */
} NVOS32_PARAMETERS;
_Static_assert(sizeof(NVOS32_PARAMETERS) == 184, "NVOS32");
_Static_assert(VCORE_OFF(NVOS32_PARAMETERS, status) == 20, "NVOS32.status");
_Static_assert(VCORE_OFF(NVOS32_PARAMETERS, total) == 24, "NVOS32.total");
_Static_assert(VCORE_OFF(NVOS32_PARAMETERS, free) == 32, "NVOS32.free");
/* Offsets from the start of NVOS32 (abi.md §3). */
#define NVOS32_ALLOCSIZE_HMEMORY_OFF 44
#define NVOS32_ALLOCSIZE_TYPE_OFF    48
#define NVOS32_ALLOCSIZE_FLAGS_OFF   52
#define NVOS32_ALLOCSIZE_ATTR_OFF    56
#define NVOS32_ALLOCSIZE_SIZE_OFF    88
#define NVOS32_ALLOCSIZE_ADDRESS_OFF 120
#define NVOS32_ALLOCSIZE_ATTR2_OFF   144
#define NVOS32_TILEDPITCH_SIZE_OFF   88
#define NVOS32_SIZERANGE_SIZE_OFF    80
#define NVOS32_FREE_HMEMORY_OFF	     44

/* NV_ESC_RM_MAP_MEMORY, with the unix fd wrapper. */
typedef struct NVOS33_PARAMETERS {
	NvHandle hClient;
	NvHandle hDevice;
	NvHandle hMemory;
	vcore_u32 pad0;
	vcore_u64 offset;
	vcore_u64 length;
	NvP64 pLinearAddress;
	NV_STATUS status;
	vcore_u32 flags;
} NVOS33_PARAMETERS;
_Static_assert(sizeof(NVOS33_PARAMETERS) == 48, "NVOS33");
typedef struct nv_ioctl_nvos33_parameters_with_fd {
	NVOS33_PARAMETERS params;
	vcore_s32 fd;
	vcore_u32 pad0;
} nv_ioctl_nvos33_parameters_with_fd;
_Static_assert(sizeof(nv_ioctl_nvos33_parameters_with_fd) == 56, "NVOS33+fd");
_Static_assert(VCORE_OFF(nv_ioctl_nvos33_parameters_with_fd, fd) == 48,
	       "NVOS33.fd");

/* NV_ESC_RM_UNMAP_MEMORY */
typedef struct NVOS34_PARAMETERS {
	NvHandle hClient;
	NvHandle hDevice;
	NvHandle hMemory;
	vcore_u32 pad0;
	NvP64 pLinearAddress;
	NV_STATUS status;
	vcore_u32 flags;
} NVOS34_PARAMETERS;
_Static_assert(sizeof(NVOS34_PARAMETERS) == 32, "NVOS34");

/* NV_ESC_RM_CONTROL */
#define NVOS54_FLAGS_IRQL_RAISED     0x1
#define NVOS54_FLAGS_LOCK_BYPASS     0x2
#define NVOS54_FLAGS_FINN_SERIALIZED 0x4
typedef struct NVOS54_PARAMETERS {
	NvHandle hClient;
	NvHandle hObject;
	vcore_u32 cmd;
	vcore_u32 flags;
	NvP64 params;
	vcore_u32 paramsSize;
	NV_STATUS status;
} NVOS54_PARAMETERS;
_Static_assert(sizeof(NVOS54_PARAMETERS) == 32, "NVOS54");
_Static_assert(VCORE_OFF(NVOS54_PARAMETERS, params) == 16, "NVOS54.params");
_Static_assert(VCORE_OFF(NVOS54_PARAMETERS, status) == 28, "NVOS54.status");

/* NV_ESC_RM_DUP_OBJECT */
typedef struct NVOS55_PARAMETERS {
	NvHandle hClient;
	NvHandle hParent;
	NvHandle hObject;
	NvHandle hClientSrc;
	NvHandle hObjectSrc;
	vcore_u32 flags;
	NV_STATUS status;
} NVOS55_PARAMETERS;
_Static_assert(sizeof(NVOS55_PARAMETERS) == 28, "NVOS55");

/* NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO */
typedef struct NVOS56_PARAMETERS {
	NvHandle hClient;
	NvHandle hDevice;
	NvHandle hMemory;
	vcore_u32 pad0;
	NvP64 pOldCpuAddress;
	NvP64 pNewCpuAddress;
	NV_STATUS status;
	vcore_u32 pad1;
} NVOS56_PARAMETERS;
_Static_assert(sizeof(NVOS56_PARAMETERS) == 40, "NVOS56");

/* NV_ESC_RM_SHARE: RS_SHARE_POLICY is 12 bytes. */
typedef struct NVOS57_PARAMETERS {
	NvHandle hClient;
	NvHandle hObject;
	vcore_u32 sharePolicy[3];
	NV_STATUS status;
} NVOS57_PARAMETERS;
_Static_assert(sizeof(NVOS57_PARAMETERS) == 24, "NVOS57");

/* NV_ESC_RM_IDLE_CHANNELS (three nested handle arrays). */
typedef struct NVOS30_PARAMETERS {
	NvHandle hClient;
	NvHandle hDevice;
	NvHandle hChannel;
	vcore_u32 numChannels;
	NvP64 phClients;
	NvP64 phDevices;
	NvP64 phChannels;
	vcore_u32 flags;
	vcore_u32 timeout;
	NV_STATUS status;
	vcore_u32 pad0;
} NVOS30_PARAMETERS;
_Static_assert(sizeof(NVOS30_PARAMETERS) == 56, "NVOS30");

/* NV_ESC_RM_ACCESS_REGISTRY */
typedef struct NVOS38_PARAMETERS {
	NvHandle hClient;
	NvHandle hObject;
	vcore_u32 AccessType;
	vcore_u32 DevNodeLength;
	NvP64 pDevNode;
	vcore_u32 ParmStrLength;
	vcore_u32 pad0;
	NvP64 pParmStr;
	vcore_u32 BinaryDataLength;
	vcore_u32 pad1;
	NvP64 pBinaryData;
	vcore_u32 Data;
	vcore_u32 Entry;
	NV_STATUS status;
	vcore_u32 pad2;
} NVOS38_PARAMETERS;
#define NVOS38_PARAMETERS_SIZE sizeof(NVOS38_PARAMETERS)
#define NVOS38_STATUS_OFF      VCORE_OFF(NVOS38_PARAMETERS, status)

/* NV_ESC_RM_ALLOC_CONTEXT_DMA2 */
typedef struct NVOS39_PARAMETERS {
	NvHandle hObjectParent;
	NvHandle hSubDevice;
	NvHandle hObjectNew;
	vcore_u32 hClass;
	vcore_u32 flags;
	vcore_u32 selector;
	NvHandle hMemory;
	vcore_u32 pad0;
	vcore_u64 offset;
	vcore_u64 limit;
	NV_STATUS status;
	vcore_u32 pad1;
} NVOS39_PARAMETERS;
_Static_assert(sizeof(NVOS39_PARAMETERS) == 56, "NVOS39");

/* NV_ESC_RM_GET_EVENT_DATA */
typedef struct NVOS41_PARAMETERS {
	NvP64 pEvent;
	vcore_u32 MoreEvents;
	NV_STATUS status;
} NVOS41_PARAMETERS;
_Static_assert(sizeof(NVOS41_PARAMETERS) == 16, "NVOS41");
/* What the driver writes at pEvent (nv-unix-nvos-params-wrappers.h). */
typedef struct NvUnixEvent {
	NvHandle hObject;
	vcore_u32 NotifyIndex;
	vcore_u32 info32;
	vcore_u16 info16;
} NvUnixEvent;
_Static_assert(sizeof(NvUnixEvent) == 16, "NvUnixEvent");
#define NV_UNIX_EVENT_SIZE 16

/* NV_ESC_RM_MAP_MEMORY_DMA: 64 B since 580.65.06 (flags2, kindOverride). */
typedef struct NVOS46_PARAMETERS {
	NvHandle hClient;
	NvHandle hDevice;
	NvHandle hDma;
	NvHandle hMemory;
	vcore_u64 offset;
	vcore_u64 length;
	vcore_u32 flags;
	vcore_u32 flags2;
	vcore_u32 kindOverride;
	vcore_u32 pad0;
	vcore_u64 dmaOffset;
	NV_STATUS status;
	vcore_u32 pad1;
} NVOS46_PARAMETERS;
_Static_assert(sizeof(NVOS46_PARAMETERS) == 64, "NVOS46");
_Static_assert(VCORE_OFF(NVOS46_PARAMETERS, status) == 56, "NVOS46.status");

/* NV_ESC_RM_UNMAP_MEMORY_DMA */
typedef struct NVOS47_PARAMETERS {
	NvHandle hClient;
	NvHandle hDevice;
	NvHandle hDma;
	NvHandle hMemory;
	vcore_u32 flags;
	vcore_u32 pad0;
	vcore_u64 dmaOffset;
	vcore_u64 size;
	NV_STATUS status;
	vcore_u32 pad1;
} NVOS47_PARAMETERS;
_Static_assert(sizeof(NVOS47_PARAMETERS) == 48, "NVOS47");

/* NV_ESC_RM_BIND_CONTEXT_DMA */
typedef struct NVOS49_PARAMETERS {
	NvHandle hClient;
	NvHandle hChannel;
	NvHandle hCtxDma;
	NV_STATUS status;
} NVOS49_PARAMETERS;
_Static_assert(sizeof(NVOS49_PARAMETERS) == 16, "NVOS49");

/* NV_ESC_RM_I2C_ACCESS */
typedef struct NVOS_I2C_ACCESS_PARAMS {
	NvHandle hClient;
	NvHandle hDevice;
	vcore_u32 paramSize;
	vcore_u32 pad0;
	NvP64 paramStructPtr;
	NV_STATUS status;
	vcore_u32 pad1;
} NVOS_I2C_ACCESS_PARAMS;
#define NVOS_I2C_ACCESS_PARAMS_SIZE sizeof(NVOS_I2C_ACCESS_PARAMS)
#define NVOS_I2C_ACCESS_STATUS_OFF  VCORE_OFF(NVOS_I2C_ACCESS_PARAMS, status)

#endif /* VCORE_ABI_NVOS_H */
