// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim: NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2 (0x20802096), the per-process
 * utilisation samples NVML's nvmlDeviceGetProcessUtilization reads and vgpu.ko's compute meter
 * (kmod/compute_meter.c) measures each slot's GPU time with. Built from the GPU-time model of
 * nvsim_sched.c, so what a consumer computes from them can be checked against the model's exact
 * per-TSG time.
 *
 * The 580 driver (open-gpu-kernel-modules, tag 580.142):
 *   - src/common/sdk/nvidia/inc/ctrl/ctrl2080/ctrl2080perf.h (NV2080_CTRL_PERF_GPUMON_*):
 *     a ring of NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL (72) samples; per engine,
 *     `util` is the busy fraction of the sample's period in units of 0.01 %, `procId` "the
 *     process that was active on the engine when the sample was taken", or
 *     NV2080_GPUMON_PID_INVALID when none was; ctrl2080gpumon.h: timestamps in ns.
 *   - src/nvidia/src/kernel/gpu/perf/kern_perf_ctrl.c,
 *     subdeviceCtrlCmdPerfGetGpumonPerfmonUtilSamplesV2_VF: bufSize other than
 *     NV2080_CTRL_PERF_GPUMON_PERFMON_UTIL_BUFFER_SIZE (72 * 776) is NV_ERR_INVALID_ARGUMENT;
 *     ..._KERNEL: the samples come from physical RM, and unless the caller is in the initial
 *     pid namespace (os_is_init_ns) each engine sample whose pOsPidInfo is set has its procId
 *     replaced by pid_vnr() of that struct pid (os_find_ns_pid, kernel-open/nvidia/
 *     os-interface.c) and pOsPidInfo cleared; a pid not visible there keeps its number.
 *   - src/nvidia/src/kernel/diagnostics/gpu_acct.c, gpuacctProcessGpuUtil: the driver's own
 *     consumer takes samples by timestamp, skips those not newer than the last one it saw and
 *     attributes a sample only when gr.procId and gr.subProcessID are both valid.
 * Measured on the H200, 580.159.04 (shim/compute/perfmon.h, docs/nvidia-rm-abi.md §6.3): one
 * sample every ~200 ms, Unix-epoch ns timestamps, count and tracker read 0 while the ring held
 * 72 samples; a tenant gated off at the sampling instant is not named although its work filled
 * part of the period.
 *
 * The model: every perfmon_period_ms (+- 5 %, nvsim_perfmon_next_period_ns) of the monotonic
 * clock nvsim_sched.c stops the GPU-time model at the period's end and hands this file the GR busy time of the period and the TSG on
 * the GPU at that instant (none while idle). The sample records the busy fraction, that TSG's
 * process (the client's creator, as nvsim_rm.c records it) and the instant on the real-time
 * clock. The ring is filled in place and returned as is, count and tracker 0 (as measured).
 * Only gr is modelled: fb (DRAM) and the video engines read util 0 and no process. pOsPidInfo
 * reads 0 (nvsim hands out no kernel pointers); subProcessID is 0 when a process is named
 * (approx: bare-metal accounting needs it valid) and INVALID otherwise. No MIG.
 */
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "nvsim.h"

static unsigned int perfmon_period_ms = 200;
module_param(perfmon_period_ms, uint, 0444);
MODULE_PARM_DESC(perfmon_period_ms,
		 "period of the perfmon utilisation samples (ms; the H200 showed ~200)");

static u64 nvsim_perfmon_period_ns(void)
{
	return (u64)max(perfmon_period_ms, 1U) * NSEC_PER_MSEC;
}

/*
 * The next period: the nominal one +- 5 %. The model's runlist is exactly periodic (a round of
 * timeslices), so a sampler on an exact grid would see it at the same phase every time (two TSGs
 * of 1 ms slices: every 200 ms sample names the same one). On the GPU the sampler is a timer of
 * its own, asynchronous to the runlist; the jitter, more than one round of the runlists the
 * tests build (2-10 ms), restores that.
 */
static u64 nvsim_perfmon_next_period_ns(void)
{
	u64 period = nvsim_perfmon_period_ns(), spread = div_u64(period, 10);

	return period - spread / 2 + div64_u64((u64)get_random_u32() * spread, U32_MAX);
}

void nvsim_perfmon_init(struct nvsim_sched *s)
{
	memset(&s->pm, 0, sizeof(s->pm));
	s->pm.start = s->last;
	s->pm.next = ktime_add_ns(s->last, nvsim_perfmon_period_ns());
}

/*
 * Is a sample due by @now? Then *@at is its instant. Periods older than the ring's 72 are not
 * sampled: their samples would be overwritten before anyone could read them (the first one
 * taken then covers the whole gap, at the gap's busy fraction).
 */
bool nvsim_perfmon_due(struct nvsim_sched *s, ktime_t now, ktime_t *at)
{
	u64 period = nvsim_perfmon_period_ns(), behind;

	if (ktime_before(now, s->pm.next))
		return false;
	behind = div64_u64(ktime_to_ns(ktime_sub(now, s->pm.next)), period);
	if (behind >= NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL)
		s->pm.next = ktime_add_ns(s->pm.next,
					  (behind - NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL + 1) *
						  period);
	*at = s->pm.next;
	return true;
}

/* The model stands at @at (a period's end, nvsim_perfmon_due); @pid is on the GPU, 0: idle. */
void nvsim_perfmon_take(struct nvsim_sched *s, ktime_t at, pid_t pid)
{
	struct nvsim_perfmon_sample *e = &s->pm.ring[s->pm.head];
	u64 span = ktime_to_ns(ktime_sub(at, s->pm.start));
	u64 busy = s->busy_ns - s->pm.busy_start;

	e->ts_real = ktime_to_ns(ktime_mono_to_real(at));
	e->util = span ? (u32)div64_u64(min(busy, span) * 10000, span) : 0;
	e->pid = pid;
	s->pm.head = (s->pm.head + 1) % NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL;
	s->pm.start = at;
	s->pm.busy_start = s->busy_ns;
	s->pm.next = ktime_add_ns(at, nvsim_perfmon_next_period_ns());
}

/* procId as the caller sees it: the ..._KERNEL handler's translation (top of file). */
static u32 nvsim_perfmon_proc_id(const struct nvsim_caller *c, pid_t pid)
{
	struct pid *p;
	pid_t nr = 0;

	if (!pid)
		return NV2080_GPUMON_PID_INVALID;
	if (c->kernel || task_active_pid_ns(current) == &init_pid_ns)
		return pid;
	rcu_read_lock();
	p = find_pid_ns(pid, &init_pid_ns);
	if (p)
		nr = pid_vnr(p);
	rcu_read_unlock();
	return nr ? nr : pid;
}

static void nvsim_perfmon_engine_idle(struct nv2080_gpumon_engine_util_sample *e)
{
	e->procId = NV2080_GPUMON_PID_INVALID;
	e->subProcessID = NV2080_GPUMON_PID_INVALID;
}

u32 nvsim_ctrl_perfmon_samples(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv2080_perf_get_gpumon_perfmon_util_samples_v2_params *p = buf;
	struct nvsim_perfmon_sample *ring;
	unsigned int i;

	if (p->bufSize != sizeof(p->samples))
		return NV_ERR_INVALID_ARGUMENT;
	ring = kmalloc_array(NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL, sizeof(*ring),
			     GFP_KERNEL);
	if (!ring)
		return NV_ERR_NO_MEMORY;
	nvsim_sched_perfmon_copy(x->gpu, ring);
	p->count = 0;
	p->tracker = 0;
	memset(p->samples, 0, sizeof(p->samples));
	for (i = 0; i < NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL; i++) {
		struct nv2080_gpumon_perfmon_util_sample *o = &p->samples[i];

		if (!ring[i].ts_real)
			continue; /* never written: all zero, as the driver's unused entries */
		o->timeStamp = ring[i].ts_real;
		o->gr.util = ring[i].util;
		o->gr.procId = nvsim_perfmon_proc_id(x->c, ring[i].pid);
		o->gr.subProcessID = ring[i].pid ? 0 : NV2080_GPUMON_PID_INVALID;
		nvsim_perfmon_engine_idle(&o->fb);
		nvsim_perfmon_engine_idle(&o->nvenc);
		nvsim_perfmon_engine_idle(&o->nvdec);
		nvsim_perfmon_engine_idle(&o->nvjpg);
		nvsim_perfmon_engine_idle(&o->nvofa);
	}
	kfree(ring);
	return NV_OK;
}
