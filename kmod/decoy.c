// SPDX-License-Identifier: GPL-2.0
/*
 * Decoy files (docs/security/kernel-call-path.md, F4). The driver finds some
 * files only in the caller's fd table (docs/nvidia-rm-abi.md §9.3): an fd
 * number inside the parameters, resolved by nv_get_file_private (nv.c:4071-
 * 4125: fget, then only the inode's major 195 and minor, then private_data,
 * never f_op), and a /dev/nvidiaN of the GPU, found by nv_is_gpu_accessible's
 * scan (nv_match_dev_state, nv.c:5762-5776: f_op == &nvidia_fops, then
 * private_data's nvptr).
 * The caller's other threads share that table, so whatever stands there for
 * the call can be used, forked, dup-ed or sent (SCM_RIGHTS) by them: a real
 * driver file would be unfiltered RM access.
 *
 * A decoy is a new struct file on an inode of this module's own pseudo
 * filesystem (S_IFCHR, the real file's device number), whose private_data is
 * the real file's: the driver's lookups resolve to the real open. Its own file
 * operations refuse everything, so a copy does nothing. The decoy holds a
 * reference to the real file (in its inode's i_private: private_data belongs
 * to the driver) until its last reference goes: the driver may keep the file
 * it looked up (REGISTER_FD, until the dev file closes: escape.c:917-918,
 * osapi.c:2932-2934) and reads the real file's private data through it.
 *

 * The table scan compares f_op too. Its decoy (the "witness") carries the
 * real file's f_op while its call runs, and is switched to the decoy's own
 * when it ends. It is an O_PATH file: fget() and fdget() refuse O_PATH files,
 * so no syscall on it reaches its file operations, nor can the driver's own
 * fd lookups take it. Until the switch, only the scan, filp_close's ->flush
 * and /proc's ->show_fdinfo read its f_op (neither is set in nvidia_fops,
 * nv.c:235-245, nor here), and ->release cannot run: the call holds a
 * reference.
 *
 * nvidia-uvm's lookup of UVM_MM_INITIALIZE's uvmFd compares f_op and needs
 * fget to take the file (uvm.c:59-76), and so does nvidia.ko's of the
 * devDescriptor of NV00E0 EXPORT_MEM and NV00FD ATTACH_GPU (escape.c:740-761,
 * then nv_match_gpu_os_info, nv.c:5778-5783, at mem_export.c:700 and
 * mem_multicast_fabric.c:546): no decoy can serve them and stay inert. Those
 * calls run from the module's kernel threads, with the real file in their
 * table, never in the caller's (kthread_call.c).
 *
 * No decoy can be read, written or mapped (it has neither FMODE_READ nor
 * FMODE_WRITE); reopening one through /proc/PID/fd opens its inode's i_fop,
 * which refuses.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>

#include "decoy.h"

#define VGPU_DECOY_MAGIC 0x76677064 /* "vgpd" */

static struct vfsmount *vgpu_decoy_mnt;

static int vgpu_decoy_refuse_open(struct inode *inode, struct file *file)
{
	return -EPERM;
}

static long vgpu_decoy_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	return -EPERM;
}

/* The last reference: the real file's reference goes with the decoy. */
static int vgpu_decoy_release(struct inode *inode, struct file *file)
{
	fput(inode->i_private);
	return 0;
}

/*
 * read, write and mmap need FMODE_READ or FMODE_WRITE, which no decoy has.
 * No ->flush and no ->show_fdinfo: see the f_op switch above.
 */
static const struct file_operations vgpu_decoy_fops = {
	.owner = THIS_MODULE,
	.open = vgpu_decoy_refuse_open,
	.unlocked_ioctl = vgpu_decoy_ioctl,
	.compat_ioctl = vgpu_decoy_ioctl,
	.release = vgpu_decoy_release,
};

struct file *vgpu_decoy_open(struct file *real, enum vgpu_decoy_kind kind)
{
	struct inode *inode = new_inode(vgpu_decoy_mnt->mnt_sb);
	struct file *f;

	if (!inode)
		return ERR_PTR(-ENOMEM);
	inode->i_ino = get_next_ino();
	inode->i_mode = S_IFCHR; /* no permission bits: nobody opens it */
	inode->i_rdev = file_inode(real)->i_rdev;
	inode->i_fop = &vgpu_decoy_fops;
	/* The file's f_op owner: __fput's fops_put drops it (as
	 * anon_inode_getfile takes it). */
	__module_get(THIS_MODULE);
	/* O_ACCMODE: neither FMODE_READ nor FMODE_WRITE. */
	f = alloc_file_pseudo(inode, vgpu_decoy_mnt, "vgpu-decoy", O_ACCMODE,
			      &vgpu_decoy_fops);
	if (IS_ERR(f)) {
		module_put(THIS_MODULE);
		iput(inode);
		return f;
	}
	inode->i_private = get_file(real); /* fput in vgpu_decoy_release */
	f->private_data = real->private_data;
	if (kind == VGPU_DECOY_WITNESS) {
		f->f_flags = O_PATH;
		f->f_mode |= FMODE_PATH;
	}
	/* The scan's test: nv.c:5767. */
	if (kind == VGPU_DECOY_WITNESS)
		WRITE_ONCE(f->f_op, real->f_op);
	return f;
}

void vgpu_decoy_end(struct file *decoy)
{
	/* Before the caller's reference goes: whoever drops the last one
	 * runs the decoy's release, never the driver's. */
	WRITE_ONCE(decoy->f_op, &vgpu_decoy_fops);
	fput(decoy);
}

static int vgpu_decoy_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, VGPU_DECOY_MAGIC) ? 0 : -ENOMEM;
}

/* No .owner: the module's own mount would pin it; module exit unmounts. */
static struct file_system_type vgpu_decoy_fs = {
	.name = "vgpu_decoy",
	.init_fs_context = vgpu_decoy_init_fs_context,
	.kill_sb = kill_anon_super,
};

int vgpu_decoy_init(void)
{
	vgpu_decoy_mnt = kern_mount(&vgpu_decoy_fs);
	return PTR_ERR_OR_ZERO(vgpu_decoy_mnt);
}

/* Every decoy holds the module (its f_op owner): none is left. */
void vgpu_decoy_exit(void)
{
	kern_unmount(vgpu_decoy_mnt);
}
