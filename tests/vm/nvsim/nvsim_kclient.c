// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim_kclient: exercises nvsim's in-kernel RM entry point the way vgpu.ko's control path
 * would use nvidia.ko's (docs/nvidia-rm-abi.md §6.3). Loaded by the nvsim guest suite:
 *   insmod nvsim_kclient.ko hclient=<user client> htsg=<its TSG> timeslice_us=<n>
 * It checks the version handshake, sets the TSG's timeslice through ops.op with kernel
 * privilege (no ownership check, unlike any user file), and builds and frees a client of its
 * own. Any failed check fails the load with -EINVAL and a log line saying which.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

#include "nvsim_rmops.h"

static uint hclient;
module_param(hclient, uint, 0444);
static uint htsg;
module_param(htsg, uint, 0444);
static ulong timeslice_us = 4000;
module_param(timeslice_us, ulong, 0444);

static int nvsim_kclient_check(bool ok, const char *what)
{
	if (!ok)
		pr_err("check failed: %s\n", what);
	return ok ? 0 : -EINVAL;
}

static int __init nvsim_kclient_init(void)
{
	nvidia_modeset_rm_ops_t ops = { .version_string = "1.0" };
	struct nv0080_alloc_params dev = {};
	struct nva06c_timeslice_params ts = { .timesliceUs = timeslice_us };
	nvidia_kernel_rmapi_ops_t op = {};
	nvidia_stack_t *sp;
	u32 client;
	int ret;

	ret = nvsim_kclient_check(nvidia_get_rm_ops(&ops) == NV_ERR_GENERIC &&
				  !strcmp(ops.version_string, NV_VERSION_STRING),
				  "a wrong version string is refused and the driver's returned");
	if (ret)
		return ret;
	ret = nvsim_kclient_check(nvidia_get_rm_ops(&ops) == NV_OK && ops.op && ops.alloc_stack,
				  "the exact version string gets the ops");
	if (ret)
		return ret;
	if (ops.alloc_stack(&sp))
		return -ENOMEM;

	if (hclient && htsg) {
		op.op = NV04_CONTROL;
		op.params.control = (struct nvos54){ .hClient = hclient, .hObject = htsg,
			.cmd = NVA06C_CTRL_CMD_SET_TIMESLICE, .params = (uintptr_t)&ts,
			.paramsSize = sizeof(ts) };
		ops.op(sp, &op);
		ret = nvsim_kclient_check(op.params.control.status == NV_OK,
					  "SET_TIMESLICE on a user client's TSG from the kernel");
		if (ret)
			goto out;
	}

	/* A kernel client: no fd-table check for the device. */
	op = (nvidia_kernel_rmapi_ops_t){ .op = NV04_ALLOC };
	op.params.alloc.hClass = NV01_ROOT_CLIENT;
	ops.op(sp, &op);
	client = op.params.alloc.hObjectNew;
	ret = nvsim_kclient_check(op.params.alloc.status == NV_OK, "kernel client alloc");
	if (ret)
		goto out;
	op = (nvidia_kernel_rmapi_ops_t){ .op = NV04_ALLOC };
	op.params.alloc = (struct nvos64){ .hRoot = client, .hObjectParent = client,
		.hClass = NV01_DEVICE_0, .pAllocParms = (uintptr_t)&dev };
	ops.op(sp, &op);
	ret = nvsim_kclient_check(op.params.alloc.status == NV_OK, "kernel device alloc");
	op = (nvidia_kernel_rmapi_ops_t){ .op = NV01_FREE };
	op.params.free = (struct nvos00){ .hRoot = client, .hObjectParent = client,
		.hObjectOld = client };
	ops.op(sp, &op);
	if (!ret)
		ret = nvsim_kclient_check(op.params.free.status == NV_OK, "kernel client free");
out:
	ops.free_stack(sp);
	if (!ret)
		pr_info("in-kernel RM entry point: all checks passed\n");
	return ret;
}

static void __exit nvsim_kclient_exit(void)
{
}

module_init(nvsim_kclient_init);
module_exit(nvsim_kclient_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nvsim test client of nvidia_get_rm_ops()");
