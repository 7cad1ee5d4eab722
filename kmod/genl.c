// SPDX-License-Identifier: GPL-2.0
/*
 * The control family (uapi/vgpu_genl.h is its manual). Three tables, as in
 * wireguard's netlink.c: the attribute policy (malformed input dies before any
 * handler), the ops (mutations admin-only), the family (init namespace only).
 * How a slot's attributes are read and written is genl_slot.c; the event group
 * event.c, connected to the family while it is registered.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "compute.h"
#include "control.h"
#include "event.h"
#include "real.h"

/* A schema row's wire type (uapi/vgpu_slot_fields.h) as its attribute type. */
#define VGPU_NLA_u32 NLA_U32
#define VGPU_NLA_u64 NLA_U64

/*
 * Each number setting's valid range, inclusive, from its schema row. Not const:
 * 6.1's struct nla_policy points at a mutable one (6.12's at a const one).
 */
#define VGPU_NL_NUMBER_RANGE(field, wire, unit, def, lo, hi, attr, env)        \
	static struct netlink_range_validation vgpu_nl_range_##field = {       \
		.min = (lo),                                                   \
		.max = (hi),                                                   \
	};
VGPU_SLOT_NUMBERS(VGPU_NL_NUMBER_RANGE)
#undef VGPU_NL_NUMBER_RANGE

/* A setting's policy: its row's range; an enum's valid values 1 .. max - 1. */
#define VGPU_NL_NUMBER_POLICY(field, wire, unit, def, lo, hi, attr, env)       \
	[attr] = NLA_POLICY_FULL_RANGE(VGPU_NLA_##wire, &vgpu_nl_range_##field),
#define VGPU_NL_ENUM_POLICY(field, cxx_type, values, def, sentinel, attr, env) \
	[attr] = NLA_POLICY_RANGE(NLA_U32, 1, (sentinel)-1),

static const struct nla_policy vgpu_policy[VGPU_A_MAX + 1] = {
	[VGPU_A_SLOT_ID] = NLA_POLICY_MAX(NLA_U32, VGPU_MAX_SLOTS - 1),
	[VGPU_A_SLOT_GPU] = NLA_POLICY_MAX(NLA_U32, 254),
	[VGPU_A_SLOT_NAME] = {.type = NLA_NUL_STRING,
			      .len = VGPU_SLOT_NAME_LEN - 1},
	VGPU_SLOT_NUMBERS(VGPU_NL_NUMBER_POLICY)
		VGPU_SLOT_ENUMS(VGPU_NL_ENUM_POLICY)[VGPU_A_SLOT_FLAGS] =
			NLA_POLICY_MASK(NLA_U32, __VGPU_SLOT_F_ALL),
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
#undef VGPU_NL_ENUM_POLICY
#undef VGPU_NL_NUMBER_POLICY

static struct genl_family vgpu_genl_family __ro_after_init;

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

/* A change of slots: admin-only, with its required attribute @attr. */
static int vgpu_nl_change(struct sk_buff *skb, struct genl_info *info, int attr)
{
	int err = vgpu_nl_admin(skb, info);

	if (err)
		return err;
	return GENL_REQ_ATTR_CHECK(info, attr) ? -EINVAL : 0;
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

/* Hands slot @id's share and mode to the compute controller (compute.c). */
static int vgpu_nl_compute_apply(struct genl_info *info, u32 id)
{
	struct vgpu_slot *slot = vgpu_slot_lookup(id); /* pairs with put */
	int err;

	if (!slot)
		return -ENOENT;
	err = vgpu_compute_slot_apply(slot);
	vgpu_slot_put(slot);
	if (err)
		GENL_SET_ERR_MSG(info, "vgpu: compute share not applied (see "
				       "dmesg)");
	return err;
}

static int vgpu_nl_slot_new(struct sk_buff *skb, struct genl_info *info)
{
	/* Every setting not given takes its schema row's default. */
	struct vgpu_slot_config cfg = {
#define VGPU_CFG_DEFAULT(field, type, unit_or_values, def, ...) .field = (def),
		VGPU_SLOT_NUMBERS(VGPU_CFG_DEFAULT)
			VGPU_SLOT_ENUMS(VGPU_CFG_DEFAULT)
#undef VGPU_CFG_DEFAULT
	};
	u32 mask, flags = 0, id;
	int err;

	err = vgpu_nl_change(skb, info, VGPU_A_SLOT_GPU);
	if (err)
		return err;
	mask = vgpu_nl_parse_config(info, &cfg);
	/* Managed memory's "default" is decided once, at creation. */
	if (!(mask & VGPU_CFG(managed_policy)))
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
	err = vgpu_nl_compute_apply(info, id);
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

	err = vgpu_nl_change(skb, info, VGPU_A_SLOT_ID);
	if (err)
		return err;
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
	if (mask & (VGPU_CFG(compute_share) | VGPU_CFG(compute_mode))) {
		err = vgpu_nl_compute_apply(info, id);
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

	err = vgpu_nl_change(skb, info, VGPU_A_SLOT_ID);
	if (err)
		return err;
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
	if (!hdr || nla_put_u8(msg, VGPU_A_DRIVER_BOUND, vgpu_real_bound()) ||
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
	err = vgpu_real_bind();
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
		/* Every slot's pids and usage: admin-only (issue 17, F11.4). */
		.cmd = VGPU_CMD_SLOT_GET,
		.doit = vgpu_nl_slot_get,
		.dumpit = vgpu_nl_slot_dump,
		.flags = GENL_ADMIN_PERM,
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
	{.name = VGPU_GENL_MCGRP_EVENTS, .flags = GENL_MCAST_CAP_NET_ADMIN},
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

/*
 * The family's events (event.h) are connected while it is registered: the
 * parts below report into the group without knowing the family.
 */
int vgpu_genl_init(void)
{
	int err = genl_register_family(&vgpu_genl_family);

	if (err)
		return err;
	vgpu_event_start(&vgpu_genl_family);
	return 0;
}

void vgpu_genl_exit(void)
{
	vgpu_event_stop();
	genl_unregister_family(&vgpu_genl_family);
}
