// SPDX-License-Identifier: GPL-2.0
/*
 * NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO on a client: does the driver hold this handle, and of
 * which class. vgpu.ko asks it through the in-kernel RM entry after every allocation, so that an
 * allocation whose hClass, hObjectNew or hRoot a sibling thread rewrote during the call is found
 * (kmod/driver_query.c, docs/results/kmod-issue4-tamper.md).
 *
 * The real driver (NVIDIA/open-gpu-kernel-modules, 580 branch):
 *   src/common/sdk/nvidia/inc/ctrl/ctrl0000/ctrl0000client.h: cmd 0xd02, params
 *     { NvHandle hObject; NvU32 index; union { NvHandle hResult; NvU64 iResult; } data; }
 *     (16 B, data 8-aligned); INDEX_PARENT 1 (data.hResult = the parent's handle),
 *     INDEX_CLASSID 2 (data.iResult = the object's external class id).
 *   cliresCtrlCmdClientGetHandleInfo (rmapi/client_resource.c): the handle is looked up in the
 *     client (failure: the lookup's status, NV_ERR_OBJECT_NOT_FOUND), any other index is
 *     NV_ERR_INVALID_ARGUMENT. Issued on the client itself (hObject == hClient).
 * Called from nvsim_rm_control with nvsim_rm_lock held and the params already copied in.
 */
#include <linux/xarray.h>

#include "nvsim.h"

#define NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO_INDEX_PARENT  0x1
#define NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO_INDEX_CLASSID 0x2

struct nv0000_get_handle_info_params {
	__u32 hObject;
	__u32 index;
	__u64 data;
};
static_assert(sizeof(struct nv0000_get_handle_info_params) == 16);

/* Registered in nvsim_ctrl.c's control table (declared there too: nvsim.h is not this file's). */
u32 nvsim_ctrl_handle_info(struct nvsim_ctrl_ctx *x, void *buf);

u32 nvsim_ctrl_handle_info(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv0000_get_handle_info_params *p = buf;
	struct nvsim_obj *obj = xa_load(&x->cl->objects, p->hObject);

	if (!obj)
		return NV_ERR_OBJECT_NOT_FOUND;
	switch (p->index) {
	case NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO_INDEX_PARENT:
		p->data = obj->parent ? obj->parent->handle : x->cl->handle;
		return NV_OK;
	case NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO_INDEX_CLASSID:
		p->data = obj->hclass;
		return NV_OK;
	default:
		return NV_ERR_INVALID_ARGUMENT;
	}
}
