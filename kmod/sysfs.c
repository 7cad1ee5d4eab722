// SPDX-License-Identifier: GPL-2.0
/*
 * Per-slot configuration and counters under /sys/class/vgpu/<node>/, read-only
 * (changes go through netlink, admin-only). The settings' files come from the
 * slot schema's rows, as netlink's attributes do. Every node of a slot shows
 * the same slot. The device is destroyed before the slot can be freed
 * (vgpu_slot_destroy), and sysfs drains active readers on removal, so drvdata
 * is valid in every show().
 */
#include <linux/device.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "compute.h"
#include "control.h"
#include "core/vcore.h"
#include "core/sched/vcore_sched.h"

static struct vgpu_slot *vgpu_dev_slot(struct device *dev)
{
	return dev_get_drvdata(dev);
}

static ssize_t slot_id_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", vgpu_dev_slot(dev)->id);
}
static DEVICE_ATTR_RO(slot_id);

static ssize_t gpu_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	return sysfs_emit(buf, "%u\n", vgpu_dev_slot(dev)->gpu);
}
static DEVICE_ATTR_RO(gpu);

static ssize_t name_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct vgpu_slot *slot = vgpu_dev_slot(dev);
	ssize_t n;

	mutex_lock(&slot->lock);
	n = sysfs_emit(buf, "%s\n", slot->cfg.name);
	mutex_unlock(&slot->lock);
	return n;
}
static DEVICE_ATTR_RO(name);

/*
 * One file per slot setting, named as its schema row (uapi/vgpu_slot_fields.h):
 * a number in decimal, an enum by its value's name (what the slot config file,
 * the JSON and the command lines say; "default" for 0).
 */
#define VGPU_SETTING_SHOW(field, fmt, expr)                                    \
	static ssize_t field##_show(struct device *dev,                        \
				    struct device_attribute *attr, char *buf)  \
	{                                                                      \
		struct vgpu_slot *slot = vgpu_dev_slot(dev);                   \
		ssize_t n;                                                     \
                                                                               \
		mutex_lock(&slot->lock);                                       \
		n = sysfs_emit(buf, fmt "\n", expr);                           \
		mutex_unlock(&slot->lock);                                     \
		return n;                                                      \
	}                                                                      \
	static DEVICE_ATTR_RO(field);

#define VGPU_NUMBER_SETTING_ATTR(field, wire, unit, def, lo, hi, attr, env)    \
	VGPU_SETTING_SHOW(field, "%llu", (unsigned long long)slot->cfg.field)
VGPU_SLOT_NUMBERS(VGPU_NUMBER_SETTING_ATTR)
#undef VGPU_NUMBER_SETTING_ATTR

#define VGPU_SETTING_VALUE_CASE(value, text)                                   \
	case value:                                                            \
		return text;
#define VGPU_ENUM_SETTING_ATTR(field, cxx_type, values, def, sentinel, attr,   \
			       env)                                            \
	static const char *field##_value_name(u32 v)                           \
	{                                                                      \
		switch (v) {                                                   \
			values(VGPU_SETTING_VALUE_CASE) case 0                 \
			    : return VGPU_SLOT_ENUM_DEFAULT_NAME;              \
		}                                                              \
		return "unset";                                                \
	}                                                                      \
	VGPU_SETTING_SHOW(field, "%s", field##_value_name(slot->cfg.field))
VGPU_SLOT_ENUMS(VGPU_ENUM_SETTING_ATTR)
#undef VGPU_ENUM_SETTING_ATTR
#undef VGPU_SETTING_VALUE_CASE

static ssize_t open_files_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct vgpu_slot *slot = vgpu_dev_slot(dev);
	ssize_t n;

	mutex_lock(&slot->lock);
	n = sysfs_emit(buf, "%u\n", slot->open_files);
	mutex_unlock(&slot->lock);
	return n;
}
static DEVICE_ATTR_RO(open_files);

static ssize_t pids_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct vgpu_slot *slot = vgpu_dev_slot(dev);
	struct vgpu_proc *p;
	ssize_t n = 0;

	mutex_lock(&slot->lock);
	list_for_each_entry(p, &slot->procs, node) n +=
		sysfs_emit_at(buf, n, "%d\n", p->tgid);
	mutex_unlock(&slot->lock);
	return n;
}
static DEVICE_ATTR_RO(pids);

static struct attribute *vgpu_slot_attrs[] = {
	&dev_attr_slot_id.attr,
	&dev_attr_gpu.attr,
	&dev_attr_name.attr,
#define VGPU_SETTING_ATTR_PTR(field, ...) &dev_attr_##field.attr,
	VGPU_SLOT_NUMBERS(VGPU_SETTING_ATTR_PTR)
			VGPU_SLOT_ENUMS(VGPU_SETTING_ATTR_PTR)
#undef VGPU_SETTING_ATTR_PTR
		& dev_attr_open_files.attr,
	&dev_attr_pids.attr,
	NULL,
};

/*
 * What shows one tenant's processes and usage to another is root-only: a
 * container sees the host's /sys/class/vgpu read-only, every slot's nodes
 * included (issue 17, F11.4). The slot's configuration stays world-readable.
 */
static umode_t vgpu_root_only(struct kobject *kobj, struct attribute *attr,
			      int n)
{
	return 0400;
}

static umode_t vgpu_slot_attr_mode(struct kobject *kobj, struct attribute *attr,
				   int n)
{
	if (attr == &dev_attr_name.attr || attr == &dev_attr_pids.attr ||
	    attr == &dev_attr_open_files.attr)
		return 0400;
	return attr->mode;
}

static const struct attribute_group vgpu_slot_group = {
	.attrs = vgpu_slot_attrs,
	.is_visible = vgpu_slot_attr_mode,
};

/* stats/: the same counters as VGPU_A_SLOT_STATS, one value per file. */
static ssize_t mem_charged_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  vgpu_filter_charged(vgpu_dev_slot(dev)->filter));
}
static DEVICE_ATTR_RO(mem_charged);

static ssize_t mem_peak_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  vgpu_filter_peak(vgpu_dev_slot(dev)->filter));
}
static DEVICE_ATTR_RO(mem_peak);

#define VGPU_CORE_STAT_ATTR(field)                                             \
	static ssize_t field##_show(struct device *dev,                        \
				    struct device_attribute *attr, char *buf)  \
	{                                                                      \
		struct vcore_stats *cs = kzalloc(sizeof(*cs), GFP_KERNEL);     \
		ssize_t n;                                                     \
                                                                               \
		if (!cs)                                                       \
			return -ENOMEM;                                        \
		vgpu_filter_stats(vgpu_dev_slot(dev)->filter, cs);             \
		n = sysfs_emit(buf, "%llu\n", (unsigned long long)cs->field);  \
		kfree(cs);                                                     \
		return n;                                                      \
	}                                                                      \
	static DEVICE_ATTR_RO(field)

VGPU_CORE_STAT_ATTR(ioctls);
VGPU_CORE_STAT_ATTR(denied);
VGPU_CORE_STAT_ATTR(denied_quota);
VGPU_CORE_STAT_ATTR(malformed);
VGPU_CORE_STAT_ATTR(views_rewritten);
VGPU_CORE_STAT_ATTR(overquota_events);
VGPU_CORE_STAT_ATTR(uvm_mmap_refused);
VGPU_CORE_STAT_ATTR(objects);
VGPU_CORE_STAT_ATTR(clients);
VGPU_CORE_STAT_ATTR(tsgs);
VGPU_CORE_STAT_ATTR(internal_charged_bytes);

#define VGPU_HOST_STAT_ATTR(field, stat)                                       \
	static ssize_t field##_show(struct device *dev,                        \
				    struct device_attribute *attr, char *buf)  \
	{                                                                      \
		return sysfs_emit(                                             \
			buf, "%lld\n",                                         \
			atomic64_read(&vgpu_dev_slot(dev)->stats[stat]));      \
	}                                                                      \
	static DEVICE_ATTR_RO(field)

VGPU_HOST_STAT_ATTR(fd_refused, VGPU_STAT_FD_REFUSED);
VGPU_HOST_STAT_ATTR(opens, VGPU_STAT_OPENS);
VGPU_HOST_STAT_ATTR(mmaps, VGPU_STAT_MMAPS);
VGPU_HOST_STAT_ATTR(attaches, VGPU_STAT_ATTACHES);

/* The compute controller's counters (0 while the slot is not controlled). */
#define VGPU_COMPUTE_STAT_ATTR(name, expr)                                     \
	static ssize_t name##_show(struct device *dev,                         \
				   struct device_attribute *attr, char *buf)   \
	{                                                                      \
		struct vcore_sched_slot_stats st;                              \
		struct vgpu_compute_host_stats hs;                             \
                                                                               \
		vgpu_compute_slot_stats(vgpu_dev_slot(dev), &st, &hs);         \
		return sysfs_emit(buf, "%llu\n", (unsigned long long)(expr));  \
	}                                                                      \
	static DEVICE_ATTR_RO(name)

VGPU_COMPUTE_STAT_ATTR(gpu_busy_ns, st.busy_ns);
VGPU_COMPUTE_STAT_ATTR(throttled_ns, st.throttled_ns);
VGPU_COMPUTE_STAT_ATTR(overshoot_ns, st.overshoot_ns);
VGPU_COMPUTE_STAT_ATTR(debt_ns, st.debt_ns);
VGPU_COMPUTE_STAT_ATTR(share_1s_pm, st.share_1s_pm);
VGPU_COMPUTE_STAT_ATTR(share_10s_pm, st.share_10s_pm);
VGPU_COMPUTE_STAT_ATTR(gate_actions, st.gate_actions);
VGPU_COMPUTE_STAT_ATTR(timeslice_us, st.timeslice_us);
VGPU_COMPUTE_STAT_ATTR(compute_errors, hs.errors);
VGPU_COMPUTE_STAT_ATTR(control_late_ns, hs.late_ns);

static struct attribute *vgpu_stats_attrs[] = {
	&dev_attr_mem_charged.attr,
	&dev_attr_mem_peak.attr,
	&dev_attr_ioctls.attr,
	&dev_attr_denied.attr,
	&dev_attr_denied_quota.attr,
	&dev_attr_malformed.attr,
	&dev_attr_views_rewritten.attr,
	&dev_attr_overquota_events.attr,
	&dev_attr_uvm_mmap_refused.attr,
	&dev_attr_objects.attr,
	&dev_attr_clients.attr,
	&dev_attr_tsgs.attr,
	&dev_attr_internal_charged_bytes.attr,
	&dev_attr_fd_refused.attr,
	&dev_attr_opens.attr,
	&dev_attr_mmaps.attr,
	&dev_attr_attaches.attr,
	&dev_attr_gpu_busy_ns.attr,
	&dev_attr_throttled_ns.attr,
	&dev_attr_overshoot_ns.attr,
	&dev_attr_debt_ns.attr,
	&dev_attr_share_1s_pm.attr,
	&dev_attr_share_10s_pm.attr,
	&dev_attr_gate_actions.attr,
	&dev_attr_timeslice_us.attr,
	&dev_attr_compute_errors.attr,
	&dev_attr_control_late_ns.attr,
	NULL,
};

static const struct attribute_group vgpu_stats_group = {
	.name = "stats",
	.attrs = vgpu_stats_attrs,
	.is_visible = vgpu_root_only,
};

const struct attribute_group *vgpu_node_groups[] = {
	&vgpu_slot_group,
	&vgpu_stats_group,
	NULL,
};
