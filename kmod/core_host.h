/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The filter core's kernel host, the layer every slot's calls go down to:
 * the core's slot and file records (core_slot.c), the host ops the core calls
 * (core_host.c), what the driver itself says through its in-kernel entry
 * (driver_query.c), and the frees the core asks for during a call, made by the
 * calling task after the call (overquota_queue.c). It knows the slot only by
 * its id and settings (slot_config.h): the slot table is the layer above.
 */
#ifndef VGPU_KMOD_CORE_HOST_H
#define VGPU_KMOD_CORE_HOST_H

#include <linux/list.h>
#include <linux/ratelimit.h>
#include <linux/sched.h>
#include <linux/spinlock.h>

#include "nodes.h"
#include "slot_config.h"
#include "core/vcore.h"

/* A slot's record in the core, and what the host keeps beside it. */
struct vgpu_filter_slot {
	struct vcore_slot *core;
	u32 id;
	struct ratelimit_state event_rs; /* refusal events (ioctl.c) */
};

/* core_slot.c. ERR_PTR on failure (the core refused the config or version).
 */
struct vgpu_filter_slot *
vgpu_filter_slot_new(u32 id, u32 gpu_id, const struct vgpu_slot_config *cfg);
/* After a change of @cfg, under the lock that protects it. */
void vgpu_filter_slot_config(struct vgpu_filter_slot *fs,
			     const struct vgpu_slot_config *cfg);
/* Accepts NULL. */
void vgpu_filter_slot_free(struct vgpu_filter_slot *fs);
/* The core's record of a new proxy file of @kind (@priv: the host's file);
 * NULL with *@err (-ENOMEM, or -EMFILE past the slot's UVM-file cap).
 * vcore_file_close() ends it. */
struct vcore_file *vgpu_filter_file_open(struct vgpu_filter_slot *fs,
					 enum vgpu_node_kind kind, void *priv,
					 int *err);
u64 vgpu_filter_charged(struct vgpu_filter_slot *fs);
u64 vgpu_filter_peak(struct vgpu_filter_slot *fs);
void vgpu_filter_stats(struct vgpu_filter_slot *fs, struct vcore_stats *out);
/* Module exit, once every slot is gone. */
void vgpu_filter_exit(void);

/* core_host.c */
extern const struct vcore_host_ops vgpu_host_ops;
extern const struct vcore_client_ops vgpu_client_ops;
/*
 * Who hears that a slot's TSG went on the runlist (vcore.h, tsg_scheduled):
 * the compute part, which sits above this one and is reached only through
 * this hook (kmod/layers.txt). Set while it runs (vgpu_compute_init/exit);
 * NULL: nobody. Called in the scheduling task, no lock held.
 */
void vgpu_filter_set_tsg_hook(void (*fn)(u32 slot_id));

/* vcore_u64 is the compiler's unsigned long; the kernel's u64 is unsigned long
 * long. */
static inline void __user *vgpu_uptr(vcore_uptr_t addr)
{
	return u64_to_user_ptr((u64)addr);
}

/*
 * overquota_queue.c: what the core asked to free during a call (an allocation
 * that grew past the quota, or a tampered call's client), kept for the calling
 * task until vcore_post has returned (overquota.c settles it).
 */
struct vgpu_overquota {
	struct list_head node;
	struct task_struct *task; /* compared only, never dereferenced */
	struct vcore_overquota oq;
	/* From vgpu_free_queue: free oq's object through the caller's real
	 * ctl file (nothing else), then, if @kill, kill the caller. */
	bool queued_free;
	bool kill;
};

/* The core's overquota hook (vcore_slot_set_overquota_hook). */
void vgpu_overquota_hook(void *priv, struct vcore_file *file,
			 const struct vcore_overquota *oq);
/* An object to free through the caller's file, then maybe kill. */
int vgpu_free_queue(u32 h_client, u32 h_parent, u32 h_object, bool kill);
/* Moves the calling task's entries to @out. */
void vgpu_overquota_take_mine(struct list_head *out);
/* Checked after every call: inline, so that the common call makes no call. */
extern struct list_head vgpu_overquota_pending;
static inline bool vgpu_overquota_pending_any(void)
{
	return !list_empty_careful(&vgpu_overquota_pending);
}

#endif /* VGPU_KMOD_CORE_HOST_H */
