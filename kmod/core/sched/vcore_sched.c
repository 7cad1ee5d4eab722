// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vcore_sched: per-GPU compute share controller (see vcore_sched.h for the
 * host contract). Integer arithmetic only: it runs in a kernel thread too.
 *
 * This file: parameters, the slot table and the tick. The cap loop and why
 * its constants are what they are: vcore_sched_cap.c. Weight mode:
 * vcore_sched_weight.c. Measurement accounting and the achieved-share
 * windows: vcore_sched_stats.c.
 */
#include "vcore_sched_internal.h"

void vcore_sched_params_default(struct vcore_sched_params *p)
{
	p->period_ns = 50 * VCS_NSEC_PER_MSEC;
	p->tau_ns = 500 * VCS_NSEC_PER_MSEC;
	/* 5 s of GPU time: at share 10 at most 50 s off to repay it. */
	p->debt_max_ns = 5000 * VCS_NSEC_PER_MSEC;
	p->weight_window_ns = 500 * VCS_NSEC_PER_MSEC;
	p->weight_contended_pm = 900;
	/* Below ~0.2 ms a slice is mostly switch cost; above 50 ms latency. */
	p->ts_min_us = 200;
	p->ts_max_us = 50000;
	p->ts_us_per_share = 100;
	/* A control round trip through GSP is ~0.1 ms: 1 ms phases at least. */
	p->min_phase_ns = VCS_NSEC_PER_MSEC;
}

void vcs_zero(void *ptr, unsigned long n)
{
	unsigned char *c = ptr;

	while (n--)
		*c++ = 0;
}

int vcore_sched_init(struct vcore_sched *s, const struct vcore_sched_params *p)
{
	vcs_zero(s, sizeof(*s));
	if (p)
		s->p = *p;
	else
		vcore_sched_params_default(&s->p);
	if (!s->p.period_ns || !s->p.tau_ns || !s->p.weight_window_ns ||
	    s->p.min_phase_ns * 2 > s->p.period_ns || !s->p.ts_min_us ||
	    s->p.ts_min_us > s->p.ts_max_us || !s->p.ts_us_per_share ||
	    s->p.weight_contended_pm > 1000)
		return -VCS_EINVAL;
	return 0;
}

struct vcore_sched_slot *vcs_find(struct vcore_sched *s, vcs_u32 id)
{
	int i;

	for (i = 0; i < VCORE_SCHED_MAX_SLOTS; i++)
		if (s->slots[i].used && s->slots[i].id == id)
			return &s->slots[i];
	return VCS_NULL;
}

static int valid(vcs_u32 share, vcs_u32 mode)
{
	return share >= 1 && share <= 100 && mode >= VCORE_SCHED_MODE_CAP &&
	       mode <= VCORE_SCHED_MODE_FOREIGN;
}

/* A cap of 100 % is no cap: such a slot is never gated (zero overhead). */
int vcs_gating(const struct vcore_sched_slot *sl)
{
	return sl->mode == VCORE_SCHED_MODE_CAP && sl->share < 100;
}

int vcore_sched_slot_add(struct vcore_sched *s, vcs_u32 id, vcs_u32 share,
			 vcs_u32 mode)
{
	struct vcore_sched_slot *sl = VCS_NULL;
	int i;

	if (!valid(share, mode) || id == ~0U)
		return -VCS_EINVAL;
	if (vcs_find(s, id))
		return -VCS_EEXIST;
	for (i = 0; i < VCORE_SCHED_MAX_SLOTS && !sl; i++)
		if (!s->slots[i].used)
			sl = &s->slots[i];
	if (!sl)
		return -VCS_ENOSPC;
	vcs_zero(sl, sizeof(*sl));
	sl->used = 1;
	sl->id = id;
	sl->share = (vcs_u8)share;
	sl->mode = (vcs_u8)mode;
	sl->corr_q16 = Q16;
	sl->duty_pm = 1000;
	sl->ts_dirty = mode == VCORE_SCHED_MODE_WEIGHT;
	sl->changed_ns = s->last_ns;
	return 0;
}

int vcs_emit(struct vcore_sched_action *out, vcs_u32 max, vcs_u32 *n,
	     vcs_u32 id, vcs_u32 kind, vcs_u64 ts_us)
{
	if (*n >= max)
		return 0;
	out[*n].slot_id = id;
	out[*n].kind = kind;
	out[*n].timeslice_us = ts_us;
	(*n)++;
	return 1;
}

void vcs_gate(struct vcore_sched_slot *sl, int off,
	      struct vcore_sched_action *out, vcs_u32 max, vcs_u32 *n)
{
	if (sl->gated_off == off)
		return;
	/* State follows the action only when the host got it. */
	if (vcs_emit(out, max, n, sl->id,
		     off ? VCORE_SCHED_ACT_GATE_OFF : VCORE_SCHED_ACT_GATE_ON,
		     0)) {
		sl->gated_off = (vcs_u8)off;
		sl->gate_actions++;
	}
}

int vcore_sched_slot_set(struct vcore_sched *s, vcs_u32 id, vcs_u32 share,
			 vcs_u32 mode, struct vcore_sched_action *out)
{
	struct vcore_sched_slot *sl = vcs_find(s, id);
	vcs_u32 n = 0;

	if (!sl)
		return -VCS_ENOENT;
	if (!valid(share, mode))
		return -VCS_EINVAL;
	if (sl->mode == VCORE_SCHED_MODE_CAP && mode != VCORE_SCHED_MODE_CAP)
		vcs_gate(sl, 0, out, 2, &n);
	if (sl->mode == VCORE_SCHED_MODE_WEIGHT &&
	    mode != VCORE_SCHED_MODE_WEIGHT && sl->ts_issued_us) {
		vcs_emit(out, 2, &n, id, VCORE_SCHED_ACT_TIMESLICE,
			 VCORE_SCHED_TS_DEFAULT_US);
		sl->ts_issued_us = 0;
	}
	if (mode == VCORE_SCHED_MODE_WEIGHT &&
	    (sl->mode != mode || sl->share != share))
		sl->ts_dirty = 1;
	if (sl->mode != mode || sl->share != share) {
		/*
		 * Debt is GPU time owed and stays; a surplus was earned under
		 * the old share and goes. Reports of time before now no longer
		 * count against the slot (late measurements of the old regime).
		 */
		if (sl->credit_ns > 0)
			sl->credit_ns = 0;
		sl->changed_ns = s->last_ns;
		sl->corr_q16 = Q16;
	}
	sl->share = (vcs_u8)share;
	sl->mode = (vcs_u8)mode;
	return (int)n;
}

int vcore_sched_slot_remove(struct vcore_sched *s, vcs_u32 id,
			    struct vcore_sched_action *out)
{
	struct vcore_sched_slot *sl = vcs_find(s, id);
	vcs_u32 n = 0;

	if (!sl)
		return -VCS_ENOENT;
	vcs_gate(sl, 0, out, 1, &n);
	sl->used = 0;
	return (int)n;
}

int vcore_sched_slot_gated(const struct vcore_sched *s, vcs_u32 id)
{
	struct vcore_sched_slot *sl = vcs_find((struct vcore_sched *)s, id);

	return sl && sl->gated_off;
}

int vcore_sched_release_all(struct vcore_sched *s,
			    struct vcore_sched_action *out, vcs_u32 max)
{
	vcs_u32 n = 0;
	int i;

	for (i = 0; i < VCORE_SCHED_MAX_SLOTS; i++)
		if (s->slots[i].used)
			vcs_gate(&s->slots[i], 0, out, max, &n);
	s->stopped = 1;
	return (int)n;
}

int vcore_sched_tick(struct vcore_sched *s, vcs_u64 now_ns,
		     const struct vcore_sched_report *reports, vcs_u32 nr,
		     struct vcore_sched_action *out, vcs_u32 max,
		     vcs_u64 *next_ns)
{
	vcs_u64 dt, next, edge;
	vcs_u32 n = 0, i;

	if (!s->started) {
		s->started = 1;
		s->start_ns = s->last_ns = s->win_start_ns = now_ns;
	}
	if (now_ns < s->last_ns)
		now_ns = s->last_ns;
	dt = now_ns - s->last_ns;
	s->last_ns = now_ns;
	next = now_ns + s->p.weight_window_ns;
	if (s->stopped) {
		if (next_ns)
			*next_ns = next;
		return 0;
	}
	vcs_advance_buckets(s, now_ns);
	for (i = 0; i < nr; i++)
		vcs_fold_report(s, &reports[i], now_ns);
	if (now_ns - s->win_start_ns >= s->p.weight_window_ns)
		vcs_weight_window(s, now_ns);
	if (s->win_start_ns + s->p.weight_window_ns < next)
		next = s->win_start_ns + s->p.weight_window_ns;

	for (i = 0; i < VCORE_SCHED_MAX_SLOTS; i++) {
		struct vcore_sched_slot *sl = &s->slots[i];

		if (!sl->used)
			continue;
		if (sl->gated_off)
			sl->throttled_ns += dt;
		if (vcs_gating(sl)) {
			edge = vcs_run_cap(s, sl, now_ns, out, max, &n);
			if (edge < next)
				next = edge;
		} else {
			vcs_gate(sl, 0, out, max, &n);
			sl->duty_pm = 1000;
			if (sl->mode == VCORE_SCHED_MODE_WEIGHT)
				vcs_run_weight(s, sl, out, max, &n);
		}
	}
	if (next_ns)
		*next_ns = next;
	return (int)n;
}
