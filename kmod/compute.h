/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The share controller's kernel host (compute.c, compute_config.c,
 * compute_gate.c, compute_rm.c, compute_meter.c): one struct vgpu_compute_gpu
 * and one kthread per GPU that has a controlled slot.
 * docs/results/compute-kernel-host.md describes the design and what was
 * measured with it.
 *
 * Lock order (outer first): vgpu_compute_lock (config, thread start/stop) ->
 * g->lock (controller, slot list, RM objects) -> the core's slot lock (taken
 * by the registry walks). g->lock is never held by the thread while it waits
 * for PREEMPT (a worker issues it), so a config change waits one tick at most.
 * The worker takes g->lock only to re-check a TSG before its PREEMPT, never
 * across the call.
 */
#ifndef VGPU_KMOD_COMPUTE_H
#define VGPU_KMOD_COMPUTE_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "core/vcore.h"
#include "core/sched/vcore_sched.h"

struct vgpu_slot;

/*
 * The part's interface: main.c starts it before the control plane and stops
 * it after (no config can arrive before or after); the control plane hands
 * it each slot's settings and reads its counters. A slot is under control
 * unless it is in cap mode with share 100. apply() follows the slot's config
 * (call it after every change), gone() at destroy: both re-open any gate they
 * close.
 */
/* What the kernel host adds to the controller's own counters. */
struct vgpu_compute_host_stats {
	u64 errors;  /* RM controls that failed */
	u64 late_ns; /* stalls: wake-ups > 10 ms past an edge */
};
int vgpu_compute_init(void);
void vgpu_compute_exit(void);
int vgpu_compute_slot_apply(struct vgpu_slot *slot);
void vgpu_compute_slot_gone(struct vgpu_slot *slot);
/* false (and *st zeroed) when the slot is not under control. */
bool vgpu_compute_slot_stats(struct vgpu_slot *slot,
			     struct vcore_sched_slot_stats *st,
			     struct vgpu_compute_host_stats *hs);
const char *vgpu_compute_mode_name(u32 mode);

/* RM classes and controls: kmod/core/abi/classes.h, ctrl.h. */
#define VGPU_NV_OK 0
/* NV2080_ENGINE_TYPE_GR0: the TSGs whose timeslice sets the compute split. */
#define VGPU_ENGINE_GR0 1

/* Per slot, the TSGs the controller tracks: all a slot can have. */
#define VGPU_COMPUTE_MAX_TSGS VCORE_SLOT_MAX_TSGS
/* Per slot, the channels one gate edge disables (64 per RM call): all. */
#define VGPU_COMPUTE_MAX_CHANNELS VCORE_SLOT_MAX_CHANNELS

struct vgpu_compute_tsg {
	u32 h_client;
	u32 h_tsg;
	u32 engine_type;
	/*
	 * The app's GPFIFO_SCHEDULE(bEnable=1) succeeded (the core's registry,
	 * vcore_tsg_info.scheduled): only such a TSG is on the runlist, and
	 * only it is gated, preempted or given a timeslice (compute.c).
	 */
	bool scheduled;
	bool seen; /* in the latest registry walk */
};

/* Gate edges the perfmon meter remembers per slot (compute_meter.c): at 50 ms
 * cap periods, two per period, 64 reach back 1.6 s; samples arrive <= ~0.5 s
 * after their period began. */
#define VGPU_PM_EDGES 64

struct vgpu_compute_slot {
	struct list_head node;
	struct vgpu_slot *slot; /* holds a slot reference */
	u32 id;
	u32 mode;	   /* enum vgpu_compute_mode */
	u32 share;	   /* 1..100 */
	u64 tsg_gen;	   /* registry generation of the last walk */
	bool tsgs_changed; /* a TSG or channel came or went since last tick */
	u64 ts_issued_ns;  /* weight: when the timeslice was last written */
	u32 ts_us;	   /* weight: the timeslice the controller chose */
	unsigned int ntsgs;
	struct vgpu_compute_tsg tsgs[VGPU_COMPUTE_MAX_TSGS];
	u64 errors;  /* RM controls that failed */
	u64 late_ns; /* stalls: wake-ups > 10 ms past an edge */

	/*
	 * The perfmon meter (compute_meter.c): busy attributed this tick, and
	 * the gate's history on the samples' clock (real time): the state that
	 * began at each edge, a ring, newest at pm_edge_head - 1.
	 */
	u64 pm_busy_ns;
	bool pm_candidate; /* open during the sample being attributed */
	unsigned int pm_edge_head, pm_nedges;
	u64 pm_seen_real_ns; /* the previous tick's reading */
	u64 pm_edge_ns[VGPU_PM_EDGES];
	bool pm_edge_gated[VGPU_PM_EDGES];

	/*
	 * The gate's protocol (compute_gate.c): the channels this host disabled
	 * and has not re-enabled, (client, channel) pairs; the on edge enables
	 * exactly these. VGPU_COMPUTE_MARK_OK: RM confirmed the disable (an
	 * unconfirmed one is enabled by the on edge and disabled again by the
	 * next off edge).
	 */
	unsigned int ndis;
	u32 dis_client[VGPU_COMPUTE_MAX_CHANNELS];
	u32 dis_chan[VGPU_COMPUTE_MAX_CHANNELS];
	u8 dis_flags[VGPU_COMPUTE_MAX_CHANNELS];
	u64 preempt_seq;       /* g->preempt_queued_seq after this slot's last
				* off edge: its enable waits for preempt_done_seq */
	bool enable_owed;      /* an on edge found that PREEMPT still pending */
	unsigned int on_edges; /* on edges issued: which TSG goes first */
	u64 enables_deferred;  /* on edges that had to wait for it */
};

struct vgpu_compute_gpu {
	struct list_head node;
	u32 gpu;
	struct mutex lock; /* protects everything below */
	struct vcore_sched *sched;
	struct list_head slots;
	unsigned int nslots;
	struct task_struct *thread;
	/*
	 * A TSG went on the runlist since the thread's tick began (set by
	 * vgpu_compute_kick under vgpu_compute_lock, cleared by the thread
	 * before its registry walk, read without g->lock): the thread ticks
	 * again instead of sleeping until its next edge.
	 */
	bool kicked;
	bool rm_ready;
	u64 rm_retry_ns; /* next attempt at the RM objects */
	u32 h_client, h_device, h_subdevice; /* the module's own RM objects */
	u64 pm_last_ts; /* perfmon meter: newest sample consumed */
	void *pm_buf;	/* perfmon meter: the params buffer */
	struct vcore_sched_action acts[VCORE_SCHED_MAX_ACTIONS];
	struct vcore_sched_report reports[VCORE_SCHED_MAX_SLOTS];
	u32 chan_client[VGPU_COMPUTE_MAX_CHANNELS];
	u32 chan_handle[VGPU_COMPUTE_MAX_CHANNELS];
	u32 chan_tsg[VGPU_COMPUTE_MAX_CHANNELS]; /* parent TSG (same client) */

	/* PREEMPT(bWait=1) runs here: it may block while work drains. */
	struct work_struct preempt_work;
	spinlock_t preempt_lock; /* protects the pending list and the seqs */
	/*
	 * Bumped by every off edge that queued PREEMPTs; the worker sets
	 * done_seq to the queued_seq it saw when it took the list, once every
	 * PREEMPT of that list returned, and wakes preempt_wq.
	 */
	u64 preempt_queued_seq, preempt_done_seq;
	wait_queue_head_t preempt_wq;
	bool enable_owed; /* some slot's enable is owed (the thread waits) */
	unsigned int npreempt;
	u32 preempt_slot[VGPU_COMPUTE_MAX_TSGS]; /* slot id, re-checked */
	u32 preempt_client[VGPU_COMPUTE_MAX_TSGS];
	u32 preempt_tsg[VGPU_COMPUTE_MAX_TSGS];
};

/* compute_rm.c: RM access, used by the thread, the meters and the gate. */
int vgpu_compute_rm_control(struct vgpu_compute_gpu *g,
			    struct vgpu_compute_slot *cs, u32 hclient,
			    u32 hobject, u32 cmd, void *params, u32 size);
int vgpu_compute_rm_setup(struct vgpu_compute_gpu *g);
void vgpu_compute_rm_teardown(struct vgpu_compute_gpu *g);

/*
 * compute_meter.c: each slot's GPU time from the driver's perfmon samples,
 * used by the thread. Fills one report per slot that has news and returns
 * how many; g->lock held, after the registry walk.
 */
unsigned int vgpu_compute_measure(struct vgpu_compute_gpu *g, u64 now,
				  struct vcore_sched_report *out);
void vgpu_compute_meter_reset(struct vgpu_compute_gpu *g);

/* An on edge waits this long for its PREEMPT (~0.6 ms on the H200). */
#define VGPU_COMPUTE_ENABLE_WAIT_NS (20 * NSEC_PER_MSEC)

/* compute.c (the thread), used by the gate and by compute_config.c. */
struct vgpu_compute_slot *vgpu_compute_find(struct vgpu_compute_gpu *g, u32 id);
void vgpu_compute_exec(struct vgpu_compute_gpu *g, int n, bool force);
int vgpu_compute_thread(void *arg);
/* Makes @g's running thread tick now (a TSG went on the runlist). */
void vgpu_compute_kick(struct vgpu_compute_gpu *g);

/* compute_gate.c (the gate's protocol), used by compute.c. */
struct vcore_channel_info;
int vgpu_compute_mark_present(void *arg, const struct vcore_channel_info *ch);
void vgpu_compute_mark_compact(struct vgpu_compute_slot *cs);
void vgpu_compute_preempt_work(struct work_struct *work);
bool vgpu_compute_preempts_idle(struct vgpu_compute_gpu *g);
void vgpu_compute_preempts_settle(struct vgpu_compute_gpu *g, u64 timeout_ns);
void vgpu_compute_gate(struct vgpu_compute_gpu *g, struct vgpu_compute_slot *cs,
		       bool off, bool force);

#endif /* VGPU_KMOD_COMPUTE_H */
