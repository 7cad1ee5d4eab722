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
 * it looked up (REGISTER_FD until the dev file closes, escape.c:916-925; an
 * exported memory's GPU info, mem_export.c:703) and reads the real file's
 * private data through it.
 *
 * The table scan also compares f_op, so its decoy (the "witness") is an
 * O_PATH file: fget() and fdget() refuse O_PATH files, so no syscall on it
 * reaches its file operations, nor can the driver's own fd lookups take it.
 * It carries the real file's f_op only while its call runs. Until then only
 * the scan, filp_close's ->flush and /proc's ->show_fdinfo read that f_op
 * (neither is set in nvidia_fops, nv.c:235-245, nor here), and ->release
 * cannot run: the call holds a reference. Reopening a decoy through
 * /proc/PID/fd opens its inode's i_fop, which refuses.
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

static ssize_t vgpu_decoy_read(struct file *file, char __user *buf,
			       size_t len, loff_t *pos)
{
	return -EPERM;
}

static ssize_t vgpu_decoy_write(struct file *file, const char __user *buf,
				size_t len, loff_t *pos)
{
	return -EPERM;
}

static long vgpu_decoy_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	return -EPERM;
}

static int vgpu_decoy_mmap(struct file *file, struct vm_area_struct *vma)
{
	return -EPERM;
}

/* The last reference: the real file's reference goes with the decoy. */
static int vgpu_decoy_release(struct inode *inode, struct file *file)
{
	fput(inode->i_private);
	return 0;
}

/* No ->flush and no ->show_fdinfo: see the witness above. */
static const struct file_operations vgpu_decoy_fops = {
	.owner = THIS_MODULE,
	.open = vgpu_decoy_refuse_open,
	.read = vgpu_decoy_read,
	.write = vgpu_decoy_write,
	.unlocked_ioctl = vgpu_decoy_ioctl,
	.compat_ioctl = vgpu_decoy_ioctl,
	.mmap = vgpu_decoy_mmap,
	.release = vgpu_decoy_release,
};

static struct file *vgpu_decoy_new(struct file *real, int flags)
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
	f = alloc_file_pseudo(inode, vgpu_decoy_mnt, "vgpu-decoy", flags,
			      &vgpu_decoy_fops);
	if (IS_ERR(f)) {
		module_put(THIS_MODULE);
		iput(inode);
		return f;
	}
	inode->i_private = get_file(real); /* fput in vgpu_decoy_release */
	f->private_data = real->private_data;
	return f;
}

struct file *vgpu_decoy_open(struct file *real)
{
	return vgpu_decoy_new(real, O_RDWR);
}

struct file *vgpu_decoy_witness(struct file *real)
{
	/* O_ACCMODE: neither FMODE_READ nor FMODE_WRITE (no access to put
	 * back at __fput); then marked as an O_PATH file. */
	struct file *f = vgpu_decoy_new(real, O_PATH | O_ACCMODE);

	if (IS_ERR(f))
		return f;
	f->f_flags = O_PATH;
	f->f_mode |= FMODE_PATH;
	WRITE_ONCE(f->f_op, real->f_op); /* the scan's test, nv.c:5767 */
	return f;
}

void vgpu_decoy_witness_end(struct file *witness)
{
	/* Before the caller's reference goes: whoever drops the last one
	 * runs the decoy's release, never the driver's. */
	WRITE_ONCE(witness->f_op, &vgpu_decoy_fops);
	fput(witness);
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
