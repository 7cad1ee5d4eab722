// SPDX-License-Identifier: GPL-2.0
/*
 * Where the kernel host's measurements of each slot's GPU time come from
 * (struct vgpu_compute_meter in compute.h). Two sources, one chosen per GPU:
 *
 * tsg_runtime (nvsim only, and what the guest suite exercises):
 *   NVSIM_CTRL_CMD_TSG_GET_RUNTIME on each of the slot's TSGs gives the exact
 *   GPU time the model handed it; a slot's busy time is the sum of the
 *   increments since the last tick, over the span since the last tick. A TSG
 *   new since the last tick counts whole (it was created within the span);
 *   the part of a TSG's time between its last reading and its free is lost
 *   (at most one tick: <= 50 ms of one TSG).
 *
 * perfmon (the real driver; never run in the guest, nvsim does not serve
 *   the control): NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2 on
 *   the module's own subdevice, the GPU-wide samples NVML reads. Layout and
 *   the measured quirks are shim/compute/perfmon.h's (the same parser logic,
 *   in kernel C): 72 samples of 776 B after a 16 B header; a sample is one
 *   period's GR busy fraction (0.01 % units) and the pid that was on the
 *   engine at its end, in the caller's pid namespace (the init namespace
 *   here, the same numbers as vgpu_proc.tgid). A sample names a slot through
 *   the slot's process list; a sample naming no process goes to the one
 *   controlled slot that is not gated off, if there is exactly one (a gated
 *   tenant is off the engine when the sample is taken: compute-h200.md).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "slot.h"
#include "compute.h"
#include "core/abi/ctrl.h"
#include "rmops.h"

/* ---- nvsim: exact per-TSG runtime -------------------------------------- */

/* struct nvsim_tsg_runtime_params (tests/vm/nvsim/nvsim_abi.h). */
struct vgpu_nvsim_runtime {
	u64 consumedNs;
	u64 timesliceUs;
	u32 runnable;
	u32 preemptions;
	u64 gpuBusyNs;
};
static_assert(sizeof(struct vgpu_nvsim_runtime) == 4 * sizeof(u64));

static int vgpu_tsg_runtime_read(struct vgpu_compute_gpu *g,
				 struct vgpu_compute_slot *cs, u32 h_client,
				 u32 h_tsg, u64 *ns)
{
	struct vgpu_nvsim_runtime rt = {};
	int err;

	err = vgpu_compute_rm_control(g, cs, h_client, h_tsg,
				      VGPU_NVSIM_CTRL_TSG_GET_RUNTIME, &rt,
				      sizeof(rt));
	*ns = rt.consumedNs;
	return err;
}

static int vgpu_tsg_runtime_probe(struct vgpu_compute_gpu *g, u32 h_client,
				  u32 h_tsg)
{
	u64 ns;

	return vgpu_tsg_runtime_read(g, NULL, h_client, h_tsg, &ns);
}

static unsigned int vgpu_tsg_runtime_measure(struct vgpu_compute_gpu *g,
					     u64 now,
					     struct vcore_sched_report *out)
{
	struct vgpu_compute_slot *cs;
	unsigned int n = 0, i;

	list_for_each_entry(cs, &g->slots, node)
	{
		u64 busy = 0, ns;

		for (i = 0; i < cs->ntsgs; i++) {
			struct vgpu_compute_tsg *t = &cs->tsgs[i];

			if (vgpu_tsg_runtime_read(g, cs, t->h_client, t->h_tsg,
						  &ns))
				continue; /* freed meanwhile */
			if (t->measured)
				busy += ns > t->consumed_ns
						? ns - t->consumed_ns
						: 0;
			else if (cs->primed)
				busy += ns;
			t->consumed_ns = ns;
			t->measured = true;
		}
		if (cs->primed && now > cs->last_ns &&
		    n < VCORE_SCHED_MAX_SLOTS)
			out[n++] = (struct vcore_sched_report){
				.slot_id = cs->id,
				.busy_ns = busy,
				.span_ns = now - cs->last_ns,
				.end_ns = now,
			};
		cs->last_ns = now;
		cs->primed = true;
	}
	return n;
}

static void vgpu_meter_noop_reset(struct vgpu_compute_gpu *g)
{
}

const struct vgpu_compute_meter vgpu_meter_tsg_runtime = {
	.name = "nvsim per-TSG runtime (exact)",
	.probe = vgpu_tsg_runtime_probe,
	.measure = vgpu_tsg_runtime_measure,
	.reset = vgpu_meter_noop_reset,
};

/* ---- real driver: perfmon utilization samples -------------------------- */

#define VGPU_PM_CMD	    NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2
#define VGPU_PM_SAMPLES	    72
#define VGPU_PM_SAMPLE_SIZE 776
#define VGPU_PM_SIZE	    (16 + VGPU_PM_SAMPLES * VGPU_PM_SAMPLE_SIZE)
#define VGPU_PM_GR_OFF	    (8 + 128) /* util@0, procId@8 */
#define VGPU_PM_TYPE_UTIL   2
#define VGPU_PM_PID_INVALID 0xffffffffU

struct vgpu_pm_sample {
	u64 ts;
	u32 util;
	u32 pid;
};

static int vgpu_pm_cmp(const void *a, const void *b)
{
	const struct vgpu_pm_sample *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static struct vgpu_compute_slot *vgpu_pm_owner(struct vgpu_compute_gpu *g,
					       u32 pid)
{
	struct vgpu_compute_slot *cs, *open = NULL;
	struct vgpu_proc *p;
	int nopen = 0;

	list_for_each_entry(cs, &g->slots, node)
	{
		if (pid != VGPU_PM_PID_INVALID && pid) {
			bool mine = false;

			mutex_lock(&cs->slot->lock);
			list_for_each_entry(p, &cs->slot->procs, node) mine |=
				p->tgid == (pid_t)pid;
			mutex_unlock(&cs->slot->lock);
			if (mine)
				return cs;
		} else if (!vcore_sched_slot_gated(g->sched, cs->id)) {
			open = cs;
			nopen++;
		}
	}
	return nopen == 1 ? open : NULL;
}

static unsigned int vgpu_perfmon_measure(struct vgpu_compute_gpu *g, u64 now,
					 struct vcore_sched_report *out)
{
	struct vgpu_pm_sample *s;
	struct vgpu_compute_slot *cs;
	u64 typical = 0, period, span = 0, end_ts = 0, newest;
	unsigned int n = 0, k, nrep = 0;
	u8 *b;

	if (!g->pm_buf)
		g->pm_buf = kvzalloc(VGPU_PM_SIZE, GFP_KERNEL);
	s = kmalloc_array(VGPU_PM_SAMPLES, sizeof(*s), GFP_KERNEL);
	if (!g->pm_buf || !s)
		goto out;
	b = g->pm_buf;
	memset(b, 0, VGPU_PM_SIZE);
	b[0] = VGPU_PM_TYPE_UTIL;
	k = VGPU_PM_SAMPLES * VGPU_PM_SAMPLE_SIZE; /* RM checks it exactly */
	memcpy(b + 4, &k, sizeof(u32));
	if (vgpu_compute_rm_control(g, NULL, g->h_client, g->h_subdevice,
				    VGPU_PM_CMD, b, VGPU_PM_SIZE))
		goto out;
	for (k = 0; k < VGPU_PM_SAMPLES; k++) {
		const u8 *e = b + 16 + k * VGPU_PM_SAMPLE_SIZE;

		/* x86_64 little endian, as the driver wrote it. */
		memcpy(&s[n].ts, e, sizeof(u64));
		memcpy(&s[n].util, e + VGPU_PM_GR_OFF, sizeof(u32));
		memcpy(&s[n].pid, e + VGPU_PM_GR_OFF + 8, sizeof(u32));
		n += s[n].ts != 0;
	}
	sort(s, n, sizeof(*s), vgpu_pm_cmp, NULL);
	list_for_each_entry(cs, &g->slots, node) cs->pm_pid_busy_ns = 0;
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
		cs = vgpu_pm_owner(g, s[k].pid);
		if (cs)
			cs->pm_pid_busy_ns +=
				period * min(s[k].util, 10000U) / 10000;
		span += period;
		end_ts = s[k].ts;
	}
	newest = n ? s[n - 1].ts : 0;
	if (newest > g->pm_last_ts)
		g->pm_last_ts = newest;
	if (!span)
		goto out;
	list_for_each_entry(cs, &g->slots, node)
	{
		if (nrep == VCORE_SCHED_MAX_SLOTS)
			break;
		/* Sample times are wall-clock ns: place the span on ours. */
		out[nrep++] = (struct vcore_sched_report){
			.slot_id = cs->id,
			.busy_ns = cs->pm_pid_busy_ns,
			.span_ns = span,
			.end_ns = now -
				  min_t(u64, now,
					ktime_get_real_ns() > end_ts
						? ktime_get_real_ns() - end_ts
						: 0),
		};
	}
out:
	kfree(s);
	return nrep;
}

static int vgpu_perfmon_probe(struct vgpu_compute_gpu *g, u32 h_client,
			      u32 h_tsg)
{
	return 0;
}

static void vgpu_perfmon_reset(struct vgpu_compute_gpu *g)
{
	g->pm_last_ts = 0;
}

const struct vgpu_compute_meter vgpu_meter_perfmon = {
	.name = "perfmon utilization samples",
	.probe = vgpu_perfmon_probe,
	.measure = vgpu_perfmon_measure,
	.reset = vgpu_perfmon_reset,
};
