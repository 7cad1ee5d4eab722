/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control family's event group (VGPU_GENL_MCGRP_EVENTS), as the parts
 * below the control plane see it: they report attach/exit of a process, a
 * slot's last file gone and refusals here; the control plane (genl.c)
 * connects the group to its registered family while it is registered. Until
 * then, and when nobody listens, a report sends nothing.
 */
#ifndef VGPU_KMOD_EVENT_H
#define VGPU_KMOD_EVENT_H

#include <linux/types.h>

struct genl_family;

void vgpu_event_start(struct genl_family *family);
void vgpu_event_stop(void);
void vgpu_event_proc(u32 slot_id, u32 type, pid_t pid, const char *comm);
/* The current task's refusal: @mem_quota and @charged are the slot's. */
void vgpu_event_refusal(u32 slot_id, u64 mem_quota, u32 type, u64 size,
			u64 charged, const char *detail);

#endif /* VGPU_KMOD_EVENT_H */
