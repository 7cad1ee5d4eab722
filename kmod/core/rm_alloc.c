// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * rm_alloc.c - escapes that create, free or share RM objects (the pre
 * steps), and the video-memory reservation. What follows the driver's
 * answer is beside it: rm_alloc_post.c settles the charge and records or
 * drops the object, rm_alloc_verify.c asks the driver whether the call did
 * what the core's private copy says (docs/results/kmod-issue4-tamper.md).
 *
 * Charging (abi.md §4, memory-quota-h200.md): pre reserves the size the
 * private copy asks for, rounded up to the page size its attr selects,
 * atomically against the quota (refusal = NV_ERR_NO_MEMORY in the struct,
 * ioctl 0, exactly what RM does). Post settles at max(reserved, size the
 * driver allocated), so racing threads cannot shrink the charge below what
 * the driver allocated (see vcore.h, TOCTOU). Where the host can ask the
 * driver itself (host op driver_memory: the kernel host's in-kernel RM
 * query), that size is the driver's word and is the charge: the part past
 * the reservation is charged against the quota or the object is freed and
 * refused, and an unused part of the reservation is refunded at once; else
 * it is read from the reply, which a racing thread can still rewrite.
 *
 * TSGs, channels and VA spaces hold video memory of the driver's own that no
 * RM_ALLOC of memory reports (issue 17 F11.1): each is charged its class's
 * fixed estimate (rm_internal_bytes, tables_580.c), reserved and refused
 * exactly like memory, and refunded with the object (objects.c).
 */
#include "rm_alloc_internal.h"
#include "abi/classes.h"
#include "abi/nvstatus.h"
#include "abi/nv_escape.h"

#define SZ_4K	0x1000ull
#define SZ_64K	0x10000ull
#define SZ_2M	0x200000ull
#define SZ_512M 0x20000000ull

/* RM aligns to the page size attr/attr2 select (nvos.h:1061-1090); the
 * default is at least 4 KiB. */
static vcore_u64 page_align_of(vcore_u32 attr, vcore_u32 attr2)
{
	switch (NVOS32_ATTR_PAGE_SIZE(attr)) {
	case NVOS32_ATTR_PAGE_SIZE_BIG:
		return SZ_64K;
	case NVOS32_ATTR_PAGE_SIZE_HUGE:
		return NVOS32_ATTR2_PAGE_SIZE_HUGE(attr2) == 2 ? SZ_512M
							       : SZ_2M;
	default:
		return SZ_4K;
	}
}

static enum vcore_verdict prealloc_obj(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 n;

	vcore_lock(slot);
	n = slot->stats.objects;
	vcore_unlock(slot);
	if (n >= VCORE_MAX_OBJECTS)
		return vcore_refuse_status(call, NV_ERR_INSUFFICIENT_RESOURCES,
					   "object table full");
	call->new_obj = slot->ops->zalloc(slot->priv, sizeof(*call->new_obj));
	if (!call->new_obj)
		return vcore_refuse_errno(call, -VCORE_ENOMEM,
					  "no memory for the object record");
	call->new_obj->pid = call->ctx.pid;
	call->post = VCORE_POST_ALLOC;
	return VCORE_FORWARD;
}

/* Reserve @bytes of vidmem; refuse as RM does when over quota. */
static enum vcore_verdict reserve(struct vcore_call *call, vcore_u64 bytes,
				  vcore_u64 align)
{
	call->page_align = (vcore_u32)(align > 0xffffffffu ? 0 : align);
	if (!bytes)
		return VCORE_FORWARD;
	call->requested = bytes;
	if (vcore_charge_try(call->slot, bytes)) {
		vcore_lock(call->slot);
		call->slot->stats.denied_quota++;
		vcore_unlock(call->slot);
		return vcore_refuse_quota(call, NV_ERR_NO_MEMORY,
					  "video memory quota exceeded");
	}
	call->reserved = bytes;
	return VCORE_FORWARD;
}

/*
 * Reserve the driver system memory of a class 0x3e allocation against the
 * slot's budget (issue 17, F10): nvidia.ko allocates these pages with
 * GFP_KERNEL and no __GFP_ACCOUNT (nv_alloc_system_pages, nv-vm.c), so
 * neither the pod's memory cgroup nor any process's RSS sees them, and a
 * tenant could take the node's memory. RM reads the size again and writes
 * the size it allocated back (sysmemConstruct_IMPL, system_mem.c), both in
 * user memory a sibling thread can change around the call: post settles at
 * the driver's own size where the host can ask it (driver_memory), freeing
 * the object past the budget, as video memory past the quota
 * (rm_alloc_post.c, sysmem_settle_trusted).
 */
static enum vcore_verdict
reserve_sysmem(struct vcore_call *call, const vcore_u8 *params, vcore_u32 psize)
{
	struct vcore_slot *slot = call->slot;
	vcore_u64 budget = slot->cfg.sysmem_budget_bytes, bytes;
	vcore_bool over;

	if (!budget)
		return VCORE_FORWARD;
	if (!params || psize < sizeof(NV_MEMORY_ALLOCATION_PARAMS))
		return vcore_refuse_status(
			call, NV_ERR_INVALID_ARGUMENT,
			"system memory alloc without params");
	bytes = round_up(vcore_rd64(params, 64), SZ_4K);
	vcore_lock(slot);
	over = bytes > budget || slot->sysmem_held > budget - bytes;
	if (!over)
		slot->sysmem_held += bytes;
	vcore_unlock(slot);
	if (over)
		return vcore_refuse_status(call, NV_ERR_NO_MEMORY,
					   "system memory budget exceeded");
	call->sysmem_reserved = bytes;
	return VCORE_FORWARD;
}

/*
 * A GPU virtual range (NV50_MEMORY_VIRTUAL; a VIRTUAL VID_HEAP allocation):
 * RM reserves the page tables of the whole range when it is made unless
 * NVOS32_ALLOC_FLAGS_LAZY (virtmemConstruct_IMPL; SPARSE clears LAZY,
 * stdmemValidateParams): 273 MiB for 128 GiB on the H200, reported by no
 * RM_ALLOC of memory (issue 17 F11.1, docs/results/rm-internal-memory-h200.md).
 * Under a quota an eager range is refused. The driver reads the flags and the
 * size again after this check, so every range is charged the page tables it
 * would hold were it eager (vcore_va_range_ptables): a LAZY cleared by a
 * sibling's store then takes nothing uncharged, and post settles the charge
 * at the driver's own size (rm_alloc_post.c).
 */
static enum vcore_verdict va_range(struct vcore_call *call, vcore_u32 flags,
				   vcore_u64 size)
{
	if (vcore_slot_has_quota(call->slot) &&
	    (!(flags & NVOS32_ALLOC_FLAGS_LAZY) ||
	     (flags & NVOS32_ALLOC_FLAGS_SPARSE)))
		return vcore_refuse_quota(
			call, NV_ERR_NOT_SUPPORTED,
			"eager GPU virtual range (no LAZY, or SPARSE): its "
			"page tables are not countable under a quota");
	call->new_obj->cls = NV50_MEMORY_VIRTUAL;
	call->internal = vcore_va_range_ptables(size);
	return reserve(call, call->internal, 0);
}

/*
 * The class decides what an allocation means. @params is the private copy
 * of the class params (NULL when the escape has none), @psize its length.
 */
static enum vcore_verdict alloc_by_class(struct vcore_call *call, vcore_u32 cls,
					 const vcore_u8 *params,
					 vcore_u32 psize)
{
	const struct vcore_class_row *row =
		vcore_abi_class(call->slot->abi, cls);
	enum vcore_verdict v;

	call->cmd = cls;
	if (!row) {
		v = vcore_policy_unknown(
			call, &call->slot->stats.unknown_classes, cls, 0,
			NV_ERR_INVALID_CLASS, "unknown class");
		if (v != VCORE_FORWARD)
			return v;
		v = prealloc_obj(call);
		if (v == VCORE_FORWARD)
			call->new_obj->cls = cls;
		return v;
	}
	v = prealloc_obj(call);
	if (v != VCORE_FORWARD)
		return v;
	call->new_obj->cls = cls;
	switch (row->kind) {
	case VCORE_CLS_VIDMEM: {
		vcore_u32 flags, attr, attr2;
		vcore_u64 align;

		if (!params || psize < sizeof(NV_MEMORY_ALLOCATION_PARAMS))
			return vcore_slot_has_quota(call->slot)
				       ? vcore_refuse_status(
						 call, NV_ERR_INVALID_ARGUMENT,
						 "vidmem alloc without params")
				       : VCORE_FORWARD;
		flags = vcore_rd32(params, 8);
		attr = vcore_rd32(params, 24);
		attr2 = vcore_rd32(params, 28);
		/* VIRTUAL-flagged allocs reserve address space only. */
		if (flags & NVOS32_ALLOC_FLAGS_VIRTUAL)
			return VCORE_FORWARD;
		align = page_align_of(attr, attr2);
		call->reply_size_off = 64;
		return reserve(call, round_up(vcore_rd64(params, 64), align),
			       align);
	}
	case VCORE_CLS_FABRIC:
		if (!params || psize < NV00F8_ALLOCATION_PARAMETERS_SIZE)
			return vcore_slot_has_quota(call->slot)
				       ? vcore_refuse_status(
						 call, NV_ERR_INVALID_ARGUMENT,
						 "fabric alloc without params")
				       : VCORE_FORWARD;
		call->reply_size_off = NV00F8_ALLOC_SIZE_OFF;
		return reserve(
			call,
			round_up(vcore_rd64(params, NV00F8_ALLOC_SIZE_OFF),
				 SZ_2M),
			SZ_2M);
	case VCORE_CLS_SYSMEM:
		return reserve_sysmem(call, params, psize);
	case VCORE_CLS_VA_RANGE:
		if (!params || psize < sizeof(NV_MEMORY_ALLOCATION_PARAMS))
			return vcore_slot_has_quota(call->slot)
				       ? vcore_refuse_status(
						 call, NV_ERR_INVALID_ARGUMENT,
						 "virtual range without params")
				       : VCORE_FORWARD;
		return va_range(call, vcore_rd32(params, 8),
				vcore_rd64(params, 64));
	case VCORE_CLS_QUOTA_REFUSED:
		if (vcore_slot_has_quota(call->slot))
			return vcore_refuse_quota(
				call, NV_ERR_NOT_SUPPORTED,
				"memory class not countable under a quota");
		return VCORE_FORWARD;
	case VCORE_CLS_TSG:
	case VCORE_CLS_CHANNEL:
		v = vcore_sched_obj_limit(call, row->kind == VCORE_CLS_TSG,
					  vcore_rd32(call->argbuf, 0));
		if (v != VCORE_FORWARD)
			return v;
		if (row->kind == VCORE_CLS_TSG && params &&
		    psize >= sizeof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS))
			call->new_obj->engine_type = vcore_rd32(params, 12);
		/* The driver's own memory behind it (tables_580.c), by class
		 * alone: nothing the tenant writes changes the estimate. */
		call->internal = row->rm_internal_bytes;
		return reserve(call, call->internal, 0);
	case VCORE_CLS_VASPACE:
		v = vcore_vaspace_limit(call);
		if (v != VCORE_FORWARD)
			return v;
		/* Its page directories (tables_580.c), by class alone. */
		call->internal = row->rm_internal_bytes;
		return reserve(call, call->internal, 0);
	case VCORE_CLS_EVENT:
		/* RM overwrites NV0005.data with a kernel pointer and copies it
		 * back (event.c:174-183, abi.md §9.3 item 5): post puts the
		 * caller's value back, as gVisor does. */
		call->restore_event_data =
			params && psize >= sizeof(NV0005_ALLOC_PARAMETERS);
		return VCORE_FORWARD;
	default:
		return VCORE_FORWARD;
	}
}

/*
 * A client allocation, with the host's client ops (vcore.h;
 * docs/results/kmod-issue4-tamper.md). The core's record of a client decides
 * what is charged to the tenant, what the driver is asked about and what is
 * freed on its behalf, so it must name the client this call created through the
 * caller's file, and nothing else. The handle is claimed node-wide before the
 * driver sees the call (refused as the driver refuses a duplicate when another
 * tenant has it), and after the call only the driver's word on that handle
 * counts (vcore_post_alloc), never the status or the handle in user memory.
 * hObjectNew 0 asks RM to choose (abi.md §3); its choice would reach the core
 * only through the reply, which a sibling thread can rewrite to another
 * tenant's client handle: the host chooses instead, and the handle is written
 * into the caller's parameters, where the driver reads it and returns it in the
 * reply as it would its own.
 */
static enum vcore_verdict claim_client(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 h = vcore_rd32(call->argbuf, 8);
	vcore_bool chosen = !h;
	int err = slot->client_ops->claim(slot->priv, &h);

	if (err == -VCORE_EEXIST)
		return vcore_refuse_status(call, NV_ERR_INSERT_DUPLICATE_NAME,
					   "client handle already in use");
	if (err) {
		/* The driver cannot say: recorded as without the ops. */
		call->client_unverified = 1;
		return VCORE_FORWARD;
	}
	call->client_claim = h; /* released in call_free unless recorded */
	if (chosen) {
		vcore_wr32(call->argbuf, 8, h);
		if (vcore_user_write(call, call->arg + 8, &h, sizeof(h)))
			return vcore_refuse_errno(call, -VCORE_EFAULT,
						  "client handle unwritable");
	}
	return VCORE_FORWARD;
}

/* NV_ESC_RM_ALLOC: NVOS21 (32 B) or NVOS64 (48 B, escape.c:381-430). */
enum vcore_verdict vcore_esc_rm_alloc(struct vcore_call *call)
{
	const struct vcore_class_row *row;
	vcore_u32 cls = vcore_rd32(call->argbuf, 12);
	vcore_uptr_t p = vcore_rd64(call->argbuf, 16);
	const vcore_u8 *params = VCORE_NULL;
	enum vcore_verdict v;
	vcore_u32 psize = 0;
	int i;

	call->h_parent = vcore_rd32(call->argbuf, 4);
	if (call->size == sizeof(NVOS21_PARAMETERS))
		call->status_off = VCORE_OFF(NVOS21_PARAMETERS, status);
	/*
	 * hObjectNew 0 asks RM to choose the handle (abi.md §3), which then
	 * exists only in the reply: user memory that a sibling thread can
	 * rewrite (to 0, or to another handle; with the status, to a failure)
	 * before vcore_post reads it, leaving what the driver made unrecorded
	 * and uncharged (docs/results/kmod-issue4-tamper.md). A host that
	 * verifies every allocation against the driver (driver_memory) needs
	 * the handle from the private copy, so it refuses a driver-chosen
	 * handle for any class but a client, which holds no memory itself. The
	 * recorded corpus asks RM to choose only for NV01_ROOT and
	 * NV01_ROOT_CLIENT.
	 */
	if (!vcore_rd32(call->argbuf, 8) && call->slot->ops->driver_memory &&
	    !is_root_class(cls)) {
		call->cmd = cls;
		return vcore_refuse_status(call, NV_ERR_NOT_SUPPORTED,
					   "driver-chosen handle (hObjectNew "
					   "0) for a class other than a "
					   "client");
	}
	/* RM sizes the params by class and ignores paramsSize
	 * (alloc_free.c:110-145): so do we. */
	row = vcore_abi_class(call->slot->abi, cls);
	if (row && row->params_size && p) {
		vcore_bool need = row->kind == VCORE_CLS_VIDMEM ||
				  row->kind == VCORE_CLS_SYSMEM ||
				  row->kind == VCORE_CLS_VA_RANGE ||
				  row->kind == VCORE_CLS_FABRIC ||
				  row->kind == VCORE_CLS_TSG ||
				  row->kind == VCORE_CLS_EVENT;

		i = vcore_add_buf(call, (int)call->argidx, 16, p,
				  row->params_size, need);
		if (i < 0)
			return vcore_refuse_errno(call,
						  i == -VCORE_ENOMEM
							  ? -VCORE_ENOMEM
							  : -VCORE_EFAULT,
						  "alloc params unreadable");
		call->params_buf = i;
		params = call->bufs[i].priv;
		psize = call->bufs[i].copied ? row->params_size : 0;
	}
	if (call->size == sizeof(NVOS64_PARAMETERS)) {
		vcore_uptr_t r = vcore_rd64(call->argbuf, 24);

		if (r)
			vcore_add_buf(call, (int)call->argidx, 24, r,
				      RS_ACCESS_MASK_SIZE, 0);
	}
	v = alloc_by_class(call, cls, params, psize);
	if (v == VCORE_FORWARD && is_root_class(cls) && call->slot->client_ops)
		v = claim_client(call);
	return v;
}

/* NV_ESC_RM_ALLOC_OBJECT (NVOS05): an alloc without params. */
enum vcore_verdict vcore_esc_rm_alloc_object(struct vcore_call *call)
{
	vcore_u32 cls = vcore_rd32(call->argbuf, 12);
	const struct vcore_class_row *row =
		vcore_abi_class(call->slot->abi, cls);

	call->h_parent = vcore_rd32(call->argbuf, 4);
	/* A client is recorded only as NV_ESC_RM_ALLOC makes it, confirmed by
	 * the driver (claim_client); libcuda never makes one here. */
	if (is_root_class(cls) && call->slot->client_ops) {
		call->cmd = cls;
		return vcore_refuse_status(call, NV_ERR_NOT_SUPPORTED,
					   "client through ALLOC_OBJECT");
	}
	if (row &&
	    (row->kind == VCORE_CLS_VIDMEM || row->kind == VCORE_CLS_FABRIC ||
	     row->kind == VCORE_CLS_VA_RANGE) &&
	    vcore_slot_has_quota(call->slot)) {
		call->cmd = cls;
		return vcore_refuse_status(
			call, NV_ERR_NOT_SUPPORTED,
			"memory through ALLOC_OBJECT is not countable");
	}
	return alloc_by_class(call, cls, VCORE_NULL, 0);
}

/*
 * NV_ESC_RM_ALLOC_MEMORY (NVOS02 + fd). libcuda: class 0x71 to pin host
 * pages (abi.md §4.2). Class 0x40 here is the legacy heap query, whose
 * `limit` the view rewrites; 0x3e with a mapping uses the wrapper fd.
 */
enum vcore_verdict vcore_esc_rm_alloc_memory(struct vcore_call *call)
{
	vcore_u32 cls = vcore_rd32(call->argbuf, 12);
	enum vcore_verdict v;

	call->h_parent = vcore_rd32(call->argbuf, 4);
	vcore_add_fd(call, call->arg + 48,
		     (vcore_s32)vcore_rd32(call->argbuf, 48), VCORE_FD_NV_ANY);
	/* Legacy system memory (NVOS02 pLimit) is not counted against the
	 * sysmem budget: refused under one (libcuda pins its host memory
	 * as 0x71, tests/data/traces). */
	if (cls == NV01_MEMORY_SYSTEM && call->slot->cfg.sysmem_budget_bytes) {
		call->cmd = cls;
		return vcore_refuse_status(call, NV_ERR_NOT_SUPPORTED,
					   "legacy system memory under a "
					   "system memory budget");
	}
	switch (cls) {
	case NV01_MEMORY_LOCAL_USER:
	case NV01_MEMORY_SYSTEM:
	case NV01_MEMORY_SYSTEM_OS_DESCRIPTOR:
	case NV01_MEMORY_SYSTEM_DYNAMIC:
		break;
	default:
		return vcore_policy_unknown(
			call, &call->slot->stats.unknown_classes, cls, 0,
			NV_ERR_INVALID_CLASS, "unknown ALLOC_MEMORY class");
	}
	call->cmd = cls;
	v = prealloc_obj(call);
	if (v == VCORE_FORWARD)
		call->new_obj->cls = cls;
	return v;
}

/*
 * NV_ESC_RM_VID_HEAP_CONTROL (NVOS32). The alloc functions become an
 * internal RM_ALLOC of 0x40/0x3e/0x50a0 that never passes the proxy
 * (rmapi_deprecated_vidheapctrl.c:116-212), so they are charged here.
 */
enum vcore_verdict vcore_esc_vid_heap_control(struct vcore_call *call)
{
	const vcore_u8 *a = call->argbuf;
	vcore_u32 fn = vcore_rd32(a, 8), flags, attr, size_off;
	vcore_u64 align;
	enum vcore_verdict v;

	call->cmd = fn;
	switch (fn) {
	case NVOS32_FUNCTION_INFO:
		call->post = VCORE_POST_VHC_INFO;
		return VCORE_FORWARD;
	case NVOS32_FUNCTION_FREE:
		call->free_client = vcore_rd32(a, 0);
		call->free_object = vcore_rd32(a, NVOS32_FREE_HMEMORY_OFF);
		call->post = VCORE_POST_FREE;
		return VCORE_FORWARD;
	case NVOS32_FUNCTION_ALLOC_SIZE:
	case NVOS32_FUNCTION_ALLOC_TILED_PITCH_HEIGHT:
		size_off = NVOS32_ALLOCSIZE_SIZE_OFF;
		break;
	case NVOS32_FUNCTION_ALLOC_SIZE_RANGE:
		size_off = NVOS32_SIZERANGE_SIZE_OFF;
		break;
	default:
		return VCORE_FORWARD;
	}
	flags = vcore_rd32(a, NVOS32_ALLOCSIZE_FLAGS_OFF);
	/*
	 * Without MEMORY_HANDLE_PROVIDED the driver makes its own handle,
	 * whatever hMemory says (rmapi_deprecated_vidheapctrl.c,
	 * _rmVidHeapControlAllocCommon): a charge recorded under hMemory would
	 * be refunded by a free of a handle the driver never made (issue 17,
	 * F9). libcuda never allocates here; under a quota the handle must be
	 * the caller's, and vcore_verify_alloc checks that the driver used it.
	 */
	if (vcore_slot_has_quota(call->slot) &&
	    (!(flags & NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED) ||
	     !vcore_rd32(a, NVOS32_ALLOCSIZE_HMEMORY_OFF)))
		return vcore_refuse_quota(
			call, NV_ERR_NOT_SUPPORTED,
			"VID_HEAP allocation without a provided handle "
			"under a quota");
	attr = vcore_rd32(a, NVOS32_ALLOCSIZE_ATTR_OFF);
	/* System memory the sysmem budget does not count (F10): refused. */
	if (!(flags & NVOS32_ALLOC_FLAGS_VIRTUAL) &&
	    NVOS32_ATTR_LOCATION(attr) == NVOS32_ATTR_LOCATION_PCI &&
	    call->slot->cfg.sysmem_budget_bytes)
		return vcore_refuse_status(call, NV_ERR_NOT_SUPPORTED,
					   "VID_HEAP system memory under a "
					   "system memory budget");
	call->h_parent = vcore_rd32(a, 4);
	v = prealloc_obj(call);
	if (v != VCORE_FORWARD)
		return v;
	call->reply_handle_from_buf = 1;
	/* The driver makes an NV50_MEMORY_VIRTUAL with these flags
	 * (rmapi_deprecated_vidheapctrl.c, _rmVidHeapControlAllocCommon). */
	if (flags & NVOS32_ALLOC_FLAGS_VIRTUAL)
		return va_range(call, flags, vcore_rd64(a, size_off));
	if (NVOS32_ATTR_LOCATION(attr) == NVOS32_ATTR_LOCATION_PCI) {
		call->new_obj->cls = NV01_MEMORY_SYSTEM;
		return VCORE_FORWARD;
	}
	/* VIDMEM or ANY: RM may place it in vidmem; charge it. */
	call->new_obj->cls = NV01_MEMORY_LOCAL_USER;
	call->reply_size_off = size_off;
	align = page_align_of(attr, vcore_rd32(a, NVOS32_ALLOCSIZE_ATTR2_OFF));
	return reserve(call, round_up(vcore_rd64(a, size_off), align), align);
}

/* NV_ESC_RM_FREE (NVOS00): a client free when hObjectOld == hRoot. */
enum vcore_verdict vcore_esc_rm_free(struct vcore_call *call)
{
	call->free_client = vcore_rd32(call->argbuf, 0);
	call->free_object = vcore_rd32(call->argbuf, 8);
	call->post = VCORE_POST_FREE;
	return VCORE_FORWARD;
}

/* NV_ESC_RM_DUP_OBJECT (NVOS55): memory of a client outside this slot
 * cannot be charged to it, so under a quota such dups are refused. A client
 * of another process of this slot (the shim's shared ledger knows them) is
 * inside: its memory stays charged to its owner (vcore.h, ledger ops). */
enum vcore_verdict vcore_esc_rm_dup_object(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 src_client = vcore_rd32(
		call->argbuf, VCORE_OFF(NVOS55_PARAMETERS, hClientSrc));
	vcore_bool known;
	enum vcore_verdict v;

	vcore_lock(slot);
	known = vcore_obj_find_locked(slot, src_client, src_client) !=
		VCORE_NULL;
	if (!known && slot->ledger.ops->client_in_slot &&
	    slot->ledger.ops->client_in_slot(slot->ledger.priv, src_client))
		known = call->xdup = 1;
	vcore_unlock(slot);
	if (!known && vcore_slot_has_quota(slot))
		return vcore_refuse_status(
			call, NV_ERR_INSUFFICIENT_PERMISSIONS,
			"dup from a client outside this slot");
	call->h_parent =
		vcore_rd32(call->argbuf, VCORE_OFF(NVOS55_PARAMETERS, hParent));
	v = prealloc_obj(call);
	if (v != VCORE_FORWARD)
		return v;
	call->post = VCORE_POST_DUP;
	return VCORE_FORWARD;
}

/* NV_ESC_RM_SHARE (NVOS57): only objects this slot owns. */
enum vcore_verdict vcore_esc_rm_share(struct vcore_call *call)
{
	vcore_u32 c = vcore_rd32(call->argbuf, 0),
		  o = vcore_rd32(call->argbuf, 4);
	vcore_bool known;

	vcore_lock(call->slot);
	known = vcore_obj_find_locked(call->slot, c, o) != VCORE_NULL;
	vcore_unlock(call->slot);
	if (!known && vcore_slot_has_quota(call->slot))
		return vcore_refuse_status(
			call, NV_ERR_INSUFFICIENT_PERMISSIONS,
			"share of an object outside this slot");
	return VCORE_FORWARD;
}
