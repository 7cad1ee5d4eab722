// SPDX-License-Identifier: GPL-2.0
/*
 * NV0041_CTRL_CMD_GET_SURFACE_INFO on a memory object: what the driver itself says it allocated.
 * vgpu.ko asks it through the in-kernel RM entry after every charged allocation, instead of
 * trusting the size the reply carries in user memory (docs/nvidia-rm-abi.md §9.5, TOCTOU).
 *
 * The real driver (NVIDIA/open-gpu-kernel-modules, 580 branch):
 *   src/common/sdk/nvidia/inc/ctrl/ctrl0041.h: cmd 0x410110, params
 *     { NvU32 surfaceInfoListSize; NvP64 surfaceInfoList; } (16 B, the list 8-aligned), a list of
 *     NV0041_CTRL_SURFACE_INFO { NvU32 index; NvU32 data; };
 *     PHYS_SIZE index 7 = the physical size in units of 4 KiB (..._PHYS_SIZE_SCALE_FACTOR 0x1000),
 *     ADDR_SPACE_TYPE index 9 = NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_* (ctrl0000client.h:
 *     INVALID 0, SYSMEM 1, VIDMEM 2, REGMEM 3, FABRIC 4).
 *   src/nvidia/src/kernel/mem_mgr/mem_ctrl.c memCtrlCmdGetSurfaceInfoLvm: the list is copied in
 *     (embedded pointer: user memory for a user call, kernel memory for a kernel call), each index
 *     answered from the memory descriptor (PHYS_SIZE = memdescGetSize / 4 KiB, NV_ERR_OUT_OF_RANGE
 *     if that does not fit 32 bits), the first unknown index stops the walk with
 *     NV_ERR_INVALID_ARGUMENT, and the list is copied back.
 * nvsim answers on classes 0x40 (video memory: obj->vidmem bytes, VIDMEM), 0x3e (system memory:
 * obj->sysmem bytes, SYSMEM) and 0x50a0 (a VA range: its size, INVALID, as the real range's
 * ADDR_VIRTUAL descriptor of the range's size, virtual_mem.c virtmemConstruct_IMPL); PHYS_SIZE_LO
 * and _HI (indices 2 and 3) are the descriptor's size in bytes, halves of it; other indices:
 * INVALID_ARGUMENT.
 * Called from nvsim_rm_control with nvsim_rm_lock held and the 16-byte params already copied in.
 */
#include <linux/slab.h>

#include "nvsim.h"

#define NV0041_CTRL_SURFACE_INFO_INDEX_ATTRS		0x1
#define NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_LO	0x2
#define NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_HI	0x3
#define NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE	0x7
#define NV0041_CTRL_SURFACE_INFO_INDEX_ADDR_SPACE_TYPE	0x9
#define NV0041_CTRL_SURFACE_INFO_PHYS_SIZE_SCALE_FACTOR 0x1000
#define NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_INVALID 0x0
#define NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_SYSMEM 0x1
#define NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_VIDMEM 0x2
/* The list is bounded by RM's embedded-param copy; nvsim answers at most 16 entries (approx). */
#define NVSIM_SURFACE_INFO_MAX 16

struct nv0041_surface_info {
	__u32 index;
	__u32 data;
};

struct nv0041_get_surface_info_params {
	__u32 surfaceInfoListSize;
	__u32 pad;
	__u64 surfaceInfoList;
};
static_assert(sizeof(struct nv0041_get_surface_info_params) == NV0041_GET_SURFACE_INFO_PARAMS_SIZE);

static u32 nvsim_surface_value(const struct nvsim_obj *obj, u32 index, u32 *data)
{
	u64 size = obj->vidmem + obj->sysmem + obj->va_bytes;

	switch (index) {
	case NV0041_CTRL_SURFACE_INFO_INDEX_ATTRS:
		*data = 0; /* no compression, no zcull */
		return NV_OK;
	case NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE:
		/*
		 * The descriptor's size whatever its address space: for class 0x3e the page-rounded
		 * size sysmemConstruct_IMPL allocated (system_mem.c), which vgpu.ko holds to the
		 * slot's system-memory budget (issue 17, F10). A VA range of 16 TiB or more does not
		 * fit 32 bits of 4 KiB: NV_ERR_OUT_OF_RANGE, as mem_ctrl.c asserts.
		 */
		if (size / NV0041_CTRL_SURFACE_INFO_PHYS_SIZE_SCALE_FACTOR > U32_MAX)
			return NV_ERR_OUT_OF_RANGE;
		*data = (u32)(size / NV0041_CTRL_SURFACE_INFO_PHYS_SIZE_SCALE_FACTOR);
		return NV_OK;
	case NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_LO:
		*data = lower_32_bits(size);
		return NV_OK;
	case NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_HI:
		*data = upper_32_bits(size);
		return NV_OK;
	case NV0041_CTRL_SURFACE_INFO_INDEX_ADDR_SPACE_TYPE:
		*data = obj->hclass == NV01_MEMORY_LOCAL_USER
				? NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_VIDMEM
			: obj->hclass == NV01_MEMORY_SYSTEM ? NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_SYSMEM
							    : NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_INVALID;
		return NV_OK;
	default:
		return NV_ERR_INVALID_ARGUMENT;
	}
}

u32 nvsim_ctrl_surface_info(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv0041_get_surface_info_params *p = buf;
	size_t n = p->surfaceInfoListSize;
	struct nv0041_surface_info *list;
	u32 status = NV_ERR_INVALID_POINTER; /* approx */
	size_t i;

	if (!n || n > NVSIM_SURFACE_INFO_MAX)
		return NV_ERR_INVALID_ARGUMENT;
	list = kcalloc(n, sizeof(*list), GFP_KERNEL);
	if (!list)
		return NV_ERR_NO_MEMORY;
	if (nvsim_copy_in(x->c, list, p->surfaceInfoList, n * sizeof(*list)))
		goto out;
	for (i = 0; i < n; i++) {
		status = nvsim_surface_value(x->obj, list[i].index, &list[i].data);
		if (status != NV_OK)
			goto out;
	}
	status = NV_ERR_INVALID_POINTER; /* approx */
	if (nvsim_copy_out(x->c, p->surfaceInfoList, list, n * sizeof(*list)))
		goto out;
	status = NV_OK;
out:
	kfree(list);
	return status;
}
