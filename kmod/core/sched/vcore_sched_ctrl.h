/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * RM control parameter blocks for the share controller's actions, filled the
 * same way by both hosts (vgpu.ko's in-kernel RM client, the shim's ctl fd).
 * Layouts are the 580 SDK's (nvidia-rm-abi.md §6.2, [C] sizes); the sizes
 * must match exactly or RM answers NV_ERR_INVALID_ARGUMENT (§3, NVOS54).
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

#ifdef __cplusplus
extern "C" {
#endif

/* src/common/sdk/nvidia/inc/ctrl/ctrla06c.h, ctrl2080/ctrl2080fifo.h */
#define VCS_NVA06C_CTRL_CMD_GPFIFO_SCHEDULE	  0xa06c0101U
#define VCS_NVA06C_CTRL_CMD_SET_TIMESLICE	  0xa06c0103U
#define VCS_NVA06C_CTRL_CMD_GET_TIMESLICE	  0xa06c0104U
#define VCS_NVA06C_CTRL_CMD_PREEMPT		  0xa06c0105U
#define VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS 0x2080110bU
/* ctrl2080perf.h: per-process utilization samples (what NVML reads). */
#define VCS_NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2 0x20802096U

#define VCS_NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES 64
#define VCS_DISABLE_CHANNELS_PARAMS_SIZE		  536
#define VCS_PREEMPT_PARAMS_SIZE				  8
#define VCS_TIMESLICE_PARAMS_SIZE			  8

/* NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS (536 B). */
struct vcs_disable_channels_params {
	vcs_u8 bDisable; /* @0 */
	vcs_u8 pad0[3];
	vcs_u32 numChannels;	       /* @4 */
	vcs_u8 bOnlyDisableScheduling; /* @8 */
	vcs_u8 bRewindGpPut;	       /* @9 */
	vcs_u8 pad1[6];
	vcs_u64 pRunlistPreemptEvent; /* @16, must be 0 from user space */
	vcs_u32 hClientList[VCS_NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES];
	vcs_u32 hChannelList[VCS_NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES];
};

/* NVA06C_CTRL_PREEMPT_PARAMS (8 B). */
struct vcs_preempt_params {
	vcs_u8 bWait;	       /* @0 */
	vcs_u8 bManualTimeout; /* @1 */
	vcs_u8 pad[2];
	vcs_u32 timeoutUs; /* @4, max 1 s */
};

/* NVA06C_CTRL_TIMESLICE_PARAMS (8 B). */
struct vcs_timeslice_params {
	vcs_u64 timesliceUs;
};

#ifdef __cplusplus
#define VCS_STATIC_ASSERT static_assert
#else
#define VCS_STATIC_ASSERT _Static_assert
#endif

VCS_STATIC_ASSERT(sizeof(struct vcs_disable_channels_params) ==
			  VCS_DISABLE_CHANNELS_PARAMS_SIZE,
		  "NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS is 536 bytes");
VCS_STATIC_ASSERT(__builtin_offsetof(struct vcs_disable_channels_params,
				     hChannelList) == 280,
		  "hChannelList at 280");
VCS_STATIC_ASSERT(sizeof(struct vcs_preempt_params) == 8, "PREEMPT params");
VCS_STATIC_ASSERT(sizeof(struct vcs_timeslice_params) == 8, "TIMESLICE params");

/*
 * Fills `p` for `n` (<= 64) channels of client `hclient`. disable=1 gives
 * the off phase (scheduling only), 0 the on phase. Returns 0 or -VCS_EINVAL.
 */
int vcore_sched_fill_disable(struct vcs_disable_channels_params *p,
			     vcs_u32 hclient, const vcs_u32 *hchannels,
			     vcs_u32 n, int disable);

void vcore_sched_fill_preempt(struct vcs_preempt_params *p);

void vcore_sched_fill_timeslice(struct vcs_timeslice_params *p,
				vcs_u64 timeslice_us);

#ifdef __cplusplus
}
#endif

#endif /* VCORE_SCHED_CTRL_H */
