/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Slots (slot.c): one tenant's view of one GPU, its nodes, settings,
 * processes and counters. The data path, the compute controller and the
 * control plane all work on slots; a slot works on the layers below it: its
 * nodes (nodes.h), the real driver's nodes (real.h), its record in the filter
 * core (core_host.h) and the event group (event.h).
 *
 * Lock order (outer first): the slot table's lock (slot.c) -> slot->lock ->
 * the core's slot lock. Nothing here is taken while a real ioctl runs, except
 * the core's own locks, which the core takes and drops inside pre/post.
 */
#ifndef VGPU_KMOD_SLOT_H
#define VGPU_KMOD_SLOT_H

#include <linux/atomic.h>
#include <linux/device.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/path.h>
#include <linux/types.h>

#include "core_host.h"
#include "nodes.h"
#include "slot_config.h"

/* A process that holds files of a slot (for attach/exit events and GET_PIDS
 * views). */
struct vgpu_proc {
	struct list_head node;
	pid_t tgid;
	unsigned int files;
};

struct vgpu_slot {
	/*
	 * One reference for the slot table (dropped by destroy) and one per
	 * open proxy file (vgpu_slot_open/vgpu_fops_release). Release unlinks
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

/* Module exit, once nothing can create a slot: frees every slot left. */
void vgpu_slots_exit(void);
int vgpu_slot_create(u32 gpu, u32 flags, const struct vgpu_slot_config *cfg,
		     u32 *id);
int vgpu_slot_update(u32 id, const struct vgpu_slot_config *cfg, u32 mask);
int vgpu_slot_destroy(u32 id, u32 flags);
struct vgpu_slot *vgpu_slot_lookup(u32 id);
struct vgpu_slot *vgpu_slot_next(u32 *id);
void vgpu_slot_get(struct vgpu_slot *slot);
void vgpu_slot_put(struct vgpu_slot *slot);
u32 vgpu_slots_generation(void);
u32 vgpu_slots_count(void);
/*
 * An open of node @kind of slot @id by process @tgid: the slot with a
 * reference (pairs with vgpu_slot_put), @tgid attached (pairs with
 * vgpu_slot_detach) and the real node's path with a reference (pairs with
 * path_put). NULL when there is no such active slot or node.
 */
struct vgpu_slot *vgpu_slot_open(u32 id, enum vgpu_node_kind kind, pid_t tgid,
				 struct path *real);
void vgpu_slot_detach(struct vgpu_slot *slot, pid_t tgid);
/* A refusal event for the calling task, with the slot's quota and charge. */
void vgpu_slot_refusal(struct vgpu_slot *slot, u32 type, u64 size,
		       const char *detail);

static inline void vgpu_stat_inc(struct vgpu_slot *slot, enum vgpu_stat_attr s)
{
	atomic64_inc(&slot->stats[s]);
}

/* The core's slot (its TSG registry), valid while the slot is referenced. */
static inline struct vcore_slot *vgpu_filter_core(struct vgpu_slot *slot)
{
	return slot->filter->core;
}

#endif /* VGPU_KMOD_SLOT_H */
