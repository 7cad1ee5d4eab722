// SPDX-License-Identifier: GPL-2.0
/*
 * The filter core's slot and file records (core_host.h): a slot's record made
 * from its settings and the driver's version, kept in step with its settings,
 * and read back for its counters. The memory charge is the core's own ledger
 * (vcore.h: in the kernel every process of a slot shares one core slot).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/kernel_read_file.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "core_host.h"
#include "driver_query.h"

static char *driver_version;
module_param(driver_version, charp, 0444);
MODULE_PARM_DESC(driver_version,
		 "Real driver version (default: read from version_file)");

static char *version_file = "/sys/module/nvidia/version";
module_param(version_file, charp, 0444);
MODULE_PARM_DESC(version_file, "Where the real driver's version is read");

static bool allow_unknown_driver;
module_param(allow_unknown_driver, bool, 0444);
MODULE_PARM_DESC(allow_unknown_driver, "Use the newest ABI tables for a driver "
				       "version the core does not know");

/*
 * Driver system memory (NV01_MEMORY_SYSTEM) one slot may hold, read when a slot
 * is created (issue 17, F10; the default and why: core/vcore.h). 0 = unlimited.
 */
static unsigned int slot_sysmem_mib = VCORE_SLOT_SYSMEM_DEFAULT_MIB;
module_param(slot_sysmem_mib, uint, 0644);
MODULE_PARM_DESC(slot_sysmem_mib,
		 "Driver system memory per slot in MiB, taken at slot creation "
		 "(0: unlimited)");

static char vgpu_version[VCORE_VERSION_MAX];

/* The version the core's tables are chosen by: the parameter, else the driver's
 * sysfs. */
static void vgpu_read_driver_version(void)
{
	size_t fsize = 0;
	void *buf = NULL;
	ssize_t n;

	if (driver_version && *driver_version) {
		strscpy(vgpu_version, driver_version, sizeof(vgpu_version));
		return;
	}
	n = kernel_read_file_from_path_initns(version_file, 0, &buf,
					      VCORE_VERSION_MAX - 1, &fsize,
					      READING_UNKNOWN);
	if (n <= 0) {
		vgpu_version[0] = '\0';
		return;
	}
	n = min_t(ssize_t, n, VCORE_VERSION_MAX - 1);
	memcpy(vgpu_version, buf, n);
	vgpu_version[n] = '\0';
	strim(vgpu_version);
	vfree(buf);
}

static void vgpu_fill_config(u32 id, u32 gpu_id,
			     const struct vgpu_slot_config *cfg,
			     struct vcore_slot_config *cc)
{
	memset(cc, 0, sizeof(*cc));
	cc->id = id;
	cc->gpu_id = gpu_id;
	cc->mem_quota_bytes = cfg->mem_quota;
	cc->sysmem_budget_bytes = (u64)READ_ONCE(slot_sysmem_mib) << 20;
	cc->unknown_policy = cfg->unknown_policy == VGPU_UNKNOWN_ALLOW_LOG
				     ? VCORE_UNKNOWN_PERMISSIVE
				     : VCORE_UNKNOWN_STRICT;
	switch (cfg->managed_policy) {
	case VGPU_MANAGED_REFUSE:
		cc->managed_policy = VCORE_MANAGED_REFUSE;
		break;
	case VGPU_MANAGED_ALLOW_UNCOUNTED:
		cc->managed_policy = VCORE_MANAGED_ALLOW_UNCOUNTED;
		break;
	default:
		cc->managed_policy = VCORE_MANAGED_DEFAULT;
		break;
	}
	cc->allow_unknown_driver_version = allow_unknown_driver;
	strscpy(cc->driver_version, vgpu_version, sizeof(cc->driver_version));
}

struct vgpu_filter_slot *
vgpu_filter_slot_new(u32 id, u32 gpu_id, const struct vgpu_slot_config *cfg)
{
	struct vgpu_filter_slot *fs;
	struct vcore_slot_config cc;
	int err = -ENOMEM;

	fs = kzalloc(sizeof(*fs), GFP_KERNEL);
	if (!fs)
		return ERR_PTR(-ENOMEM);
	fs->id = id;
	ratelimit_state_init(&fs->event_rs, 5 * HZ, 20);
	vgpu_read_driver_version();
	vgpu_fill_config(id, gpu_id, cfg, &cc);
	fs->core = vcore_slot_create(&vgpu_host_ops, fs, &cc, NULL, &err);
	if (!fs->core) {
		pr_warn("slot %u: the filter core refused driver version '%s' "
			"(%d)\n",
			id, vgpu_version, err);
		kfree(fs);
		return ERR_PTR(err ? err : -ENOMEM);
	}
	vcore_slot_set_overquota_hook(fs->core, vgpu_overquota_hook);
	vcore_slot_set_client_ops(fs->core, &vgpu_client_ops);
	return fs;
}

void vgpu_filter_slot_config(struct vgpu_filter_slot *fs,
			     const struct vgpu_slot_config *cfg)
{
	struct vcore_slot_config cc;

	/* The core keeps the GPU it was created with (vcore.h, gpu_id). */
	vgpu_fill_config(fs->id, 0, cfg, &cc);
	if (vcore_slot_update_config(fs->core, &cc))
		pr_warn("slot %u: the filter core refused the new config\n",
			fs->id);
}

void vgpu_filter_slot_free(struct vgpu_filter_slot *fs)
{
	if (!fs)
		return;
	vcore_slot_destroy(fs->core);
	kfree(fs);
}

struct vcore_file *vgpu_filter_file_open(struct vgpu_filter_slot *fs,
					 enum vgpu_node_kind kind, void *priv,
					 int *err)
{
	static const enum vcore_file_kind kinds[VGPU_NODE_KINDS] = {
		[VGPU_NODE_CTL] = VCORE_FILE_CTL,
		[VGPU_NODE_DEV] = VCORE_FILE_DEV,
		[VGPU_NODE_UVM] = VCORE_FILE_UVM,
	};

	/* The core's errnos are the kernel's numbers (vcore_types.h). */
	return vcore_file_open_err(fs->core, kinds[kind], priv, err);
}

u64 vgpu_filter_charged(struct vgpu_filter_slot *fs)
{
	return vcore_slot_charged(fs->core);
}

void vgpu_filter_stats(struct vgpu_filter_slot *fs, struct vcore_stats *out)
{
	vcore_slot_get_stats(fs->core, out);
}

/* The highest charge after a settle (what the driver held), not a
 * reservation's. */
u64 vgpu_filter_peak(struct vgpu_filter_slot *fs)
{
	struct vcore_stats st;

	vcore_slot_get_stats(fs->core, &st);
	return st.charged_peak_bytes;
}

void vgpu_filter_exit(void)
{
	vgpu_trusted_exit();
}
