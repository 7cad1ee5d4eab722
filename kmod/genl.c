// SPDX-License-Identifier: GPL-2.0
/*
 * The control family (uapi/vgpu_genl.h is its manual). Three tables, as in
 * wireguard's netlink.c: the attribute policy (malformed input dies before any
 * handler), the ops (mutations admin-only), the family (init namespace only).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "vgpu.h"
#include "core/vcore.h"
#include "core/sched/vcore_sched.h"

static const struct nla_policy vgpu_policy[VGPU_A_MAX + 1] = {
	[VGPU_A_SLOT_ID] = NLA_POLICY_MAX(NLA_U32, VGPU_MAX_SLOTS - 1),
	[VGPU_A_SLOT_GPU] = NLA_POLICY_MAX(NLA_U32, 254),
	[VGPU_A_SLOT_NAME] = {.type = NLA_NUL_STRING,
			      .len = VGPU_SLOT_NAME_LEN - 1},
	[VGPU_A_SLOT_MEM_QUOTA] = {.type = NLA_U64},
	[VGPU_A_SLOT_COMPUTE_SHARE] = NLA_POLICY_RANGE(NLA_U32, 1, 100),
	[VGPU_A_SLOT_COMPUTE_MODE] =
		NLA_POLICY_RANGE(NLA_U32, 1, __VGPU_COMPUTE_MAX - 1),
	[VGPU_A_SLOT_MANAGED_POLICY] =
		NLA_POLICY_RANGE(NLA_U32, 1, __VGPU_MANAGED_MAX - 1),
	[VGPU_A_SLOT_UNKNOWN_POLICY] =
		NLA_POLICY_RANGE(NLA_U32, 1, __VGPU_UNKNOWN_MAX - 1),
	[VGPU_A_SLOT_FLAGS] = NLA_POLICY_MASK(NLA_U32, __VGPU_SLOT_F_ALL),
	[VGPU_A_DEL_FLAGS] = NLA_POLICY_MASK(NLA_U32, __VGPU_DEL_F_ALL),
	/* Output only: refused in requests. */
	[VGPU_A_SLOT_STATE] = {.type = NLA_REJECT},
	[VGPU_A_SLOT_NODE_CTL] = {.type = NLA_REJECT},
	[VGPU_A_SLOT_NODE_DEV] = {.type = NLA_REJECT},
	[VGPU_A_SLOT_NODE_UVM] = {.type = NLA_REJECT},
	[VGPU_A_SLOT_OPEN_FILES] = {.type = NLA_REJECT},
	[VGPU_A_SLOT_PROCS] = {.type = NLA_REJECT},
	[VGPU_A_SLOT_STATS] = {.type = NLA_REJECT},
	[VGPU_A_GENERATION] = {.type = NLA_REJECT},
	[VGPU_A_DRIVER_BOUND] = {.type = NLA_REJECT},
	[VGPU_A_DRIVER_CTL_PATH] = {.type = NLA_REJECT},
	[VGPU_A_DRIVER_DEV_FMT] = {.type = NLA_REJECT},
	[VGPU_A_DRIVER_SLOTS] = {.type = NLA_REJECT},
	[VGPU_A_EVENT_TYPE] = {.type = NLA_REJECT},
	[VGPU_A_EVENT_PID] = {.type = NLA_REJECT},
	[VGPU_A_EVENT_COMM] = {.type = NLA_REJECT},
	[VGPU_A_EVENT_SIZE] = {.type = NLA_REJECT},
	[VGPU_A_EVENT_CHARGED] = {.type = NLA_REJECT},
	[VGPU_A_EVENT_DETAIL] = {.type = NLA_REJECT},
	[VGPU_A_PAD] = {.type = NLA_REJECT},
};

static struct genl_family vgpu_genl_family;
static bool vgpu_genl_live;

/*
 * GENL_ADMIN_PERM checks CAP_NET_ADMIN in the initial user namespace; slots are
 * a node resource, so mutations also need CAP_SYS_ADMIN there
 * (docs/results/kmod-issue4-tamper.md).
 */
static int vgpu_nl_admin(struct sk_buff *skb, struct genl_info *info)
{
	if (netlink_capable(skb, CAP_SYS_ADMIN))
		return 0;
	GENL_SET_ERR_MSG(info, "vgpu: changing slots needs CAP_SYS_ADMIN");
	return -EPERM;
}

static int vgpu_nl_put_stats(struct sk_buff *skb, struct vgpu_slot *slot)
{
	struct vcore_sched_slot_stats cst;
	struct vcore_stats *cs;
	struct nlattr *nest;
	u64 v[__VGPU_STAT_MAX] = {};
	struct vgpu_compute_host_stats hs;
	u64 unknown;
	int s, i;

	cs = kzalloc(sizeof(*cs), GFP_KERNEL);
	if (!cs)
		return -ENOMEM;
	vgpu_filter_stats(slot, cs);
	unknown = 0;
	for (i = 0; i < cs->unknown_escapes.n; i++)
		unknown += cs->unknown_escapes.count[i];
	for (i = 0; i < cs->unknown_controls.n; i++)
		unknown += cs->unknown_controls.count[i];
	for (i = 0; i < cs->unknown_classes.n; i++)
		unknown += cs->unknown_classes.count[i];

	for (s = 1; s < __VGPU_STAT_MAX; s++)
		v[s] = atomic64_read(&slot->stats[s]);
	v[VGPU_STAT_MEM_CHARGED] = vgpu_filter_charged(slot);
	v[VGPU_STAT_MEM_PEAK] = vgpu_filter_peak(slot);
	v[VGPU_STAT_MEM_DENIALS] = cs->denied_quota;
	v[VGPU_STAT_IOCTLS] = cs->ioctls;
	v[VGPU_STAT_IOCTL_REFUSED] = cs->denied + v[VGPU_STAT_FD_REFUSED];
	v[VGPU_STAT_UNKNOWN_IOCTLS] = unknown;
	v[VGPU_STAT_MANAGED_DENIALS] = cs->uvm_mmap_refused;
	v[VGPU_STAT_VIEWS_REWRITTEN] = cs->views_rewritten;
	v[VGPU_STAT_OVERQUOTA] = cs->overquota_events;
	v[VGPU_STAT_MALFORMED] = cs->malformed;
	v[VGPU_STAT_OBJECTS] = cs->objects;
	v[VGPU_STAT_CLIENTS] = cs->clients;
	v[VGPU_STAT_TSGS] = cs->tsgs;
	kfree(cs);
	if (vgpu_compute_slot_stats(slot, &cst, &hs)) {
		v[VGPU_STAT_GPU_BUSY_NS] = cst.busy_ns;
		v[VGPU_STAT_THROTTLED_NS] = cst.throttled_ns;
		v[VGPU_STAT_OVERSHOOT_NS] = cst.overshoot_ns;
		v[VGPU_STAT_DEBT_NS] = cst.debt_ns;
		v[VGPU_STAT_SHARE_1S_PM] = cst.share_1s_pm;
		v[VGPU_STAT_SHARE_10S_PM] = cst.share_10s_pm;
		v[VGPU_STAT_GATE_ACTIONS] = cst.gate_actions;
		v[VGPU_STAT_TIMESLICE_US] = cst.timeslice_us;
		v[VGPU_STAT_COMPUTE_ERRORS] = hs.errors;
		v[VGPU_STAT_CONTROL_LATE_NS] = hs.late_ns;
	}

	nest = nla_nest_start(skb, VGPU_A_SLOT_STATS);
	if (!nest)
		return -EMSGSIZE;
	for (s = 1; s < __VGPU_STAT_MAX; s++) {
		if (s == VGPU_STAT_PAD)
			continue;
		if (nla_put_u64_64bit(skb, s, v[s], VGPU_STAT_PAD)) {
			nla_nest_cancel(skb, nest);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int vgpu_nl_put_node(struct sk_buff *skb, struct vgpu_slot *slot,
			    enum vgpu_node_kind kind, int attr)
{
	char name[32];

	if (!slot->real[kind].dentry)
		return 0;
	snprintf(name, sizeof(name), vgpu_node_name_fmt(kind), slot->id);
	return nla_put_string(skb, attr, name);
}

static int vgpu_nl_put_slot_locked(struct sk_buff *skb, struct vgpu_slot *slot)
{
	struct vgpu_proc *p;
	struct nlattr *procs;

	lockdep_assert_held(&slot->lock);
	if (nla_put_u32(skb, VGPU_A_SLOT_ID, slot->id) ||
	    nla_put_u32(skb, VGPU_A_SLOT_GPU, slot->gpu) ||
	    nla_put_string(skb, VGPU_A_SLOT_NAME, slot->cfg.name) ||
	    nla_put_u64_64bit(skb, VGPU_A_SLOT_MEM_QUOTA, slot->cfg.mem_quota,
			      VGPU_A_PAD) ||
	    nla_put_u32(skb, VGPU_A_SLOT_COMPUTE_SHARE,
			slot->cfg.compute_share) ||
	    nla_put_u32(skb, VGPU_A_SLOT_COMPUTE_MODE,
			slot->cfg.compute_mode ?: VGPU_COMPUTE_CAP) ||
	    nla_put_u32(skb, VGPU_A_SLOT_MANAGED_POLICY,
			slot->cfg.managed_policy) ||
	    nla_put_u32(skb, VGPU_A_SLOT_UNKNOWN_POLICY,
			slot->cfg.unknown_policy) ||
	    nla_put_u32(skb, VGPU_A_SLOT_FLAGS, slot->flags) ||
	    nla_put_u32(skb, VGPU_A_SLOT_STATE, slot->state) ||
	    nla_put_u32(skb, VGPU_A_SLOT_OPEN_FILES, slot->open_files) ||
	    vgpu_nl_put_node(skb, slot, VGPU_NODE_CTL, VGPU_A_SLOT_NODE_CTL) ||
	    vgpu_nl_put_node(skb, slot, VGPU_NODE_DEV, VGPU_A_SLOT_NODE_DEV) ||
	    vgpu_nl_put_node(skb, slot, VGPU_NODE_UVM, VGPU_A_SLOT_NODE_UVM))
		return -EMSGSIZE;
	procs = nla_nest_start(skb, VGPU_A_SLOT_PROCS);
	if (!procs)
		return -EMSGSIZE;
	list_for_each_entry(p, &slot->procs, node)
	{
		if (nla_put_u32(skb, VGPU_A_PROC_PID, p->tgid)) {
			nla_nest_cancel(skb, procs);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(skb, procs);
	return 0;
}

static int vgpu_nl_put_slot(struct sk_buff *skb, struct vgpu_slot *slot)
{
	int err;

	mutex_lock(&slot->lock);
	err = vgpu_nl_put_slot_locked(skb, slot);
	mutex_unlock(&slot->lock);
	if (!err)
		err = vgpu_nl_put_stats(skb, slot);
	return err;
}

/* Replies with one slot message (cmd @cmd) to the requester. */
static int vgpu_nl_reply_slot(struct genl_info *info, u8 cmd, u32 id)
{
	struct vgpu_slot *slot;
	struct sk_buff *skb;
	void *hdr;
	int err;

	slot = vgpu_slot_lookup(id); /* pairs with the put below */
	if (!slot) {
		GENL_SET_ERR_MSG(info, "vgpu: no such slot");
		return -ENOENT;
	}
	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	err = -ENOMEM;
	if (!skb)
		goto out_put;
	hdr = genlmsg_put_reply(skb, info, &vgpu_genl_family, 0, cmd);
	err = -EMSGSIZE;
	if (!hdr)
		goto out_free;
	err = nla_put_u32(skb, VGPU_A_GENERATION, vgpu_slots_generation())
		      ?: vgpu_nl_put_slot(skb, slot);
	if (err)
		goto out_free;
	genlmsg_end(skb, hdr);
	vgpu_slot_put(slot);
	return genlmsg_reply(skb, info);

out_free:
	nlmsg_free(skb);
out_put:
	vgpu_slot_put(slot);
	return err;
}

/* Reads the config attributes present in @info into @cfg; returns the
 * VGPU_CFG_* mask. */
static u32 vgpu_nl_parse_config(struct genl_info *info,
				struct vgpu_slot_config *cfg)
{
	struct nlattr **a = info->attrs;
	u32 mask = 0;

	if (a[VGPU_A_SLOT_NAME]) {
		nla_strscpy(cfg->name, a[VGPU_A_SLOT_NAME], sizeof(cfg->name));
		mask |= VGPU_CFG_NAME;
	}
	if (a[VGPU_A_SLOT_MEM_QUOTA]) {
		cfg->mem_quota = nla_get_u64(a[VGPU_A_SLOT_MEM_QUOTA]);
		mask |= VGPU_CFG_QUOTA;
	}
	if (a[VGPU_A_SLOT_COMPUTE_SHARE]) {
		cfg->compute_share = nla_get_u32(a[VGPU_A_SLOT_COMPUTE_SHARE]);
		mask |= VGPU_CFG_SHARE;
	}
	if (a[VGPU_A_SLOT_COMPUTE_MODE]) {
		cfg->compute_mode = nla_get_u32(a[VGPU_A_SLOT_COMPUTE_MODE]);
		mask |= VGPU_CFG_MODE;
	}
	if (a[VGPU_A_SLOT_MANAGED_POLICY]) {
		cfg->managed_policy =
			nla_get_u32(a[VGPU_A_SLOT_MANAGED_POLICY]);
		mask |= VGPU_CFG_MANAGED;
	}
	if (a[VGPU_A_SLOT_UNKNOWN_POLICY]) {
		cfg->unknown_policy =
			nla_get_u32(a[VGPU_A_SLOT_UNKNOWN_POLICY]);
		mask |= VGPU_CFG_UNKNOWN;
	}
	return mask;
}

/*
 * Hands slot @id's share and mode to the compute controller (compute.c).
 * @mode: a new mode to record first (slot.c's update does not know it), or 0.
 */
static int vgpu_nl_compute_apply(struct genl_info *info, u32 id, u32 mode)
{
	struct vgpu_slot *slot = vgpu_slot_lookup(id); /* pairs with put */
	int err;

	if (!slot)
		return -ENOENT;
	if (mode) {
		mutex_lock(&slot->lock);
		slot->cfg.compute_mode = mode;
		mutex_unlock(&slot->lock);
	}
	err = vgpu_compute_slot_apply(slot);
	vgpu_slot_put(slot);
	if (err)
		GENL_SET_ERR_MSG(info, "vgpu: compute share not applied (see "
				       "dmesg)");
	return err;
}

static int vgpu_nl_slot_new(struct sk_buff *skb, struct genl_info *info)
{
	struct vgpu_slot_config cfg = {
		.compute_share = 100,
		.compute_mode = VGPU_COMPUTE_CAP,
		.unknown_policy = VGPU_UNKNOWN_REFUSE,
	};
	u32 mask, flags = 0, id;
	int err;

	err = vgpu_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, VGPU_A_SLOT_GPU))
		return -EINVAL;
	mask = vgpu_nl_parse_config(info, &cfg);
	if (!(mask & VGPU_CFG_MANAGED))
		cfg.managed_policy = cfg.mem_quota
					     ? VGPU_MANAGED_REFUSE
					     : VGPU_MANAGED_ALLOW_UNCOUNTED;
	if (info->attrs[VGPU_A_SLOT_FLAGS])
		flags = nla_get_u32(info->attrs[VGPU_A_SLOT_FLAGS]);
	err = vgpu_slot_create(nla_get_u32(info->attrs[VGPU_A_SLOT_GPU]), flags,
			       &cfg, &id);
	if (err == -ENOSPC)
		GENL_SET_ERR_MSG(info, "vgpu: all slots in use");
	else if (err == -ENOENT || err == -ENODEV)
		GENL_SET_ERR_MSG(info,
				 "vgpu: real driver node missing (see dmesg)");
	else if (err == -EOPNOTSUPP)
		GENL_SET_ERR_MSG(
			info, "vgpu: driver version not supported (see dmesg)");
	if (err)
		return err;
	err = vgpu_nl_compute_apply(info, id, 0);
	if (err) {
		/* No slot without the share it was asked for. */
		vgpu_slot_destroy(id, VGPU_DEL_F_DEFER);
		return err;
	}
	return vgpu_nl_reply_slot(info, VGPU_CMD_SLOT_NEW, id);
}

static int vgpu_nl_slot_set(struct sk_buff *skb, struct genl_info *info)
{
	struct vgpu_slot_config cfg = {};
	u32 id, mask;
	int err;

	err = vgpu_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, VGPU_A_SLOT_ID))
		return -EINVAL;
	if (info->attrs[VGPU_A_SLOT_GPU] || info->attrs[VGPU_A_SLOT_FLAGS]) {
		GENL_SET_ERR_MSG(info,
				 "vgpu: gpu and flags are fixed at creation");
		return -EINVAL;
	}
	id = nla_get_u32(info->attrs[VGPU_A_SLOT_ID]);
	mask = vgpu_nl_parse_config(info, &cfg);
	err = vgpu_slot_update(id, &cfg, mask);
	if (err == -ENOENT)
		GENL_SET_ERR_MSG(info, "vgpu: no such slot");
	if (err)
		return err;
	if (mask & (VGPU_CFG_SHARE | VGPU_CFG_MODE)) {
		err = vgpu_nl_compute_apply(
			info, id, mask & VGPU_CFG_MODE ? cfg.compute_mode : 0);
		if (err)
			return err;
	}
	return vgpu_nl_reply_slot(info, VGPU_CMD_SLOT_SET, id);
}

static int vgpu_nl_slot_del(struct sk_buff *skb, struct genl_info *info)
{
	struct vgpu_slot *slot;
	u32 flags = 0, id;
	int err;

	err = vgpu_nl_admin(skb, info);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, VGPU_A_SLOT_ID))
		return -EINVAL;
	if (info->attrs[VGPU_A_DEL_FLAGS])
		flags = nla_get_u32(info->attrs[VGPU_A_DEL_FLAGS]);
	id = nla_get_u32(info->attrs[VGPU_A_SLOT_ID]);
	slot = vgpu_slot_lookup(id); /* pairs with the put below */
	err = vgpu_slot_destroy(id, flags);
	/*
	 * Off the controller, gates open: a deferred destroy leaves the files
	 * (and so the TSGs) alive, and they must not stay disabled.
	 */
	if (!err && slot)
		vgpu_compute_slot_gone(slot);
	vgpu_slot_put(slot);
	if (err == -EBUSY)
		GENL_SET_ERR_MSG(
			info, "vgpu: slot has open files (use the defer flag)");
	else if (err == -ENOENT)
		GENL_SET_ERR_MSG(info, "vgpu: no such slot");
	return err;
}

static int vgpu_nl_slot_get(struct sk_buff *skb, struct genl_info *info)
{
	if (GENL_REQ_ATTR_CHECK(info, VGPU_A_SLOT_ID))
		return -EINVAL;
	return vgpu_nl_reply_slot(info, VGPU_CMD_SLOT_GET,
				  nla_get_u32(info->attrs[VGPU_A_SLOT_ID]));
}

/* cb->args[0]: the next slot id to emit. Resumes across messages. */
static int vgpu_nl_slot_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	u32 id = cb->args[0];
	struct vgpu_slot *slot;
	int err = 0;

	cb->seq = vgpu_slots_generation();
	while ((slot = vgpu_slot_next(&id))) { /* pairs with the put below */
		void *hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
					cb->nlh->nlmsg_seq, &vgpu_genl_family,
					NLM_F_MULTI, VGPU_CMD_SLOT_GET);

		if (!hdr) {
			vgpu_slot_put(slot);
			break;
		}
		genl_dump_check_consistent(cb, hdr);
		err = nla_put_u32(skb, VGPU_A_GENERATION, cb->seq)
			      ?: vgpu_nl_put_slot(skb, slot);
		vgpu_slot_put(slot);
		if (err) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		id++;
	}
	cb->args[0] = id;
	/* A slot that does not fit an empty message is an error, not an endless
	 * dump. */
	if (err && skb->len == 0)
		return err;
	return skb->len;
}

static int vgpu_nl_driver_get(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg;
	void *hdr;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &vgpu_genl_family, 0,
				VGPU_CMD_DRIVER_GET);
	if (!hdr || nla_put_u8(msg, VGPU_A_DRIVER_BOUND, vgpu_bound()) ||
	    nla_put_string(msg, VGPU_A_DRIVER_CTL_PATH, vgpu_real_ctl_name()) ||
	    nla_put_string(msg, VGPU_A_DRIVER_DEV_FMT, vgpu_real_dev_fmt()) ||
	    nla_put_u32(msg, VGPU_A_DRIVER_SLOTS, vgpu_slots_count()) ||
	    nla_put_u32(msg, VGPU_A_GENERATION, vgpu_slots_generation())) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

static int vgpu_nl_driver_bind(struct sk_buff *skb, struct genl_info *info)
{
	int err = vgpu_nl_admin(skb, info);

	if (err)
		return err;
	mutex_lock(&vgpu_slots_lock);
	err = vgpu_bind_locked();
	mutex_unlock(&vgpu_slots_lock);
	if (err)
		GENL_SET_ERR_MSG(info, "vgpu: real control node not found");
	return err;
}

static const struct genl_ops vgpu_genl_ops[] = {
	{
		.cmd = VGPU_CMD_SLOT_NEW,
		.doit = vgpu_nl_slot_new,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = VGPU_CMD_SLOT_SET,
		.doit = vgpu_nl_slot_set,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = VGPU_CMD_SLOT_DEL,
		.doit = vgpu_nl_slot_del,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = VGPU_CMD_SLOT_GET,
		.doit = vgpu_nl_slot_get,
		.dumpit = vgpu_nl_slot_dump,
	},
	{
		.cmd = VGPU_CMD_DRIVER_GET,
		.doit = vgpu_nl_driver_get,
	},
	{
		.cmd = VGPU_CMD_DRIVER_BIND,
		.doit = vgpu_nl_driver_bind,
		.flags = GENL_ADMIN_PERM,
	},
};

static const struct genl_multicast_group vgpu_mcgrps[] = {
	{.name = VGPU_GENL_MCGRP_EVENTS},
};

static struct genl_family vgpu_genl_family __ro_after_init = {
	.ops = vgpu_genl_ops,
	.n_ops = ARRAY_SIZE(vgpu_genl_ops),
	/* Every op validates strictly (unknown attributes, trailing data). */
	.resv_start_op = VGPU_CMD_MAX + 1,
	.name = VGPU_GENL_NAME,
	.version = VGPU_GENL_VERSION,
	.maxattr = VGPU_A_MAX,
	.policy = vgpu_policy,
	.mcgrps = vgpu_mcgrps,
	.n_mcgrps = ARRAY_SIZE(vgpu_mcgrps),
	.module = THIS_MODULE,
	/* .netnsok unset: the family exists in the initial network namespace
	   only. */
};

/* ---- events ---------------------------------------------------------- */

static struct sk_buff *vgpu_event_new(struct vgpu_slot *slot, u32 type,
				      void **hdr)
{
	struct sk_buff *skb;

	if (!READ_ONCE(vgpu_genl_live) ||
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

/*
 * The compute controller's lifetime rides on the control plane's: it is only
 * configured through netlink, and main.c tears netlink down first and the
 * slots after, which is exactly when the controller must stop (its threads
 * re-open every gate and drop their slot references before the slot table
 * goes).
 */
int vgpu_genl_init(void)
{
	int err = vgpu_compute_init();

	if (err)
		return err;
	err = genl_register_family(&vgpu_genl_family);
	if (err) {
		vgpu_compute_exit();
		return err;
	}
	WRITE_ONCE(vgpu_genl_live, true);
	return 0;
}

void vgpu_genl_exit(void)
{
	WRITE_ONCE(vgpu_genl_live, false);
	genl_unregister_family(&vgpu_genl_family);
	vgpu_compute_exit();
}
