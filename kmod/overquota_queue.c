// SPDX-License-Identifier: GPL-2.0
/*
 * What the core asks to free while a call is inside vcore_post (core_host.h),
 * kept for the calling task until vcore_post has returned: the free then goes
 * through the proxy file (overquota.c, which says why).
 */
#include <linux/list.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "core_host.h"

/* vgpu_overquota_lock protects vgpu_overquota_pending (entries live for one
 * call). */
static DEFINE_SPINLOCK(vgpu_overquota_lock);
/* Read without the lock only by vgpu_overquota_pending_any() (core_host.h). */
LIST_HEAD(vgpu_overquota_pending);

static void vgpu_overquota_add(struct vgpu_overquota *e)
{
	e->task = current;
	spin_lock(&vgpu_overquota_lock);
	list_add_tail(&e->node, &vgpu_overquota_pending);
	spin_unlock(&vgpu_overquota_lock);
}

/* vcore_overquota_fn: called from vcore_post in the allocating task, slot lock
 * not held. */
void vgpu_overquota_hook(void *priv, struct vcore_file *file,
			 const struct vcore_overquota *oq)
{
	struct vgpu_overquota *e = kzalloc(sizeof(*e), GFP_KERNEL);

	if (!e)
		return; /* stays charged and counted (VGPU_STAT_OVERQUOTA) */
	e->oq = *oq;
	vgpu_overquota_add(e);
}

/*
 * kmod/driver_query.c, inside vcore_post, for the frees the core asks of the
 * driver under a client the in-kernel entry may not free (vgpu_trusted_free: no
 * node-wide claim, the driver could not be asked when it was recorded), and
 * for the kill of a tampered call (@h_client 0: only kill): an allocation the
 * driver made past the quota (deny_after_alloc), or, with @kill, a client of
 * a tampered call (tampered()). The
 * free waits for vgpu_overquota_settle, after vcore_post, and goes through the
 * caller's own real ctl file: the driver then frees an object only if its
 * client is bound to that file (docs/nvidia-rm-abi.md §9.2, strict
 * client validation). The core's handles come from the tenant's private copy
 * and may name another tenant's client (a record made from a rewritten call);
 * the driver's in-kernel entry would free anyone's, this path only the
 * tenant's own. The kill waits too: vm_mmap, which the free needs, fails once
 * a fatal signal is pending.
 */
int vgpu_free_queue(u32 h_client, u32 h_parent, u32 h_object, bool kill)
{
	struct vgpu_overquota *e = kzalloc(sizeof(*e), GFP_KERNEL);

	if (!e) {
		/* Killed anyway: the files still close. */
		if (kill)
			send_sig(SIGKILL, current, 1);
		return -ENOMEM;
	}
	e->queued_free = true;
	e->kill = kill;
	e->oq.h_client = h_client;
	e->oq.h_parent = h_parent;
	e->oq.h_object = h_object;
	vgpu_overquota_add(e);
	return 0;
}

/*
 * Moves the calling task's entries to @out, all at once: settling one frees
 * through the filter, whose own settle then finds none (no recursion).
 */
void vgpu_overquota_take_mine(struct list_head *out)
{
	struct vgpu_overquota *e, *n;

	spin_lock(&vgpu_overquota_lock);
	list_for_each_entry_safe(e, n, &vgpu_overquota_pending, node)
	{
		if (e->task == current)
			list_move_tail(&e->node, out);
	}
	spin_unlock(&vgpu_overquota_lock);
}
