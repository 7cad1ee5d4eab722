// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim's in-kernel RM entry point (nvsim_rmops.h, docs/nvidia-rm-abi.md §6.3): nvidia_get_rm_ops()
 * hands a kernel caller (vgpu.ko) NV01_FREE, NV04_ALLOC and NV04_CONTROL on kernel buffers,
 * numbered as rm_kernel_rmapi_op() numbers them, without the client ownership check (os_info
 * NULL, as RS_PRIV_LEVEL_KERNEL). The handshake is nv-modeset-interface.c's: any version string
 * but the driver's own is refused with NV_ERR_GENERIC and answered with the driver's.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "nvsim.h"

struct nvidia_stack_s {
	int unused;
};

static int nvsim_alloc_stack(nvidia_stack_t **sp)
{
	*sp = kzalloc(sizeof(**sp), GFP_KERNEL);
	return *sp ? 0 : -ENOMEM;
}

static void nvsim_free_stack(nvidia_stack_t *sp)
{
	kfree(sp);
}

static void nvsim_kernel_op(nvidia_stack_t *sp, nvidia_kernel_rmapi_ops_t *ops)
{
	const struct nvsim_caller kc = { .os_info = NULL, .kernel = true };

	switch (ops->op) {
	case NV01_FREE:
		nvsim_rm_free(&kc, &ops->params.free);
		break;
	case NV04_ALLOC:
		nvsim_rm_alloc(&kc, &ops->params.alloc);
		break;
	case NV04_CONTROL:
		nvsim_rm_control(&kc, &ops->params.control);
		break;
	default:
		ops->params.free.status = NV_ERR_NOT_SUPPORTED;
		break;
	}
}

int nvidia_get_rm_ops(nvidia_modeset_rm_ops_t *rm_ops)
{
	const nvidia_modeset_rm_ops_t ops = {
		.version_string = NV_VERSION_STRING,
		.alloc_stack = nvsim_alloc_stack,
		.free_stack = nvsim_free_stack,
		.op = nvsim_kernel_op,
	};

	if (!rm_ops->version_string || strcmp(rm_ops->version_string, NV_VERSION_STRING)) {
		rm_ops->version_string = NV_VERSION_STRING;
		return NV_ERR_GENERIC;
	}
	*rm_ops = ops;
	return NV_OK;
}
EXPORT_SYMBOL_GPL(nvidia_get_rm_ops);
