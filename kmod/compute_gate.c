// SPDX-License-Identifier: GPL-2.0
/*
 * The gate's protocol of the compute share controller's kernel host: which
 * channels a GATE_OFF / GATE_ON edge of the per-GPU thread (compute.c) touches,
 * the PREEMPT worker, the enables an on edge owes and the forced enables of
 * slot removal and thread stop. compute.c says when an edge happens (and why
 * only scheduled TSGs are touched); this file says what the edge does.
 *
 * The gate's protocol (the shim host's, shim/compute/compute_host.cc, commit
 * e3a0af7): on the H200, FIFO_DISABLE_CHANNELS(onlySched=1) followed by the
 * enable with no PREEMPT of the TSG in between stalled the process for good
 * (compute-control-h200.md); with a PREEMPT(bWait=1) between them the pair
 * throttled it. The shim host froze 8 of 11 capped tenants on the H200 while
 * it (1) enabled channels it had never disabled and (2) issued an on edge
 * before the off edge's PREEMPT returned; this host had both flaws. So:
 *  - each slot keeps the channels this host disabled (cs->dis_*, marked
 *    before the disable is issued); the off edge disables only unmarked
 *    channels of scheduled TSGs, the on edge enables exactly the marked ones
 *    (scheduled or not since: never leave a channel disabled) and nothing
 *    else;
 *  - an off edge that queued PREEMPTs records the GPU's queued sequence in
 *    cs->preempt_seq; an on edge whose PREEMPTs have not all returned
 *    (g->preempt_done_seq behind) is owed, not issued. The thread cannot wait
 *    for the worker under g->lock (the worker re-checks each TSG under it),
 *    so after the tick it waits for the worker outside the lock, at most
 *    VGPU_COMPUTE_ENABLE_WAIT_NS and never past the controller's next edge,
 *    then ticks again and pays what it owes; a PREEMPT that takes longer
 *    (one that waits for a running kernel: the TSG is still on the GPU, so
 *    the delay costs the tenant nothing) is retried every tick. The loop
 *    never stops;
 *  - removing a slot from control and stopping the thread wait the same
 *    bounded time for the worker, then enable every marked channel
 *    whatever the worker's state (force): a tenant is never left disabled.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "slot.h"
#include "compute.h"
#include "rmops.h"
#include "core/vcore.h"
#include "core/sched/vcore_sched_ctrl.h"

#define VGPU_COMPUTE_MARK_OK   0x1 /* RM confirmed the disable */
#define VGPU_COMPUTE_MARK_KEEP 0x2 /* kept by the current compaction */

/* ---- the channels this host disabled (the gate's protocol, top) -------- */

static int vgpu_compute_mark_find(const struct vgpu_compute_slot *cs,
				  u32 h_client, u32 h_channel)
{
	unsigned int i;

	for (i = 0; i < cs->ndis; i++)
		if (cs->dis_chan[i] == h_channel &&
		    cs->dis_client[i] == h_client)
			return i;
	return -1;
}

/* Keeps the marks that have VGPU_COMPUTE_MARK_KEEP, clearing it. */
void vgpu_compute_mark_compact(struct vgpu_compute_slot *cs)
{
	unsigned int i, n = 0;

	for (i = 0; i < cs->ndis; i++) {
		if (!(cs->dis_flags[i] & VGPU_COMPUTE_MARK_KEEP))
			continue;
		cs->dis_client[n] = cs->dis_client[i];
		cs->dis_chan[n] = cs->dis_chan[i];
		cs->dis_flags[n++] = cs->dis_flags[i] & ~VGPU_COMPUTE_MARK_KEEP;
	}
	cs->ndis = n;
}

int vgpu_compute_mark_present(void *arg, const struct vcore_channel_info *ch)
{
	struct vgpu_compute_slot *cs = arg;
	int i = vgpu_compute_mark_find(cs, ch->h_client, ch->h_channel);

	if (i >= 0)
		cs->dis_flags[i] |= VGPU_COMPUTE_MARK_KEEP;
	return 0;
}

struct vgpu_compute_chans {
	struct vgpu_compute_gpu *g;
	struct vgpu_compute_slot *cs;
	bool off;
	unsigned int n;
};

/*
 * The channels one edge acts on (the gate's protocol, top). Off: those of
 * scheduled TSGs (a disable before the TSG's first GPFIFO_SCHEDULE left the
 * H200 tenant never running) that this host has not disabled yet (or whose
 * disable RM refused), marked here, before the call. On: exactly the
 * channels this host disabled, scheduled or not since; never one it did not.
 * A channel without a TSG parent (an internal TSG, nvidia-rm-abi.md §6.3) is
 * never scheduled in the registry's sense and is left alone.
 */
static int vgpu_compute_chan_seen(void *arg,
				  const struct vcore_channel_info *ch)
{
	struct vgpu_compute_chans *c = arg;
	struct vgpu_compute_slot *cs = c->cs;
	int m = vgpu_compute_mark_find(cs, ch->h_client, ch->h_channel);

	if (c->n == VGPU_COMPUTE_MAX_CHANNELS)
		return 1;
	if (!c->off) {
		if (m < 0)
			return 0;
	} else {
		if (!ch->tsg_scheduled ||
		    (m >= 0 && (cs->dis_flags[m] & VGPU_COMPUTE_MARK_OK)))
			return 0;
		if (m < 0) {
			if (cs->ndis == VGPU_COMPUTE_MAX_CHANNELS)
				return 1; /* untracked: never disabled */
			m = cs->ndis++;
			cs->dis_client[m] = ch->h_client;
			cs->dis_chan[m] = ch->h_channel;
			cs->dis_flags[m] = 0;
		}
	}
	c->g->chan_client[c->n] = ch->h_client;
	c->g->chan_handle[c->n] = ch->h_channel;
	c->g->chan_tsg[c->n] = ch->h_tsg;
	c->n++;
	return 0;
}

/*
 * Which TSG an on edge enables first. The runlist hands the GPU to the first
 * TSG whose channels are enabled again (nvsim: the first one runnable; on the
 * GPU, Host's runlist search finds it while RM is still enabling the rest),
 * and the others follow in runlist order, one timeslice each. An on phase
 * shorter than one round of the slot's timeslices (cap 10: 5 ms for five
 * TSGs of 1 ms slices, less while the integral repays a debt) ends before the
 * last TSGs get theirs: enabled in the same order at every edge, one tenant
 * of five got 0.0 % of a 1 s window (compute_gate.cc, the joiners). Each on
 * edge starts one TSG further along the slot's list (@g->chan_*[0, @n),
 * grouped by TSG as the registry walk found them).
 */
static bool vgpu_compute_chan_new_tsg(const struct vgpu_compute_gpu *g,
				      unsigned int i)
{
	return !i || g->chan_tsg[i] != g->chan_tsg[i - 1] ||
	       g->chan_client[i] != g->chan_client[i - 1];
}

static void vgpu_compute_chan_reverse(struct vgpu_compute_gpu *g,
				      unsigned int lo, unsigned int hi)
{
	for (; lo + 1 < hi; lo++, hi--) {
		swap(g->chan_client[lo], g->chan_client[hi - 1]);
		swap(g->chan_handle[lo], g->chan_handle[hi - 1]);
		swap(g->chan_tsg[lo], g->chan_tsg[hi - 1]);
	}
}

static void vgpu_compute_rotate_on(struct vgpu_compute_gpu *g,
				   struct vgpu_compute_slot *cs, unsigned int n)
{
	unsigned int i, tsgs = 0, first;

	for (i = 0; i < n; i++)
		tsgs += vgpu_compute_chan_new_tsg(g, i);
	if (tsgs < 2)
		return;
	first = cs->on_edges++ % tsgs;
	for (i = 0; i < n; i++)
		if (vgpu_compute_chan_new_tsg(g, i) && !first--)
			break;
	if (!i || i == n)
		return;
	/* Left by i: reverse both parts, then the whole. */
	vgpu_compute_chan_reverse(g, 0, i);
	vgpu_compute_chan_reverse(g, i, n);
	vgpu_compute_chan_reverse(g, 0, n);
}

/* ---- the PREEMPT worker and the edges --------------------------------- */

void vgpu_compute_preempt_work(struct work_struct *work)
{
	struct vgpu_compute_gpu *g =
		container_of(work, struct vgpu_compute_gpu, preempt_work);
	u32 client[VGPU_COMPUTE_MAX_TSGS], tsg[VGPU_COMPUTE_MAX_TSGS];
	u32 slot[VGPU_COMPUTE_MAX_TSGS];
	struct vgpu_compute_slot *cs;
	NVA06C_CTRL_PREEMPT_PARAMS pp;
	unsigned int i, n;
	bool still;
	u32 status;
	u64 seq;

	spin_lock(&g->preempt_lock);
	seq = g->preempt_queued_seq;
	n = g->npreempt;
	memcpy(slot, g->preempt_slot, n * sizeof(u32));
	memcpy(client, g->preempt_client, n * sizeof(u32));
	memcpy(tsg, g->preempt_tsg, n * sizeof(u32));
	g->npreempt = 0;
	spin_unlock(&g->preempt_lock);
	for (i = 0; i < n; i++) {
		/*
		 * The tenant may have unscheduled the TSG (bEnable=0) since the
		 * off edge: a PREEMPT(bWait=1) of it would wait RM's timeout
		 * (4 s on the H200) and hold up every other slot's PREEMPT on
		 * this GPU. Re-check just before; a narrower race remains.
		 */
		mutex_lock(&g->lock);
		cs = vgpu_compute_find(g, slot[i]);
		still = cs &&
			vcore_slot_tsg_scheduled(vgpu_filter_core(cs->slot),
						 client[i], tsg[i]);
		mutex_unlock(&g->lock);
		if (!still)
			continue;
		vcore_sched_fill_preempt(&pp);
		/* A TSG freed meanwhile answers an error: nothing to do. */
		vgpu_rm_control(client[i], tsg[i], NVA06C_CTRL_CMD_PREEMPT, &pp,
				sizeof(pp), &status);
	}
	/* Every PREEMPT queued up to seq returned (or was not needed). */
	spin_lock(&g->preempt_lock);
	if (seq > g->preempt_done_seq)
		g->preempt_done_seq = seq;
	spin_unlock(&g->preempt_lock);
	wake_up_all(&g->preempt_wq);
}

static bool vgpu_compute_preempts_done(struct vgpu_compute_gpu *g, u64 seq)
{
	bool done;

	spin_lock(&g->preempt_lock);
	done = g->preempt_done_seq >= seq;
	spin_unlock(&g->preempt_lock);
	return done;
}

bool vgpu_compute_preempts_idle(struct vgpu_compute_gpu *g)
{
	return vgpu_compute_preempts_done(g, READ_ONCE(g->preempt_queued_seq));
}

/*
 * Waits until every PREEMPT queued so far returned, at most @timeout_ns.
 * Never with g->lock held: the worker takes it.
 */
void vgpu_compute_preempts_settle(struct vgpu_compute_gpu *g, u64 timeout_ns)
{
	/* hrtimer-based: a jiffy (4 ms at HZ=250) is too coarse for edges. */
	wait_event_hrtimeout(g->preempt_wq, vgpu_compute_preempts_idle(g),
			     ns_to_ktime(timeout_ns));
}

/* Queues a PREEMPT of (@h_client, @h_tsg) once (the list is per GPU). */
static void vgpu_compute_queue_preempt(struct vgpu_compute_gpu *g, u32 slot_id,
				       u32 h_client, u32 h_tsg)
{
	unsigned int j;

	lockdep_assert_held(&g->preempt_lock);
	for (j = 0; j < g->npreempt; j++)
		if (g->preempt_client[j] == h_client &&
		    g->preempt_tsg[j] == h_tsg)
			return;
	if (g->npreempt == VGPU_COMPUTE_MAX_TSGS)
		return;
	g->preempt_slot[g->npreempt] = slot_id;
	g->preempt_client[g->npreempt] = h_client;
	g->preempt_tsg[g->npreempt] = h_tsg;
	g->npreempt++;
}

/*
 * After one FIFO_DISABLE_CHANNELS call of an edge for g->chan_*[@first,
 * @first + @n) returned (@ok: NV_OK). Off and ok: the marks are confirmed and
 * each TSG of those channels is queued for PREEMPT (its channels are
 * disabled now, so the PREEMPT only ends the slice it holds); a refused
 * disable may still have disabled some: they stay marked (the on edge
 * enables them; a missed enable stalls the tenant) and the next off edge
 * retries, with no PREEMPT now. On: a refused enable keeps its marks (the
 * enable is owed); the others go in the compaction after the edge.
 */
static unsigned int vgpu_compute_gate_done(struct vgpu_compute_gpu *g,
					   struct vgpu_compute_slot *cs,
					   unsigned int first, unsigned int n,
					   bool off, bool ok)
{
	unsigned int k;
	int m;

	for (k = first; k < first + n; k++) {
		m = vgpu_compute_mark_find(cs, g->chan_client[k],
					   g->chan_handle[k]);
		if (m < 0)
			continue;
		if (off && ok)
			cs->dis_flags[m] |= VGPU_COMPUTE_MARK_OK;
		else if (!off && !ok)
			cs->dis_flags[m] |= VGPU_COMPUTE_MARK_KEEP;
	}
	if (!off || !ok)
		return 0;
	spin_lock(&g->preempt_lock);
	for (k = first; k < first + n; k++)
		vgpu_compute_queue_preempt(g, cs->id, g->chan_client[k],
					   g->chan_tsg[k]);
	spin_unlock(&g->preempt_lock);
	return n;
}

/*
 * Disables (@off) or re-enables the slot's channels that this edge may touch
 * (vgpu_compute_chan_seen), then PREEMPTs the TSGs whose channels the off
 * edge actually disabled: a batch RM refused may have disabled nothing, and
 * its TSGs may not be on the runlist at all (a PREEMPT(bWait=1) of such a TSG
 * waited 4 s on the H200). An on edge waits for the PREEMPTs of the slot's
 * last off edge (the gate's protocol, top): if they have not returned, the
 * enable is owed (paid by a later tick), unless @force (slot leaving control,
 * thread stopping: never leave a tenant disabled).
 */
void vgpu_compute_gate(struct vgpu_compute_gpu *g, struct vgpu_compute_slot *cs,
		       bool off, bool force)
{
	struct vgpu_compute_chans c = {.g = g, .cs = cs, .off = off};
	NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS *dc = NULL;
	unsigned int i, k, n, queued = 0;
	bool ok;

	if (off) {
		cs->enable_owed = false; /* the marks stay: the next on edge */
	} else {
		if (!cs->ndis) {
			cs->enable_owed = false;
			return;
		}
		if (!force && !vgpu_compute_preempts_done(g, cs->preempt_seq)) {
			if (!cs->enable_owed)
				cs->enables_deferred++;
			cs->enable_owed = true;
			g->enable_owed = true;
			return;
		}
		cs->enable_owed = false;
		for (i = 0; i < cs->ndis; i++)
			cs->dis_flags[i] &= ~VGPU_COMPUTE_MARK_KEEP;
	}
	if (vcore_slot_for_each_channel(vgpu_filter_core(cs->slot),
					vgpu_compute_chan_seen, &c))
		pr_warn_ratelimited("slot %u: more than %u channels, the rest "
				    "is not gated\n",
				    cs->id, VGPU_COMPUTE_MAX_CHANNELS);
	if (!off)
		vgpu_compute_rotate_on(g, cs, c.n);
	if (c.n && g->rm_ready)
		dc = kmalloc(sizeof(*dc), GFP_KERNEL);
	if (c.n && !dc) {
		/* Nothing was issued. Off: the new marks go. On: owed. */
		cs->errors++;
		for (i = 0; i < cs->ndis; i++)
			if (!off || (cs->dis_flags[i] & VGPU_COMPUTE_MARK_OK))
				cs->dis_flags[i] |= VGPU_COMPUTE_MARK_KEEP;
		if (off)
			vgpu_compute_mark_compact(cs);
	}
	for (i = 0; dc && i < c.n; i += n) {
		n = min_t(unsigned int, c.n - i,
			  NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES);
		vcore_sched_fill_disable(dc, 0, &g->chan_handle[i], n, off);
		for (k = 0; k < n; k++)
			dc->hClientList[k] = g->chan_client[i + k];
		ok = !vgpu_compute_rm_control(
			g, cs, g->h_client, g->h_subdevice,
			NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, dc, sizeof(*dc));
		queued += vgpu_compute_gate_done(g, cs, i, n, off, ok);
	}
	kfree(dc);
	if (!off) {
		/* Enabled, or gone from the registry: unmarked. */
		vgpu_compute_mark_compact(cs);
		if (cs->ndis && !force) {
			cs->enable_owed = true;
			g->enable_owed = true;
		}
		return;
	}
	if (queued) {
		spin_lock(&g->preempt_lock);
		cs->preempt_seq = ++g->preempt_queued_seq;
		spin_unlock(&g->preempt_lock);
		queue_work(system_unbound_wq, &g->preempt_work);
	}
}
