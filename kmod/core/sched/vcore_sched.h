/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vcore_sched: the per-GPU compute share controller of the filter core.
 *
 * Pure logic, no I/O. The host (vgpu.ko's scheduler kthread, or the shim's
 * control thread) owns the clock, the measurement and the RM client:
 *
 *   loop:
 *     now = host clock (ns, monotonic)
 *     for each slot: busy = GPU time the slot used since the last report
 *     n = vcore_sched_tick(s, now, reports, nr, actions, max, &next)
 *     execute actions[0..n) on the slot's TSGs/channels
 *     sleep until `next` (or the next measurement, whichever is first)
 *
 * Actions map to RM controls (nvidia-rm-abi.md §6.2; what each was measured
 * to do is in compute-control-h200.md):
 *   VCORE_SCHED_ACT_GATE_OFF  NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS(bDisable=1,
 *                             bOnlyDisableScheduling=1) on every channel of
 *                             the slot's TSGs, then NVA06C_CTRL_CMD_PREEMPT
 *                             (bWait=1) on each TSG. The measured working
 *                             hard-cap mechanism; GPFIFO_SCHEDULE(0) had no
 *                             effect, disable without PREEMPT stalled the
 *                             process (reference, table 1).
 *   VCORE_SCHED_ACT_GATE_ON   FIFO_DISABLE_CHANNELS(bDisable=0) on the same
 *                             channels.
 *   VCORE_SCHED_ACT_TIMESLICE NVA06C_CTRL_CMD_SET_TIMESLICE(timeslice_us) on
 *                             the slot's GR TSGs (engine type 1).
 * vcore_sched_ctrl.h fills those control parameter blocks.
 *
 * The host serializes every call on one controller (one lock per GPU); the
 * controller never sleeps and never allocates.
 *
 * No stalls: a slot that is gated off is gated on again by
 * vcore_sched_slot_remove() and vcore_sched_release_all(), which return the
 * GATE_ON actions the host must issue (process exit, slot teardown,
 * controller thread exit). A TSG created while its slot is gated off must be
 * gated off by the host at once: vcore_sched_slot_gated() says so.
 */
#ifndef VCORE_SCHED_H
#define VCORE_SCHED_H

#include "vcore_sched_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VCORE_SCHED_MAX_SLOTS 32
/* At most one gate action and one timeslice action per slot per tick. */
#define VCORE_SCHED_MAX_ACTIONS (2 * VCORE_SCHED_MAX_SLOTS)

/* Achieved-share windows: 100 buckets of 100 ms = the last 10 s. */
#define VCORE_SCHED_BUCKET_NS 100000000ULL
#define VCORE_SCHED_BUCKETS   100

enum vcore_sched_mode {
	VCORE_SCHED_MODE_UNSPEC = 0,
	/* Hard limit: never more than the share, even on an idle GPU. */
	VCORE_SCHED_MODE_CAP = 1,
	/* Work-conserving: shares apply under contention, idle time is lent. */
	VCORE_SCHED_MODE_WEIGHT = 2,
	/*
	 * GPU time of tenants this controller cannot act on (the shim host
	 * sees only its own process): reported busy time and a configured
	 * share, used as the other side of a weight split. Never gated.
	 */
	VCORE_SCHED_MODE_FOREIGN = 3,
};

enum vcore_sched_act_kind {
	VCORE_SCHED_ACT_NONE = 0,
	VCORE_SCHED_ACT_GATE_OFF = 1,
	VCORE_SCHED_ACT_GATE_ON = 2,
	VCORE_SCHED_ACT_TIMESLICE = 3,
};

struct vcore_sched_action {
	vcs_u32 slot_id;
	vcs_u32 kind;	      /* enum vcore_sched_act_kind */
	vcs_u64 timeslice_us; /* VCORE_SCHED_ACT_TIMESLICE only */
};

/*
 * One measurement: slot `slot_id` used `busy_ns` of GPU time during the
 * `span_ns` of wall time that this report covers (the reports of a slot
 * cover consecutive spans). The span is explicit because measurements may
 * arrive late and in lumps (NVML-style utilization samples every ~100 ms):
 * a cap slot's allowance accrues with the time its reports cover, not with
 * the host clock, so late reports do not distort the credit. `end_ns` is
 * when the span ended, on the clock of vcore_sched_tick() (0: now): the part
 * of a span that lies before the slot's last share change counts as use but
 * not against the new share (a lagging measurement of a slot that ran free
 * must not turn into debt under its new cap).
 */
struct vcore_sched_report {
	vcs_u32 slot_id;
	vcs_u32 pad;
	vcs_u64 busy_ns;
	vcs_u64 span_ns;
	vcs_u64 end_ns;
};

/*
 * Tunables; vcore_sched_params_default() explains each value. All times ns.
 */
struct vcore_sched_params {
	vcs_u64 period_ns;	     /* cap duty-cycle period */
	vcs_u64 tau_ns;		     /* cap integral time constant */
	vcs_u64 debt_max_ns;	     /* most GPU time carried forward as debt */
	vcs_u64 weight_window_ns;    /* weight correction interval */
	vcs_u32 weight_contended_pm; /* GPU busy (permille) that is contention
				      */
	vcs_u32 ts_min_us;	     /* timeslice clamp */
	vcs_u32 ts_max_us;
	vcs_u32 ts_us_per_share; /* calibrated base map: share -> timeslice */
	vcs_u32 min_phase_ns;	 /* shorter on/off phases are not issued */
};

/*
 * The weight window of a host whose measurements are perfmon samples (both
 * hosts: shim/compute/perfmon.h, kmod/compute_meter.c). A sample names one
 * process per ~200 ms, so a 30/70 split measured over n samples is off by
 * ~sqrt(0.21 / n): 10 points over 4 s, 3.7 over 30 s. The calibrated map
 * alone gave 29.7/70.3 on the H200 (docs/results/compute-h200.md), so a host
 * corrects only on a 30 s window, where the noise is below that error; over
 * the default 500 ms (~2 samples) a correction would follow the noise.
 */
#define VCORE_SCHED_SAMPLED_WEIGHT_WINDOW_NS 30000000000ULL

/* libcuda's own SET_TIMESLICE at context setup (nvidia-rm-abi.md §6.1). */
#define VCORE_SCHED_TS_DEFAULT_US 2048

struct vcore_sched_slot_stats {
	vcs_u32 slot_id;
	vcs_u8 mode;
	vcs_u8 share;
	vcs_u8 gated_off; /* 1 while the slot's channels are disabled */
	vcs_u8 pad;
	vcs_u64 busy_ns;      /* measured GPU time, total */
	vcs_u64 throttled_ns; /* time spent gated off, total */
	vcs_u64 overshoot_ns; /* GPU time measured while gated off, total */
	vcs_u64 debt_ns;      /* GPU time owed now (cap), repaid by gating */
	vcs_u64 debt_max_seen_ns;
	vcs_u32 share_1s_pm;  /* achieved share of wall time, last 1 s */
	vcs_u32 share_10s_pm; /* same over the last 10 s (or since start) */
	vcs_u32 duty_pm;      /* cap: on-fraction of the current period */
	vcs_u32 timeslice_us; /* weight: last timeslice issued (0: none) */
	vcs_u64 gate_actions; /* GATE_OFF + GATE_ON issued */
};

struct vcore_sched_slot {
	vcs_u32 id;
	vcs_u8 used;
	vcs_u8 mode;
	vcs_u8 share;
	vcs_u8 gated_off;
	/* cap */
	vcs_s64 credit_ns;  /* allowance - use; < 0 is debt */
	vcs_u64 changed_ns; /* last share/mode change */
	vcs_u64 period_start_ns;
	vcs_u64 on_ns; /* on-phase length of the current period */
	vcs_u32 duty_pm;
	vcs_u8 ts_dirty; /* weight: TIMESLICE owed */
	vcs_u8 period_valid;
	vcs_u8 pad[2];
	/* weight */
	vcs_u32 corr_q16; /* feedback factor on the base timeslice */
	vcs_u32 ts_issued_us;
	vcs_u64 win_busy_ns; /* busy in the current weight window */
	/* accounting */
	vcs_u64 busy_ns;
	vcs_u64 throttled_ns;
	vcs_u64 overshoot_ns;
	vcs_u64 debt_max_seen_ns;
	vcs_u64 gate_actions;
	vcs_u64 until_ns; /* end of the newest measured span */
	vcs_u64 bucket_busy[VCORE_SCHED_BUCKETS];
};

struct vcore_sched {
	struct vcore_sched_params p;
	struct vcore_sched_slot slots[VCORE_SCHED_MAX_SLOTS];
	vcs_u64 last_ns;
	vcs_u64 start_ns;
	vcs_u64 win_start_ns; /* weight window */
	vcs_u64 bucket_idx;   /* absolute index of the current bucket */
	vcs_u8 started;
	vcs_u8 stopped; /* after vcore_sched_release_all() */
};

/* Fills `p` with the defaults (see the comments in vcore_sched.c). */
void vcore_sched_params_default(struct vcore_sched_params *p);

/* `p` may be NULL for the defaults. Returns 0 or -VCS_EINVAL (bad params). */
int vcore_sched_init(struct vcore_sched *s, const struct vcore_sched_params *p);

/*
 * Adds slot `id` (any value but ~0) with `share` 1..100 and `mode`.
 * Returns 0, -VCS_EEXIST, -VCS_ENOSPC or -VCS_EINVAL. A weight slot's first
 * tick emits its TIMESLICE action; a cap slot starts gated on.
 */
int vcore_sched_slot_add(struct vcore_sched *s, vcs_u32 id, vcs_u32 share,
			 vcs_u32 mode);

/*
 * Changes share and/or mode. Leaving cap mode while gated off emits GATE_ON,
 * leaving weight mode emits TIMESLICE(VCORE_SCHED_TS_DEFAULT_US), into `out`
 * (room for 2 actions); returns the number of actions or
 * -VCS_ENOENT / -VCS_EINVAL.
 */
int vcore_sched_slot_set(struct vcore_sched *s, vcs_u32 id, vcs_u32 share,
			 vcs_u32 mode, struct vcore_sched_action *out);

/*
 * Forgets slot `id`. If it was gated off, writes one GATE_ON to `out` and
 * returns 1 (the host issues it if the TSGs still exist); 0 otherwise,
 * -VCS_ENOENT if unknown.
 */
int vcore_sched_slot_remove(struct vcore_sched *s, vcs_u32 id,
			    struct vcore_sched_action *out);

/* 1 if the host must keep slot `id`'s channels disabled now, else 0. */
int vcore_sched_slot_gated(const struct vcore_sched *s, vcs_u32 id);

/*
 * Advances the controller to `now_ns`, folding in `nr` reports (unknown slot
 * ids are ignored), and writes at most `max` actions to `out` (give it
 * VCORE_SCHED_MAX_ACTIONS). Returns the number written. `*next_ns` is when
 * the controller next wants to run (the next gate edge); the host may call
 * earlier. Time going backwards is treated as no time passing.
 */
int vcore_sched_tick(struct vcore_sched *s, vcs_u64 now_ns,
		     const struct vcore_sched_report *reports, vcs_u32 nr,
		     struct vcore_sched_action *out, vcs_u32 max,
		     vcs_u64 *next_ns);

/*
 * Gates every gated-off slot back on (teardown, controller thread exit):
 * writes GATE_ON actions to `out` and returns how many. The controller then
 * stops: later ticks emit nothing (vcore_sched_init() starts it again).
 */
int vcore_sched_release_all(struct vcore_sched *s,
			    struct vcore_sched_action *out, vcs_u32 max);

/* Copies slot `id`'s counters. Returns 0 or -VCS_ENOENT. */
int vcore_sched_get_stats(const struct vcore_sched *s, vcs_u32 id,
			  struct vcore_sched_slot_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* VCORE_SCHED_H */
