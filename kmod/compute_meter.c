// SPDX-License-Identifier: GPL-2.0
/*
 * Where the kernel host's measurements of each slot's GPU time come from:
 * the driver's perfmon utilization samples,
 * NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2 on the module's own
 * subdevice, the GPU-wide samples NVML reads (docs/nvidia-rm-abi.md §6.3).
 * It is the one source on every driver: nvsim serves the control from its
 * GPU-time model (tests/vm/nvsim/nvsim_perfmon.c), so the guest suite runs
 * the path a real GPU runs.
 *
 * Layout: kmod/core/abi/ctrl.h (72 samples of 776 B after a 16 B header).
 * A sample is one period's GR busy fraction (0.01 % units) and the pid that
 * was on the engine at its end, in the caller's pid namespace: this thread's,
 * the initial one, so the same numbers as vgpu_proc.tgid. The module's own
 * client reads the samples unfiltered: its calls do not pass the filter
 * core, which hides other slots' processes from a tenant's reply
 * (kmod/core/views.c). The measured quirks are shim/compute/perfmon.h's (the
 * same parser logic, in kernel C): count and tracker read 0, so entries are
 * ordered by timestamp here; a gap in the ring is not one sample's busy time.
 *
 * Attribution: a sample naming a process of a controlled slot is that
 * slot's. A sample naming no process had the engine idle at its end, which is
 * what a capped tenant gated off at that instant shows although its work
 * filled part of the period (measured on the H200: compute-h200.md). Its busy
 * time goes to the controlled slots with a TSG whose gate was open at some
 * point of the sample's period, in equal parts (the gate history below);
 * with none, to the slot open most recently (a kernel can still drain after
 * the off edge). So a lone capped tenant gets all of it, as its cap needs; a
 * sample naming a process outside every controlled slot is nobody's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "slot.h"
#include "compute.h"
#include "core/abi/ctrl.h"

#define VGPU_PM_SAMPLES NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL

typedef NV2080_CTRL_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2_PARAMS
	vgpu_pm_params;

struct vgpu_pm_sample {
	u64 ts;	   /* the period's end (the driver's clock: real time) */
	u64 start; /* the period's start, once known */
	u32 util;
	u32 pid;
};

static int vgpu_pm_cmp(const void *a, const void *b)
{
	const struct vgpu_pm_sample *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* ---- the gate history ------------------------------------------------- */

/*
 * Called once per tick before the controller acts: the gate state now is the
 * one the slot had since the previous tick's actions, i.e. since the previous
 * call. A change is appended as an edge at that previous call's time.
 */
static void vgpu_pm_note_gate(struct vgpu_compute_gpu *g,
			      struct vgpu_compute_slot *cs, u64 real)
{
	bool gated = vcore_sched_slot_gated(g->sched, cs->id);
	unsigned int last =
		(cs->pm_edge_head + VGPU_PM_EDGES - 1) % VGPU_PM_EDGES;

	if (!cs->pm_nedges || cs->pm_edge_gated[last] != gated) {
		cs->pm_edge_ns[cs->pm_edge_head] =
			cs->pm_nedges ? cs->pm_seen_real_ns : real;
		cs->pm_edge_gated[cs->pm_edge_head] = gated;
		cs->pm_edge_head = (cs->pm_edge_head + 1) % VGPU_PM_EDGES;
		if (cs->pm_nedges < VGPU_PM_EDGES)
			cs->pm_nedges++;
	}
	cs->pm_seen_real_ns = real;
}

/*
 * Was @cs's gate open at some point of [@a, @b] (real time)? Beyond the
 * history (a slot just put under control, or one whose edges came faster
 * than the ring holds): yes, which counts the time as the slot's, the safe
 * side for a cap.
 */
static bool vgpu_pm_open_during(const struct vgpu_compute_slot *cs, u64 a,
				u64 b)
{
	unsigned int n, i;

	for (n = 0; n < cs->pm_nedges; n++) {
		i = (cs->pm_edge_head + VGPU_PM_EDGES - 1 - n) % VGPU_PM_EDGES;
		if (cs->pm_edge_ns[i] > b)
			continue;
		if (cs->pm_edge_ns[i] <= a)
			return !cs->pm_edge_gated[i]; /* the state at a */
		if (!cs->pm_edge_gated[i])
			return true; /* opened inside the period */
	}
	return true;
}

/* When was @cs's gate last open (real time; U64_MAX: it is open now)? */
static u64 vgpu_pm_last_open(const struct vgpu_compute_slot *cs)
{
	unsigned int n, i;

	for (n = 0; n < cs->pm_nedges; n++) {
		i = (cs->pm_edge_head + VGPU_PM_EDGES - 1 - n) % VGPU_PM_EDGES;
		if (!cs->pm_edge_gated[i])
			return n ? cs->pm_edge_ns[(i + 1) % VGPU_PM_EDGES]
				 : U64_MAX;
	}
	return 0;
}

/* ---- attribution ------------------------------------------------------ */

static struct vgpu_compute_slot *vgpu_pm_slot_of(struct vgpu_compute_gpu *g,
						 u32 pid)
{
	struct vgpu_compute_slot *cs;
	struct vgpu_proc *p;
	bool mine;

	list_for_each_entry(cs, &g->slots, node)
	{
		mine = false;
		mutex_lock(&cs->slot->lock);
		list_for_each_entry(p, &cs->slot->procs, node) mine |=
			p->tgid == (pid_t)pid;
		mutex_unlock(&cs->slot->lock);
		if (mine)
			return cs;
	}
	return NULL;
}

/* A sample that names no process: its busy to the slots open meanwhile. */
static void vgpu_pm_unattributed(struct vgpu_compute_gpu *g,
				 const struct vgpu_pm_sample *s, u64 busy)
{
	struct vgpu_compute_slot *cs, *latest = NULL;
	u64 when, latest_when = 0;
	unsigned int n = 0;

	list_for_each_entry(cs, &g->slots, node)
	{
		cs->pm_candidate =
			cs->ntsgs && vgpu_pm_open_during(cs, s->start, s->ts);
		n += cs->pm_candidate;
		when = cs->ntsgs ? vgpu_pm_last_open(cs) : 0;
		if (when > latest_when) {
			latest = cs;
			latest_when = when;
		}
	}
	if (!n) {
		if (latest)
			latest->pm_busy_ns += busy;
		return;
	}
	list_for_each_entry(cs, &g->slots, node) if (cs->pm_candidate)
		cs->pm_busy_ns += busy / n;
}

/* ---- the meter -------------------------------------------------------- */

/* Reads the ring into @s, oldest first; returns how many samples it holds. */
static unsigned int vgpu_pm_read(struct vgpu_compute_gpu *g,
				 struct vgpu_pm_sample *s)
{
	vgpu_pm_params *p;
	unsigned int n = 0, k;

	if (!g->pm_buf)
		g->pm_buf = kvzalloc(sizeof(*p), GFP_KERNEL);
	p = g->pm_buf;
	if (!p)
		return 0;
	memset(p, 0, sizeof(*p));
	p->type = NV2080_CTRL_GPUMON_SAMPLE_TYPE_PERFMON_UTIL;
	p->bufSize = sizeof(p->samples); /* RM checks it exactly */
	if (vgpu_compute_rm_control(
		    g, NULL, g->h_client, g->h_subdevice,
		    NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2, p,
		    sizeof(*p)))
		return 0;
	for (k = 0; k < VGPU_PM_SAMPLES; k++) {
		s[n] = (struct vgpu_pm_sample){
			.ts = p->samples[k].base.timeStamp,
			.util = min_t(u32, p->samples[k].gr.util, 10000),
			.pid = p->samples[k].gr.procId,
		};
		n += s[n].ts != 0;
	}
	sort(s, n, sizeof(*s), vgpu_pm_cmp, NULL);
	return n;
}

/*
 * Fills one report per controlled slot from the samples new since the last
 * call and returns how many; the first call only primes. Called with g->lock
 * held, after the registry walk.
 */
unsigned int vgpu_compute_measure(struct vgpu_compute_gpu *g, u64 now,
				  struct vcore_sched_report *out)
{
	u64 real = ktime_get_real_ns(), typical = 0, period, span = 0;
	u64 end_ts = 0, busy;
	struct vgpu_compute_slot *cs;
	struct vgpu_pm_sample *s;
	unsigned int n, k, nrep = 0;

	list_for_each_entry(cs, &g->slots, node)
	{
		vgpu_pm_note_gate(g, cs, real);
		cs->pm_busy_ns = 0;
	}
	s = kmalloc_array(VGPU_PM_SAMPLES, sizeof(*s), GFP_KERNEL);
	if (!s)
		return 0;
	n = vgpu_pm_read(g, s);
	for (k = 1; k < n; k++) {
		period = s[k].ts - s[k - 1].ts;
		if (!period)
			continue;
		if (period < 10 * NSEC_PER_MSEC)
			period *= 1000; /* microsecond timestamps */
		/* A gap in the ring is not one sample's busy time. */
		if (typical && period > 3 * typical)
			period = typical;
		else
			typical = period;
		if (!g->pm_last_ts || s[k].ts <= g->pm_last_ts)
			continue;
		s[k].start = s[k].ts > period ? s[k].ts - period : 0;
		busy = period * s[k].util / 10000;
		if (s[k].pid == NV2080_GPUMON_PID_INVALID || !s[k].pid) {
			vgpu_pm_unattributed(g, &s[k], busy);
		} else {
			cs = vgpu_pm_slot_of(g, s[k].pid);
			if (cs)
				cs->pm_busy_ns += busy;
		}
		span += period;
		end_ts = s[k].ts;
	}
	if (n && s[n - 1].ts > g->pm_last_ts)
		g->pm_last_ts = s[n - 1].ts;
	kfree(s);
	if (!span)
		return 0;
	list_for_each_entry(cs, &g->slots, node)
	{
		if (nrep == VCORE_SCHED_MAX_SLOTS)
			break;
		/* Sample times are wall-clock ns: place the span on ours. */
		out[nrep++] = (struct vcore_sched_report){
			.slot_id = cs->id,
			.busy_ns = cs->pm_busy_ns,
			.span_ns = span,
			.end_ns =
				now - min_t(u64, now,
					    real > end_ts ? real - end_ts : 0),
		};
	}
	return nrep;
}

/* The thread stopped: the next one primes again. */
void vgpu_compute_meter_reset(struct vgpu_compute_gpu *g)
{
	g->pm_last_ts = 0;
}
