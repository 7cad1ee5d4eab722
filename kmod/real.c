// SPDX-License-Identifier: GPL-2.0
/*
 * The real driver's nodes (real.h). The module loads without nvidia.ko: the
 * control node binds at load if it is there, else on VGPU_CMD_DRIVER_BIND or
 * the first slot creation (docs/nvidia-rm-abi.md §9.6).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/namei.h>
#include <linux/slab.h>
#include <linux/static_call.h>
#include <linux/string.h>

#include "nodes.h"
#include "real.h"

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

/* vgpu_real_lock protects vgpu_real_ctl and vgpu_is_bound; taken inside the
 * slot table's lock (slot.c), never around it. */
static DEFINE_MUTEX(vgpu_real_lock);
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

bool vgpu_real_bound(void)
{
	return READ_ONCE(vgpu_is_bound);
}

/*
 * Resolves @name to a character device that is not one of ours: a proxy must
 * never forward to itself, and a major-195 node must always be the driver's
 * (§9.3).
 */
static int vgpu_resolve_real(const char *what, const char *name,
			     struct path *out)
{
	struct inode *inode;
	int err;

	err = kern_path(name, LOOKUP_FOLLOW, out);
	if (err)
		return err;
	inode = d_inode(out->dentry);
	if (!S_ISCHR(inode->i_mode) || imajor(inode) == vgpu_nodes_major()) {
		pr_warn("%s %s is not a real character device\n", what, name);
		path_put(out);
		return -ENODEV;
	}
	return 0;
}

static int vgpu_real_bind_locked(void)
{
	int err;

	lockdep_assert_held(&vgpu_real_lock);
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

int vgpu_real_bind(void)
{
	int err;

	mutex_lock(&vgpu_real_lock);
	err = vgpu_real_bind_locked();
	mutex_unlock(&vgpu_real_lock);
	return err;
}

int vgpu_real_ctl_path(struct path *out)
{
	int err;

	mutex_lock(&vgpu_real_lock);
	err = vgpu_real_bind_locked();
	if (!err) {
		*out = vgpu_real_ctl;
		path_get(out);
	}
	mutex_unlock(&vgpu_real_lock);
	return err;
}

int vgpu_real_dev_path(u32 gpu, struct path *out)
{
	char *name = kasprintf(GFP_KERNEL, real_dev_fmt, gpu);
	int err;

	if (!name)
		return -ENOMEM;
	err = vgpu_resolve_real("GPU node", name, out);
	kfree(name);
	return err;
}

int vgpu_real_uvm_path(struct path *out)
{
	return vgpu_resolve_real("UVM node", real_uvm, out);
}

/* real_dev_fmt is a format string from the command line: allow exactly one %u.
 */
int vgpu_real_init(void)
{
	const char *p = strchr(real_dev_fmt, '%');

	if (p && p[1] == 'u' && !strchr(p + 2, '%') &&
	    strlen(real_dev_fmt) < PATH_MAX - 10)
		return 0;
	pr_err("real_dev_fmt=%s must contain exactly one %%u\n", real_dev_fmt);
	return -EINVAL;
}

void vgpu_real_exit(void)
{
	if (vgpu_is_bound)
		path_put(&vgpu_real_ctl);
}

/* ---- the driver's ioctl entry (real.h) -------------------------------- */

/* The static call's target until a real file names one; never called (the
 * test in vgpu_real_ioctl matches no file's f_op). */
long vgpu_real_ioctl_unset(struct file *real, unsigned int cmd,
			   unsigned long arg)
{
	return -ENOTTY;
}
DEFINE_STATIC_CALL(vgpu_real_ioctl_call, vgpu_real_ioctl_unset);

static DEFINE_MUTEX(vgpu_real_ioctl_lock);

void vgpu_real_ioctl_learn(struct file *real)
{
	long (*fn)(struct file *, unsigned int, unsigned long) =
		real->f_op->unlocked_ioctl;

	if (!fn ||
	    static_call_query(vgpu_real_ioctl_call) != vgpu_real_ioctl_unset)
		return;
	mutex_lock(&vgpu_real_ioctl_lock);
	if (static_call_query(vgpu_real_ioctl_call) == vgpu_real_ioctl_unset)
		static_call_update(vgpu_real_ioctl_call, fn);
	mutex_unlock(&vgpu_real_ioctl_lock);
}
