// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * uvm_external.c - UVM external mappings keep their RM memory's charge
 * (issue 17, F3; docs/security/kernel-lifetime-compute.md).
 *
 * libcuda maps every cuMemAlloc into the GPU's address space with
 * UVM_CREATE_EXTERNAL_RANGE + UVM_MAP_EXTERNAL_ALLOCATION (abi.md §4.2).
 * The map dups (hClient, hMemory) into UVM's own RM client
 * (kernel-open/nvidia-uvm/uvm_map_external.c
 * uvm_map_external_allocation_on_gpu → nvUvmInterfaceDupMemory): the tenant's
 * RM_FREE of hMemory then frees its handle, not the memory, which stays
 * mapped and usable. UVM lets go of the dup when the mapping is destroyed
 * (uvm_ext_gpu_map_free_internal → uvm_release_rm_handle): UVM_FREE of the
 * external range, UVM_UNMAP_EXTERNAL of the span, or the teardown of the
 * file's va_space at its release.
 *
 * So a map of an object the slot recorded makes a hold owned by the UVM
 * file (a dup outside the slot's table, as export.c's), for the span it
 * maps. It is made in pre, before the driver runs and whatever the reply
 * says: the reply is user memory, and a map that failed only leaves a hold
 * until the span or the file goes (a charge too many for a while, never one
 * too few). A later map over the span keeps the earlier hold (UVM would
 * unmap it first, but only if that map got that far). The holds inside a
 * span go when UVM_FREE or UVM_UNMAP_EXTERNAL of it succeeded, and all of
 * them when the file closes (vcore_file_close, after the driver released
 * the real file).
 *
 * Residues (the F2 class, docs/security/kernel-lifetime-compute.md): UVM
 * reads the parameters from user memory again and answers in user memory,
 * and the host cannot hand UVM the core's copy (no in-kernel entry). A
 * sibling thread that swaps hMemory during the map makes UVM hold another
 * object of the caller's than the one the core holds; one that writes
 * NV_OK into a failed UVM_FREE / UNMAP_EXTERNAL's rmStatus makes the core
 * drop holds UVM still has. Neither is closed: UVM offers no query of what a
 * mapping dupped or whether a free took effect that the tenant cannot forge
 * (the closures weighed: docs/security/kernel-lifetime-compute.md, F3).
 */
#include "vcore_internal.h"
#include "abi/nvstatus.h"
#include "abi/uvm.h"
#include "rm_alloc_internal.h"

/* The span [base, base + length) leading every external-mapping call. */
static int read_span(struct vcore_call *call, vcore_u64 *base, vcore_u64 *end)
{
	vcore_u64 span[2];

	if (vcore_user_read(call, span, call->arg, sizeof(span)))
		return -VCORE_EFAULT;
	*base = span[0];
	*end = span[0] + span[1];
	return *end > *base ? 0 : -VCORE_EINVAL;
}

/* @file's hold of (h_client, h_object) over exactly [base, end). */
static vcore_bool has_hold(struct vcore_file *file, const vcore_u32 *h,
			   vcore_u64 base, vcore_u64 end)
{
	struct vcore_obj *o;

	for (o = file->holds; o; o = o->hnext)
		if (o->h_client == h[0] && o->h_object == h[1] &&
		    o->hold_base == base && o->hold_end == end)
			return 1;
	return 0;
}

static enum vcore_verdict map_pre(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	struct vcore_file *file = call->file;
	struct vcore_obj *hold, *src;
	vcore_bool full = 0;
	vcore_u32 h[2];
	vcore_u64 base, end;

	/* Unreadable or empty: UVM fails it too, nothing is mapped. */
	if (read_span(call, &base, &end) ||
	    vcore_user_read(call, h,
			    call->arg + UVM_MAP_EXTERNAL_ALLOCATION_HCLIENT_OFF,
			    sizeof(h)) ||
	    h[0] == h[1])
		return VCORE_FORWARD;
	hold = slot->ops->zalloc(slot->priv, sizeof(*hold));
	if (!hold)
		return vcore_refuse_errno(call, -VCORE_ENOMEM,
					  "no memory for a UVM mapping record");
	vcore_lock(slot);
	src = vcore_obj_find_locked(slot, h[0], h[1]);
	if (src && !has_hold(file, h, base, end)) {
		if (file->uvm_holds >= VCORE_MAX_OBJECTS) {
			full = 1;
		} else {
			hold->h_client = h[0];
			hold->h_object = h[1];
			hold->cls = src->cls;
			hold->pid = call->ctx.pid;
			hold->owner = file;
			hold->hold_base = base;
			hold->hold_end = end;
			hold->dup_src = src;
			slot->n_dups++;
			hold->hnext = file->holds;
			file->holds = hold;
			file->uvm_holds++;
			hold = VCORE_NULL;
		}
	}
	vcore_unlock(slot);
	slot->ops->free(slot->priv, hold); /* not recorded: nothing to hold */
	if (full)
		return vcore_refuse_errno(call, -VCORE_ENOSPC,
					  "too many UVM mappings on one file");
	return VCORE_FORWARD;
}

/* UVM destroyed the mappings inside the span: their holds go. */
static int release_post(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 off = call->req == UVM_FREE ? UVM_FREE_RMSTATUS_OFF
					      : UVM_UNMAP_EXTERNAL_RMSTATUS_OFF;
	struct vcore_obj **pp, *h;
	vcore_u32 status = 1;

	if (vcore_user_read(call, &status, call->arg + off, sizeof(status)) ||
	    status != NV_OK)
		return 0;
	vcore_lock(slot);
	for (pp = &call->file->holds; (h = *pp) != VCORE_NULL;) {
		if (h->hold_end && h->hold_base >= call->uvm_base &&
		    h->hold_end <= call->uvm_end) {
			*pp = h->hnext;
			h->hnext = VCORE_NULL;
			call->file->uvm_holds--;
			vcore_obj_drop_hold_locked(slot, h);
			continue;
		}
		pp = &h->hnext;
	}
	vcore_unlock(slot);
	return 0;
}

enum vcore_verdict vcore_uvm_external_pre(struct vcore_call *call)
{
	if (call->req == UVM_MAP_EXTERNAL_ALLOCATION)
		return map_pre(call);
	if (read_span(call, &call->uvm_base, &call->uvm_end))
		return VCORE_FORWARD;
	call->post = VCORE_POST_CTRL;
	call->ctrl_post = release_post;
	return VCORE_FORWARD;
}

/*
 * The sealed params of a map were replaced during the call
 * (vcore_call_params_replaced, uvm.c): UVM may have dupped any memory object
 * of the caller's process, and none is known. RM lets UVM's dup reach only
 * clients of the calling process (nv_gpu_ops.c nvGpuOpsDupMemory dups with
 * NV04_DUP_HANDLE_FLAGS_REJECT_KERNEL_DUP_PRIVILEGE; resserv rs_client.c and
 * rmapi/client_resource.c share a client with RS_SHARE_TYPE_PID only), so the
 * file holds every object of that process that is charged or a dup of one,
 * with no span: no UVM_FREE or UNMAP_EXTERNAL drops such a hold, only the
 * file's close (vcore_file_close drops all of a file's holds). The charge
 * stays at least what UVM can hold until the file goes. Past
 * VCORE_MAX_OBJECTS holds, or without memory for one, the rest go unheld: the
 * caller is being killed, and its memory then lasts only as long as the file.
 */
void vcore_uvm_external_replaced(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	struct vcore_file *file = call->file;
	struct vcore_obj *o, *hold;
	vcore_u32 b;

	vcore_lock(slot);
	for (b = 0; b < VCORE_OBJ_BUCKETS; b++) {
		for (o = slot->buckets[b]; o; o = o->hnext) {
			if (o->pid != call->ctx.pid ||
			    (!o->charged && !o->dup_src))
				continue;
			if (file->uvm_holds >= VCORE_MAX_OBJECTS)
				goto out;
			/* A mutex in both hosts: allocating under it is
			 * allowed; this runs once, for a tampered call. */
			hold = slot->ops->zalloc(slot->priv, sizeof(*hold));
			if (!hold)
				goto out;
			hold->h_client = o->h_client;
			hold->h_object = o->h_object;
			hold->cls = o->cls;
			hold->pid = call->ctx.pid;
			hold->owner = file;
			hold->dup_src = o;
			slot->n_dups++;
			hold->hnext = file->holds;
			file->holds = hold;
			file->uvm_holds++;
		}
	}
out:
	vcore_unlock(slot);
}
