// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vcore_sched: where measured GPU time lands (the 100 ms bucket ring) and
 * the counters a host reads (vcore_sched_get_stats).
 */
#include "vcore_sched_internal.h"

/* Moves the 100 ms bucket ring forward to `now`, zeroing skipped buckets. */
void vcs_advance_buckets(struct vcore_sched *s, vcs_u64 now)
{
	vcs_u64 idx = (now - s->start_ns) / VCORE_SCHED_BUCKET_NS;
	vcs_u64 k;
	int i;

	if (idx <= s->bucket_idx)
		return;
	for (k = s->bucket_idx + 1;
	     k <= idx && k <= s->bucket_idx + VCORE_SCHED_BUCKETS; k++)
		for (i = 0; i < VCORE_SCHED_MAX_SLOTS; i++)
			s->slots[i].bucket_busy[k % VCORE_SCHED_BUCKETS] = 0;
	s->bucket_idx = idx;
}

/*
 * Spreads `busy` over the 100 ms buckets that [start, end) overlaps, so the
 * achieved-share windows follow when the GPU time was used, not when its
 * (late, lumpy) measurement arrived. Parts older than the ring are dropped.
 */
void vcs_add_busy(struct vcore_sched *s, struct vcore_sched_slot *sl,
		  vcs_u64 start, vcs_u64 end, vcs_u64 busy)
{
	vcs_u64 span, b, b0, b1, lo, hi;

	if (start < s->start_ns)
		start = s->start_ns;
	if (end <= start) {
		sl->bucket_busy[s->bucket_idx % VCORE_SCHED_BUCKETS] += busy;
		return;
	}
	span = end - start;
	b0 = (start - s->start_ns) / VCORE_SCHED_BUCKET_NS;
	b1 = (end - 1 - s->start_ns) / VCORE_SCHED_BUCKET_NS;
	if (b1 > s->bucket_idx)
		b1 = s->bucket_idx;
	if (b0 + VCORE_SCHED_BUCKETS <= s->bucket_idx)
		b0 = s->bucket_idx - VCORE_SCHED_BUCKETS + 1;
	for (b = b0; b <= b1; b++) {
		lo = s->start_ns + b * VCORE_SCHED_BUCKET_NS;
		hi = lo + VCORE_SCHED_BUCKET_NS;
		lo = lo > start ? lo : start;
		hi = hi < end ? hi : end;
		if (hi > lo)
			sl->bucket_busy[b % VCORE_SCHED_BUCKETS] +=
				busy * (hi - lo) / span;
	}
	if (end > sl->until_ns)
		sl->until_ns = end;
}

static vcs_u32 window_pm(const struct vcore_sched *s,
			 const struct vcore_sched_slot *sl, vcs_u32 buckets)
{
	vcs_u64 sum = 0, span, k, last, oldest;

	/*
	 * Complete buckets only, up to the one the slot's measurements have
	 * reached (they may lag the clock): later ones are still filling.
	 */
	last = sl->until_ns > s->start_ns
		       ? (sl->until_ns - s->start_ns) / VCORE_SCHED_BUCKET_NS
		       : 0;
	if (last > s->bucket_idx)
		last = s->bucket_idx;
	/* The ring still holds buckets [bucket_idx - BUCKETS + 1, bucket_idx].
	 */
	oldest = s->bucket_idx >= VCORE_SCHED_BUCKETS - 1
			 ? s->bucket_idx - (VCORE_SCHED_BUCKETS - 1)
			 : 0;
	if (last <= oldest)
		return 0; /* no measurement within the ring */
	if (last - oldest < buckets)
		buckets = (vcs_u32)(last - oldest);
	for (k = last - buckets; k < last; k++)
		sum += sl->bucket_busy[k % VCORE_SCHED_BUCKETS];
	span = (vcs_u64)buckets * VCORE_SCHED_BUCKET_NS;
	return (vcs_u32)(sum * 1000 / span);
}

int vcore_sched_get_stats(const struct vcore_sched *s, vcs_u32 id,
			  struct vcore_sched_slot_stats *st)
{
	const struct vcore_sched_slot *sl =
		vcs_find((struct vcore_sched *)s, id);

	if (!sl)
		return -VCS_ENOENT;
	vcs_zero(st, sizeof(*st));
	st->slot_id = sl->id;
	st->mode = sl->mode;
	st->share = sl->share;
	st->gated_off = sl->gated_off;
	st->busy_ns = sl->busy_ns;
	st->throttled_ns = sl->throttled_ns;
	st->overshoot_ns = sl->overshoot_ns;
	st->debt_ns = sl->credit_ns < 0 ? (vcs_u64)-sl->credit_ns : 0;
	st->debt_max_seen_ns = sl->debt_max_seen_ns;
	st->share_1s_pm = window_pm(s, sl, 10);
	st->share_10s_pm = window_pm(s, sl, VCORE_SCHED_BUCKETS);
	st->duty_pm = sl->duty_pm;
	st->timeslice_us = sl->ts_issued_us;
	st->gate_actions = sl->gate_actions;
	return 0;
}
