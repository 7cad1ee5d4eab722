// SPDX-License-Identifier: GPL-2.0
/*
 * What the driver looks up in the caller's fd table, translated from proxy
 * files to decoys of the real files they hold (docs/nvidia-rm-abi.md §9.3,
 * §9.5; decoy.c).
 *
 * fd numbers inside parameters must name proxy files of the caller's slot:
 * a decoy of the paired real file is installed on a temporary fd, the field
 * is patched for the call and restored afterwards. A decoy, or any other
 * file that is not a proxy file, is refused (-EINVAL): a decoy is no proxy.
 *
 * NV01_DEVICE_0 allocation and UVM_REGISTER_GPU scan the table (iterate_fd)
 * for a /dev/nvidiaN file of the GPU: a witness decoy (O_PATH) of the real
 * file behind one of the caller's own /dev/vgpuN files is installed for the
 * call.
 *
 * The temporary fds are visible to the caller's other threads for the length
 * of one call (the driver fget()s them from the shared table, §9.5). What a
 * sibling can take from them (a use, dup, fork, SCM_RIGHTS, pidfd_getfd) is a
 * decoy: every call on it is refused, so no copy needs finding or killing
 * (docs/security/kernel-call-path.md, F4). The driver compares the f_op of
 * UVM_MM_INITIALIZE's uvmFd and of NV00E0 EXPORT_MEM's and NV00FD
 * ATTACH_GPU's devDescriptor, which no decoy can pass and stay inert: those
 * calls run from the module's kernel threads, with the real file in their
 * table only (kthread_call.c); nothing stands in the caller's.
 * Holding a decoy keeps the real file, and with it the driver's memory,
 * alive: file_release.c keeps the charge while anything holds the real file.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/uaccess.h>

#include "decoy.h"
#include "kthread_call.h"
#include "proxy.h"
#include "slot.h"

/*
 * The kernel thread for a field whose file the driver tests by f_op (the
 * core's vcore_fd_kind says which), or VGPU_KTHREAD_COUNT: a decoy serves.
 */
static enum vgpu_kthread vgpu_fd_kthread(enum vcore_fd_kind want)
{
	switch (want) {
	case VCORE_FD_UVM:
		return VGPU_KTHREAD_UVM;
	case VCORE_FD_NV_DEV:
		return VGPU_KTHREAD_FABRIC;
	default:
		return VGPU_KTHREAD_COUNT;
	}
}

/*
 * Installs a decoy of @real on a new fd, close-on-exec: returns the number,
 * and in *@decoy the call's own reference (the fd's may go any time: a
 * sibling may close it). close_fd() is exported on 6.1 and 6.12 (nvidia.ko
 * itself relies on it when the kernel exports it, nv-caps.c:619).
 */
static int vgpu_install_decoy(struct file *real, enum vgpu_decoy_kind kind,
			      struct file **decoy)
{
	struct file *f = vgpu_decoy_open(real, kind);
	int fd;

	if (IS_ERR(f))
		return PTR_ERR(f);
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		vgpu_decoy_end(f);
		return fd;
	}
	*decoy = get_file(f);
	fd_install(fd, f);
	return fd;
}

static void vgpu_remove_decoy(int fd, struct file *decoy)
{
	close_fd(fd);
	vgpu_decoy_end(decoy);
}

int vgpu_fd_translate(struct vgpu_file *vf, struct vgpu_fd_fix *fix,
		      u32 __user *uaddr, int fd, enum vcore_fd_kind want,
		      struct vgpu_seal *seal)
{
	struct vgpu_file *pf;
	struct file *f;
	int tmp;

	fix->uaddr = uaddr;
	fix->seal = seal;
	fix->orig = fd;
	fix->tmp = -1;
	fix->kthread_file = NULL;
	fix->kthread = vgpu_fd_kthread(want);
	f = fget(fd);
	if (!f)
		return -EINVAL; /* as the driver: nv_get_file_private fails */
	if (f->f_op != &vgpu_fops) {
		/*
		 * Not a proxy file. The driver would refuse anything but a
		 * major-195 file with -EINVAL (T6); a decoy taken from a call
		 * is not a proxy either.
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
	fix->core = pf->core;
	if (fix->kthread != VGPU_KTHREAD_COUNT) {
		/* The driver compares the file's f_op: the real file, for the
		 * kernel thread's table (vgpu_fd_call). */
		fix->kthread_file = get_file(pf->real);
		fput(f);
		return 0;
	}
	/* Removed by vgpu_fd_restore; the driver may keep the decoy
	 * (REGISTER_FD keeps the ctl file until the dev file closes). */
	tmp = vgpu_install_decoy(pf->real, VGPU_DECOY_FD, &fix->decoy);
	fput(f);
	if (tmp < 0)
		return tmp;
	if (vgpu_seal_put_u32(seal, uaddr, tmp)) {
		vgpu_remove_decoy(tmp, fix->decoy);
		return -EFAULT;
	}
	fix->tmp = tmp;
	return 0;
}

void vgpu_fd_restore(struct vgpu_fd_fix *fix)
{
	if (fix->tmp < 0 && !fix->kthread_file)
		return;
	/* The driver copied the whole struct back: put the caller's number
	 * back. */
	if (vgpu_seal_put_u32(fix->seal, fix->uaddr, fix->orig))
		pr_debug("fd field at %p no longer writable\n", fix->uaddr);
	if (fix->kthread_file) {
		fput(fix->kthread_file);
		fix->kthread_file = NULL;
		return;
	}
	vgpu_remove_decoy(fix->tmp, fix->decoy);
	fix->tmp = -1;
}

/*
 * The real call, @real's unlocked_ioctl(@cmd, @arg). A field whose file the
 * driver tests by f_op (uvmFd, devDescriptor) makes it a call from a kernel
 * thread, with that file in the thread's table and its number in the field
 * of the call's sealed copy (kthread_call.h). No call has two such fields,
 * nor one and a witness.
 */
long vgpu_fd_call(struct file *real, unsigned int cmd, unsigned long arg,
		  const struct vgpu_fd_fix *fix, unsigned int nfix,
		  const struct vcore_call *call)
{
	while (nfix--) {
		if (fix[nfix].kthread_file)
			return vgpu_kthread_ioctl(fix[nfix].kthread, real, cmd,
						  arg, fix[nfix].kthread_file,
						  fix[nfix].uaddr, call,
						  fix[nfix].seal);
	}
	return real->f_op->unlocked_ioctl(real, cmd, arg);
}

struct vgpu_witness_scan {
	struct vgpu_slot *slot;
	struct file *real;
};

/* Runs under the fd table's lock: no sleeping, only get_file. */
static int vgpu_witness_match(const void *p, struct file *f, unsigned int fd)
{
	struct vgpu_witness_scan *w = (struct vgpu_witness_scan *)p;
	struct vgpu_file *pf;

	if (f->f_op != &vgpu_fops)
		return 0;
	pf = f->private_data;
	if (pf->slot != w->slot || pf->kind != VGPU_NODE_DEV)
		return 0;
	w->real = get_file(pf->real); /* pairs with the fput below */
	return 1;
}

/*
 * The driver requires a /dev/nvidiaN of the GPU in current's table (T3/T4).
 * A witness of the real file behind one of the caller's own /dev/vgpuN files
 * stands there: with none open, the driver refuses with
 * NV_ERR_INSUFFICIENT_PERMISSIONS exactly as it would without the proxy.
 */
int vgpu_install_gpu_witness(struct vgpu_file *vf, struct vgpu_gpu_witness *w)
{
	struct vgpu_witness_scan sc = {.slot = vf->slot};
	int fd;

	w->fd = -1;
	iterate_fd(current->files, 0, vgpu_witness_match, &sc);
	if (!sc.real)
		return 0;
	fd = vgpu_install_decoy(sc.real, VGPU_DECOY_WITNESS, &w->decoy);
	fput(sc.real); /* the decoy holds its own */
	if (fd < 0)
		return fd;
	w->fd = fd;
	return 0;
}

void vgpu_remove_gpu_witness(struct vgpu_gpu_witness *w)
{
	if (w->fd < 0)
		return;
	vgpu_remove_decoy(w->fd, w->decoy);
	w->fd = -1;
}
