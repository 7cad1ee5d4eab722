// SPDX-License-Identifier: GPL-2.0
/*
 * The compute share controller's configuration (compute.c has the thread):
 * which slots are under control on which GPU, each GPU's controller and
 * thread started with its first controlled slot and stopped with its last,
 * and the per-slot counters netlink and sysfs read. Removing a slot from
 * control re-opens its gate and timeslice first.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "slot.h"
#include "compute.h"
#include "core_host.h"
#include "core/vcore.h"

/* vgpu_compute_lock protects: vgpu_compute_gpus, each g->thread. */
static DEFINE_MUTEX(vgpu_compute_lock);
static LIST_HEAD(vgpu_compute_gpus);

const char *vgpu_compute_mode_name(u32 mode)
{
	return mode == VGPU_COMPUTE_WEIGHT ? "weight" : "cap";
}

static u32 vgpu_compute_sched_mode(u32 mode)
{
	return mode == VGPU_COMPUTE_WEIGHT ? VCORE_SCHED_MODE_WEIGHT
					   : VCORE_SCHED_MODE_CAP;
}

/* ---- configuration ----------------------------------------------------- */

/* The controller's defaults, with the weight window of perfmon-sampled
 * measurements (compute_meter.c; vcore_sched.h says why). */
static int vgpu_compute_sched_init(struct vcore_sched *s)
{
	struct vcore_sched_params p;

	vcore_sched_params_default(&p);
	p.weight_window_ns = VCORE_SCHED_SAMPLED_WEIGHT_WINDOW_NS;
	return vcore_sched_init(s, &p);
}

static struct vgpu_compute_gpu *vgpu_compute_gpu_get(u32 gpu, bool create)
{
	struct vgpu_compute_gpu *g;

	lockdep_assert_held(&vgpu_compute_lock);
	list_for_each_entry(g, &vgpu_compute_gpus,
			    node) if (g->gpu == gpu) return g;
	if (!create)
		return NULL;
	g = kvzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return NULL;
	g->sched = kvzalloc(sizeof(*g->sched), GFP_KERNEL);
	if (!g->sched || vgpu_compute_sched_init(g->sched)) {
		kvfree(g->sched);
		kvfree(g);
		return NULL;
	}
	g->gpu = gpu;
	mutex_init(&g->lock);
	INIT_LIST_HEAD(&g->slots);
	spin_lock_init(&g->preempt_lock);
	init_waitqueue_head(&g->preempt_wq);
	INIT_WORK(&g->preempt_work, vgpu_compute_preempt_work);
	list_add_tail(&g->node, &vgpu_compute_gpus);
	return g;
}

/* Removes @cs from control, re-opening its gate and timeslice. */
static void vgpu_compute_slot_drop(struct vgpu_compute_gpu *g,
				   struct vgpu_compute_slot *cs)
{
	int n;

	lockdep_assert_held(&g->lock);
	/* Leaving weight mode restores the default timeslice (slot_set). */
	n = vcore_sched_slot_set(g->sched, cs->id, 100, VCORE_SCHED_MODE_CAP,
				 g->acts);
	if (n > 0)
		vgpu_compute_exec(g, n, true);
	n = vcore_sched_slot_remove(g->sched, cs->id, g->acts);
	if (n > 0)
		vgpu_compute_exec(g, n, true);
	/* An enable still owed, or one the controller thought done. */
	vgpu_compute_gate(g, cs, false, true);
	list_del(&cs->node);
	g->nslots--;
	vgpu_slot_put(cs->slot);
	kvfree(cs);
}

/* Starts or stops @g's thread to match its slot count. */
static void vgpu_compute_gpu_sync(struct vgpu_compute_gpu *g)
{
	struct task_struct *t;

	lockdep_assert_held(&vgpu_compute_lock);
	if (g->nslots && !g->thread) {
		t = kthread_run(vgpu_compute_thread, g, "vgpu-compute/%u",
				g->gpu);
		if (IS_ERR(t))
			pr_err("gpu %u: compute thread: %ld\n", g->gpu,
			       PTR_ERR(t));
		else
			g->thread = t;
	} else if (!g->nslots && g->thread) {
		kthread_stop(g->thread);
		g->thread = NULL;
		flush_work(&g->preempt_work);
		/* The thread ran release_all: start afresh next time. */
		vgpu_compute_sched_init(g->sched);
	} else if (g->thread) {
		wake_up_process(g->thread);
	}
}

int vgpu_compute_slot_apply(struct vgpu_slot *slot)
{
	struct vgpu_compute_slot *cs;
	struct vgpu_compute_gpu *g;
	u32 share, mode;
	bool want;
	int err = 0, n;

	mutex_lock(&slot->lock);
	share = slot->cfg.compute_share ?: 100;
	mode = slot->cfg.compute_mode == VGPU_COMPUTE_WEIGHT
		       ? VGPU_COMPUTE_WEIGHT
		       : VGPU_COMPUTE_CAP;
	mutex_unlock(&slot->lock);
	want = !(mode == VGPU_COMPUTE_CAP && share >= 100);

	mutex_lock(&vgpu_compute_lock);
	g = vgpu_compute_gpu_get(slot->gpu, want);
	if (!g) {
		err = want ? -ENOMEM : 0;
		goto out;
	}
	/* A drop below enables at once: give the PREEMPTs their time first. */
	if (!want)
		vgpu_compute_preempts_settle(g, VGPU_COMPUTE_ENABLE_WAIT_NS);
	mutex_lock(&g->lock);
	cs = vgpu_compute_find(g, slot->id);
	if (cs && want) {
		n = vcore_sched_slot_set(g->sched, slot->id, share,
					 vgpu_compute_sched_mode(mode),
					 g->acts);
		if (n > 0) /* an on edge owed here is paid by the thread */
			vgpu_compute_exec(g, n, false);
		cs->share = share;
		cs->mode = mode;
	} else if (cs) {
		vgpu_compute_slot_drop(g, cs);
	} else if (want) {
		cs = kvzalloc(sizeof(*cs), GFP_KERNEL);
		err = cs ? vcore_sched_slot_add(g->sched, slot->id, share,
						vgpu_compute_sched_mode(mode))
			 : -ENOMEM;
		if (err) {
			kvfree(cs);
		} else {
			vgpu_slot_get(slot); /* dropped by slot_drop */
			cs->slot = slot;
			cs->id = slot->id;
			cs->share = share;
			cs->mode = mode;
			list_add_tail(&cs->node, &g->slots);
			g->nslots++;
		}
	}
	mutex_unlock(&g->lock);
	vgpu_compute_gpu_sync(g);
out:
	mutex_unlock(&vgpu_compute_lock);
	/* In weight mode the controller's timeslice is the only one (F7). */
	vcore_slot_set_host_owns_timeslice(vgpu_filter_core(slot),
					   !err && want &&
						   mode == VGPU_COMPUTE_WEIGHT);
	if (err)
		pr_warn("slot %u: compute share %u%% (%s) not applied: %d\n",
			slot->id, share, vgpu_compute_mode_name(mode), err);
	return err;
}

void vgpu_compute_slot_gone(struct vgpu_slot *slot)
{
	struct vgpu_compute_slot *cs;
	struct vgpu_compute_gpu *g;

	mutex_lock(&vgpu_compute_lock);
	g = vgpu_compute_gpu_get(slot->gpu, false);
	if (g) {
		vgpu_compute_preempts_settle(g, VGPU_COMPUTE_ENABLE_WAIT_NS);
		mutex_lock(&g->lock);
		cs = vgpu_compute_find(g, slot->id);
		if (cs && cs->slot == slot)
			vgpu_compute_slot_drop(g, cs);
		mutex_unlock(&g->lock);
		vgpu_compute_gpu_sync(g);
	}
	mutex_unlock(&vgpu_compute_lock);
}

bool vgpu_compute_slot_stats(struct vgpu_slot *slot,
			     struct vcore_sched_slot_stats *st,
			     struct vgpu_compute_host_stats *hs)
{
	struct vgpu_compute_slot *cs;
	struct vgpu_compute_gpu *g;
	bool found = false;

	memset(st, 0, sizeof(*st));
	memset(hs, 0, sizeof(*hs));
	mutex_lock(&vgpu_compute_lock);
	g = vgpu_compute_gpu_get(slot->gpu, false);
	if (g) {
		mutex_lock(&g->lock);
		cs = vgpu_compute_find(g, slot->id);
		if (cs && cs->slot == slot &&
		    !vcore_sched_get_stats(g->sched, slot->id, st)) {
			hs->errors = cs->errors;
			hs->late_ns = cs->late_ns;
			found = true;
		}
		mutex_unlock(&g->lock);
	}
	mutex_unlock(&vgpu_compute_lock);
	return found;
}

/*
 * A TSG of slot @slot_id went on the runlist (core_host.h): its GPU's thread
 * ticks now, and the tick gates the TSG if its slot is gated off
 * (compute.c). Waiting for the thread's next edge let a TSG scheduled early
 * in a cap-10 off phase run alone for up to the whole 45 ms, all of it the
 * slot's debt by the cap's rules: four such joiners left their slot gated for
 * most of the next second, some of its tenants with nothing
 * (compute_gate.cc, TsgScheduledWhileGatedIsNotEnabledByTheOnEdge).
 */
static void vgpu_compute_tsg_scheduled(u32 slot_id)
{
	struct vgpu_slot *slot = vgpu_slot_lookup(slot_id);
	struct vgpu_compute_gpu *g;
	u32 gpu;

	if (!slot)
		return;
	gpu = slot->gpu;
	vgpu_slot_put(slot); /* the caller's open file holds another */
	mutex_lock(&vgpu_compute_lock);
	g = vgpu_compute_gpu_get(gpu, false);
	if (g && g->thread)
		vgpu_compute_kick(g);
	mutex_unlock(&vgpu_compute_lock);
}

int vgpu_compute_init(void)
{
	vgpu_filter_set_tsg_hook(vgpu_compute_tsg_scheduled);
	return 0;
}

/* Netlink is gone: no config can arrive. Gates re-open before slots go. */
void vgpu_compute_exit(void)
{
	struct vgpu_compute_slot *cs, *tmp;
	struct vgpu_compute_gpu *g, *gt;

	vgpu_filter_set_tsg_hook(NULL);
	mutex_lock(&vgpu_compute_lock);
	list_for_each_entry_safe(g, gt, &vgpu_compute_gpus, node)
	{
		if (g->thread) {
			kthread_stop(g->thread); /* issues every GATE_ON */
			g->thread = NULL;
		}
		flush_work(&g->preempt_work);
		list_for_each_entry_safe(cs, tmp, &g->slots, node)
		{
			list_del(&cs->node);
			vgpu_slot_put(cs->slot);
			kvfree(cs);
		}
		list_del(&g->node);
		mutex_destroy(&g->lock);
		kvfree(g->pm_buf);
		kvfree(g->sched);
		kvfree(g);
	}
	mutex_unlock(&vgpu_compute_lock);
}
