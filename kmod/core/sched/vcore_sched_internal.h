/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * What the share controller's files (vcore_sched.c, vcore_sched_cap.c,
 * vcore_sched_weight.c, vcore_sched_stats.c) share. Not part of the host API:
 * hosts include vcore_sched.h only.
 */
#ifndef VCORE_SCHED_INTERNAL_H
#define VCORE_SCHED_INTERNAL_H

#include "vcore_sched.h"

#define VCS_NSEC_PER_MSEC 1000000ULL
#define Q16		  65536U

/* vcore_sched.c: the slot table and the action list. */
void vcs_zero(void *ptr, unsigned long n);
struct vcore_sched_slot *vcs_find(struct vcore_sched *s, vcs_u32 id);
int vcs_gating(const struct vcore_sched_slot *sl);
int vcs_emit(struct vcore_sched_action *out, vcs_u32 max, vcs_u32 *n,
	     vcs_u32 id, vcs_u32 kind, vcs_u64 ts_us);
void vcs_gate(struct vcore_sched_slot *sl, int off,
	      struct vcore_sched_action *out, vcs_u32 max, vcs_u32 *n);

/* vcore_sched_stats.c: the achieved-share bucket ring. */
void vcs_advance_buckets(struct vcore_sched *s, vcs_u64 now);
void vcs_add_busy(struct vcore_sched *s, struct vcore_sched_slot *sl,
		  vcs_u64 start, vcs_u64 end, vcs_u64 busy);

/* vcore_sched_cap.c: the credit integral and the duty cycle. */
void vcs_fold_report(struct vcore_sched *s, const struct vcore_sched_report *r,
		     vcs_u64 now);
vcs_u64 vcs_run_cap(struct vcore_sched *s, struct vcore_sched_slot *sl,
		    vcs_u64 now, struct vcore_sched_action *out, vcs_u32 max,
		    vcs_u32 *n);

/* vcore_sched_weight.c: the timeslice correction. */
void vcs_weight_window(struct vcore_sched *s, vcs_u64 now);
void vcs_run_weight(struct vcore_sched *s, struct vcore_sched_slot *sl,
		    struct vcore_sched_action *out, vcs_u32 max, vcs_u32 *n);

#endif /* VCORE_SCHED_INTERNAL_H */
