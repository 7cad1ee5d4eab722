// SPDX-License-Identifier: GPL-2.0
/*
 * The control family's event group (VGPU_GENL_MCGRP_EVENTS): attach/exit of a
 * process, a slot's last file gone, refusals. Sent only while the family is
 * registered and someone listens.
 */
#include <linux/sched.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "genl.h"

static struct sk_buff *vgpu_event_new(struct vgpu_slot *slot, u32 type,
				      void **hdr)
{
	struct sk_buff *skb;

	if (!vgpu_genl_is_live() ||
	    !genl_has_listeners(&vgpu_genl_family, &init_net, 0))
		return NULL;
	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return NULL;
	*hdr = genlmsg_put(skb, 0, 0, &vgpu_genl_family, 0, VGPU_CMD_EVENT);
	if (!*hdr || nla_put_u32(skb, VGPU_A_EVENT_TYPE, type) ||
	    nla_put_u32(skb, VGPU_A_SLOT_ID, slot->id)) {
		nlmsg_free(skb);
		return NULL;
	}
	return skb;
}

static void vgpu_event_send(struct sk_buff *skb, void *hdr)
{
	genlmsg_end(skb, hdr);
	genlmsg_multicast(&vgpu_genl_family, skb, 0, 0, GFP_KERNEL);
}

void vgpu_event_proc(struct vgpu_slot *slot, u32 type, pid_t pid,
		     const char *comm)
{
	struct sk_buff *skb;
	void *hdr;

	skb = vgpu_event_new(slot, type, &hdr);
	if (!skb)
		return;
	if ((pid && nla_put_u32(skb, VGPU_A_EVENT_PID, pid)) ||
	    (comm && nla_put_string(skb, VGPU_A_EVENT_COMM, comm))) {
		nlmsg_free(skb);
		return;
	}
	vgpu_event_send(skb, hdr);
}

void vgpu_event_refusal(struct vgpu_slot *slot, u32 type, u64 size, u64 charged,
			const char *detail)
{
	struct sk_buff *skb;
	void *hdr;

	skb = vgpu_event_new(slot, type, &hdr);
	if (!skb)
		return;
	if (nla_put_u32(skb, VGPU_A_EVENT_PID, task_tgid_nr(current)) ||
	    nla_put_string(skb, VGPU_A_EVENT_COMM, current->comm) ||
	    (size &&
	     nla_put_u64_64bit(skb, VGPU_A_EVENT_SIZE, size, VGPU_A_PAD)) ||
	    nla_put_u64_64bit(skb, VGPU_A_EVENT_CHARGED, charged, VGPU_A_PAD) ||
	    nla_put_u64_64bit(skb, VGPU_A_SLOT_MEM_QUOTA,
			      READ_ONCE(slot->cfg.mem_quota), VGPU_A_PAD) ||
	    nla_put_string(skb, VGPU_A_EVENT_DETAIL, detail)) {
		nlmsg_free(skb);
		return;
	}
	vgpu_event_send(skb, hdr);
}
