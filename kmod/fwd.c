// SPDX-License-Identifier: GPL-2.0
/*
 * What the driver looks up in the caller's fd table, translated from proxy
 * files to the real files they hold (reference/nvidia-rm-abi.md §9.3, §9.5).
 *
 * fd numbers inside parameters are fget()-ed and must be major-195 nvidia
 * files: the paired real file is installed on a temporary fd, the field is
 * patched for the call and restored afterwards.
 *
 * NV01_DEVICE_0 allocation and UVM_REGISTER_GPU scan the table (iterate_fd)
 * for a real /dev/nvidiaN file of the GPU: the real file behind one of the
 * caller's own /dev/vgpuN files is installed for the call.
 *
 * Known limit: while a temporary fd exists, another thread of the same process
 * can dup() it and keep a real driver file. The driver then still binds every
 * client to the real ctl file that created it (§9.2), so this gives no access
 * to another slot's objects, but such a file bypasses this slot's filter.
 * Closing it needs a hook in the driver (§9.7).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "vgpu.h"

/*
 * Installs @real (a reference the caller hands over) on a new fd,
 * close-on-exec. close_fd() is exported on 6.1 and 6.12 (nvidia.ko itself
 * relies on it when the kernel exports it, nv-caps.c:619).
 */
static int vgpu_install_tmp(struct file *real)
{
	int fd = get_unused_fd_flags(O_CLOEXEC);

	if (fd < 0) {
		fput(real);
		return fd;
	}
	fd_install(fd, real);
	return fd;
}

int vgpu_fd_translate(struct vgpu_file *vf, struct vgpu_fd_fix *fix,
		      u32 __user *uaddr, int fd)
{
	struct vgpu_file *pf;
	struct file *f;
	int tmp;

	fix->uaddr = uaddr;
	fix->orig = fd;
	fix->tmp = -1;
	f = fget(fd);
	if (!f)
		return -EINVAL; /* as the driver: nv_get_file_private fails */
	if (f->f_op != &vgpu_fops) {
		/*
		 * Not a proxy file. The driver would refuse anything but a
		 * major-195 file with -EINVAL (T6); a real nvidia file in a
		 * tenant's table escaped the proxy and must not be used either.
		 */
		fput(f);
		return -EINVAL;
	}
	pf = f->private_data;
	if (pf->slot != vf->slot) {
		fput(f);
		return -EPERM; /* another tenant's file */
	}
	fix->kind = pf->kind;
	/* Pairs with close_fd in vgpu_fd_restore. */
	tmp = vgpu_install_tmp(get_file(pf->real));
	fput(f);
	if (tmp < 0)
		return tmp;
	if (put_user(tmp, uaddr)) {
		close_fd(tmp);
		return -EFAULT;
	}
	fix->tmp = tmp;
	return 0;
}

void vgpu_fd_restore(struct vgpu_fd_fix *fix)
{
	if (fix->tmp < 0)
		return;
	/* The driver copied the whole struct back: put the caller's number
	 * back. */
	if (put_user(fix->orig, fix->uaddr))
		pr_debug("fd field at %p no longer writable\n", fix->uaddr);
	close_fd(fix->tmp);
	fix->tmp = -1;
}

struct vgpu_witness {
	struct vgpu_slot *slot;
	struct file *real;
};

/* Runs under the fd table's lock: no sleeping, only get_file. */
static int vgpu_witness_match(const void *p, struct file *f, unsigned int fd)
{
	struct vgpu_witness *w = (struct vgpu_witness *)p;
	struct vgpu_file *pf;

	if (f->f_op != &vgpu_fops)
		return 0;
	pf = f->private_data;
	if (pf->slot != w->slot || pf->kind != VGPU_NODE_DEV)
		return 0;
	/* Pairs with the fput/close_fd in
	 * vgpu_install_tmp/vgpu_remove_gpu_witness. */
	w->real = get_file(pf->real);
	return 1;
}

/*
 * The driver requires a real /dev/nvidiaN in current's table (T3/T4). Use the
 * real file behind one of the caller's own /dev/vgpuN files: with none open,
 * the driver refuses with NV_ERR_INSUFFICIENT_PERMISSIONS exactly as it would
 * without the proxy.
 */
int vgpu_install_gpu_witness(struct vgpu_file *vf, int *tmp)
{
	struct vgpu_witness w = {.slot = vf->slot};
	int fd;

	*tmp = -1;
	iterate_fd(current->files, 0, vgpu_witness_match, &w);
	if (!w.real)
		return 0;
	fd = vgpu_install_tmp(w.real);
	if (fd < 0)
		return fd;
	*tmp = fd;
	return 0;
}

void vgpu_remove_gpu_witness(int tmp)
{
	if (tmp >= 0)
		close_fd(tmp);
}
