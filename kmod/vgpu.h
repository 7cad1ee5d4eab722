/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgpu.ko internals: slots, proxy files, the real driver binding.
 *
 * Lock order (outer first): vgpu_slots_lock -> slot->lock -> the core's slot
 * lock. Nothing here is taken while a real ioctl runs, except the core's own
 * locks, which the core takes and drops inside pre/post.
 */
#ifndef VGPU_KMOD_VGPU_H
#define VGPU_KMOD_VGPU_H

#include <linux/atomic.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/ioctl.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/path.h>
#include <linux/types.h>

#include "../uapi/vgpu_genl.h"
#include "../uapi/vgpu_slot_fields.h"

/* Each slot owns VGPU_MINORS_PER_SLOT minors: id * VGPU_MINORS_PER_SLOT + kind.
 */
enum vgpu_node_kind {
	VGPU_NODE_CTL,
	VGPU_NODE_DEV,
	VGPU_NODE_UVM,
	VGPU_NODE_KINDS
};
#define VGPU_MINORS_PER_SLOT 4
#define VGPU_MINORS	     (VGPU_MAX_SLOTS * VGPU_MINORS_PER_SLOT)

struct vgpu_filter_slot;
struct vgpu_filter_file;

/* A process that holds files of a slot (for attach/exit events and GET_PIDS
 * views). */
struct vgpu_proc {
	struct list_head node;
	pid_t tgid;
	unsigned int files;
};

/*
 * A slot's label and settings. The settings are the schema's rows
 * (uapi/vgpu_slot_fields.h), one member each, named as the row: netlink
 * (genl.c, genl_slot.c), sysfs (sysfs.c) and updates (slot.c) walk the same
 * rows, so a setting added to the schema is served everywhere or the module
 * does not build. Numbers have the row's wire type; an enum is its u32 value.
 */
struct vgpu_slot_config {
	char name[VGPU_SLOT_NAME_LEN];
#define VGPU_CFG_NUMBER_MEMBER(field, wire, unit, def, lo, hi, attr, env)      \
	wire field;
	VGPU_SLOT_NUMBERS(VGPU_CFG_NUMBER_MEMBER)
#undef VGPU_CFG_NUMBER_MEMBER
#define VGPU_CFG_ENUM_MEMBER(field, cxx_type, values, def, sentinel, attr,     \
			     env)                                              \
	u32 field;
	VGPU_SLOT_ENUMS(VGPU_CFG_ENUM_MEMBER)
#undef VGPU_CFG_ENUM_MEMBER
};

/* Which config fields vgpu_slot_update replaces: VGPU_CFG(name),
 * VGPU_CFG(<setting>). */
/* The X-macro lists are not statements: kept as written. */
/* clang-format off */
enum vgpu_cfg_bit {
	VGPU_CFG_BIT_name,
#define VGPU_CFG_BIT_OF(field, ...) VGPU_CFG_BIT_##field,
	VGPU_SLOT_NUMBERS(VGPU_CFG_BIT_OF)
	VGPU_SLOT_ENUMS(VGPU_CFG_BIT_OF)
#undef VGPU_CFG_BIT_OF
	VGPU_CFG_BITS
};
/* clang-format on */
#define VGPU_CFG(field) BIT(VGPU_CFG_BIT_##field)

struct vgpu_slot {
	/*
	 * One reference for the slot table (dropped by destroy) and one per
	 * open proxy file (vgpu_fops_open/vgpu_fops_release). Release unlinks
	 * nothing: destroy already removed the slot from the table and its
	 * nodes.
	 */
	struct kref ref;
	u32 id;
	u32 gpu;
	u32 flags;
	/* Real nodes, resolved at creation in the creator's (init) namespace.
	 */
	struct path real[VGPU_NODE_KINDS];
	struct device *nodes[VGPU_NODE_KINDS];

	/* lock protects: cfg, state, procs, open_files. */
	struct mutex lock;
	struct vgpu_slot_config cfg;
	enum vgpu_slot_state state;
	struct list_head procs;
	unsigned int open_files;

	atomic64_t stats[__VGPU_STAT_MAX];
	struct vgpu_filter_slot *filter;
};

/* Per proxy file: exactly one real file, opened with the caller's flags and
 * credentials. */
struct vgpu_file {
	struct vgpu_slot *slot; /* holds a slot reference */
	enum vgpu_node_kind kind;
	struct file *real;
	pid_t tgid; /* opener, for attach/exit accounting */
	struct vgpu_filter_file *filter;
	struct list_head linger; /* file_release.c: parked while real is held */
};

/* main.c: module parameters and the real driver binding. */
extern struct mutex vgpu_slots_lock;
extern dev_t vgpu_devt;
int vgpu_real_ctl_path_locked(struct path *out);
int vgpu_resolve_real(const char *what, const char *name, struct path *out);
int vgpu_bind_locked(void);
bool vgpu_bound(void);
const char *vgpu_real_ctl_name(void);
const char *vgpu_real_dev_fmt(void);
const char *vgpu_real_uvm_name(void);

/* slot.c */
int vgpu_slots_init(void);
void vgpu_slots_exit(void);
int vgpu_slot_create(u32 gpu, u32 flags, const struct vgpu_slot_config *cfg,
		     u32 *id);
int vgpu_slot_update(u32 id, const struct vgpu_slot_config *cfg, u32 mask);
int vgpu_slot_destroy(u32 id, u32 flags);
struct vgpu_slot *vgpu_slot_lookup(u32 id);
struct vgpu_slot *vgpu_slot_lookup_locked(u32 id);
struct vgpu_slot *vgpu_slot_next(u32 *id);
void vgpu_slot_get(struct vgpu_slot *slot);
void vgpu_slot_put(struct vgpu_slot *slot);
u32 vgpu_slots_generation(void);
u32 vgpu_slots_count(void);
void vgpu_slot_attach(struct vgpu_slot *slot, pid_t tgid);
void vgpu_slot_detach(struct vgpu_slot *slot, pid_t tgid);
const char *vgpu_node_name_fmt(enum vgpu_node_kind kind);

static inline void vgpu_stat_inc(struct vgpu_slot *slot, enum vgpu_stat_attr s)
{
	atomic64_inc(&slot->stats[s]);
}

/* fops.c */
extern const struct file_operations vgpu_fops;

/*
 * file_release.c: a proxy file ends when its real file does. release() finishes
 * @vf now if the proxy holds the real file's only reference, else parks it
 * until that is so (a registered dev file or a mapping holds it).
 */
void vgpu_file_release(struct vgpu_file *vf);
void vgpu_linger_exit(void);

/* A destroyed slot's files fail every call. */
static inline bool vgpu_file_revoked(struct vgpu_file *vf)
{
	return READ_ONCE(vf->slot->state) != VGPU_SLOT_STATE_ACTIVE;
}

/* fd_translate.c: forwarding helpers. */
struct vcore_file;

struct vgpu_fd_fix {
	u32 __user *uaddr;	  /* where the fd number lives in user memory */
	int orig;		  /* the number the caller wrote */
	int tmp;		  /* the temporary real fd installed, or -1 */
	enum vgpu_node_kind kind; /* of the proxy file it named */
	/* The core's record of that proxy file, for vcore_call_set_fd_file
	 * (compared, never dereferenced, after the fd reference is put). */
	struct vcore_file *core;
};
int vgpu_fd_translate(struct vgpu_file *vf, struct vgpu_fd_fix *fix,
		      u32 __user *uaddr, int fd);
void vgpu_fd_restore(struct vgpu_fd_fix *fix);
int vgpu_install_gpu_witness(struct vgpu_file *vf, int *tmp);
void vgpu_remove_gpu_witness(int tmp);

/* genl.c */
int vgpu_genl_init(void);
void vgpu_genl_exit(void);
void vgpu_event_proc(struct vgpu_slot *slot, u32 type, pid_t pid,
		     const char *comm);
void vgpu_event_refusal(struct vgpu_slot *slot, u32 type, u64 size, u64 charged,
			const char *detail);

/* sysfs.c */
extern const struct attribute_group *vgpu_node_groups[];

/* overquota.c: allocations that grew past the quota during the call. */
struct vcore_call;
struct vcore_file;
struct vcore_overquota;
void vgpu_overquota_hook(void *priv, struct vcore_file *file,
			 const struct vcore_overquota *oq);
void vgpu_overquota_settle(struct vgpu_file *vf, u32 __user *status);
/* driver_query.c: an object to free through the caller's file, then maybe kill.
 */
int vgpu_free_queue(u32 h_client, u32 h_parent, u32 h_object, bool kill);
/* Checked after every call: inline, so that the common call makes no call. */
extern struct list_head vgpu_overquota_pending;
static inline bool vgpu_overquota_pending_any(void)
{
	return !list_empty_careful(&vgpu_overquota_pending);
}

/*
 * compute.c: the compute share controller's kernel host (compute.h). A slot is
 * under control unless it is in cap mode with share 100. apply() follows the
 * slot's config (call it after every change), gone() at destroy: both re-open
 * any gate they close. init/exit ride on genl's (the module's first and last
 * control-plane steps: no config can arrive before or after).
 */
struct vcore_sched_slot_stats;
/* What the kernel host adds to the controller's own counters. */
struct vgpu_compute_host_stats {
	u64 errors;  /* RM controls that failed */
	u64 late_ns; /* stalls: wake-ups > 10 ms past an edge */
};
int vgpu_compute_init(void);
void vgpu_compute_exit(void);
int vgpu_compute_slot_apply(struct vgpu_slot *slot);
void vgpu_compute_slot_gone(struct vgpu_slot *slot);
/* false (and *st zeroed) when the slot is not under control. */
bool vgpu_compute_slot_stats(struct vgpu_slot *slot,
			     struct vcore_sched_slot_stats *st,
			     struct vgpu_compute_host_stats *hs);
const char *vgpu_compute_mode_name(u32 mode);

/* ioctl.c, core_host.c: the filter core's host (kmod/core, vcore.h). */
struct vcore_slot;
/* The core's slot (its TSG registry), valid while the slot is referenced. */
struct vcore_slot *vgpu_filter_core(struct vgpu_slot *slot);
int vgpu_filter_init(void);
void vgpu_filter_exit(void);
int vgpu_filter_slot_new(struct vgpu_slot *slot);
void vgpu_filter_slot_config(struct vgpu_slot *slot);
void vgpu_filter_slot_free(struct vgpu_slot *slot);
int vgpu_filter_file_open(struct vgpu_file *vf);
void vgpu_filter_file_close(struct vgpu_file *vf);
long vgpu_filter_ioctl(struct vgpu_file *vf, unsigned int cmd,
		       unsigned long arg);
long vgpu_fops_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
int vgpu_filter_mmap(struct vgpu_file *vf, struct vm_area_struct *vma);
u64 vgpu_filter_charged(struct vgpu_slot *slot);
u64 vgpu_filter_peak(struct vgpu_slot *slot);
struct vcore_stats;
void vgpu_filter_stats(struct vgpu_slot *slot, struct vcore_stats *out);

#endif /* VGPU_KMOD_VGPU_H */
