// SPDX-License-Identifier: GPL-2.0
/*
 * vgpu.ko: fake NVIDIA device nodes that filter RM ioctls per tenant ("slot")
 * and forward them to the real driver (docs/nvidia-rm-abi.md §9 is the
 * contract this follows).
 *
 * The one init and exit: each part is started here, lowest first, and
 * stopped in the reverse order (kmod/README.md draws the layers). The module
 * loads without nvidia.ko (real.h, rmops.h).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

#include "compute.h"
#include "control.h"
#include "core_host.h"
#include "decoy.h"
#include "kthread_call.h"
#include "nodes.h"
#include "proxy.h"
#include "real.h"
#include "rmops.h"
#include "slot.h"

static int __init vgpu_init(void)
{
	int err;

	err = vgpu_decoy_init();
	if (err)
		return err;
	err = vgpu_kthread_call_init();
	if (err)
		goto err_decoy;
	err = vgpu_real_init();
	if (err)
		goto err_kthread;
	/* The nodes have the data path's file operations and the control
	 * plane's sysfs files; no slot, so no node, exists yet. */
	err = vgpu_nodes_init(&vgpu_fops, vgpu_node_groups);
	if (err)
		goto err_filter;
	err = vgpu_compute_init();
	if (err)
		goto err_nodes;
	/* Last: the first request can create a slot. */
	err = vgpu_genl_init();
	if (err)
		goto err_compute;

	err = vgpu_real_bind();
	if (err)
		pr_info("%s not present (%d); loaded unbound, will bind on "
			"slot creation\n",
			vgpu_real_ctl_name(), err);
	/* The in-kernel RM entry binds now if the driver is loaded, else on
	 * first use (rmops.h). */
	err = vgpu_rm_bind();
	if (err)
		pr_info("in-kernel RM entry not available yet (%d)\n", err);
	pr_info("loaded: major %u, up to %u slots\n", vgpu_nodes_major(),
		VGPU_MAX_SLOTS);
	return 0;

err_compute:
	vgpu_compute_exit();
err_nodes:
	vgpu_nodes_exit();
err_filter:
	vgpu_filter_exit();
err_kthread:
	vgpu_kthread_call_exit();
err_decoy:
	vgpu_decoy_exit();
	return err;
}

static void __exit vgpu_exit(void)
{
	/* The control plane first: no request can create a slot once the
	 * table is torn down. */
	vgpu_genl_exit();
	/* The controller's threads re-open every gate and drop their slot
	 * references before the slot table goes. */
	vgpu_compute_exit();
	vgpu_linger_exit();
	vgpu_slots_exit();
	vgpu_nodes_exit();
	vgpu_filter_exit();
	vgpu_real_exit();
	/* Last: no slot, file or kernel thread can issue an RM call now. */
	vgpu_rm_unbind();
	vgpu_kthread_call_exit();
	vgpu_decoy_exit();
	pr_info("unloaded\n");
}

module_init(vgpu_init);
module_exit(vgpu_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION(
	"vgpu: per-tenant limits on NVIDIA GPUs at the RM ioctl boundary");
MODULE_VERSION("0.1");
