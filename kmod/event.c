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

/* One event being built. */
struct vgpu_event_msg {
	struct genl_family *family;
	struct sk_buff *skb;
	void *hdr;
};

/* false when the event would reach nobody (or memory ran out). */
static bool vgpu_event_begin(struct vgpu_event_msg *ev, u32 slot_id, u32 type)
{
	ev->family = READ_ONCE(vgpu_event_family);
	if (!ev->family || !genl_has_listeners(ev->family, &init_net, 0))
		return false;
	ev->skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!ev->skb)
		return false;
	ev->hdr = genlmsg_put(ev->skb, 0, 0, ev->family, 0, VGPU_CMD_EVENT);
	if (!ev->hdr || nla_put_u32(ev->skb, VGPU_A_EVENT_TYPE, type) ||
	    nla_put_u32(ev->skb, VGPU_A_SLOT_ID, slot_id)) {
		nlmsg_free(ev->skb);
		return false;
	}
	return true;
}

/* Sends the event, or drops it when its attributes did not fit (@full). */
static void vgpu_event_end(struct vgpu_event_msg *ev, bool full)
{
	if (full) {
		nlmsg_free(ev->skb);
		return;
	}
	genlmsg_end(ev->skb, ev->hdr);
	genlmsg_multicast(ev->family, ev->skb, 0, 0, GFP_KERNEL);
}

void vgpu_event_proc(u32 slot_id, u32 type, pid_t pid, const char *comm)
{
	struct vgpu_event_msg ev;
	bool full;

	if (!vgpu_event_begin(&ev, slot_id, type))
		return;
	full = (pid && nla_put_u32(ev.skb, VGPU_A_EVENT_PID, pid)) ||
	       (comm && nla_put_string(ev.skb, VGPU_A_EVENT_COMM, comm));
	vgpu_event_end(&ev, full);
}

void vgpu_event_refusal(u32 slot_id, u64 mem_quota, u32 type, u64 size,
			u64 charged, const char *detail)
{
	struct vgpu_event_msg ev;
	struct sk_buff *skb;
	bool full;

	if (!vgpu_event_begin(&ev, slot_id, type))
		return;
	skb = ev.skb;
	full = nla_put_u32(skb, VGPU_A_EVENT_PID, task_tgid_nr(current)) ||
	       nla_put_string(skb, VGPU_A_EVENT_COMM, current->comm) ||
	       (size &&
		nla_put_u64_64bit(skb, VGPU_A_EVENT_SIZE, size, VGPU_A_PAD)) ||
	       nla_put_u64_64bit(skb, VGPU_A_EVENT_CHARGED, charged,
				 VGPU_A_PAD) ||
	       nla_put_u64_64bit(skb, VGPU_A_SLOT_MEM_QUOTA, mem_quota,
				 VGPU_A_PAD) ||
	       nla_put_string(skb, VGPU_A_EVENT_DETAIL, detail);
	vgpu_event_end(&ev, full);
}
