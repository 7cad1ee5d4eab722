// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vcore_sched, weight mode (see vcore_sched.c for the file map).
 *
 * Weight (work-conserving) -- calibrated timeslices with slow feedback
 * --------------------------------------------------------------------
 * SET_TIMESLICE is honoured and work-conserving on the H200 but not linear:
 * 3000/7000 us gave 33.3/66.7, 1000/4000 gave 17.7/82.3 (reference, table
 * 2). The base map is timeslice = share * ts_us_per_share (100 us: 30 ->
 * 3 ms, 70 -> 7 ms; a full GPU of shares cycles every ~10 ms), multiplied by
 * a per-slot correction. Every weight window (500 ms), if the GPU was
 * contended (busy >= 90 %) and at least two weight (or foreign) parties
 * used it, each weight slot compares its achieved fraction a with its target
 * t = share / sum(shares of the active parties) and moves its correction
 * half-way (in ratio) towards t / a: corr *= (1 + t / a) / 2. The split's
 * sensitivity to a slot's own timeslice is at most 1 (a = ts / sum ts), so a
 * half step converges without overshoot, in ~3 windows from the measured
 * 3-point calibration error. Nothing is corrected without contention: then
 * the scheduler lends idle time anyway, which is the point of weight mode.
 * A slot that stops simply has no work: the runlist moves on at once, so the
 * other slot has the whole GPU within one timeslice, not after a window.
 */
#include "vcore_sched_internal.h"

static vcs_u32 weight_ts(const struct vcore_sched *s,
			 const struct vcore_sched_slot *sl)
{
	vcs_u64 ts = (vcs_u64)sl->share * s->p.ts_us_per_share;

	ts = ts * sl->corr_q16 / Q16;
	if (ts < s->p.ts_min_us)
		ts = s->p.ts_min_us;
	if (ts > s->p.ts_max_us)
		ts = s->p.ts_max_us;
	return (vcs_u32)ts;
}

static int weight_party(const struct vcore_sched_slot *sl)
{
	return sl->used && (sl->mode == VCORE_SCHED_MODE_WEIGHT ||
			    sl->mode == VCORE_SCHED_MODE_FOREIGN);
}

/* Weight: one correction step per window, only under contention. */
void vcs_weight_window(struct vcore_sched *s, vcs_u64 now)
{
	vcs_u64 w = now - s->win_start_ns, total = 0, busy = 0, shares = 0;
	vcs_u64 floor = w / 20; /* a party using < 5 % is not competing */
	int i, parties = 0, weights = 0;

	for (i = 0; i < VCORE_SCHED_MAX_SLOTS; i++) {
		struct vcore_sched_slot *sl = &s->slots[i];

		if (!sl->used)
			continue;
		total += sl->win_busy_ns;
		if (weight_party(sl) && sl->win_busy_ns >= floor) {
			parties++;
			weights += sl->mode == VCORE_SCHED_MODE_WEIGHT;
			busy += sl->win_busy_ns;
			shares += sl->share;
		}
	}
	if (parties >= 2 && weights && busy &&
	    total * 1000 >= w * s->p.weight_contended_pm) {
		for (i = 0; i < VCORE_SCHED_MAX_SLOTS; i++) {
			struct vcore_sched_slot *sl = &s->slots[i];
			vcs_u64 target_pm, got_pm, r, c;

			if (!sl->used || sl->mode != VCORE_SCHED_MODE_WEIGHT ||
			    sl->win_busy_ns < floor)
				continue;
			target_pm = sl->share * 1000ULL / shares;
			got_pm = sl->win_busy_ns * 1000 / busy;
			if (!got_pm)
				got_pm = 1;
			r = target_pm * Q16 / got_pm;
			c = (vcs_u64)sl->corr_q16 * (Q16 + r) / (2 * Q16);
			if (c < Q16 / 8)
				c = Q16 / 8;
			if (c > Q16 * 8)
				c = Q16 * 8;
			sl->corr_q16 = (vcs_u32)c;
		}
	}
	for (i = 0; i < VCORE_SCHED_MAX_SLOTS; i++)
		s->slots[i].win_busy_ns = 0;
	s->win_start_ns = now;
}

void vcs_run_weight(struct vcore_sched *s, struct vcore_sched_slot *sl,
		    struct vcore_sched_action *out, vcs_u32 max, vcs_u32 *n)
{
	vcs_u32 ts = weight_ts(s, sl);
	vcs_u32 old = sl->ts_issued_us;

	/* Re-issue only on a >= 2 % change: each SET_TIMESLICE is a GSP RPC. */
	if (!sl->ts_dirty && old && ts * 50ULL <= old * 51ULL &&
	    ts * 51ULL >= old * 50ULL)
		return;
	if (vcs_emit(out, max, n, sl->id, VCORE_SCHED_ACT_TIMESLICE, ts)) {
		sl->ts_issued_us = ts;
		sl->ts_dirty = 0;
	}
}
