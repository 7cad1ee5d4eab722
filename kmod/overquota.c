// SPDX-License-Identifier: GPL-2.0
/*
 * Closing the TOCTOU window on memory allocations (kmod/core/vcore.h, "TOCTOU";
 * docs/nvidia-rm-abi.md §9.5). The core decides on a private copy of the
 * parameters, but the driver re-reads the user's memory: a second thread can
 * raise the size in between, and the driver then allocates more than was
 * reserved. The core notices when it settles the charge from the reply and
 * calls our hook. The hook only records the object (it runs inside vcore_post);
 * once vcore_post has returned, the calling task frees the object through the
 * filter (so the core refunds it, exactly as for the application's own RM_FREE)
 * on the same real ctl file, and rewrites the allocation's status to
 * NV_ERR_NO_MEMORY: what the driver itself says when memory runs out (§4.3).
 *
 * Since driver_query.c, this is the fallback: when the driver answers the
 * core's driver_memory query, the core charges the driver's own size and has an
 * allocation past the quota freed through the driver's in-kernel entry on
 * kernel memory (driver_query.c, vgpu_trusted_free), and this hook is not
 * called for it. It still runs when the query cannot be answered (no in-kernel
 * RM entry, or a class the driver does not describe), where growth is detected
 * from the reply, which a racing thread can rewrite; and vgpu_free_queue
 * (overquota_queue.c) serves the frees under clients recorded while the driver
 * could not be asked. Both free with an NVOS00 in a scratch page of the
 * caller's mm, which a sibling thread can rewrite before the driver reads it:
 * only where no in-kernel entry could be used instead.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ioctl.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "core_host.h"
#include "proxy.h"
#include "slot.h"

#include "core/abi/nv_escape.h"
#include "core/abi/nvos.h"
#include "core/abi/nvstatus.h"

/*
 * RM_FREE with its NVOS00 in a scratch page of the caller's mm: through the
 * filter, so that the core refunds a recorded object, or, @direct, straight
 * to the real file, for an object the core holds no record of (the core
 * refuses every call of a tampered file, vcore_file_tampered).
 */
static int vgpu_overquota_free(struct vgpu_file *vf,
			       const struct vcore_overquota *oq, bool direct)
{
	const unsigned int cmd =
		_IOC(_IOC_READ | _IOC_WRITE, NV_IOCTL_MAGIC, NV_ESC_RM_FREE,
		     sizeof(NVOS00_PARAMETERS));
	NVOS00_PARAMETERS params = {
		.hRoot = oq->h_client,
		.hObjectParent = oq->h_parent,
		.hObjectOld = oq->h_object,
	};
	unsigned long addr;
	long rc;

	addr = vm_mmap(NULL, 0, PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, 0);
	if (IS_ERR_VALUE(addr))
		return (int)addr;
	rc = -EFAULT;
	if (!copy_to_user((void __user *)addr, &params, sizeof(params))) {
		if (direct)
			rc = vf->real->f_op->unlocked_ioctl(vf->real, cmd,
							    addr);
		else
			rc = vgpu_filter_ioctl(vf, cmd, addr);
		if (!rc &&
		    get_user(params.status,
			     (u32 __user *)(addr + offsetof(NVOS00_PARAMETERS,
							    status))))
			rc = -EFAULT;
		if (!rc && params.status)
			rc = -EIO;
	}
	vm_munmap(addr, PAGE_SIZE);
	return rc;
}

/* A vgpu_free_queue entry: freed through @vf's real ctl file. */
static void vgpu_queued_free(struct vgpu_file *vf,
			     const struct vcore_overquota *oq)
{
	int err = vgpu_overquota_free(vf, oq, true);

	if (err)
		pr_warn_ratelimited("slot %u pid %d (%s): object 0x%x/0x%x "
				    "not freed through the caller's file (%d: "
				    "not bound to it, or the free failed)\n",
				    vf->slot->id, task_tgid_nr(current),
				    current->comm, oq->h_client, oq->h_object,
				    err);
	else
		pr_debug("slot %u pid %d: object 0x%x/0x%x freed through the "
			 "caller's file\n",
			 vf->slot->id, task_tgid_nr(current), oq->h_client,
			 oq->h_object);
}

/* In the allocating task, after vcore_post: undo what the race allocated. */
void vgpu_overquota_settle(struct vgpu_file *vf, u32 __user *status)
{
	struct vgpu_overquota *e, *n;
	bool kill = false;
	LIST_HEAD(mine);

	vgpu_overquota_take_mine(&mine);
	list_for_each_entry_safe(e, n, &mine, node)
	{
		int err;

		list_del(&e->node);

		if (e->queued_free) {
			if (e->oq.h_client)
				vgpu_queued_free(vf, &e->oq);
			kill |= e->kill;
			kfree(e);
			continue;
		}
		err = vgpu_overquota_free(vf, &e->oq, false);

		if (!err && status && put_user(NV_ERR_NO_MEMORY, status))
			err = -EFAULT;
		pr_warn_ratelimited("slot %u pid %d (%s): object 0x%x/0x%x got "
				    "%llu bytes past the quota (parameters "
				    "changed during the call): %s\n",
				    vf->slot->id, task_tgid_nr(current),
				    current->comm, e->oq.h_client,
				    e->oq.h_object,
				    (unsigned long long)e->oq.bytes,
				    err ? "could not free it, stays charged"
					: "freed, NV_ERR_NO_MEMORY returned");
		vgpu_slot_refusal(
			vf->slot, VGPU_EVENT_QUOTA_DENIED, e->oq.bytes,
			"allocation grew past the quota during the call");
		kfree(e);
	}
	if (kill)
		send_sig(SIGKILL, current, 1);
}
