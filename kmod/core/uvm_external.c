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
 * says (a map that failed leaves a hold until its range or the file goes: a
 * charge too many for a while, never one too few).
 *
 * When a hold goes is decided by what UVM guarantees after each call, never
 * by its rmStatus: UVM must copy the status out to memory the tenant's
 * threads can write, and a sibling that stores NV_OK over a failed UVM_FREE
 * or UNMAP_EXTERNAL made the core drop holds UVM still had (then RM_FREE
 * refunded memory that stayed mapped). The 580 driver (tag 580.142,
 * kernel-open/nvidia-uvm/) guarantees:
 *   - External ranges come only from UVM_CREATE_EXTERNAL_RANGE
 *     (uvm_map_external.c uvm_create_external_range: 4 KiB aligned, base
 *     and length not 0, no overflow, no overlap with any range:
 *     NV_ERR_UVM_ADDRESS_IN_USE, uvm_range_tree.c) and go only with UVM_FREE
 *     or the va_space's teardown. A map never makes one
 *     (uvm_map_external_allocation: NV_ERR_INVALID_ADDRESS unless one
 *     contains the span).
 *   - uvm_free (uvm_va_range.c): when [base, base + length) is exactly an
 *     external range it destroys it with every mapping in it
 *     (uvm_free_external cannot fail); otherwise it changes nothing. After
 *     UVM_FREE(R, L), whatever the status, no external range [R, R + L).
 *   - uvm_unmap_external (uvm_map_external.c): 4 KiB alignment, a range
 *     containing the span, the GPU registered (uuid compared bytewise,
 *     uvm_va_space.c uvm_va_space_get_gpu_by_uuid); then
 *     uvm_unmap_external_in_range walks that GPU's mappings in address
 *     order and destroys each one inside the span. Only a split can fail
 *     (uvm_ext_gpu_map_split: the edge not aligned to the mapping's page
 *     size, or no kernel memory), and only for a mapping across an edge: one
 *     across the span's start is met first and stops the walk before any
 *     mapping inside is destroyed; one across its end is met last.
 *
 * The model, per UVM file: candidate ranges, recorded when a create is
 * forwarded (whatever it answers), and the file's mappings, each recorded
 * in its candidate (by identity) with its span and, for a map on one GPU,
 * that GPU (one record per map, a hold when the slot recorded the object).
 *   - CREATE: a span overlapping a candidate is answered by the core with
 *     NV_ERR_UVM_ADDRESS_IN_USE, what UVM answers (every real range is a
 *     candidate, and candidates never overlap, so a span lies in at most
 *     one). A create that fails in UVM all the same (it overlaps a managed
 *     range, no memory) leaves a candidate that is no range: a later create
 *     over it is answered IN_USE until the tenant's UVM_FREE of it or the
 *     file's close, and maps in it hold until then (a charge too many on the
 *     tenant's own slot, never one too few). Dropping it on a failure status
 *     would not be safe: the status is the tenant's to forge, a real range
 *     would then be no candidate, a later create over part of it a candidate
 *     whose maps UVM makes in the real range, and that candidate's UVM_FREE
 *     (a no-op in UVM) would drop holds UVM keeps.
 *   - MAP / MAP_EXTERNAL_SPARSE: a span in no candidate fails in UVM; the
 *     core answers the map (NV_ERR_INVALID_ADDRESS) and records nothing.
 *     Under a memory quota a sparse map (no memory at all) is answered
 *     NV_ERR_NOT_SUPPORTED (record_mapping).
 *   - UVM_FREE(R, L), after the driver returned: the candidate exactly
 *     [R, R + L) goes with every mapping recorded in it.
 *   - UNMAP_EXTERNAL(b, l, gpu), after the driver returned: if the span is
 *     4 KiB aligned and inside a candidate C, and no mapping recorded in C
 *     that may be on that GPU crosses b, the mappings of C on that one GPU
 *     inside the span go. If they existed, C was a real range and the GPU
 *     registered (a map needs both, and UVM_UNREGISTER_GPU destroys the
 *     GPU's mappings), and with nothing across b no split precedes them.
 *     Records only grow stale the safe way (a later map or unmap shrinks
 *     the real mapping inside its record's span), so "no record across b"
 *     means "no mapping across b".
 *   - A map over an earlier mapping keeps the earlier record (UVM unmaps it
 *     first, but only if the map got that far); a map on several GPUs goes
 *     only with its range or the file; UVM_UNREGISTER_GPU keeps records;
 *     an ioctl that returned an error keeps everything (it may have failed
 *     copying the status out after the change); the file's close drops all
 *     (vcore_file_close, after the driver released the real file).
 * The four calls and the sparse map of one file run one at a time, from
 * pre to post, under the file's uvm_lock: then no other call of the file
 * runs between the core's decision and UVM's, and a FREE's post cannot
 * drop a mapping a newer range got. It is cheap: libcuda issues them once
 * per cuMemAlloc / cuMemFree / cuMemMap, and UVM itself takes the
 * va_space lock for writing in create and free and RM's lock in each dup.
 *
 * Page tables (F11.1): each map also makes UVM build page tables in video
 * memory no RM client pays for. Every recorded mapping is charged the most
 * its span can need on each GPU it names (vcore_uvm_map_ptables,
 * tables_580.c: every directory and 4 KiB-page table the span touches),
 * reserved in pre like memory and answered NV_ERR_NO_MEMORY past the quota,
 * refunded when the record goes, by whichever path (UVM_FREE, UNMAP_EXTERNAL,
 * the close, vcore_obj_drop_hold_locked); unlike the memory's charge it never
 * passes to another dup. A slot has at most VCORE_SLOT_MAX_UVM_FILES UVM
 * files (vcore_file_open_err), each at most VCORE_MAX_OBJECTS records.
 *
 * Under a quota the page tables are also capped (vcore_uvm_ptables_cap),
 * because UVM does not free what the charge refunds: it takes page tables
 * from 2 MiB chunks of its per-GPU pool (phys_mem_allocate_vidmem,
 * uvm_mmu.c:171-199; uvm_pmm_gpu_alloc_kernel, uvm_pmm_gpu.c:604) and gives
 * a chunk back to RM only once every table in it went (free_chunk and
 * free_next_available_root_chunk, uvm_pmm_gpu.c:2400-2468). A slot that
 * fills chunks and keeps one table in each holds the chunks while charged
 * the one table. Only a request no free piece of the pool can serve takes a
 * new chunk (alloc_chunk_with_splits, uvm_pmm_gpu.c:1723-1760), and Hopper's
 * tables are 4 KiB or 256 B (allocation_size_hopper, uvm_hopper_mmu.c:118),
 * so what the pool holds beyond what is charged stays below twice the
 * largest page-table charge the GPU's slots ever had at once: the cap
 * bounds it per slot (docs/security.md, F11.1).
 *
 * The model is exact when UVM reads the core's copy of the parameters: the
 * kernel host runs these calls (UVM_SEALED rows, tables_580.c) from a
 * sealed copy, kmod/seal.c. A sealed copy replaced during the call is
 * tampering (vcore_call_params_replaced): no post, the file refuses every
 * later call, and a replaced map makes holds with no range
 * (vcore_uvm_external_replaced, below), dropped only at the close; while
 * one exists no unmap drops anything (its mapping may cross any edge). The
 * shim cannot seal: there a sibling that swaps base, length, gpu or hMemory
 * between the core's read and UVM's makes UVM act on what the core did not
 * record (docs/security/kernel-lifetime-compute.md, F3).
 */
#include "vcore_internal.h"
#include "abi/nvstatus.h"
#include "abi/uvm.h"
#include "rm_alloc_internal.h"

#define UVM_PAGE_4K  0x1000ull
#define UVM_PAGE_64K 0x10000ull

/* uvm_api.h uvm_api_range_invalid_aligned: what every call refuses first. */
static vcore_bool span_invalid(vcore_u64 base, vcore_u64 length,
			       vcore_u64 align)
{
	return (base | length) & (align - 1) || !base || !length ||
	       base + length < base;
}

/* The span [base, base + length) leading every external-range call;
 * 0 when it is readable and valid for @align. */
static int read_span(struct vcore_call *call, vcore_u64 align, vcore_u64 *base,
		     vcore_u64 *end)
{
	vcore_u64 span[2];

	if (vcore_user_read(call, span, call->arg, sizeof(span)))
		return -VCORE_EFAULT;
	*base = span[0];
	*end = span[0] + span[1];
	return span_invalid(span[0], span[1], align) ? -VCORE_EINVAL : 0;
}

/* The candidate holding [base, end) whole, or (@exact) exactly. */
static struct vcore_uvm_range *find_range(struct vcore_file *file,
					  vcore_u64 base, vcore_u64 end,
					  vcore_bool exact)
{
	struct vcore_uvm_range *r;

	for (r = file->uvm_ranges; r; r = r->next)
		if (exact ? r->base == base && r->end == end
			  : r->base <= base && end <= r->end)
			return r;
	return VCORE_NULL;
}

static enum vcore_verdict create_pre(struct vcore_call *call)
{
	struct vcore_file *file = call->file;
	struct vcore_uvm_range *r;
	vcore_u64 base, end;

	/* Unreadable or not 4 KiB aligned: UVM fails it, no range. */
	if (read_span(call, UVM_PAGE_4K, &base, &end))
		return VCORE_FORWARD;
	for (r = file->uvm_ranges; r; r = r->next)
		if (base < r->end && r->base < end)
			return vcore_refuse_status_at(
				call, UVM_CREATE_EXTERNAL_RANGE_RMSTATUS_OFF,
				NV_ERR_UVM_ADDRESS_IN_USE,
				"UVM external range overlaps another");
	if (file->uvm_n_ranges >= VCORE_MAX_OBJECTS)
		return vcore_refuse_errno(call, -VCORE_ENOSPC,
					  "too many UVM external ranges on one "
					  "file");
	r = call->slot->ops->zalloc(call->slot->priv, sizeof(*r));
	if (!r)
		return vcore_refuse_errno(call, -VCORE_ENOMEM,
					  "no memory for a UVM range record");
	r->base = base;
	r->end = end;
	r->next = file->uvm_ranges;
	file->uvm_ranges = r;
	file->uvm_n_ranges++;
	return VCORE_FORWARD;
}

/* @a's mapping may be on the GPU @b names (one GPU: the same uuid). */
static vcore_bool may_share_gpu(const struct vcore_obj *a, vcore_bool one_gpu,
				const vcore_u8 *gpu)
{
	return !a->hold_one_gpu || !one_gpu ||
	       !vcore_memcmp(a->hold_gpu, gpu, VCORE_UVM_UUID_SIZE);
}

/* @file already records this mapping (the object, span, range and GPU). */
static vcore_bool has_record(struct vcore_file *file,
			     const struct vcore_obj *rec)
{
	struct vcore_obj *o;

	for (o = file->holds; o; o = o->hnext)
		if (o->h_client == rec->h_client &&
		    o->h_object == rec->h_object &&
		    o->hold_base == rec->hold_base &&
		    o->hold_end == rec->hold_end &&
		    o->hold_range == rec->hold_range &&
		    o->hold_one_gpu == rec->hold_one_gpu &&
		    may_share_gpu(o, rec->hold_one_gpu, rec->hold_gpu))
			return 1;
	return 0;
}

/*
 * Records @rec (filled but for the object) in @file: a hold of the object
 * (h_client, h_object) when the slot records it, a mapping with nothing to
 * charge otherwise; either way charged its page tables (@rec->hold_ptables,
 * F11.1), refused with NV_ERR_NO_MEMORY past the quota as any allocation.
 * Takes @rec, recorded or freed. Under a memory quota a sparse map is
 * answered NV_ERR_NOT_SUPPORTED: it maps no memory, and no trace of
 * libcuda's makes one. A map of an object this core did not record is not:
 * in shim mode an object imported from another process's export fd is
 * recorded only in the exporter's core (one core per process), and libcuda
 * maps it (CUDA IPC with expandable segments, tests/gpu/e2e.sh part ipc:
 * refused, the importing process failed on the H200). Its memory's charge is
 * the exporter's; its page tables are charged here.
 */
static enum vcore_verdict record_mapping(struct vcore_call *call,
					 struct vcore_obj *rec,
					 vcore_u32 status_off)
{
	struct vcore_slot *slot = call->slot;
	struct vcore_file *file = call->file;
	struct vcore_obj *src = VCORE_NULL;
	vcore_bool full = 0, uncharged = 0, over = 0, capped = 0;

	vcore_lock(slot);
	/* hClient == hMemory names the client: no memory, no dup. */
	if (rec->h_client != rec->h_object)
		src = vcore_obj_find_locked(slot, rec->h_client, rec->h_object);
	if (!src)
		rec->h_client = rec->h_object = 0;
	if (call->req == UVM_MAP_EXTERNAL_SPARSE && slot->cfg.mem_quota_bytes) {
		uncharged = 1;
	} else if (has_record(file, rec)) {
		/* UVM replaces the mapping: the one record stands for it */
	} else if (file->uvm_holds >= VCORE_MAX_OBJECTS) {
		full = 1;
	} else if (slot->cfg.mem_quota_bytes &&
		   slot->uvm_ptables + rec->hold_ptables >
			   vcore_uvm_ptables_cap(slot->cfg.mem_quota_bytes)) {
		capped = 1;
		slot->stats.denied_quota++;
	} else if (vcore_charge_try_locked(slot, rec->hold_ptables)) {
		over = 1;
		slot->stats.denied_quota++;
	} else {
		if (src) {
			rec->cls = src->cls;
			rec->dup_src = src;
			slot->n_dups++;
		}
		slot->stats.internal_charged_bytes += rec->hold_ptables;
		slot->uvm_ptables += rec->hold_ptables;
		vcore_note_peak_locked(slot);
		rec->pid = call->ctx.pid;
		rec->owner = file;
		rec->hnext = file->holds;
		file->holds = rec;
		file->uvm_holds++;
		rec = VCORE_NULL;
	}
	vcore_unlock(slot);
	slot->ops->free(slot->priv, rec); /* not recorded */
	if (uncharged)
		return vcore_refuse_status_at(
			call, status_off, NV_ERR_NOT_SUPPORTED,
			"sparse UVM map under a memory quota");
	if (full)
		return vcore_refuse_errno(call, -VCORE_ENOSPC,
					  "too many UVM mappings on one file");
	if (over || capped) {
		call->quota_refused = 1;
		return vcore_refuse_status_at(
			call, status_off, NV_ERR_NO_MEMORY,
			over ? "video memory quota exceeded (UVM page tables)"
			     : "UVM page tables past the slot's cap");
	}
	return VCORE_FORWARD;
}

/* UVM_MAP_EXTERNAL_ALLOCATION and UVM_MAP_EXTERNAL_SPARSE. */
static enum vcore_verdict map_pre(struct vcore_call *call)
{
	vcore_bool sparse = call->req == UVM_MAP_EXTERNAL_SPARSE;
	vcore_u32 status_off =
		sparse ? UVM_MAP_EXTERNAL_SPARSE_RMSTATUS_OFF
		       : UVM_MAP_EXTERNAL_ALLOCATION_RMSTATUS_OFF;
	struct vcore_slot *slot = call->slot;
	struct vcore_uvm_range *range;
	struct vcore_obj *rec;
	vcore_u64 base, end, count = 0;
	vcore_u32 h[2] = {0, 0};

	/* Unreadable or misaligned: UVM fails it too, nothing is mapped. */
	if (read_span(call, sparse ? UVM_PAGE_64K : UVM_PAGE_4K, &base, &end))
		return VCORE_FORWARD;
	range = find_range(call->file, base, end, 0);
	if (!range)
		return vcore_refuse_status_at(
			call, status_off, NV_ERR_INVALID_ADDRESS,
			"UVM map outside any external range");
	rec = slot->ops->zalloc(slot->priv, sizeof(*rec));
	if (!rec)
		return vcore_refuse_errno(call, -VCORE_ENOMEM,
					  "no memory for a UVM mapping record");
	rec->hold_base = base;
	rec->hold_end = end;
	rec->hold_range = range;
	if (sparse) {
		count = 1;
	} else if (vcore_user_read(
			   call, &count,
			   call->arg + UVM_MAP_EXTERNAL_ALLOCATION_COUNT_OFF,
			   sizeof(count)) ||
		   vcore_user_read(
			   call, h,
			   call->arg + UVM_MAP_EXTERNAL_ALLOCATION_HCLIENT_OFF,
			   sizeof(h))) {
		count = 0; /* on no GPU the core knows of: any */
	}
	/* Page tables on every GPU it maps on (1..UVM_MAX_GPUS, else UVM
	 * refuses it: one). */
	rec->hold_ptables = vcore_uvm_map_ptables(base, end - base) *
			    (count >= 1 && count <= UVM_MAX_GPUS ? count : 1);
	/* A sparse map's uuid is at the unmap's offset, a map's first. */
	rec->hold_one_gpu =
		count == 1 &&
		!vcore_user_read(
			call, rec->hold_gpu,
			call->arg +
				(sparse ? UVM_UNMAP_EXTERNAL_GPU_UUID_OFF
					: UVM_MAP_EXTERNAL_ALLOCATION_GPU_UUID_OFF),
			VCORE_UVM_UUID_SIZE);
	rec->h_client = h[0];
	rec->h_object = h[1];
	return record_mapping(call, rec, status_off);
}

static void drop_record_locked(struct vcore_file *file, struct vcore_obj **pp)
{
	struct vcore_obj *h = *pp;

	*pp = h->hnext;
	h->hnext = VCORE_NULL;
	file->uvm_holds--;
	vcore_obj_drop_hold_locked(file->slot, h);
}

/* UVM_FREE destroyed the candidate's range, if it was one: it goes. */
static int free_post(struct vcore_call *call)
{
	struct vcore_file *file = call->file;
	struct vcore_uvm_range *range = call->uvm_range, **rp;
	struct vcore_obj **pp;

	vcore_lock(call->slot);
	for (pp = &file->holds; *pp;)
		if ((*pp)->hold_range == range)
			drop_record_locked(file, pp);
		else
			pp = &(*pp)->hnext;
	vcore_unlock(call->slot);
	for (rp = &file->uvm_ranges; *rp != range; rp = &(*rp)->next)
		;
	*rp = range->next;
	file->uvm_n_ranges--;
	call->slot->ops->free(call->slot->priv, range);
	return 0;
}

/* UVM_UNMAP_EXTERNAL destroyed the GPU's mappings inside the span, unless a
 * mapping across its start stopped it (file comment). */
static int unmap_post(struct vcore_call *call)
{
	struct vcore_file *file = call->file;
	struct vcore_obj *h, **pp;
	vcore_u64 b = call->uvm_base, e = call->uvm_end;

	vcore_lock(call->slot);
	for (h = file->holds; h; h = h->hnext)
		if (!h->hold_range || (h->hold_range == call->uvm_range &&
				       may_share_gpu(h, 1, call->uvm_gpu) &&
				       h->hold_base < b && b < h->hold_end))
			goto out;
	for (pp = &file->holds; (h = *pp) != VCORE_NULL;)
		if (h->hold_range == call->uvm_range && h->hold_one_gpu &&
		    !vcore_memcmp(h->hold_gpu, call->uvm_gpu,
				  VCORE_UVM_UUID_SIZE) &&
		    b <= h->hold_base && h->hold_end <= e)
			drop_record_locked(file, pp);
		else
			pp = &h->hnext;
out:
	vcore_unlock(call->slot);
	return 0;
}

/* UVM_FREE and UVM_UNMAP_EXTERNAL: which candidate they act on. */
static enum vcore_verdict release_pre(struct vcore_call *call)
{
	vcore_bool unmap = call->req == UVM_UNMAP_EXTERNAL;

	if (read_span(call, UVM_PAGE_4K, &call->uvm_base, &call->uvm_end) ||
	    (unmap &&
	     vcore_user_read(call, call->uvm_gpu,
			     call->arg + UVM_UNMAP_EXTERNAL_GPU_UUID_OFF,
			     VCORE_UVM_UUID_SIZE)))
		return VCORE_FORWARD;
	call->uvm_range =
		find_range(call->file, call->uvm_base, call->uvm_end, !unmap);
	if (call->uvm_range) {
		call->post = VCORE_POST_CTRL;
		call->ctrl_post = unmap ? unmap_post : free_post;
	}
	return VCORE_FORWARD;
}

enum vcore_verdict vcore_uvm_external_pre(struct vcore_call *call)
{
	struct vcore_file *file = call->file;
	const struct vcore_host_ops *ops = file->slot->ops;

	if (!ops->lock_file_killable)
		ops->lock(file->uvm_lock);
	else if (ops->lock_file_killable(file->uvm_lock))
		return vcore_refuse_errno(call, -VCORE_EINTR,
					  "killed waiting for the UVM file's "
					  "lock");
	call->uvm_locked = 1;
	switch (call->req) {
	case UVM_CREATE_EXTERNAL_RANGE:
		return create_pre(call);
	case UVM_MAP_EXTERNAL_ALLOCATION:
	case UVM_MAP_EXTERNAL_SPARSE:
		return map_pre(call);
	default:
		return release_pre(call);
	}
}

void vcore_uvm_external_end(struct vcore_call *call)
{
	if (call->uvm_locked)
		call->slot->ops->unlock(call->file->uvm_lock);
	call->uvm_locked = 0;
}

int vcore_uvm_external_open(struct vcore_file *file)
{
	const struct vcore_host_ops *ops = file->slot->ops;

	if (file->kind != VCORE_FILE_UVM)
		return 0;
	file->uvm_lock =
		(ops->lock_create_file ? ops->lock_create_file
				       : ops->lock_create)(file->slot->priv);
	return file->uvm_lock ? 0 : -VCORE_ENOMEM;
}

void vcore_uvm_external_close(struct vcore_file *file)
{
	struct vcore_slot *slot = file->slot;
	struct vcore_uvm_range *r;

	while ((r = file->uvm_ranges) != VCORE_NULL) {
		file->uvm_ranges = r->next;
		slot->ops->free(slot->priv, r);
	}
	file->uvm_n_ranges = 0;
	if (file->uvm_lock)
		slot->ops->lock_destroy(slot->priv, file->uvm_lock);
	file->uvm_lock = VCORE_NULL;
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
 * UVM built the page tables of one mapping of a span the core did not read:
 * the first hold is charged those of the largest such object at the worst
 * place (a span starting 4 KiB below a 2^56 boundary crosses every level's),
 * on one GPU, past the quota if need be (the driver already made them).
 */
void vcore_uvm_external_replaced(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	struct vcore_file *file = call->file;
	struct vcore_obj *o, *hold, *first = VCORE_NULL;
	vcore_u64 largest = 0, size;
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
			if (!first)
				first = hold;
			size = o->charged ? o->charged : o->dup_src->charged;
			if (size > largest)
				largest = size;
		}
	}
out:
	if (first && largest) {
		first->hold_ptables = vcore_uvm_map_ptables(
			(1ull << 56) - UVM_PAGE_4K, largest);
		vcore_charge_force(slot, first->hold_ptables);
		slot->stats.internal_charged_bytes += first->hold_ptables;
		slot->uvm_ptables += first->hold_ptables;
		vcore_note_peak_locked(slot);
	}
	vcore_unlock(slot);
}
