// SPDX-License-Identifier: GPL-2.0
/*
 * vgpu.ko: fake NVIDIA device nodes that filter RM ioctls per tenant ("slot")
 * and forward them to the real driver (docs/nvidia-rm-abi.md §9 is the
 * contract this follows).
 *
 * The module loads without nvidia.ko. The real nodes are resolved by path in
 * the init namespace, at load time and again on VGPU_CMD_DRIVER_BIND or slot
 * creation, never at open time: an open comes from inside a container whose
 * mount namespace shows only the fake nodes (§9.6).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/module.h>
#include <linux/namei.h>
#include <linux/string.h>

#include "rmops.h"
#include "vgpu.h"

static char *real_ctl = "/dev/nvidiactl";
module_param(real_ctl, charp, 0444);
MODULE_PARM_DESC(real_ctl,
		 "Path of the real control node (default /dev/nvidiactl)");

static char *real_dev_fmt = "/dev/nvidia%u";
module_param(real_dev_fmt, charp, 0444);
MODULE_PARM_DESC(real_dev_fmt, "Path of a real GPU node, one %u for the GPU "
			       "minor (default /dev/nvidia%u)");

static char *real_uvm = "/dev/nvidia-uvm";
module_param(real_uvm, charp, 0444);
MODULE_PARM_DESC(real_uvm,
		 "Path of the real UVM node (default /dev/nvidia-uvm)");

/* vgpu_slots_lock protects: the slot table (slot.c), vgpu_real_ctl,
 * vgpu_is_bound. */
DEFINE_MUTEX(vgpu_slots_lock);
dev_t vgpu_devt;
static struct path vgpu_real_ctl;
static bool vgpu_is_bound;

const char *vgpu_real_ctl_name(void)
{
	return real_ctl;
}

const char *vgpu_real_dev_fmt(void)
{
	return real_dev_fmt;
}

const char *vgpu_real_uvm_name(void)
{
	return real_uvm;
}

bool vgpu_bound(void)
{
	return READ_ONCE(vgpu_is_bound);
}

/*
 * Resolves @name to a character device that is not one of ours: a proxy must
 * never forward to itself, and a major-195 node must always be the driver's
 * (§9.3).
 */
int vgpu_resolve_real(const char *what, const char *name, struct path *out)
{
	struct inode *inode;
	int err;

	err = kern_path(name, LOOKUP_FOLLOW, out);
	if (err)
		return err;
	inode = d_inode(out->dentry);
	if (!S_ISCHR(inode->i_mode) || imajor(inode) == MAJOR(vgpu_devt)) {
		pr_warn("%s %s is not a real character device\n", what, name);
		path_put(out);
		return -ENODEV;
	}
	return 0;
}

int vgpu_bind_locked(void)
{
	int err;

	lockdep_assert_held(&vgpu_slots_lock);
	if (vgpu_is_bound)
		return 0;
	err = vgpu_resolve_real("control node", real_ctl, &vgpu_real_ctl);
	if (err)
		return err;
	WRITE_ONCE(vgpu_is_bound, true);
	pr_info("bound to %s (%u:%u)\n", real_ctl,
		imajor(d_inode(vgpu_real_ctl.dentry)),
		iminor(d_inode(vgpu_real_ctl.dentry)));
	return 0;
}

/* The real control node with a path reference (pairs with path_put by the
 * caller). */
int vgpu_real_ctl_path_locked(struct path *out)
{
	lockdep_assert_held(&vgpu_slots_lock);
	if (!vgpu_is_bound)
		return -ENODEV;
	*out = vgpu_real_ctl;
	path_get(out);
	return 0;
}

/* real_dev_fmt is a format string from the command line: allow exactly one %u.
 */
static bool vgpu_dev_fmt_valid(const char *fmt)
{
	const char *p = strchr(fmt, '%');

	return p && p[1] == 'u' && !strchr(p + 2, '%') &&
	       strlen(fmt) < PATH_MAX - 10;
}

static int __init vgpu_init(void)
{
	int err;

	if (!vgpu_dev_fmt_valid(real_dev_fmt)) {
		pr_err("real_dev_fmt=%s must contain exactly one %%u\n",
		       real_dev_fmt);
		return -EINVAL;
	}
	err = vgpu_filter_init();
	if (err)
		return err;
	err = vgpu_slots_init();
	if (err)
		goto err_filter;
	err = vgpu_genl_init();
	if (err)
		goto err_slots;

	mutex_lock(&vgpu_slots_lock);
	err = vgpu_bind_locked();
	mutex_unlock(&vgpu_slots_lock);
	if (err)
		pr_info("%s not present (%d); loaded unbound, will bind on "
			"slot creation\n",
			real_ctl, err);
	/* The in-kernel RM entry binds now if the driver is loaded, else on
	 * first use (rmops.h). */
	err = vgpu_rm_bind();
	if (err)
		pr_info("in-kernel RM entry not available yet (%d)\n", err);
	pr_info("loaded: major %u, up to %u slots\n", MAJOR(vgpu_devt),
		VGPU_MAX_SLOTS);
	return 0;

err_slots:
	vgpu_slots_exit();
err_filter:
	vgpu_filter_exit();
	return err;
}

static void __exit vgpu_exit(void)
{
	/* Netlink first: no request can create a slot once the table is torn
	 * down. */
	vgpu_genl_exit();
	vgpu_slots_exit();
	vgpu_filter_exit();
	if (vgpu_is_bound)
		path_put(&vgpu_real_ctl);
	/* Last: no slot, file or kernel thread can issue an RM call now. */
	vgpu_rm_unbind();
	pr_info("unloaded\n");
}

module_init(vgpu_init);
module_exit(vgpu_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION(
	"vgpu: per-tenant limits on NVIDIA GPUs at the RM ioctl boundary");
MODULE_VERSION("0.1");
