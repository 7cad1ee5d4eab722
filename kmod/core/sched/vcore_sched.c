// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vcore_sched: per-GPU compute share controller (see vcore_sched.h for the
 * host contract). Integer arithmetic only: it runs in a kernel thread too.
 *
 * Cap (hard limit) -- duty cycling with an integral on measured GPU time
 * ----------------------------------------------------------------------
 * The only measured control that throttles a saturating tenant on the H200
 * is FIFO_DISABLE_CHANNELS + PREEMPT (compute-control-h200.md, table 1). It
 * gates the *fetch* of new work: whatever is already running finishes, so
 * open-loop duty cycling overshoots by 5-8 points (measured: duty 50 -> 58 %,
 * duty 30 -> 35 %). So the on-fraction of each period is corrected from the
 * GPU time the slot actually used:
 *
 *   credit  += share * span - busy          (per report; < 0 is debt)
 *   duty     = share + credit / tau         (once per period, clamped 0..1)
 *
 * Measured on the H200 (docs/results/compute-h200.md): with PREEMPT after
 * the disable, the GPU time RM counts settles with the duty < 1 point below
 * the share, so most of the open-loop *throughput* overshoot is not GPU time
 * but clock boost (a duty-cycled GPU is less power-limited). This loop holds
 * GPU time, as RM measures it, to within 0.2 points per second.
 *
 * credit is the integral of (allowed - used): the controller is an integral
 * controller on the share error, and credit < 0 *is* the debt that the issue
 * asks for. A kernel that keeps running after the off edge (it is never
 * evicted) drives credit down by its whole overshoot, and the slot stays off
 * (duty 0) until the debt is repaid at `share` per second, so the average
 * holds over a window longer than the kernel. debt_max bounds how much is
 * carried, so one pathological kernel cannot starve its tenant for minutes.
 *
 * Why period = 50 ms: it is the period measured on the H200. Each edge
 * costs controls that are RPCs to GSP (one FIFO_DISABLE_CHANNELS for up to
 * 64 channels, one PREEMPT per TSG), ~40 edges/s at 50 ms is negligible;
 * the drain after each off edge is a fixed cost per edge, so a shorter
 * period raises the overshoot that the integral must absorb (and at some
 * point the achievable floor); a longer one makes a 1 s window hold fewer
 * periods (at 50 ms a window boundary cuts at most one on-phase, <= 5 % of a
 * window at share 100, 2.5 % at 50) and makes the off phase a visible
 * latency (at most 50 ms here).
 *
 * Why tau = 500 ms: the loop is credit' = -credit(t - d) / tau for a
 * saturating slot, with d the measurement delay. It is stable for
 * d / tau < pi/2 and free of oscillation for d / tau < 1/e. The kernel host
 * can measure per tick (d ~ 0); the shim host gets perfmon samples every
 * 200 ms, read up to ~200 ms later (measured on the H200), so d ~ 0.1-0.4 s
 * and d / tau <= 0.8: stable, lightly damped. The initial error (the
 * open-loop overshoot, <= 8 points) decays as exp(-t / tau): to ~1 point
 * after 1 s, which is what "within 5 points in every 1 s window after the
 * first" needs. A smaller tau converges faster but rings with delayed, lumpy
 * measurements; 300-800 ms all held the simulated H200-like case
 * (CapSampled.PhasesWithH200LikeMeasurement), 500 ms with the most margin.
 *
 * Anti-windup: credit is clamped above at share * period, one period's worth,
 * so a slot idle for a while cannot burst past its cap afterwards (duty at
 * most share * (1 + period / tau) = 1.1 * share, for one tau).
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
#include "vcore_sched.h"

#define VCS_NSEC_PER_MSEC 1000000ULL
#define Q16		  65536U

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

static void zero(void *ptr, unsigned long n)
{
	unsigned char *c = ptr;

	while (n--)
		*c++ = 0;
}

int vcore_sched_init(struct vcore_sched *s, const struct vcore_sched_params *p)
{
	zero(s, sizeof(*s));
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

static struct vcore_sched_slot *find(struct vcore_sched *s, vcs_u32 id)
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
static int gating(const struct vcore_sched_slot *sl)
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
	if (find(s, id))
		return -VCS_EEXIST;
	for (i = 0; i < VCORE_SCHED_MAX_SLOTS && !sl; i++)
		if (!s->slots[i].used)
			sl = &s->slots[i];
	if (!sl)
		return -VCS_ENOSPC;
	zero(sl, sizeof(*sl));
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

static int emit(struct vcore_sched_action *out, vcs_u32 max, vcs_u32 *n,
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

static void gate(struct vcore_sched_slot *sl, int off,
		 struct vcore_sched_action *out, vcs_u32 max, vcs_u32 *n)
{
	if (sl->gated_off == off)
		return;
	/* State follows the action only when the host got it. */
	if (emit(out, max, n, sl->id,
		 off ? VCORE_SCHED_ACT_GATE_OFF : VCORE_SCHED_ACT_GATE_ON, 0)) {
		sl->gated_off = (vcs_u8)off;
		sl->gate_actions++;
	}
}

int vcore_sched_slot_set(struct vcore_sched *s, vcs_u32 id, vcs_u32 share,
			 vcs_u32 mode, struct vcore_sched_action *out)
{
	struct vcore_sched_slot *sl = find(s, id);
	vcs_u32 n = 0;

	if (!sl)
		return -VCS_ENOENT;
	if (!valid(share, mode))
		return -VCS_EINVAL;
	if (sl->mode == VCORE_SCHED_MODE_CAP && mode != VCORE_SCHED_MODE_CAP)
		gate(sl, 0, out, 2, &n);
	if (sl->mode == VCORE_SCHED_MODE_WEIGHT &&
	    mode != VCORE_SCHED_MODE_WEIGHT && sl->ts_issued_us) {
		emit(out, 2, &n, id, VCORE_SCHED_ACT_TIMESLICE,
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
	struct vcore_sched_slot *sl = find(s, id);
	vcs_u32 n = 0;

	if (!sl)
		return -VCS_ENOENT;
	gate(sl, 0, out, 1, &n);
	sl->used = 0;
	return (int)n;
}

int vcore_sched_slot_gated(const struct vcore_sched *s, vcs_u32 id)
{
	struct vcore_sched_slot *sl = find((struct vcore_sched *)s, id);

	return sl && sl->gated_off;
}

int vcore_sched_release_all(struct vcore_sched *s,
			    struct vcore_sched_action *out, vcs_u32 max)
{
	vcs_u32 n = 0;
	int i;

	for (i = 0; i < VCORE_SCHED_MAX_SLOTS; i++)
		if (s->slots[i].used)
			gate(&s->slots[i], 0, out, max, &n);
	s->stopped = 1;
	return (int)n;
}

static vcs_s64 clamp_s64(vcs_s64 v, vcs_s64 lo, vcs_s64 hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Moves the 100 ms bucket ring forward to `now`, zeroing skipped buckets. */
static void advance_buckets(struct vcore_sched *s, vcs_u64 now)
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
static void add_busy(struct vcore_sched *s, struct vcore_sched_slot *sl,
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

static void fold_report(struct vcore_sched *s,
			const struct vcore_sched_report *r, vcs_u64 now)
{
	struct vcore_sched_slot *sl = find(s, r->slot_id);
	vcs_u64 end, start, span, busy, before;
	vcs_s64 hi;

	if (!sl)
		return;
	end = r->end_ns && r->end_ns < now ? r->end_ns : now;
	span = r->span_ns;
	busy = r->busy_ns;
	start = span < end ? end - span : 0;
	sl->busy_ns += busy;
	sl->win_busy_ns += busy;
	add_busy(s, sl, start, end, busy);
	if (sl->gated_off)
		sl->overshoot_ns += busy;
	if (sl->mode != VCORE_SCHED_MODE_CAP)
		return;
	/* Only the part of the span after the last share change counts. */
	if (end <= sl->changed_ns)
		return;
	before = start < sl->changed_ns ? sl->changed_ns - start : 0;
	if (before > span)
		before = span;
	if (before && span) {
		busy -= busy * before / span;
		span -= before;
	}
	hi = (vcs_s64)(sl->share * s->p.period_ns / 100);
	sl->credit_ns += (vcs_s64)(sl->share * span / 100) - (vcs_s64)busy;
	sl->credit_ns =
		clamp_s64(sl->credit_ns, -(vcs_s64)s->p.debt_max_ns, hi);
	if (sl->credit_ns < 0 && (vcs_u64)-sl->credit_ns > sl->debt_max_seen_ns)
		sl->debt_max_seen_ns = (vcs_u64)-sl->credit_ns;
}

/* Cap: runs the duty cycle; returns the slot's next edge. */
static vcs_u64 run_cap(struct vcore_sched *s, struct vcore_sched_slot *sl,
		       vcs_u64 now, struct vcore_sched_action *out, vcs_u32 max,
		       vcs_u32 *n)
{
	const struct vcore_sched_params *p = &s->p;
	vcs_s64 duty;
	int on;

	if (!sl->period_valid || now >= sl->period_start_ns + p->period_ns) {
		sl->period_valid = 1;
		/* A late tick starts the period now rather than catching up. */
		sl->period_start_ns = now;
		duty = (vcs_s64)sl->share * 10 +
		       sl->credit_ns * 1000 / (vcs_s64)p->tau_ns;
		duty = clamp_s64(duty, 0, 1000);
		sl->duty_pm = (vcs_u32)duty;
		sl->on_ns = (vcs_u64)duty * p->period_ns / 1000;
		if (sl->on_ns < p->min_phase_ns)
			sl->on_ns = 0;
		else if (sl->on_ns + p->min_phase_ns > p->period_ns)
			sl->on_ns = p->period_ns;
	}
	on = now - sl->period_start_ns < sl->on_ns;
	gate(sl, !on, out, max, n);
	if (on && sl->on_ns < p->period_ns)
		return sl->period_start_ns + sl->on_ns;
	return sl->period_start_ns + p->period_ns;
}

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
static void weight_window(struct vcore_sched *s, vcs_u64 now)
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

static void run_weight(struct vcore_sched *s, struct vcore_sched_slot *sl,
		       struct vcore_sched_action *out, vcs_u32 max, vcs_u32 *n)
{
	vcs_u32 ts = weight_ts(s, sl);
	vcs_u32 old = sl->ts_issued_us;

	/* Re-issue only on a >= 2 % change: each SET_TIMESLICE is a GSP RPC. */
	if (!sl->ts_dirty && old && ts * 50ULL <= old * 51ULL &&
	    ts * 51ULL >= old * 50ULL)
		return;
	if (emit(out, max, n, sl->id, VCORE_SCHED_ACT_TIMESLICE, ts)) {
		sl->ts_issued_us = ts;
		sl->ts_dirty = 0;
	}
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
	advance_buckets(s, now_ns);
	for (i = 0; i < nr; i++)
		fold_report(s, &reports[i], now_ns);
	if (now_ns - s->win_start_ns >= s->p.weight_window_ns)
		weight_window(s, now_ns);
	if (s->win_start_ns + s->p.weight_window_ns < next)
		next = s->win_start_ns + s->p.weight_window_ns;

	for (i = 0; i < VCORE_SCHED_MAX_SLOTS; i++) {
		struct vcore_sched_slot *sl = &s->slots[i];

		if (!sl->used)
			continue;
		if (sl->gated_off)
			sl->throttled_ns += dt;
		if (gating(sl)) {
			edge = run_cap(s, sl, now_ns, out, max, &n);
			if (edge < next)
				next = edge;
		} else {
			gate(sl, 0, out, max, &n);
			sl->duty_pm = 1000;
			if (sl->mode == VCORE_SCHED_MODE_WEIGHT)
				run_weight(s, sl, out, max, &n);
		}
	}
	if (next_ns)
		*next_ns = next;
	return (int)n;
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
	const struct vcore_sched_slot *sl = find((struct vcore_sched *)s, id);

	if (!sl)
		return -VCS_ENOENT;
	zero(st, sizeof(*st));
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
