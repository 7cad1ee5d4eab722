// SPDX-License-Identifier: GPL-2.0
/*
 * A slot as the control family carries it: its settings read from requests
 * and a slot written into replies (VGPU_CMD_SLOT_GET lists the attributes).
 * The settings are the schema's rows (uapi/vgpu_slot_fields.h), walked here
 * and in genl.c's policy, never spelled one by one.
 */
#include <linux/slab.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "compute.h"
#include "control.h"
#include "core/vcore.h"
#include "core/sched/vcore_sched.h"

/* ---- settings -------------------------------------------------------- */

static int vgpu_nl_put_setting_u32(struct sk_buff *skb, int attr, u32 v)
{
	return nla_put_u32(skb, attr, v);
}

static int vgpu_nl_put_setting_u64(struct sk_buff *skb, int attr, u64 v)
{
	return nla_put_u64_64bit(skb, attr, v, VGPU_A_PAD);
}

/* Every setting of @cfg, as its row's attribute and wire type. */
static int vgpu_nl_put_settings(struct sk_buff *skb,
				const struct vgpu_slot_config *cfg)
{
#define VGPU_NL_PUT_NUMBER(field, wire, unit, def, lo, hi, attr, env)          \
	vgpu_nl_put_setting_##wire(skb, attr, cfg->field) ||
#define VGPU_NL_PUT_ENUM(field, cxx_type, values, def, sentinel, attr, env)    \
	vgpu_nl_put_setting_u32(skb, attr, cfg->field) ||
	if (VGPU_SLOT_NUMBERS(VGPU_NL_PUT_NUMBER)
		    VGPU_SLOT_ENUMS(VGPU_NL_PUT_ENUM) 0)
		return -EMSGSIZE;
#undef VGPU_NL_PUT_ENUM
#undef VGPU_NL_PUT_NUMBER
	return 0;
}

u32 vgpu_nl_parse_config(struct genl_info *info, struct vgpu_slot_config *cfg)
{
	struct nlattr **a = info->attrs;
	u32 mask = 0;

	if (a[VGPU_A_SLOT_NAME]) {
		nla_strscpy(cfg->name, a[VGPU_A_SLOT_NAME], sizeof(cfg->name));
		mask |= VGPU_CFG(name);
	}
	/* The policy already checked each value against its row's range. */
#define VGPU_NL_GET_NUMBER(field, wire, unit, def, lo, hi, attr, env)          \
	if (a[attr]) {                                                         \
		cfg->field = nla_get_##wire(a[attr]);                          \
		mask |= VGPU_CFG(field);                                       \
	}
#define VGPU_NL_GET_ENUM(field, cxx_type, values, def, sentinel, attr, env)    \
	if (a[attr]) {                                                         \
		cfg->field = nla_get_u32(a[attr]);                             \
		mask |= VGPU_CFG(field);                                       \
	}
	VGPU_SLOT_NUMBERS(VGPU_NL_GET_NUMBER)
	VGPU_SLOT_ENUMS(VGPU_NL_GET_ENUM)
#undef VGPU_NL_GET_ENUM
#undef VGPU_NL_GET_NUMBER
	return mask;
}

/* ---- a slot ---------------------------------------------------------- */

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
	vgpu_filter_stats(slot->filter, cs);
	unknown = 0;
	for (i = 0; i < cs->unknown_escapes.n; i++)
		unknown += cs->unknown_escapes.count[i];
	for (i = 0; i < cs->unknown_controls.n; i++)
		unknown += cs->unknown_controls.count[i];
	for (i = 0; i < cs->unknown_classes.n; i++)
		unknown += cs->unknown_classes.count[i];

	for (s = 1; s < __VGPU_STAT_MAX; s++)
		v[s] = atomic64_read(&slot->stats[s]);
	v[VGPU_STAT_MEM_CHARGED] = vgpu_filter_charged(slot->filter);
	v[VGPU_STAT_MEM_PEAK] = vgpu_filter_peak(slot->filter);
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
	    vgpu_nl_put_settings(skb, &slot->cfg) ||
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

int vgpu_nl_put_slot(struct sk_buff *skb, struct vgpu_slot *slot)
{
	int err;

	mutex_lock(&slot->lock);
	err = vgpu_nl_put_slot_locked(skb, slot);
	mutex_unlock(&slot->lock);
	if (!err)
		err = vgpu_nl_put_stats(skb, slot);
	return err;
}
