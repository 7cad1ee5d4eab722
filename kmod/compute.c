// SPDX-License-Identifier: GPL-2.0
/*
 * The compute share controller's kernel host (both hosts;
 * docs/results/compute-kernel-host.md): one kthread per GPU drives every
 * controlled slot's TSGs and channels through the driver's in-kernel RM
 * interface (rmops.h), with the controller of the filter core
 * (kmod/core/sched/vcore_sched.h) deciding when.
 *
 * Per tick: walk each slot's TSG registry (the core records every TSG and
 * channel its clients allocate, and which TSGs the app has scheduled),
 * measure the GPU time each slot used since the last tick
 * (compute_meter.c), vcore_sched_tick(), issue its actions, sleep
 * until the controller's next edge (at most 50 ms, so new channels are seen
 * promptly) or until a slot's TSG goes on the runlist (vgpu_compute_kick).
 * Actions, as measured on the H200 (compute-control-h200.md):
 *   GATE_OFF  FIFO_DISABLE_CHANNELS(bDisable=1, onlySched=1) on the slot's
 *             channels, then PREEMPT(bWait=1) on its TSGs from a worker (on the
 *             H200 it did not return while long kernels ran: never block the
 *             thread on it);
 *   GATE_ON   FIFO_DISABLE_CHANNELS(bDisable=0) on the same channels;
 *   TIMESLICE SET_TIMESLICE on the slot's GR TSGs.
 * Every action touches only *scheduled* TSGs (and their channels): those
 * whose GPFIFO_SCHEDULE(bEnable=1) the app issued and RM accepted
 * (vcore_tsg_info.scheduled). libcuda allocates the TSG and its channels,
 * registers them with UVM and schedules the TSG last (nvidia-rm-abi.md
 * §6.1); a slot capped before that has a controller ticking through the
 * whole setup. On the H200 (docs/results/compute-h200.md, run 5, and the
 * lead's cap-10-from-the-first-kernel run) touching the TSG before its
 * schedule froze the tenant for good: the first PREEMPT(bWait=1) of the
 * unscheduled TSG took 4020 ms (RM's timeout), and channels disabled before
 * the schedule left the TSG never running, although every later
 * DISABLE_CHANNELS(0) and PREEMPT returned status 0 for 270 s. An off edge
 * PREEMPTs only the TSGs whose channels that same edge disabled (the RM call
 * returned NV_OK).
 *
 * The gate's protocol (which channels an edge touches, the PREEMPT worker,
 * the enables an on edge owes, the forced enables) is compute_gate.c's.
 *
 * The module's own RM objects on each GPU, and the RM control wrapper every
 * action goes through, are compute_rm.c's.
 *
 * Which slots are under control (netlink config, slot teardown, module exit),
 * and the thread's start and stop, are compute_config.c's.
 *
 * Never leave a tenant disabled: removing a slot from control (config change,
 * destroy) issues its GATE_ON; stopping the thread (last slot gone, module
 * exit) runs vcore_sched_release_all() and issues every GATE_ON before the
 * thread returns. A process that exits takes its TSGs with it (the driver
 * frees them when the real file is released); a TSG scheduled while its slot
 * is gated off is gated off at once (the schedule kicks the thread), a channel
 * added to a scheduled TSG on the next tick.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "slot.h"
#include "compute.h"
#include "rmops.h"
#include "core/vcore.h"
#include "core/sched/vcore_sched_ctrl.h"

#define VGPU_COMPUTE_MAX_SLEEP_NS (50 * NSEC_PER_MSEC)
#define VGPU_COMPUTE_MIN_SLEEP_NS (500 * NSEC_PER_USEC)
#define VGPU_COMPUTE_LATE_NS	  (10 * NSEC_PER_MSEC)
/* libcuda sets its own timeslice at context setup: ours is re-asserted. */
#define VGPU_COMPUTE_TS_REFRESH_NS NSEC_PER_SEC

/* ---- registry walks --------------------------------------------------- */

static int vgpu_compute_tsg_seen(void *arg, const struct vcore_tsg_info *ti)
{
	struct vgpu_compute_slot *cs = arg;
	struct vgpu_compute_tsg *t;
	unsigned int i;

	for (i = 0; i < cs->ntsgs; i++) {
		t = &cs->tsgs[i];
		if (t->h_client == ti->h_client && t->h_tsg == ti->h_tsg) {
			t->seen = true;
			t->scheduled = ti->scheduled;
			return 0;
		}
	}
	if (cs->ntsgs == VGPU_COMPUTE_MAX_TSGS)
		return 0; /* gated with the rest, not measured */
	t = &cs->tsgs[cs->ntsgs++];
	memset(t, 0, sizeof(*t));
	t->h_client = ti->h_client;
	t->h_tsg = ti->h_tsg;
	t->engine_type = ti->engine_type;
	t->scheduled = ti->scheduled;
	t->seen = true;
	return 0;
}

/*
 * Brings cs->tsgs up to the core's registry; cheap when nothing changed. A
 * freed channel's mark goes (its handle may come back on a channel this host
 * never disabled).
 */
static void vgpu_compute_walk(struct vgpu_compute_slot *cs)
{
	struct vcore_slot *core = vgpu_filter_core(cs->slot);
	unsigned int i, n = 0;
	u64 gen;

	gen = vcore_slot_tsg_generation(core);
	if (gen == cs->tsg_gen)
		return;
	cs->tsg_gen = gen;
	cs->tsgs_changed = true;
	for (i = 0; i < cs->ntsgs; i++)
		cs->tsgs[i].seen = false;
	vcore_slot_for_each_tsg(core, vgpu_compute_tsg_seen, cs);
	for (i = 0; i < cs->ntsgs; i++)
		if (cs->tsgs[i].seen)
			cs->tsgs[n++] = cs->tsgs[i];
	cs->ntsgs = n;
	if (cs->ndis) {
		vcore_slot_for_each_channel(core, vgpu_compute_mark_present,
					    cs);
		vgpu_compute_mark_compact(cs);
	}
}

/* ---- actions ---------------------------------------------------------- */

struct vgpu_compute_slot *vgpu_compute_find(struct vgpu_compute_gpu *g, u32 id)
{
	struct vgpu_compute_slot *cs;

	list_for_each_entry(cs, &g->slots, node) if (cs->id == id) return cs;
	return NULL;
}

static void vgpu_compute_timeslice(struct vgpu_compute_gpu *g,
				   struct vgpu_compute_slot *cs, u64 now)
{
	NVA06C_CTRL_TIMESLICE_PARAMS ts;
	unsigned int i;

	cs->ts_issued_ns = now;
	for (i = 0; i < cs->ntsgs; i++) {
		/* Not before the app's own schedule (see the top). libcuda
		 * sets its 2048 us after that; tsgs_changed re-asserts ours
		 * when the TSG becomes scheduled. */
		if (cs->tsgs[i].engine_type != VGPU_ENGINE_GR0 ||
		    !cs->tsgs[i].scheduled)
			continue;
		vcore_sched_fill_timeslice(&ts, cs->ts_us);
		vgpu_compute_rm_control(
			g, cs, cs->tsgs[i].h_client, cs->tsgs[i].h_tsg,
			NVA06C_CTRL_CMD_SET_TIMESLICE, &ts, sizeof(ts));
	}
}

void vgpu_compute_exec(struct vgpu_compute_gpu *g, int n, bool force)
{
	struct vgpu_compute_slot *cs;
	u64 now = ktime_get_ns();
	int i;

	for (i = 0; i < n; i++) {
		cs = vgpu_compute_find(g, g->acts[i].slot_id);
		if (!cs)
			continue;
		switch (g->acts[i].kind) {
		case VCORE_SCHED_ACT_GATE_OFF:
			vgpu_compute_gate(g, cs, true, false);
			break;
		case VCORE_SCHED_ACT_GATE_ON:
			vgpu_compute_gate(g, cs, false, force);
			break;
		case VCORE_SCHED_ACT_TIMESLICE:
			cs->ts_us = g->acts[i].timeslice_us;
			vgpu_compute_timeslice(g, cs, now);
			break;
		}
	}
}

/* ---- the thread -------------------------------------------------------- */

static u64 vgpu_compute_tick(struct vgpu_compute_gpu *g)
{
	struct vgpu_compute_slot *cs;
	unsigned int nrep = 0;
	vcs_u64 next = 0; /* the core's u64 is unsigned long */
	u64 now;
	int n;

	now = ktime_get_ns();
	if (!g->rm_ready && now >= g->rm_retry_ns && vgpu_compute_rm_setup(g))
		g->rm_retry_ns = now + NSEC_PER_SEC; /* no driver yet */
	list_for_each_entry(cs, &g->slots, node) vgpu_compute_walk(cs);
	now = ktime_get_ns();
	if (g->rm_ready)
		nrep = vgpu_compute_measure(g, now, g->reports);
	n = vcore_sched_tick(g->sched, now, g->reports, nrep, g->acts,
			     VCORE_SCHED_MAX_ACTIONS, &next);
	g->enable_owed = false; /* set again by an enable still owed */
	vgpu_compute_exec(g, n, false);
	list_for_each_entry(cs, &g->slots, node)
	{
		if (vcore_sched_slot_gated(g->sched, cs->id)) {
			if (cs->tsgs_changed) /* new channels join the gate */
				vgpu_compute_gate(g, cs, true, false);
		} else if (cs->enable_owed) {
			vgpu_compute_gate(g, cs, false, false);
		}
		if (cs->mode == VGPU_COMPUTE_WEIGHT && cs->ts_us &&
		    (cs->tsgs_changed ||
		     now - cs->ts_issued_ns >= VGPU_COMPUTE_TS_REFRESH_NS))
			vgpu_compute_timeslice(g, cs, now);
		cs->tsgs_changed = false;
	}
	return next;
}

/*
 * Sleeps until the controller's next edge; returns how late the wake-up was,
 * if that is more than VGPU_COMPUTE_LATE_NS (a fifth of a period), else 0.
 * A late edge is time the controller could not act (a gate stays in its state
 * that long). A few ms of lateness the integral absorbs; a stall of tens of ms
 * (a TCG guest whose vCPU the host did not run, an overloaded host) it cannot
 * fully, so stalls are counted (VGPU_STAT_CONTROL_LATE_NS) and the guest
 * suite can tell a loop error from a stalled thread.
 */
static u64 vgpu_compute_sleep_until(struct vgpu_compute_gpu *g, u64 next)
{
	u64 now = ktime_get_ns(), woke;
	ktime_t t;

	next = clamp(next, now + VGPU_COMPUTE_MIN_SLEEP_NS,
		     now + VGPU_COMPUTE_MAX_SLEEP_NS);
	t = ns_to_ktime(next);
	set_current_state(TASK_INTERRUPTIBLE);
	/* A kick after this check finds the thread asleep and wakes it. */
	if (!kthread_should_stop() && !READ_ONCE(g->kicked))
		/* ~0.1 ms edges: the 50 ms period's 1 % is 0.5 ms. */
		schedule_hrtimeout_range(&t, 100 * NSEC_PER_USEC,
					 HRTIMER_MODE_ABS);
	__set_current_state(TASK_RUNNING);
	woke = ktime_get_ns();
	return woke > next + VGPU_COMPUTE_LATE_NS ? woke - next : 0;
}

/*
 * A TSG of one of @g's slots went on the runlist (compute_config.c): the
 * thread ticks now rather than at its next edge, so a TSG scheduled while its
 * slot is gated off is gated at once (the tick's gated-slot pass) instead of
 * running free for the rest of the off phase.
 */
void vgpu_compute_kick(struct vgpu_compute_gpu *g)
{
	WRITE_ONCE(g->kicked, true);
	wake_up_process(g->thread);
}

int vgpu_compute_thread(void *arg)
{
	struct vgpu_compute_gpu *g = arg;
	struct vgpu_compute_slot *cs;
	u64 next, now, late = 0;
	bool owed;
	int n;

	/*
	 * A late gate edge is a control error (the gate stays as it was), so
	 * the thread runs above normal tasks, at the lowest RT priority (what
	 * sched_set_fifo_low() is for: a kthread that needs timely wake-ups
	 * but does little work; a tick is a few RM calls).
	 */
	sched_set_fifo_low(current);
	while (!kthread_should_stop()) {
		/* Before the walk: a TSG scheduled after it kicks again. */
		smp_store_mb(g->kicked, false);
		mutex_lock(&g->lock);
		list_for_each_entry(cs, &g->slots, node) cs->late_ns += late;
		next = vgpu_compute_tick(g);
		owed = g->enable_owed;
		mutex_unlock(&g->lock);
		now = ktime_get_ns();
		if (owed && next > now + VGPU_COMPUTE_MIN_SLEEP_NS &&
		    !vgpu_compute_preempts_idle(g)) {
			/*
			 * An on edge waits for its PREEMPT (compute_gate.c,
			 * top), here, without g->lock, and never past the next
			 * edge; then the next tick pays it (or owes it again).
			 * An enable owed for another reason (RM refused it)
			 * waits for the next tick, so the thread never spins.
			 */
			vgpu_compute_preempts_settle(
				g, min_t(u64, next - now,
					 VGPU_COMPUTE_ENABLE_WAIT_NS));
			late = 0;
			continue;
		}
		late = vgpu_compute_sleep_until(g, next);
	}
	/*
	 * Never leave a tenant disabled: every gate goes back on first, after
	 * a bounded wait for the PREEMPTs (force: enabled even if one waits).
	 */
	vgpu_compute_preempts_settle(g, VGPU_COMPUTE_ENABLE_WAIT_NS);
	mutex_lock(&g->lock);
	n = vcore_sched_release_all(g->sched, g->acts, VCORE_SCHED_MAX_ACTIONS);
	vgpu_compute_exec(g, n, true);
	list_for_each_entry(cs, &g->slots, node)
		vgpu_compute_gate(g, cs, false, true);
	vgpu_compute_rm_teardown(g);
	vgpu_compute_meter_reset(g);
	g->rm_retry_ns = 0;
	mutex_unlock(&g->lock);
	return 0;
}
