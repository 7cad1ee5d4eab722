/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * RM control parameter blocks for the share controller's actions, filled the
 * same way by both hosts (vgpu.ko's in-kernel RM client, the shim's ctl fd).
 * Layouts are the 580 SDK's (kmod/core/abi/ctrl.h, nvidia-rm-abi.md §6.2);
 * the sizes must match exactly or RM answers NV_ERR_INVALID_ARGUMENT (§3,
 * NVOS54).
 *
 * Issue order for one slot (compute-control-h200.md, table 1, last row):
 *   gate off: DISABLE_CHANNELS(bDisable=1, bOnlyDisableScheduling=1) on the
 *             subdevice for every channel of the slot's TSGs (64 per call),
 *             then PREEMPT(bWait=1) on each TSG;
 *   gate on:  DISABLE_CHANNELS(bDisable=0) for the same channels.
 * bOnlyDisableScheduling=0 also throttled (1699/s at duty 30 %) but without
 * PREEMPT the onlySched=1 variant stalled the process: never issue a
 * DISABLE without the PREEMPT that follows it.
 */
#ifndef VCORE_SCHED_CTRL_H
#define VCORE_SCHED_CTRL_H

#include "vcore_sched_types.h"
/* The commands and their params: NVA06C_CTRL_CMD_PREEMPT,
 * NVA06C_CTRL_CMD_SET_TIMESLICE, NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS
 * (kmod/core/abi/ctrl.h, the one definition of each). */
#include "../abi/ctrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Fills `p` for `n` (<= NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES)
 * channels of client `hclient`. disable=1 gives the off phase (scheduling
 * only), 0 the on phase. Returns 0 or -VCS_EINVAL.
 */
int vcore_sched_fill_disable(NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS *p,
			     vcs_u32 hclient, const vcs_u32 *hchannels,
			     vcs_u32 n, int disable);

void vcore_sched_fill_preempt(NVA06C_CTRL_PREEMPT_PARAMS *p);

void vcore_sched_fill_timeslice(NVA06C_CTRL_TIMESLICE_PARAMS *p,
				vcs_u64 timeslice_us);

#ifdef __cplusplus
}
#endif

#endif /* VCORE_SCHED_CTRL_H */
