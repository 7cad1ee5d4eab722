/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the filter core's kernel host shares between its two halves:
 * core_host.c (the host ops, the ledger) and ioctl.c (slots, files, the
 * ioctl path).
 */
#ifndef VGPU_CORE_HOST_H
#define VGPU_CORE_HOST_H

#include <linux/ratelimit.h>
#include <linux/spinlock.h>

#include "core/vcore.h"

struct vgpu_slot;

/* The slot's memory ledger: one per slot, shared by all its processes. Its peak
 * is not kept here: a reservation in flight (a 200 GiB request the driver then
 * refuses) would set it. The exported peak is the core's, taken after each
 * settle. */
struct vgpu_ledger {
	spinlock_t lock; /* protects charged */
	u64 charged;
};

struct vgpu_filter_slot {
	struct vcore_slot *core;
	struct vgpu_ledger ledger;
	struct vgpu_slot *slot; /* back pointer, not a reference */
	struct ratelimit_state event_rs;
	/* Processes that made their UVM context mapping (ioctl.c). */
	spinlock_t uvm_ctx_lock; /* protects uvm_ctx_procs */
	struct list_head uvm_ctx_procs;
};

struct vgpu_filter_file {
	struct vcore_file *core;
};

extern const struct vcore_host_ops vgpu_host_ops;
extern const struct vcore_client_ops vgpu_client_ops;
extern const struct vcore_ledger_ops vgpu_ledger_ops;

/* vcore_u64 is the compiler's unsigned long; the kernel's u64 is unsigned long
 * long. */
static inline void __user *vgpu_uptr(vcore_uptr_t addr)
{
	return u64_to_user_ptr((u64)addr);
}

#endif /* VGPU_CORE_HOST_H */
