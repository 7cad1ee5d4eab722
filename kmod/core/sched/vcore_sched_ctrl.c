// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Control parameter blocks for the share controller (vcore_sched_ctrl.h). */
#include "vcore_sched_ctrl.h"

static void zero(void *ptr, unsigned long n)
{
	unsigned char *c = ptr;

	while (n--)
		*c++ = 0;
}

int vcore_sched_fill_disable(NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS *p,
			     vcs_u32 hclient, const vcs_u32 *hchannels,
			     vcs_u32 n, int disable)
{
	vcs_u32 i;

	if (!n || n > NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES)
		return -VCS_EINVAL;
	zero(p, sizeof(*p));
	p->bDisable = disable ? 1 : 0;
	p->numChannels = n;
	/*
	 * Off: stop scheduling only (the channel state is kept, so the on
	 * phase resumes exactly where it stopped); on: bDisable=0 clears it.
	 */
	p->bOnlyDisableScheduling = disable ? 1 : 0;
	for (i = 0; i < n; i++) {
		p->hClientList[i] = hclient;
		p->hChannelList[i] = hchannels[i];
	}
	return 0;
}

void vcore_sched_fill_preempt(NVA06C_CTRL_PREEMPT_PARAMS *p)
{
	zero(p, sizeof(*p));
	/* Wait for the TSG to be off the GPU: work fetched so far drains. */
	p->bWait = 1;
}

void vcore_sched_fill_timeslice(NVA06C_CTRL_TIMESLICE_PARAMS *p,
				vcs_u64 timeslice_us)
{
	p->timesliceUs = timeslice_us;
}
