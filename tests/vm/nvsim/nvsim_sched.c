// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim GPU-time model: what a compute controller acting on TSGs (nvidia-rm-abi.md §6) can observe.
 *
 * Each GPU runs its runnable TSGs round-robin, each for its timeslice, like a hardware runlist.
 * A TSG is runnable when GPFIFO_SCHEDULE enabled it and it has at least one channel that
 * FIFO_DISABLE_CHANNELS has not disabled; a runnable TSG is assumed to always have work (a
 * saturating tenant). Timeslices are rounded down to the preemption granularity (at least one
 * granule). PREEMPT ends the TSG's current slice at once. With all TSGs saturating, each gets a
 * share proportional to its timeslice, which is what SET_TIMESLICE-based control relies on.
 *
 * The model advances with the monotonic clock: every event (state change, query) first
 * accounts the time since the previous one under the old state, so the result is the same as a
 * periodic tick with infinitely fine resolution, without a timer. Consumed time per TSG is read
 * with NVSIM_CTRL_CMD_TSG_GET_RUNTIME or /sys/kernel/debug/nvsim/gpuN.
 *
 * The schedule contract of the real driver, as the H200 showed it (docs/results/compute-h200.md,
 * run 5, and the lead's cap-10-from-the-first-kernel run; nvidia-rm-abi.md §6.1 for the order in
 * which libcuda builds a context: TSG, channels, UVM registration, then GPFIFO_SCHEDULE(1)):
 *   - PREEMPT(bWait=1) of a TSG that is not scheduled does not return promptly. Measured: the
 *     first such PREEMPT took 4020 ms and returned status 0. Modelled: a bounded sleep of
 *     preempt_unscheduled_wait_ms (default 100 ms, short enough for a TCG guest) with the RM lock
 *     held, as RM serves the control synchronously (an assumption: the H200 run did not show
 *     whether other calls waited), then NV_OK. "Not scheduled" means now: never scheduled, or
 *     GPFIFO_SCHEDULE(0) since (the second case is modelled by extension, not measured).
 *   - FIFO_DISABLE_CHANNELS(bDisable=1) on a channel of a TSG that was never scheduled leaves the
 *     TSG non-runnable for good. Measured: after such disables the tenant made no progress for
 *     270 s while later DISABLE_CHANNELS(0), PREEMPT and its own GPFIFO_SCHEDULE(1) all returned
 *     status 0. Modelled: the TSG is "wedged" (never runnable again, whatever follows); that the
 *     disable before the first schedule is the cause, rather than the PREEMPT, is the lead's
 *     reading of that run, not a separate measurement.
 *   - FIFO_DISABLE_CHANNELS(bDisable=1, bOnlyDisableScheduling=1) followed by the re-enable
 *     (bDisable=0) with no PREEMPT of the TSG in between stalled the process for good
 *     (compute-control-h200.md); with a PREEMPT(bWait=1) between them the pair throttled it.
 *     Modelled: a disable with bOnlyDisableScheduling=1 marks the TSG "unpreempted"; a PREEMPT of
 *     it that *returned* (after any wait, preempt_delay_us below) or a GPFIFO_SCHEDULE(0) (the
 *     TSG leaves the runlist, which is at least what a PREEMPT does: an assumption, not a
 *     measurement) clears the mark; re-enabling a channel of a marked TSG wedges it
 *     (enable_unpreempted). A re-enable of a channel that was not disabled is a no-op here, but a
 *     controller that does it enables what it never disabled, the first flaw the shim host had
 *     on the H200 (commit e3a0af7): counted (enable_undisabled).
 *   - preempt_delay_us (writable at run time): every PREEMPT(bWait=1) of a scheduled TSG returns
 *     only after this long, and RM serves other calls meanwhile (nvsim_ctrl.c drops the RM lock
 *     for the wait), like a PREEMPT that waits for a running kernel on the H200. The TSG's slice
 *     ends when the wait is over.
 * All are counted per GPU and shown in debugfs (the "contract" line), so a test can prove that a
 * controller never did any of them.
 *
 * Locking: gpu->sched.lock (spinlock, irqsave not needed: process context only).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "nvsim.h"

static unsigned int preempt_granularity_us = 100;
module_param(preempt_granularity_us, uint, 0444);
MODULE_PARM_DESC(preempt_granularity_us, "GPU time is handed out in multiples of this (µs)");
static unsigned int default_timeslice_us = 1024;
module_param(default_timeslice_us, uint, 0444);
MODULE_PARM_DESC(default_timeslice_us, "timeslice of a new TSG (µs)");

static unsigned int preempt_unscheduled_wait_ms = 100;
module_param(preempt_unscheduled_wait_ms, uint, 0444);
MODULE_PARM_DESC(preempt_unscheduled_wait_ms,
		 "PREEMPT(bWait=1) of an unscheduled TSG returns after this (ms; the H200 took 4020)");

extern unsigned int nvsim_preempt_delay_us; /* nvsim_ctrl.c reads it */
unsigned int nvsim_preempt_delay_us;
module_param_named(preempt_delay_us, nvsim_preempt_delay_us, uint, 0644);
MODULE_PARM_DESC(preempt_delay_us,
		 "PREEMPT(bWait=1) of a scheduled TSG returns after this (us), RM lock released");

static struct dentry *nvsim_debugfs_root;

/* The contract state of one TSG, next to the model's (allocated and freed only here). */
struct nvsim_tsg_contract {
	struct nvsim_tsg t;
	bool ever_scheduled; /* a GPFIFO_SCHEDULE(1) was served */
	bool wedged;         /* never runs again (top of file) */
	bool unpreempted;    /* disabled (onlySched) and no PREEMPT returned since */
	u32 disables;        /* disables (onlySched) served: a PREEMPT clears only its own */
	u32 preempt_unscheduled;
	u32 preempt_calls;   /* every PREEMPT served on it (preemptions: those that hit it running) */
};

/* Per GPU, under gpu->sched.lock: what a controller did that the real driver punishes. */
static struct {
	u64 preempt_unscheduled;     /* PREEMPT(bWait=1) of a TSG not scheduled */
	u64 preempt_unscheduled_ms;  /* time those calls waited */
	u64 disable_unscheduled;     /* channels disabled before their TSG's first schedule */
	u64 wedged;                  /* TSGs this left non-runnable */
	u64 enable_unpreempted;      /* channels re-enabled with no PREEMPT since their disable */
	u64 enable_undisabled;       /* re-enables of channels that were not disabled */
} nvsim_contract[NVSIM_MAX_GPUS];

static struct nvsim_tsg_contract *nvsim_tsg_x(const struct nvsim_tsg *t)
{
	return container_of((struct nvsim_tsg *)t, struct nvsim_tsg_contract, t);
}

static void nvsim_wedge(struct nvsim_gpu *gpu, struct nvsim_tsg_contract *x)
{
	if (!x->wedged)
		nvsim_contract[gpu - nvsim_gpus].wedged++;
	x->wedged = true;
}

static bool nvsim_tsg_runnable(const struct nvsim_tsg *t)
{
	return t->scheduled && t->channels > t->disabled_channels && !nvsim_tsg_x(t)->wedged;
}

static u64 nvsim_tsg_slice_ns(const struct nvsim_tsg *t)
{
	u64 g = max(preempt_granularity_us, 1U);
	u64 us = max(rounddown(t->timeslice_us, g), g);

	return us * NSEC_PER_USEC;
}

/* The next runnable TSG after t in runlist order, t itself last (t NULL: from the start). */
static struct nvsim_tsg *nvsim_next_runnable(struct nvsim_sched *s, struct nvsim_tsg *t)
{
	struct list_head *start = t ? &t->node : &s->tsgs, *pos = start;
	struct nvsim_tsg *cand;

	do {
		pos = pos->next;
		if (pos == &s->tsgs)
			continue;
		cand = list_entry(pos, struct nvsim_tsg, node);
		if (nvsim_tsg_runnable(cand))
			return cand;
	} while (pos != start);
	return NULL;
}

static void nvsim_switch_to(struct nvsim_sched *s, struct nvsim_tsg *t)
{
	s->cur = t;
	s->slice_left_ns = t ? nvsim_tsg_slice_ns(t) : 0;
}

/* Account the time from s->last to @now. Caller holds s->lock. */
static void nvsim_advance_to(struct nvsim_sched *s, ktime_t now)
{
	u64 dt = ktime_to_ns(ktime_sub(now, s->last));
	struct nvsim_tsg *t;

	s->last = now;
	while (dt) {
		u64 take;

		if (!s->cur || !nvsim_tsg_runnable(s->cur))
			nvsim_switch_to(s, nvsim_next_runnable(s, s->cur));
		if (!s->cur) {
			s->idle_ns += dt;
			return;
		}
		/* At a slice start with more than a full round to hand out: whole rounds at once. */
		if (s->slice_left_ns == nvsim_tsg_slice_ns(s->cur)) {
			u64 round = 0, rounds;

			list_for_each_entry(t, &s->tsgs, node)
				if (nvsim_tsg_runnable(t))
					round += nvsim_tsg_slice_ns(t);
			rounds = dt / round;
			if (rounds) {
				list_for_each_entry(t, &s->tsgs, node)
					if (nvsim_tsg_runnable(t))
						t->consumed_ns += rounds * nvsim_tsg_slice_ns(t);
				s->busy_ns += rounds * round;
				dt -= rounds * round;
				continue;
			}
		}
		take = min(dt, s->slice_left_ns);
		s->cur->consumed_ns += take;
		s->busy_ns += take;
		s->slice_left_ns -= take;
		dt -= take;
		if (!s->slice_left_ns)
			nvsim_switch_to(s, nvsim_next_runnable(s, s->cur));
	}
}

/*
 * Account the time since s->last, stopping at every perfmon sampling instant on the way
 * (nvsim_perfmon.c) to hand it the period's busy time and the TSG on the GPU. Caller holds
 * s->lock.
 */
static void nvsim_advance(struct nvsim_sched *s)
{
	ktime_t now = ktime_get(), at;

	while (nvsim_perfmon_due(s, now, &at)) {
		nvsim_advance_to(s, at);
		nvsim_perfmon_take(s, at,
				   s->cur && nvsim_tsg_runnable(s->cur) ? s->cur->pid : 0);
	}
	nvsim_advance_to(s, now);
}

void nvsim_sched_init(struct nvsim_gpu *gpu)
{
	spin_lock_init(&gpu->sched.lock);
	INIT_LIST_HEAD(&gpu->sched.tsgs);
	gpu->sched.cur = NULL;
	gpu->sched.last = ktime_get();
	nvsim_perfmon_init(&gpu->sched);
}

/* The perfmon ring as of now (NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL entries). */
void nvsim_sched_perfmon_copy(struct nvsim_gpu *gpu, struct nvsim_perfmon_sample *ring)
{
	spin_lock(&gpu->sched.lock);
	nvsim_advance(&gpu->sched);
	memcpy(ring, gpu->sched.pm.ring, sizeof(gpu->sched.pm.ring));
	spin_unlock(&gpu->sched.lock);
}

struct nvsim_tsg *nvsim_sched_tsg_create(struct nvsim_gpu *gpu, u32 hclient, u32 htsg, pid_t pid,
					 u32 engine_type)
{
	struct nvsim_tsg_contract *x = kzalloc(sizeof(*x), GFP_KERNEL);
	struct nvsim_tsg *t;

	if (!x)
		return NULL;
	t = &x->t;
	t->hclient = hclient;
	t->htsg = htsg;
	t->pid = pid;
	t->engine_type = engine_type;
	t->timeslice_us = default_timeslice_us;
	spin_lock(&gpu->sched.lock);
	nvsim_advance(&gpu->sched);
	list_add_tail(&t->node, &gpu->sched.tsgs);
	spin_unlock(&gpu->sched.lock);
	return t;
}

void nvsim_sched_tsg_destroy(struct nvsim_gpu *gpu, struct nvsim_tsg *t)
{
	struct nvsim_sched *s = &gpu->sched;

	spin_lock(&s->lock);
	nvsim_advance(s);
	if (s->cur == t) {
		/* Hand the GPU to the next TSG before t leaves the list. */
		t->scheduled = false;
		nvsim_switch_to(s, nvsim_next_runnable(s, t));
	}
	list_del(&t->node);
	spin_unlock(&s->lock);
	kfree(nvsim_tsg_x(t));
}

void nvsim_sched_set_timeslice(struct nvsim_gpu *gpu, struct nvsim_tsg *t, u64 us)
{
	struct nvsim_sched *s = &gpu->sched;

	spin_lock(&s->lock);
	nvsim_advance(s);
	t->timeslice_us = us;
	/* Takes effect immediately and may force the TSG off the GPU (§6.2). */
	if (s->cur == t && s->slice_left_ns > nvsim_tsg_slice_ns(t))
		s->slice_left_ns = nvsim_tsg_slice_ns(t);
	spin_unlock(&s->lock);
}

void nvsim_sched_set_scheduled(struct nvsim_gpu *gpu, struct nvsim_tsg *t, bool on)
{
	spin_lock(&gpu->sched.lock);
	nvsim_advance(&gpu->sched);
	t->scheduled = on;
	if (on)
		nvsim_tsg_x(t)->ever_scheduled = true;
	else
		nvsim_tsg_x(t)->unpreempted = false; /* off the runlist (top of file) */
	spin_unlock(&gpu->sched.lock);
}

/* @disabled > 0 only from FIFO_DISABLE_CHANNELS(bDisable=1) (nvsim_ctrl.c). */
void nvsim_sched_channels(struct nvsim_gpu *gpu, struct nvsim_tsg *t, int add, int disabled)
{
	struct nvsim_tsg_contract *x = nvsim_tsg_x(t);

	spin_lock(&gpu->sched.lock);
	nvsim_advance(&gpu->sched);
	t->channels += add;
	t->disabled_channels += disabled;
	if (disabled > 0 && !x->ever_scheduled) {
		nvsim_contract[gpu - nvsim_gpus].disable_unscheduled += disabled;
		nvsim_wedge(gpu, x); /* the H200 tenant never ran again (top of file) */
	}
	spin_unlock(&gpu->sched.lock);
}

/*
 * One channel of @t through FIFO_DISABLE_CHANNELS (nvsim_ctrl.c): @dis its bDisable, @was whether
 * it was disabled before the call. Applies the H200's enable rule (top of file).
 */
void nvsim_sched_disable_channel(struct nvsim_gpu *gpu, struct nvsim_tsg *t, bool dis, bool was,
				 bool only_sched);
void nvsim_sched_disable_channel(struct nvsim_gpu *gpu, struct nvsim_tsg *t, bool dis, bool was,
				 bool only_sched)
{
	struct nvsim_tsg_contract *x = nvsim_tsg_x(t);

	if (dis == was) {
		if (!dis) {
			spin_lock(&gpu->sched.lock);
			nvsim_contract[gpu - nvsim_gpus].enable_undisabled++;
			spin_unlock(&gpu->sched.lock);
		}
		return;
	}
	nvsim_sched_channels(gpu, t, 0, dis ? 1 : -1);
	spin_lock(&gpu->sched.lock);
	if (dis && only_sched) {
		x->unpreempted = true;
		x->disables++;
	} else if (!dis && x->unpreempted) {
		nvsim_contract[gpu - nvsim_gpus].enable_unpreempted++;
		nvsim_wedge(gpu, x); /* the H200 process stalled for good */
	}
	spin_unlock(&gpu->sched.lock);
}

void nvsim_sched_preempt(struct nvsim_gpu *gpu, struct nvsim_tsg *t)
{
	struct nvsim_sched *s = &gpu->sched;

	spin_lock(&s->lock);
	nvsim_advance(s);
	if (s->cur == t) {
		t->preemptions++;
		nvsim_switch_to(s, nvsim_next_runnable(s, t));
	}
	spin_unlock(&s->lock);
}

/* The TSG's count of disables, taken when a PREEMPT of it begins (nvsim_ctrl.c). */
u32 nvsim_sched_disables(struct nvsim_gpu *gpu, struct nvsim_tsg *t);
u32 nvsim_sched_disables(struct nvsim_gpu *gpu, struct nvsim_tsg *t)
{
	u32 n;

	spin_lock(&gpu->sched.lock);
	n = nvsim_tsg_x(t)->disables;
	spin_unlock(&gpu->sched.lock);
	return n;
}

/*
 * PREEMPT with the caller's bWait: of a TSG that is not scheduled, bWait=1 returns only after
 * preempt_unscheduled_wait_ms (top of file). Called with nvsim_rm_lock held, which it keeps.
 * @disables: nvsim_sched_disables() when the PREEMPT began (before any preempt_delay_us).
 */
void nvsim_sched_preempt_wait(struct nvsim_gpu *gpu, struct nvsim_tsg *t, bool wait,
			      u32 disables);
void nvsim_sched_preempt_wait(struct nvsim_gpu *gpu, struct nvsim_tsg *t, bool wait,
			      u32 disables)
{
	bool stall;

	spin_lock(&gpu->sched.lock);
	nvsim_tsg_x(t)->preempt_calls++;
	stall = wait && !t->scheduled;
	if (stall) {
		nvsim_contract[gpu - nvsim_gpus].preempt_unscheduled++;
		nvsim_contract[gpu - nvsim_gpus].preempt_unscheduled_ms +=
			preempt_unscheduled_wait_ms;
		nvsim_tsg_x(t)->preempt_unscheduled++;
	}
	spin_unlock(&gpu->sched.lock);
	if (stall)
		msleep(preempt_unscheduled_wait_ms);
	nvsim_sched_preempt(gpu, t);
	spin_lock(&gpu->sched.lock);
	/* Returned: an enable is safe now, unless a disable came after the PREEMPT began. */
	if (nvsim_tsg_x(t)->disables == disables)
		nvsim_tsg_x(t)->unpreempted = false;
	spin_unlock(&gpu->sched.lock);
}

void nvsim_sched_runtime(struct nvsim_gpu *gpu, struct nvsim_tsg *t, struct nvsim_tsg_runtime_params *out)
{
	spin_lock(&gpu->sched.lock);
	nvsim_advance(&gpu->sched);
	out->consumedNs = t->consumed_ns;
	out->timesliceUs = nvsim_tsg_slice_ns(t) / NSEC_PER_USEC;
	out->runnable = nvsim_tsg_runnable(t);
	out->preemptions = t->preemptions;
	out->gpuBusyNs = gpu->sched.busy_ns;
	spin_unlock(&gpu->sched.lock);
}

/* /sys/kernel/debug/nvsim/gpuN: one line per TSG, plus the GPU's busy and idle time. */
static int nvsim_gpu_show(struct seq_file *m, void *unused)
{
	struct nvsim_gpu *gpu = m->private;
	struct nvsim_sched *s = &gpu->sched;
	struct nvsim_tsg *t;

	mutex_lock(&nvsim_rm_lock);
	seq_printf(m, "vidmem_heap_bytes %llu used_bytes %llu\n", gpu->heap_bytes, gpu->used_bytes);
	spin_lock(&s->lock);
	nvsim_advance(s);
	seq_printf(m, "busy_ns %llu idle_ns %llu\n", s->busy_ns, s->idle_ns);
	seq_puts(m, "pid hclient htsg engine timeslice_us runnable consumed_ns preemptions "
		    "scheduled wedged preempt_unscheduled preempt_calls channels\n");
	list_for_each_entry(t, &s->tsgs, node)
		seq_printf(m, "%d 0x%x 0x%x %u %llu %d %llu %u %d %d %u %u %u\n", t->pid, t->hclient,
			   t->htsg, t->engine_type, nvsim_tsg_slice_ns(t) / NSEC_PER_USEC,
			   nvsim_tsg_runnable(t), t->consumed_ns, t->preemptions, t->scheduled,
			   nvsim_tsg_x(t)->wedged, nvsim_tsg_x(t)->preempt_unscheduled,
			   nvsim_tsg_x(t)->preempt_calls, t->channels);
	/* Last line, cumulative since load (the schedule contract, top of file). */
	seq_printf(m, "contract preempt_unscheduled %llu preempt_unscheduled_ms %llu "
		      "disable_unscheduled %llu wedged %llu enable_unpreempted %llu "
		      "enable_undisabled %llu\n",
		   nvsim_contract[gpu - nvsim_gpus].preempt_unscheduled,
		   nvsim_contract[gpu - nvsim_gpus].preempt_unscheduled_ms,
		   nvsim_contract[gpu - nvsim_gpus].disable_unscheduled,
		   nvsim_contract[gpu - nvsim_gpus].wedged,
		   nvsim_contract[gpu - nvsim_gpus].enable_unpreempted,
		   nvsim_contract[gpu - nvsim_gpus].enable_undisabled);
	spin_unlock(&s->lock);
	mutex_unlock(&nvsim_rm_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(nvsim_gpu);

int nvsim_debugfs_init(void)
{
	char name[16];
	unsigned int i;

	/* debugfs is optional: errors are ignored by design of the debugfs API. */
	nvsim_debugfs_root = debugfs_create_dir("nvsim", NULL);
	for (i = 0; i < nvsim_num_gpus; i++) {
		snprintf(name, sizeof(name), "gpu%u", i);
		debugfs_create_file(name, 0444, nvsim_debugfs_root, &nvsim_gpus[i], &nvsim_gpu_fops);
	}
	return 0;
}

void nvsim_debugfs_exit(void)
{
	debugfs_remove_recursive(nvsim_debugfs_root);
}
