// SPDX-License-Identifier: GPL-2.0
/*
 * NVLink-fabric controls that name a GPU by an fd: NV00E0 EXPORT_MEM and NV00FD ATTACH_GPU
 * (ctrl00e0.h, ctrl00fd.h). Only what the driver checks of that fd is modelled, at 580.142:
 * - RmGetDeviceFd (escape.c:75-131): devDescriptor (a u64, cast to NvS32) names the fd;
 *   EXPORT_MEM with hParent == hClient needs none.
 * - NV_ESC_RM_CONTROL (escape.c:716-761): nv_get_file_private(fd) in current's table (fget,
 *   major 195, a GPU minor, never f_op: nvsim_fget_rm_file), else NV_ERR_INVALID_DEVICE.
 * - osMatchGpuOsInfo (nv_match_dev_state, nv.c:5762-5783) in memoryExportCtrlExportMem's
 *   helper (mem_export.c:700) and the multicast attach (mem_multicast_fabric.c:546): the file's
 *   f_op must be the driver's and its GPU the one of hParent / hSubdevice, else
 *   NV_ERR_INVALID_DEVICE.
 * Then NV_OK, nothing exported or attached. The driver serves them on NV_MEMORY_EXPORT and
 * NV_MEMORY_MULTICAST_FABRIC objects, which nvsim does not allocate: here on the client.
 */
#include <linux/delay.h>
#include <linux/file.h>
#include <linux/moduleparam.h>

#include "nvsim.h"

/* Test hook (not a driver behaviour): each call holds its fd this long (µs) after the lookup,
 * so a sibling thread's calls land inside it (the multicast attach may wait on the fabric
 * manager in the driver). */
static unsigned int fabric_ctrl_delay_us;
module_param(fabric_ctrl_delay_us, uint, 0644);
MODULE_PARM_DESC(fabric_ctrl_delay_us, "EXPORT_MEM/ATTACH_GPU hold their call this long (us)");

static u32 nvsim_fabric_check(struct nvsim_ctrl_ctx *x, u32 hgpu_obj, u64 dev_descriptor)
{
	struct nvsim_obj *o = nvsim_obj_find(x->cl, hgpu_obj);
	struct nvsim_file *nvf;
	struct file *filp;
	u32 status;

	nvf = nvsim_fget_rm_file((s32)dev_descriptor, false, &filp, &status);
	if (!nvf)
		return NV_ERR_INVALID_DEVICE;
	if (fabric_ctrl_delay_us)
		usleep_range(fabric_ctrl_delay_us, fabric_ctrl_delay_us + 10);
	status = NV_ERR_OBJECT_NOT_FOUND;
	if (o && o->gpu)
		status = filp->f_op == &nvsim_fops && nvf->gpu == o->gpu ? NV_OK
									: NV_ERR_INVALID_DEVICE;
	fput(filp);
	return status;
}

u32 nvsim_ctrl_attach_gpu(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv00fd_attach_gpu_params *p = buf;

	return nvsim_fabric_check(x, p->hSubdevice, p->devDescriptor);
}

u32 nvsim_ctrl_export_mem(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv00e0_export_mem_params *p = buf;

	if (p->hParent == x->cl->handle)
		return NV_OK;
	return nvsim_fabric_check(x, p->hParent, p->devDescriptor);
}
