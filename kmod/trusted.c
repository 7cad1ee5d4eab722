// SPDX-License-Identifier: GPL-2.0
/*
 * Closing the TOCTOU hole on memory charges (reference/nvidia-rm-abi.md §9.5,
 * kmod/core/vcore.h "TOCTOU"). The driver re-reads the allocation's size from
 * user memory after the core checked its private copy, and writes the size it
 * allocated back to user memory: a second thread of the tenant can change
 * either, so neither the request nor the reply can be trusted. After every
 * successful allocation of a charged class the core asks here instead, and
 * this file asks the driver itself, through its in-kernel RM entry (rmops.h):
 * no user memory is read, and the answer is the driver's own record.
 *
 * The query is NV0041_CTRL_CMD_GET_SURFACE_INFO (0x410110) on the new object,
 * with two entries: PHYS_SIZE (index 7, the memory descriptor's size in 4 KiB
 * units) and ADDR_SPACE_TYPE (index 9: SYSMEM 1, VIDMEM 2, REGMEM 3, FABRIC 4).
 * Layouts from NVIDIA/open-gpu-kernel-modules src/common/sdk/nvidia/inc/ctrl/
 * ctrl0041.h and ctrl0000/ctrl0000client.h; the handler is
 * memCtrlCmdGetSurfaceInfoLvm (src/nvidia/src/kernel/mem_mgr/mem_ctrl.c),
 * available on every Memory subclass (0x40, 0x3e, 0xf8, ...). For a kernel
 * caller RM copies the embedded list pointer as kernel memory.
 *
 * When the size is past the quota the core asks for the object to be freed:
 * NV01_FREE through the same entry, with kernel privilege, so the tenant
 * cannot interfere with it either.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/types.h>

#include <linux/moduleparam.h>

#include "rmops.h"
#include "trusted.h"

/*
 * Off only to measure what the query costs (the guest suite times allocations
 * with it on and off in one run): without it the charge is read from the
 * reply again, and the race it closes is open.
 */
static bool trusted_charge = true;
module_param(trusted_charge, bool, 0600);
MODULE_PARM_DESC(trusted_charge,
		 "Charge allocations by the driver's own size (default on; "
		 "off reopens the TOCTOU race, for measurement only)");

#define NV0041_CTRL_CMD_GET_SURFACE_INFO		  0x410110u
#define NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE	  0x7u
#define NV0041_CTRL_SURFACE_INFO_INDEX_ADDR_SPACE_TYPE	  0x9u
#define NV0041_CTRL_SURFACE_INFO_PHYS_SIZE_SCALE_FACTOR	  0x1000ull
#define NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_VIDMEM 0x2u
#define NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_FABRIC 0x4u

struct vgpu_surface_info {
	u32 index;
	u32 data;
};

/* NV0041_CTRL_GET_SURFACE_INFO_PARAMS: the list pointer is 8-aligned. */
struct vgpu_get_surface_info_params {
	u32 surfaceInfoListSize;
	u32 pad;
	u64 surfaceInfoList;
};

static_assert(sizeof(struct vgpu_get_surface_info_params) == 16);

int vgpu_trusted_driver_memory(void *priv, vcore_u32 h_client,
			       vcore_u32 h_parent, vcore_u32 h_object,
			       vcore_u64 *bytes)
{
	struct vgpu_surface_info list[2] = {
		{.index = NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE},
		{.index = NV0041_CTRL_SURFACE_INFO_INDEX_ADDR_SPACE_TYPE},
	};
	struct vgpu_get_surface_info_params p = {
		.surfaceInfoListSize = ARRAY_SIZE(list),
		.surfaceInfoList = (u64)(uintptr_t)list,
	};
	u32 status;
	int err;

	if (!bytes) {
		err = vgpu_rm_free(h_client, h_parent, h_object, &status);
		if (!err && status)
			err = -EIO;
		if (err)
			pr_warn_ratelimited(
				"in-kernel free of 0x%x/0x%x failed "
				"(%d, status 0x%x)\n",
				h_client, h_object, err, status);
		return err;
	}
	if (!READ_ONCE(trusted_charge))
		return -EOPNOTSUPP;
	err = vgpu_rm_control(h_client, h_object,
			      NV0041_CTRL_CMD_GET_SURFACE_INFO, &p, sizeof(p),
			      &status);
	if (err)
		return err;
	if (status) {
		pr_debug("surface info of 0x%x/0x%x: status 0x%x\n", h_client,
			 h_object, status);
		return -EIO;
	}
	switch (list[1].data) {
	case NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_VIDMEM:
	case NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_FABRIC:
		*bytes = list[0].data *
			 NV0041_CTRL_SURFACE_INFO_PHYS_SIZE_SCALE_FACTOR;
		break;
	default:
		*bytes = 0; /* system memory and the rest: not GPU memory */
		break;
	}
	return 0;
}
