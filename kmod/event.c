// SPDX-License-Identifier: GPL-2.0
/*
 * The control family's event group (event.h): attach/exit of a process, a
 * slot's last file gone, refusals. Sent only while the family is registered
 * (genl.c connects it) and someone listens.
 */
#include <linux/sched.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "event.h"
#include "../uapi/vgpu_genl.h"

/* The registered family, NULL outside vgpu_event_start .. vgpu_event_stop. */
static struct genl_family *vgpu_event_family;

void vgpu_event_start(struct genl_family *family)
{
	WRITE_ONCE(vgpu_event_family, family);
}

void vgpu_event_stop(void)
{
	WRITE_ONCE(vgpu_event_family, NULL);
}

/* A new event, or NULL when it would reach nobody; @family: where it goes. */
static struct sk_buff *vgpu_event_new(u32 slot_id, u32 type,
				      struct genl_family **family, void **hdr)
{
	struct sk_buff *skb;

	*family = READ_ONCE(vgpu_event_family);
	if (!*family || !genl_has_listeners(*family, &init_net, 0))
		return NULL;
	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return NULL;
	*hdr = genlmsg_put(skb, 0, 0, *family, 0, VGPU_CMD_EVENT);
	if (!*hdr || nla_put_u32(skb, VGPU_A_EVENT_TYPE, type) ||
	    nla_put_u32(skb, VGPU_A_SLOT_ID, slot_id)) {
		nlmsg_free(skb);
		return NULL;
	}
	return skb;
}

/* Sends @skb, or drops it when its attributes did not fit (@full). */
static void vgpu_event_send(struct genl_family *family, struct sk_buff *skb,
			    void *hdr, bool full)
{
	if (full) {
		nlmsg_free(skb);
		return;
	}
	genlmsg_end(skb, hdr);
	genlmsg_multicast(family, skb, 0, 0, GFP_KERNEL);
}

void vgpu_event_proc(u32 slot_id, u32 type, pid_t pid, const char *comm)
{
	struct genl_family *family;
	struct sk_buff *skb;
	void *hdr;
	bool full;

	skb = vgpu_event_new(slot_id, type, &family, &hdr);
	if (!skb)
		return;
	full = (pid && nla_put_u32(skb, VGPU_A_EVENT_PID, pid)) ||
	       (comm && nla_put_string(skb, VGPU_A_EVENT_COMM, comm));
	vgpu_event_send(family, skb, hdr, full);
}

void vgpu_event_refusal(u32 slot_id, u64 mem_quota, u32 type, u64 size,
			u64 charged, const char *detail)
{
	struct genl_family *family;
	struct sk_buff *skb;
	void *hdr;
	bool full;

	skb = vgpu_event_new(slot_id, type, &family, &hdr);
	if (!skb)
		return;
	full = nla_put_u32(skb, VGPU_A_EVENT_PID, task_tgid_nr(current)) ||
	       nla_put_string(skb, VGPU_A_EVENT_COMM, current->comm) ||
	       (size &&
		nla_put_u64_64bit(skb, VGPU_A_EVENT_SIZE, size, VGPU_A_PAD)) ||
	       nla_put_u64_64bit(skb, VGPU_A_EVENT_CHARGED, charged,
				 VGPU_A_PAD) ||
	       nla_put_u64_64bit(skb, VGPU_A_SLOT_MEM_QUOTA, mem_quota,
				 VGPU_A_PAD) ||
	       nla_put_string(skb, VGPU_A_EVENT_DETAIL, detail);
	vgpu_event_send(family, skb, hdr, full);
}
