// SPDX-License-Identifier: GPL-2.0
/*
 * What the driver looks up in the caller's fd table, translated from proxy
 * files to the real files they hold (docs/nvidia-rm-abi.md §9.3, §9.5).
 *
 * fd numbers inside parameters are fget()-ed and must be major-195 nvidia
 * files: the paired real file is installed on a temporary fd, the field is
 * patched for the call and restored afterwards.
 *
 * NV01_DEVICE_0 allocation and UVM_REGISTER_GPU scan the table (iterate_fd)
 * for a real /dev/nvidiaN file of the GPU: the real file behind one of the
 * caller's own /dev/vgpuN files is installed for the call.
 *
 * The temporary fds are visible to the caller's other threads for the length
 * of one call (the driver fget()s them from the shared table, §9.5). What
 * holds against a sibling thread:
 *   - a copy made in the process's own table (dup, dup2, F_DUPFD) is found
 *     when the call ends: every fd whose struct file is the installed real
 *     file, other than fds this module installed itself (vgpu_tmp_fds), is
 *     closed, and the process is killed (SIGKILL): the copy may already have
 *     been used, and dying closes everything it holds, so the driver frees
 *     every RM client created through it (rm_cleanup_file_private, §9.1).
 *     A legitimate program never holds these files: the real nodes are not
 *     in the tenant's namespace, and this module is their only source.
 *   - what does NOT hold: a sibling that uses the temporary fd directly
 *     during the call (ioctl or mmap on it), or passes it on before the call
 *     ends (SCM_RIGHTS to another process, fork, pidfd_getfd), reaches the
 *     real driver unfiltered; those leave no copy in this table to find.
 *     Closing that needs the fd to be private to the calling thread (a
 *     private files_struct, which needs kernel internals modules cannot
 *     use) or a hook in the driver's own fd lookup (§9.7).
 * The driver still binds every client to the real ctl file that created it
 * (§9.2): such a file gives no access to another slot's objects.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/delay.h>
#include <linux/uaccess.h>

#include "proxy.h"
#include "slot.h"

/* A temporary fd this module installed and has not closed yet. */
struct vgpu_tmp_fd {
	struct list_head node;
	struct files_struct *files; /* compared only */
	int fd;
	struct file *real; /* a reference, dropped when the fd is closed */
	/* The call's slot: the caller's proxy file holds it meanwhile. */
	struct vgpu_slot *slot;
	/* file_count(real) expected while the fd is installed: ours, plus
	 * what the driver keeps (REGISTER_FD holds the ctl file, §9.2). */
	long refs;
};

/* vgpu_tmp_lock protects vgpu_tmp_fds; taken inside files->file_lock by the
 * copy scan (iterate_fd), never the other way round. */
static DEFINE_SPINLOCK(vgpu_tmp_lock);
static LIST_HEAD(vgpu_tmp_fds);

static struct vgpu_tmp_fd *vgpu_tmp_find_locked(struct files_struct *files,
						int fd)
{
	struct vgpu_tmp_fd *t;

	lockdep_assert_held(&vgpu_tmp_lock);
	list_for_each_entry(t, &vgpu_tmp_fds, node)
	{
		if (t->files == files && t->fd == fd)
			return t;
	}
	return NULL;
}

/*
 * Installs @real (a reference the caller hands over) on a new fd,
 * close-on-exec, registered before it becomes visible so that the copy scan
 * of a concurrent call never mistakes it for a copy. close_fd() is exported
 * on 6.1 and 6.12 (nvidia.ko itself relies on it when the kernel exports it,
 * nv-caps.c:619).
 */
static int vgpu_install_tmp(struct vgpu_slot *slot, struct file *real,
			    long driver_refs)
{
	struct vgpu_tmp_fd *t = kmalloc(sizeof(*t), GFP_KERNEL);
	int fd;

	if (!t) {
		fput(real);
		return -ENOMEM;
	}
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		kfree(t);
		fput(real);
		return fd;
	}
	t->files = current->files;
	t->fd = fd;
	t->real = get_file(real); /* pairs with fput in vgpu_close_tmp */
	t->slot = slot;
	t->refs = file_count(real) + driver_refs;
	spin_lock(&vgpu_tmp_lock);
	list_add(&t->node, &vgpu_tmp_fds);
	spin_unlock(&vgpu_tmp_lock);
	fd_install(fd, real);
	return fd;
}

struct vgpu_copy_scan {
	struct files_struct *files;
	struct file *real;
};

/* iterate_fd callback, under files->file_lock: fd + 1 of a copy, else 0. */
static int vgpu_copy_match(const void *p, struct file *f, unsigned int fd)
{
	const struct vgpu_copy_scan *sc = p;
	bool ours;

	if (f != sc->real)
		return 0;
	spin_lock(&vgpu_tmp_lock);
	ours = vgpu_tmp_find_locked(sc->files, fd) != NULL;
	spin_unlock(&vgpu_tmp_lock);
	return ours ? 0 : fd + 1;
}

/* Closes every copy of @real in the caller's table; the number closed. */
static int vgpu_reap_copies(struct file *real)
{
	struct vgpu_copy_scan sc = {.files = current->files, .real = real};
	int n = 0, fd;

	/* Bounded: a sibling may keep copying while this runs; the kill ends
	 * that. */
	while (n < 64 &&
	       (fd = iterate_fd(current->files, 0, vgpu_copy_match, &sc)) > 0) {
		close_fd(fd - 1);
		n++;
	}
	return n;
}

static void vgpu_close_tmp(int fd)
{
	struct vgpu_tmp_fd *t;
	int copies, i;

	/*
	 * Unregistered only after the close: until then a concurrent scan must
	 * still see this fd as ours. Found before it, while (files, fd) names
	 * only this entry (a later install of the same number is added in
	 * front and found first by its own close).
	 */
	spin_lock(&vgpu_tmp_lock);
	t = vgpu_tmp_find_locked(current->files, fd);
	spin_unlock(&vgpu_tmp_lock);
	close_fd(fd);
	if (!t)
		return;
	spin_lock(&vgpu_tmp_lock);
	list_del(&t->node);
	spin_unlock(&vgpu_tmp_lock);
	copies = vgpu_reap_copies(t->real);
	/*
	 * A copy still being made is invisible to the scan: F_DUPFD has taken
	 * its reference and reserved a number but not yet stored the file. Its
	 * reference shows in the count (our fd is closed, so the count is
	 * below t->refs unless someone else holds one): look again until it
	 * lands or the reference goes, for at most ~250 ms. The copying thread
	 * can sit between the two steps for tens of milliseconds when its CPU
	 * is taken away (a 20 ms bound was overrun in the guest suite on a
	 * loaded 2-core TCG host). Another thread's temporary fd of the same
	 * file (two device allocations at once) or a new mapping of it also
	 * holds one and only delays this call, by that bound at most.
	 */
	for (i = 0; !copies && i < 250 && file_count(t->real) >= t->refs; i++) {
		usleep_range(800, 1200);
		copies = vgpu_reap_copies(t->real);
	}
	if (copies) {
		pr_warn_ratelimited(
			"slot %u pid %d (%s): %d cop%s of a real driver file "
			"made from a temporary fd during a call: "
			"closed, process killed\n",
			t->slot->id, task_tgid_nr(current), current->comm,
			copies, copies == 1 ? "y" : "ies");
		vgpu_stat_inc(t->slot, VGPU_STAT_FD_REFUSED);
		vgpu_slot_refusal(t->slot, VGPU_EVENT_REFUSED, 0,
				  "copy of a temporary real driver fd: "
				  "process killed");
		send_sig(SIGKILL, current, 1);
	}
	fput(t->real);
	kfree(t);
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
	fix->core = pf->core;
	/* Pairs with close_fd in vgpu_fd_restore. */
	/* REGISTER_FD (a ctl fd named on a dev file) leaves the driver holding
	 * the ctl file. */
	tmp = vgpu_install_tmp(vf->slot, get_file(pf->real),
			       vf->kind == VGPU_NODE_DEV &&
				       pf->kind == VGPU_NODE_CTL);
	fput(f);
	if (tmp < 0)
		return tmp;
	if (put_user(tmp, uaddr)) {
		vgpu_close_tmp(tmp);
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
	vgpu_close_tmp(fix->tmp);
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
	fd = vgpu_install_tmp(vf->slot, w.real, 0);
	if (fd < 0)
		return fd;
	*tmp = fd;
	return 0;
}

void vgpu_remove_gpu_witness(int tmp)
{
	if (tmp >= 0)
		vgpu_close_tmp(tmp);
}
