/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * RM object classes and their allocation parameters, driver names verbatim.
 *
 * From src/common/sdk/nvidia/inc/class/clXXXX.h, nvos.h and alloc/ (580.142);
 * sizes and offsets from nvidia-rm-abi.md §4.1, §6.3 ([C], x86_64) and the
 * gVisor nvproxy tables (pkg/abi/nvgpu/classes.go). Data only.
 */
#ifndef VCORE_ABI_CLASSES_H
#define VCORE_ABI_CLASSES_H

#include "nvos.h"

/* Clients (userspace root allocs are forced to 0x41, escape.c:396-404). */
#define NV01_ROOT		      0x00000000
#define NV01_ROOT_NON_PRIV	      0x00000001
#define NV01_CONTEXT_DMA	      0x00000002
#define NV01_EVENT		      0x00000005
#define NV01_ROOT_CLIENT	      0x00000041
#define NV04_DISPLAY_COMMON	      0x00000073
#define NV01_EVENT_KERNEL_CALLBACK    0x00000078
#define NV01_EVENT_OS_EVENT	      0x00000079
#define NV01_EVENT_KERNEL_CALLBACK_EX 0x0000007e
#define NV01_DEVICE_0		      0x00000080
#define NV20_SUBDEVICE_0	      0x00002080
#define NV2081_BINAPI		      0x00002081
#define NV20_SUBDEVICE_DIAG	      0x0000208f

/* Memory */
#define NV01_MEMORY_SYSTEM		 0x0000003e
#define NV01_MEMORY_LOCAL_PRIVILEGED	 0x0000003f
#define NV01_MEMORY_LOCAL_USER		 0x00000040
#define NV01_MEMORY_VIRTUAL		 0x00000070
#define NV01_MEMORY_SYSTEM_DYNAMIC	 NV01_MEMORY_VIRTUAL
#define NV01_MEMORY_SYSTEM_OS_DESCRIPTOR 0x00000071
#define NV01_MEMORY_HW_RESOURCES	 0x000000b1
#define NV01_MEMORY_LOCAL_PHYSICAL	 0x000000c2
#define RM_USER_SHARED_DATA		 0x000000de
#define NV_MEMORY_EXPORT		 0x000000e0
#define NV_IMEX_SESSION			 0x000000f1
#define NV01_MEMORY_FLA			 0x000000f3
#define NV_MEMORY_FABRIC		 0x000000f8
#define NV_MEMORY_FABRIC_IMPORTED_REF	 0x000000fb
#define NV_MEMORY_MULTICAST_FABRIC	 0x000000fd
#define NV_MEMORY_MAPPER		 0x000000fe
#define NV01_MEMORY_DEVICELESS		 0x000090ce
#define NV50_MEMORY_VIRTUAL		 0x000050a0

/* Misc device children */
#define NV50_P2P		  0x0000503b
#define NV50_THIRD_PARTY_P2P	  0x0000503c
#define GT200_DEBUGGER		  0x000083de
#define MPS_COMPUTE		  0x0000900e
#define FERMI_CONTEXT_SHARE_A	  0x00009067
#define GF100_ZBC_CLEAR		  0x00009096
#define GF100_PROFILER		  0x000090cc
#define GF100_SUBDEVICE_MASTER	  0x000090e6
#define GF100_SUBDEVICE_INFOROM	  0x000090e7 /* class/cl90e7.h */
#define FERMI_VASPACE_A		  0x000090f1
#define FERMI_TWOD_A		  0x0000902d
#define KEPLER_INLINE_TO_MEMORY_B 0x0000a140
#define MAXWELL_PROFILER_DEVICE	  0x0000b2cc
#define NV_CONFIDENTIAL_COMPUTE	  0x0000cb33
#define HOPPER_SEC2_WORK_LAUNCH_A 0x0000cba2
/* MIG capability sessions (NVML allocates 0xc639/0xc640 at init). */
#define AMPERE_SMC_PARTITION_REF      0x0000c637
#define AMPERE_SMC_EXEC_PARTITION_REF 0x0000c638
#define AMPERE_SMC_CONFIG_SESSION     0x0000c639
#define AMPERE_SMC_MONITOR_SESSION    0x0000c640

/* Scheduling: TSG and channels (abi.md §6.1, §6.3). */
#define KEPLER_CHANNEL_GROUP_A	   0x0000a06c
#define VOLTA_CHANNEL_GPFIFO_A	   0x0000c36f
#define TURING_CHANNEL_GPFIFO_A	   0x0000c46f
#define AMPERE_CHANNEL_GPFIFO_A	   0x0000c56f
#define HOPPER_CHANNEL_GPFIFO_A	   0x0000c86f
#define BLACKWELL_CHANNEL_GPFIFO_A 0x0000c96f
#define BLACKWELL_CHANNEL_GPFIFO_B 0x0000ca6f
#define VOLTA_USERMODE_A	   0x0000c361
#define TURING_USERMODE_A	   0x0000c461
#define HOPPER_USERMODE_A	   0x0000c661
#define BLACKWELL_USERMODE_A	   0x0000c761

/* Engines (children of channels). */
#define VOLTA_COMPUTE_A	     0x0000c3c0
#define TURING_COMPUTE_A     0x0000c5c0
#define AMPERE_COMPUTE_A     0x0000c6c0
#define AMPERE_COMPUTE_B     0x0000c7c0
#define ADA_COMPUTE_A	     0x0000c9c0
#define HOPPER_COMPUTE_A     0x0000cbc0
#define BLACKWELL_COMPUTE_A  0x0000cdc0
#define BLACKWELL_COMPUTE_B  0x0000cec0
#define VOLTA_DMA_COPY_A     0x0000c3b5
#define TURING_DMA_COPY_A    0x0000c5b5
#define AMPERE_DMA_COPY_A    0x0000c6b5
#define AMPERE_DMA_COPY_B    0x0000c7b5
#define HOPPER_DMA_COPY_A    0x0000c8b5
#define BLACKWELL_DMA_COPY_A 0x0000c9b5
#define BLACKWELL_DMA_COPY_B 0x0000cab5
#define TURING_A	     0x0000c597
#define AMPERE_A	     0x0000c697
#define ADA_A		     0x0000c997
#define HOPPER_A	     0x0000cb97
#define BLACKWELL_A	     0x0000cd97
#define BLACKWELL_B	     0x0000ce97

/* NV0000_ALLOC_PARAMETERS (class/cl0000.h; NV_PROC_NAME_MAX_LENGTH nvlimits.h)
 */
typedef struct NV0000_ALLOC_PARAMETERS {
	NvHandle hClient;
	vcore_u32 processID;
	char processName[100];
	vcore_u32 pad0;
	NvP64 pOsPidInfo;
} NV0000_ALLOC_PARAMETERS;
#define NV0000_ALLOC_PARAMETERS_SIZE sizeof(NV0000_ALLOC_PARAMETERS)

/* NV0080_ALLOC_PARAMETERS (class/cl0080.h) */
typedef struct NV0080_ALLOC_PARAMETERS {
	vcore_u32 deviceId;
	NvHandle hClientShare;
	NvHandle hTargetClient;
	NvHandle hTargetDevice;
	vcore_u32 flags;
	vcore_u32 pad0;
	vcore_u64 vaSpaceSize;
	vcore_u64 vaStartInternal;
	vcore_u64 vaLimitInternal;
	vcore_u32 vaMode;
	vcore_u32 pad1;
} NV0080_ALLOC_PARAMETERS;
#define NV0080_ALLOC_PARAMETERS_SIZE sizeof(NV0080_ALLOC_PARAMETERS)

/* NV2080_ALLOC_PARAMETERS (class/cl2080.h) */
typedef struct NV2080_ALLOC_PARAMETERS {
	vcore_u32 subDeviceId;
} NV2080_ALLOC_PARAMETERS;
#define NV2080_ALLOC_PARAMETERS_SIZE sizeof(NV2080_ALLOC_PARAMETERS)

/* NV0005_ALLOC_PARAMETERS (cl0005.h): events; data is the OS-event key,
 * overwritten by RM with a kernel pointer (abi.md §9.3 item 5). */
typedef struct NV0005_ALLOC_PARAMETERS {
	NvHandle hParentClient;
	NvHandle hSrcResource;
	vcore_u32 hClass;
	vcore_u32 notifyIndex;
	NvP64 data;
} NV0005_ALLOC_PARAMETERS;
_Static_assert(sizeof(NV0005_ALLOC_PARAMETERS) == 24, "NV0005");

/* NV_MEMORY_ALLOCATION_PARAMS (nvos.h), 128 B since 545.23.06. */
typedef struct NV_MEMORY_ALLOCATION_PARAMS {
	vcore_u32 owner;
	vcore_u32 type;
	vcore_u32 flags;
	vcore_u32 width;
	vcore_u32 height;
	vcore_s32 pitch;
	vcore_u32 attr;
	vcore_u32 attr2;
	vcore_u32 format;
	vcore_u32 comprCovg;
	vcore_u32 zcullCovg;
	vcore_u32 pad0;
	vcore_u64 rangeLo;
	vcore_u64 rangeHi;
	vcore_u64 size;
	vcore_u64 alignment;
	vcore_u64 offset;
	vcore_u64 limit;
	NvP64 address;
	vcore_u32 ctagOffset;
	NvHandle hVASpace;
	vcore_u32 internalflags;
	vcore_u32 tag;
	vcore_s32 numaNode;
	vcore_u32 pad1;
} NV_MEMORY_ALLOCATION_PARAMS;
_Static_assert(sizeof(NV_MEMORY_ALLOCATION_PARAMS) == 128, "NV_MEMORY_ALLOC");
_Static_assert(VCORE_OFF(NV_MEMORY_ALLOCATION_PARAMS, attr) == 24, "attr");
_Static_assert(VCORE_OFF(NV_MEMORY_ALLOCATION_PARAMS, size) == 64, "size");
_Static_assert(VCORE_OFF(NV_MEMORY_ALLOCATION_PARAMS, hVASpace) == 108, "va");
_Static_assert(VCORE_OFF(NV_MEMORY_ALLOCATION_PARAMS, numaNode) == 120, "numa");

/* NVOS32_ALLOC_FLAGS_* (nvos.h:1444-1481) */
#define NVOS32_ALLOC_FLAGS_FIXED_ADDRESS_ALLOCATE 0x00000010
#define NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED 0x00004000
#define NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM	  0x00010000
#define NVOS32_ALLOC_FLAGS_VIRTUAL		  0x00080000
/* A virtual range's page tables made as mappings need them, not at once. */
#define NVOS32_ALLOC_FLAGS_LAZY 0x00000400
/* A sparse virtual range: always eager (standard_mem.c clears LAZY). */
#define NVOS32_ALLOC_FLAGS_SPARSE 0x04000000
/* NVOS32_ATTR_* fields (nvos.h:1061-1090) */
#define NVOS32_ATTR_PAGE_SIZE(a)      (((a) >> 23) & 0x3u)
#define NVOS32_ATTR_PAGE_SIZE_DEFAULT 0
#define NVOS32_ATTR_PAGE_SIZE_4KB     1
#define NVOS32_ATTR_PAGE_SIZE_BIG     2
#define NVOS32_ATTR_PAGE_SIZE_HUGE    3
#define NVOS32_ATTR_LOCATION(a)	      (((a) >> 25) & 0x3u)
#define NVOS32_ATTR_LOCATION_VIDMEM   0
#define NVOS32_ATTR_LOCATION_PCI      1
#define NVOS32_ATTR_LOCATION_ANY      3
/* NVOS32_ATTR2_PAGE_SIZE_HUGE 24:23 in attr2: 0 DEFAULT, 1 2MB, 2 512MB,
 * 3 256GB (nvos.h). */
#define NVOS32_ATTR2_PAGE_SIZE_HUGE(a2) (((a2) >> 23) & 0x3u)

/* class/cl00c2.h */
typedef struct NV_PHYSICAL_MEMORY_ALLOCATION_PARAMS {
	vcore_u64 memSize;
	vcore_u32 format;
	vcore_u32 pad0;
	vcore_u64 pageSize;
} NV_PHYSICAL_MEMORY_ALLOCATION_PARAMS;
#define NV_PHYSICAL_MEMORY_ALLOCATION_PARAMS_SIZE                              \
	sizeof(NV_PHYSICAL_MEMORY_ALLOCATION_PARAMS)
/* class/cl0070.h */
typedef struct NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS {
	vcore_u64 offset;
	vcore_u64 limit;
	NvHandle hVASpace;
	vcore_u32 pad0;
} NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS;
#define NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS_SIZE                               \
	sizeof(NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS)
/* nvos.h */
typedef struct NV_OS_DESC_MEMORY_ALLOCATION_PARAMS {
	vcore_u32 type;
	vcore_u32 flags;
	vcore_u32 attr;
	vcore_u32 attr2;
	NvP64 descriptor;
	vcore_u64 limit;
	vcore_u32 descriptorType;
	vcore_u32 tag;
} NV_OS_DESC_MEMORY_ALLOCATION_PARAMS;
#define NV_OS_DESC_MEMORY_ALLOCATION_PARAMS_SIZE                               \
	sizeof(NV_OS_DESC_MEMORY_ALLOCATION_PARAMS)
/* class/cl00de.h */
typedef struct NV00DE_ALLOC_PARAMETERS {
	vcore_u64 polledDataMask;
} NV00DE_ALLOC_PARAMETERS;
#define NV00DE_ALLOC_PARAMETERS_SIZE sizeof(NV00DE_ALLOC_PARAMETERS)

/* NV00F8_ALLOCATION_PARAMETERS (class/cl00f8.h): fabric vidmem. */
typedef struct NV00F8_ALLOCATION_PARAMETERS {
	vcore_u64 alignment;
	vcore_u64 allocSize;
	vcore_u64 pageSize;
	vcore_u32 allocFlags;
	vcore_u32 pad0;
	struct {
		vcore_u64 offset;
		NvHandle hVidMem;
		vcore_u32 flags;
	} map;
} NV00F8_ALLOCATION_PARAMETERS;
#define NV00F8_ALLOCATION_PARAMETERS_SIZE sizeof(NV00F8_ALLOCATION_PARAMETERS)
#define NV00F8_ALLOC_SIZE_OFF		  VCORE_OFF(NV00F8_ALLOCATION_PARAMETERS, allocSize)

/* NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS (cla06c.h) */
typedef struct NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS {
	NvHandle hObjectError;
	NvHandle hObjectEccError;
	NvHandle hVASpace;
	vcore_u32 engineType;
	vcore_u8 bIsCallingContextVgpuPlugin;
	vcore_u8 pad0[3];
} NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS;
_Static_assert(sizeof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS) == 20, "TSG");
_Static_assert(VCORE_OFF(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS, engineType) ==
		       12,
	       "TSG.engineType");

/* NV_CHANNEL_ALLOC_PARAMS (alloc/alloc_channel.h), 368 B in 570..580
 * (tpcConfigID appended in 570.86.15). NV_MAX_SUBDEVICES 8 (nvlimits.h). */
typedef struct NV_MEMORY_DESC_PARAMS {
	vcore_u64 base;
	vcore_u64 size;
	vcore_u32 addressSpace;
	vcore_u32 cacheAttrib;
} NV_MEMORY_DESC_PARAMS;
typedef struct NV_CHANNEL_ALLOC_PARAMS {
	NvHandle hObjectError;
	NvHandle hObjectBuffer;
	vcore_u64 gpFifoOffset;
	vcore_u32 gpFifoEntries;
	vcore_u32 flags;
	NvHandle hContextShare;
	NvHandle hVASpace;
	NvHandle hUserdMemory[8];
	vcore_u64 userdOffset[8];
	vcore_u32 engineType;
	vcore_u32 cid;
	vcore_u32 subDeviceId;
	NvHandle hObjectEccError;
	NV_MEMORY_DESC_PARAMS instanceMem;
	NV_MEMORY_DESC_PARAMS userdMem;
	NV_MEMORY_DESC_PARAMS ramfcMem;
	NV_MEMORY_DESC_PARAMS mthdbufMem;
	NvHandle hPhysChannelGroup;
	vcore_u32 internalFlags;
	NV_MEMORY_DESC_PARAMS errorNotifierMem;
	NV_MEMORY_DESC_PARAMS eccErrorNotifierMem;
	vcore_u32 ProcessID;
	vcore_u32 SubProcessID;
	vcore_u32 encryptIv[3];
	vcore_u32 decryptIv[3];
	vcore_u32 hmacNonce[8];
	vcore_u32 tpcConfigID;
} NV_CHANNEL_ALLOC_PARAMS;
#define NV_CHANNEL_ALLOC_PARAMS_SIZE sizeof(NV_CHANNEL_ALLOC_PARAMS)
#define NV_CHANNEL_ALLOC_ENGINE_TYPE_OFF                                       \
	VCORE_OFF(NV_CHANNEL_ALLOC_PARAMS, engineType)

/* nvos.h: VA space (pasid since 580.65.06), subcontext, graphics/compute
 * engines; class/clb0b5sw.h copy engines; class/cl503c.h third-party P2P. */
typedef struct NV_VASPACE_ALLOCATION_PARAMETERS {
	vcore_u32 index;
	vcore_u32 flags;
	vcore_u64 vaSize;
	vcore_u64 vaStartInternal;
	vcore_u64 vaLimitInternal;
	vcore_u32 bigPageSize;
	vcore_u32 pad0;
	vcore_u64 vaBase;
	vcore_u32 pasid;
	vcore_u32 pad1;
} NV_VASPACE_ALLOCATION_PARAMETERS;
#define NV_VASPACE_ALLOCATION_PARAMETERS_SIZE                                  \
	sizeof(NV_VASPACE_ALLOCATION_PARAMETERS)
typedef struct NV_CTXSHARE_ALLOCATION_PARAMETERS {
	NvHandle hVASpace;
	vcore_u32 flags;
	vcore_u32 subctxId;
} NV_CTXSHARE_ALLOCATION_PARAMETERS;
#define NV_CTXSHARE_ALLOCATION_PARAMETERS_SIZE                                 \
	sizeof(NV_CTXSHARE_ALLOCATION_PARAMETERS)
typedef struct NV_GR_ALLOCATION_PARAMETERS {
	vcore_u32 version;
	vcore_u32 flags;
	vcore_u32 size;
	vcore_u32 caps;
} NV_GR_ALLOCATION_PARAMETERS;
#define NV_GR_ALLOCATION_PARAMETERS_SIZE sizeof(NV_GR_ALLOCATION_PARAMETERS)
typedef struct NVB0B5_ALLOCATION_PARAMETERS {
	vcore_u32 version;
	vcore_u32 engineType;
} NVB0B5_ALLOCATION_PARAMETERS;
#define NVB0B5_ALLOCATION_PARAMETERS_SIZE sizeof(NVB0B5_ALLOCATION_PARAMETERS)
typedef struct NV_HOPPER_USERMODE_A_PARAMS {
	vcore_u8 bBar1Mapping;
	vcore_u8 bPriv;
} NV_HOPPER_USERMODE_A_PARAMS;
#define NV_HOPPER_USERMODE_A_PARAMS_SIZE sizeof(NV_HOPPER_USERMODE_A_PARAMS)
typedef struct NV503C_ALLOC_PARAMETERS {
	vcore_u32 flags;
} NV503C_ALLOC_PARAMETERS;
#define NV503C_ALLOC_PARAMETERS_SIZE sizeof(NV503C_ALLOC_PARAMETERS)

/* NV2080_ENGINE_TYPE_* (cl2080_notification.h:291-295) */
#define NV2080_ENGINE_TYPE_GRAPHICS 0x1
#define NV2080_ENGINE_TYPE_COPY0    0x9

#endif /* VCORE_ABI_CLASSES_H */
