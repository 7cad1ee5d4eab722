// SPDX-License-Identifier: GPL-2.0
/*
 * A proxy file's end is not its real file's end (docs/security/
 * kernel-lifetime-compute.md, F1). The driver frees a ctl file's clients, and
 * with them their video memory, TSGs and channels, only when the real file's
 * last reference goes (rm_cleanup_file_private from nvidia_close,
 * nvidia-rm-abi.md §9.1). Others than the proxy can hold that file:
 *   - a dev file registered to it (NV_ESC_REGISTER_FD: nvidia_ioctl fgets the
 *     ctl file, a decoy of it (decoy.c) that holds it, and keeps that in the
 *     dev file's nv_linux_file_private until the dev file closes, §9.2);
 *   - a VMA (vgpu_fops_mmap switches the VMA to the real file);
 *   - a copy of a call's temporary decoy that a sibling thread took.
 * So the filter's record of a file (its clients, their charges, the TSG
 * registry the compute controller gates) must live exactly as long as the real
 * file: a proxy whose real file is still held elsewhere when it closes is
 * parked here, and finished (records dropped, charges refunded, the real file
 * put, the process detached) by a worker once the proxy's reference is the
 * only one left. Nothing can take a new reference then: no fd table holds the
 * file and no VMA maps it, so the count cannot climb back from one.
 *
 * A parked file holds a module reference (its cdev reference went with the
 * proxy), so the module cannot go while the driver holds a tenant's memory
 * through it; vgpu_linger_exit() waits for a worker still running.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/file.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "proxy.h"
#include "slot.h"

/*
 * How often parked files are looked at. A refund comes at most this late after
 * the driver's last reference went (the charge errs on the tenant's side for
 * that long); a dev file closed right after its ctl is the common case (every
 * libcuda process exit closes ctl first), so the first look comes soon.
 */
#define VGPU_LINGER_FIRST_POLL msecs_to_jiffies(5)
#define VGPU_LINGER_POLL       msecs_to_jiffies(50)

static LIST_HEAD(vgpu_linger_files);
static DEFINE_MUTEX(vgpu_linger_lock); /* protects vgpu_linger_files */
static void vgpu_linger_scan(struct work_struct *work);
static DECLARE_DELAYED_WORK(vgpu_linger_work, vgpu_linger_scan);

/* Whether anything but this proxy holds the real file. */
static bool vgpu_real_held_elsewhere(struct vgpu_file *vf)
{
	return file_count(vf->real) > 1;
}

/*
 * The real close as the driver sees it: forget and refund, put, detach. A
 * parked file (@parked, from the worker) puts the real file first and
 * synchronously (the worker is a kthread: __fput_sync runs the driver's
 * release now), so that the refund never comes before the driver freed: no
 * moment where the slot's charge is below what the driver holds for it.
 */
static void vgpu_file_finish(struct vgpu_file *vf, bool parked)
{
	struct vgpu_slot *slot = vf->slot;

	if (parked)
		__fput_sync(vf->real);
	vcore_file_close(vf->core);
	if (!parked)
		fput(vf->real);
	/* No VMA maps the real file any more (each held it). */
	vgpu_uvm_mappings_free(vf);
	vgpu_slot_detach(slot, vf->tgid);
	vgpu_slot_put(slot); /* from vgpu_fops_open */
	kfree(vf);
}

void vgpu_file_release(struct vgpu_file *vf)
{
	if (!vgpu_real_held_elsewhere(vf)) {
		vgpu_file_finish(vf, false);
		return;
	}
	__module_get(THIS_MODULE); /* module_put by vgpu_linger_scan */
	mutex_lock(&vgpu_linger_lock);
	list_add_tail(&vf->linger, &vgpu_linger_files);
	mutex_unlock(&vgpu_linger_lock);
	pr_debug("slot %u pid %d: real %s still held (registered dev file, "
		 "mapping): its records and charges stay until it goes\n",
		 vf->slot->id, vf->tgid,
		 vf->kind == VGPU_NODE_CTL ? "control file" : "file");
	mod_delayed_work(system_wq, &vgpu_linger_work, VGPU_LINGER_FIRST_POLL);
}

static void vgpu_linger_scan(struct work_struct *work)
{
	struct vgpu_file *vf, *tmp;
	LIST_HEAD(done);
	bool left;

	mutex_lock(&vgpu_linger_lock);
	list_for_each_entry_safe(vf, tmp, &vgpu_linger_files,
				 linger) if (!vgpu_real_held_elsewhere(vf))
		list_move_tail(&vf->linger, &done);
	left = !list_empty(&vgpu_linger_files);
	if (left)
		schedule_delayed_work(&vgpu_linger_work, VGPU_LINGER_POLL);
	mutex_unlock(&vgpu_linger_lock);
	list_for_each_entry_safe(vf, tmp, &done, linger)
	{
		list_del(&vf->linger);
		vgpu_file_finish(vf, true);
		module_put(THIS_MODULE); /* from vgpu_file_release */
	}
}

/* Module exit: every parked file held the module, so none is left; a scan that
 * dropped the last reference may still be returning. */
void vgpu_linger_exit(void)
{
	cancel_delayed_work_sync(&vgpu_linger_work);
	WARN_ON(!list_empty(&vgpu_linger_files));
}
