// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * rm_alloc.c - escapes that create, free or share RM objects, and the
 * video-memory charge.
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
 */
#include "vcore_internal.h"
#include "abi/classes.h"
#include "abi/nvstatus.h"
#include "abi/nv_escape.h"

#define SZ_4K	0x1000ull
#define SZ_64K	0x10000ull
#define SZ_2M	0x200000ull
#define SZ_512M 0x20000000ull

static vcore_u64 round_up(vcore_u64 v, vcore_u64 align)
{
	vcore_u64 r = (v + align - 1) & ~(align - 1);

	return r < v ? ~(align - 1) : r; /* saturate on overflow */
}

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
	if (vcore_charge_try(call->slot, bytes)) {
		vcore_lock(call->slot);
		call->slot->stats.denied_quota++;
		vcore_unlock(call->slot);
		return vcore_refuse_status(call, NV_ERR_NO_MEMORY,
					   "video memory quota exceeded");
	}
	call->reserved = bytes;
	return VCORE_FORWARD;
}

/*
 * The class decides what an allocation means. @params is the private copy
 * of the class params (NULL when the escape has none), @psize its length.
 */
static vcore_bool is_root_class(vcore_u32 cls)
{
	return cls == NV01_ROOT || cls == NV01_ROOT_NON_PRIV ||
	       cls == NV01_ROOT_CLIENT;
}

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
	case VCORE_CLS_QUOTA_REFUSED:
		if (vcore_slot_has_quota(call->slot))
			return vcore_refuse_status(
				call, NV_ERR_NOT_SUPPORTED,
				"memory class not countable under a quota");
		return VCORE_FORWARD;
	case VCORE_CLS_TSG:
		if (params &&
		    psize >= sizeof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS))
			call->new_obj->engine_type = vcore_rd32(params, 12);
		return VCORE_FORWARD;
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
 * A client allocation, with the host's client ops (vcore.h; issue 4). The
 * core's record of a client decides what is charged to the tenant, what the
 * driver is asked about and what is freed on its behalf, so it must name the
 * client this call created through the caller's file, and nothing else. The
 * handle is claimed node-wide before the driver sees the call (refused as the
 * driver refuses a duplicate when another tenant has it), and after the call
 * only the driver's word on that handle counts (vcore_post_alloc), never the
 * status or the handle in user memory. hObjectNew 0 asks RM to choose (abi.md
 * §3); its choice would reach the core only through the reply, which a
 * sibling thread can rewrite to another tenant's client handle: the host
 * chooses instead, and the handle is written into the caller's parameters,
 * where the driver reads it and returns it in the reply as it would its own.
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
	 * and uncharged (issue 4). A host that verifies every allocation
	 * against the driver (driver_memory) needs the handle from the private
	 * copy, so it refuses a driver-chosen handle for any class but a
	 * client, which holds no memory itself. The recorded corpus asks RM to
	 * choose only for NV01_ROOT and NV01_ROOT_CLIENT.
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
	    (row->kind == VCORE_CLS_VIDMEM || row->kind == VCORE_CLS_FABRIC) &&
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
	call->h_parent = vcore_rd32(a, 4);
	v = prealloc_obj(call);
	if (v != VCORE_FORWARD)
		return v;
	call->reply_handle_from_buf = 1;
	flags = vcore_rd32(a, NVOS32_ALLOCSIZE_FLAGS_OFF);
	attr = vcore_rd32(a, NVOS32_ALLOCSIZE_ATTR_OFF);
	if (flags & NVOS32_ALLOC_FLAGS_VIRTUAL) {
		call->new_obj->cls = NV50_MEMORY_VIRTUAL;
		return VCORE_FORWARD;
	}
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
 * cannot be charged to it, so under a quota such dups are refused. */
enum vcore_verdict vcore_esc_rm_dup_object(struct vcore_call *call)
{
	vcore_u32 src_client = vcore_rd32(call->argbuf, 12);
	vcore_bool known;
	enum vcore_verdict v;

	vcore_lock(call->slot);
	known = vcore_obj_find_locked(call->slot, src_client, src_client) !=
		VCORE_NULL;
	vcore_unlock(call->slot);
	if (!known && vcore_slot_has_quota(call->slot))
		return vcore_refuse_status(
			call, NV_ERR_INSUFFICIENT_PERMISSIONS,
			"dup from a client outside this slot");
	call->h_parent = vcore_rd32(call->argbuf, 4);
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

/* ---- post steps ---- */

static int reply_status(struct vcore_call *call, vcore_u32 *status)
{
	return vcore_reply_u32(call, call->status_off, status);
}

static void report_overquota(struct vcore_call *call,
			     const struct vcore_overquota *oq)
{
	vcore_overquota_fn fn = call->slot->overquota_fn;

	vcore_logf(call->slot, VCORE_LOG_WARN,
		   "pid %u: driver allocated %llu bytes for 0x%x/0x%x beyond "
		   "the quota (parameters changed during the call)",
		   call->ctx.pid, (unsigned long long)oq->bytes, oq->h_client,
		   oq->h_object);
	if (fn)
		fn(call->slot->priv, call->file, oq);
}

/*
 * An object under a client this table never saw (a recording that starts
 * mid-way, or a table that was full): record the client, owned by this
 * file, so that a later client free or file close still finds the subtree.
 * Without memory for it the object becomes its own root, owned by the file.
 */
static void add_implicit_client_locked(struct vcore_call *call,
				       vcore_u32 h_client)
{
	struct vcore_slot *slot = call->slot;
	struct vcore_obj *c = slot->ops->zalloc(slot->priv, sizeof(*c));

	if (!c) {
		call->new_obj->owner = call->file;
		return;
	}
	c->h_client = h_client;
	c->h_object = h_client;
	c->cls = NV01_ROOT_CLIENT;
	c->pid = call->ctx.pid;
	c->owner = call->file;
	vcore_obj_insert_locked(slot, c, 0, call->file);
}

static int restore_event_data(struct vcore_call *call)
{
	const struct vcore_buf_info *b = &call->bufs[call->params_buf];
	vcore_u64 data = vcore_rd64(b->priv, 16);

	return vcore_user_write(call, b->uaddr + 16, &data, sizeof(data));
}

/* The handle the caller chose for a new object (0: the driver chooses). */
static vcore_u32 private_handle(const struct vcore_call *call)
{
	return vcore_rd32(call->argbuf, call->reply_handle_from_buf
						? NVOS32_ALLOCSIZE_HMEMORY_OFF
						: 8);
}

/*
 * With the host's client ops (vcore.h): is @h_client a client whose record
 * the driver confirmed (or could not be asked about), and, for a ctl file,
 * one this file created? The driver binds a client to the ctl file that
 * created it and refuses it through any other (abi.md §9.2), so a successful
 * call through this file under any other hRoot means the driver read another
 * hRoot than the core's private copy holds. Dev files act for the clients of
 * the ctl file they registered, which the core does not track: any client of
 * the slot. Without the ops: any client (or none; add_implicit_client).
 */
static vcore_bool own_client(struct vcore_call *call, vcore_u32 h_client)
{
	struct vcore_slot *slot = call->slot;
	struct vcore_obj *c;
	vcore_bool ok;

	if (!slot->client_ops)
		return 1;
	vcore_lock(slot);
	c = vcore_obj_find_locked(slot, h_client, h_client);
	ok = c && !c->parent && (c->confirmed || c->unverified) &&
	     (call->file->kind != VCORE_FILE_CTL || c->owner == call->file);
	vcore_unlock(slot);
	return ok;
}

/*
 * The status says the allocation failed, but the status is user memory a
 * racing thread can rewrite after the driver wrote NV_OK. When the caller
 * chose the handle (the private copy has it) and the table does not know
 * it, ask the driver whether the object exists: if it does, this call made
 * it. Returns the handle, or 0 when nothing was created.
 */
static vcore_u32 created_despite_status(struct vcore_call *call,
					vcore_u32 h_client, vcore_u64 *bytes)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 h = private_handle(call);
	vcore_bool known;

	if (!h || !slot->ops->driver_memory)
		return 0;
	/* Never another tenant's object: the private hRoot is the tenant's
	 * to choose, and the driver's query answers for any client. */
	if (!own_client(call, h_client))
		return 0;
	vcore_lock(slot);
	known = vcore_obj_find_locked(slot, h_client, h) != VCORE_NULL;
	vcore_unlock(slot);
	/* Every class, not only charged ones: hClass may have been changed
	 * too, and the driver's size is what gets charged (verify_alloc). */
	if (known || slot->ops->driver_memory(slot->priv, h_client,
					      call->h_parent, h, bytes))
		return 0;
	return h;
}

/*
 * The driver holds more than the quota allows: the parameters changed
 * between the private copy and the driver's own read. Free the object in
 * the driver and answer NV_ERR_NO_MEMORY, what the driver says when memory
 * runs out (abi.md §4.3). 0 when done; the object is then not recorded, and
 * vcore_post's unwind refunds the reservation. -1 when the driver would not
 * free it: the caller records and charges it instead.
 */
static int deny_after_alloc(struct vcore_call *call, vcore_u32 h_client,
			    vcore_u32 h_object, vcore_u64 bytes)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 st = NV_ERR_NO_MEMORY;

	if (slot->ops->driver_memory(slot->priv, h_client, call->h_parent,
				     h_object, VCORE_NULL))
		return -1;
	vcore_lock(slot);
	slot->stats.overquota_events++;
	slot->stats.denied++;
	slot->stats.denied_quota++;
	vcore_unlock(slot);
	vcore_logf(slot, VCORE_LOG_WARN,
		   "pid %u: class 0x%x object 0x%x/0x%x: the driver allocated "
		   "%llu bytes, past the quota (parameters changed during the "
		   "call): freed, NV_ERR_NO_MEMORY returned",
		   call->ctx.pid, call->cmd, h_client, h_object,
		   (unsigned long long)bytes);
	if (call->status_off)
		vcore_user_write(call, call->arg + call->status_off, &st,
				 sizeof(st));
	return 0;
}

/* The most clients of one file freed in the driver on tampering; more are
 * freed when the killed process's files close (rm_cleanup_file_private). */
#define VCORE_TAMPER_MAX_CLIENTS 32

/*
 * The driver's own copy of the allocation differed from the core's private
 * copy: a sibling thread rewrote hClass, hObjectNew or hRoot during the
 * call (issue 4), and the driver may hold memory the core never charged.
 * Every client this file owns is dropped from the table and freed in the
 * driver with kernel privilege (a client free frees all under it), and the
 * host kills the caller (driver_memory on a client, or on handle 0 when the
 * file owns none). Only clients recorded as owned by this file are freed:
 * the private copy's hRoot is tenant-chosen and may name another's client.
 */
static void tampered(struct vcore_call *call, vcore_u32 h_client,
		     vcore_u32 h_object, const char *why)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 clients[VCORE_TAMPER_MAX_CLIENTS];
	vcore_bool freed[VCORE_TAMPER_MAX_CLIENTS];
	vcore_u32 b, n = 0, i;

	/* No later call through this file (vcore.h, vcore_file_tampered). */
	vcore_atomic_store(&call->file->tampered, 1);
	vcore_lock(slot);
	slot->stats.overquota_events++;
	slot->stats.denied++;
	slot->stats.denied_quota++;
	for (b = 0; b < VCORE_OBJ_BUCKETS; b++) {
		struct vcore_obj *o;

		for (o = slot->buckets[b]; o; o = o->hnext)
			if (!o->parent && o->owner == call->file &&
			    o->h_object == o->h_client &&
			    n < VCORE_ARRAY_SIZE(clients))
				clients[n++] = o->h_client;
	}
	vcore_unlock(slot);
	vcore_logf(slot, VCORE_LOG_WARN,
		   "pid %u: class 0x%x object 0x%x/0x%x: %s (parameters "
		   "changed during the call): %u client(s) freed, caller "
		   "killed",
		   call->ctx.pid, call->cmd, h_client, h_object, why, n);
	/*
	 * The driver frees first, then the records go: a host frees only
	 * under a client whose record (and node-wide claim) still stands
	 * (kmod/trusted.c). A record whose free failed stays, and charged.
	 */
	if (!n)
		slot->ops->driver_memory(slot->priv, 0, 0, 0, VCORE_NULL);
	for (i = 0; i < n; i++)
		freed[i] = !slot->ops->driver_memory(slot->priv, clients[i],
						     clients[i], clients[i],
						     VCORE_NULL);
	vcore_lock(slot);
	for (i = 0; i < n; i++) {
		struct vcore_obj *c;

		c = vcore_obj_find_locked(slot, clients[i], clients[i]);
		if (freed[i] && c && !c->parent && c->owner == call->file)
			vcore_obj_free_tree_locked(slot, c);
	}
	vcore_note_peak_locked(slot);
	vcore_unlock(slot);
}

/*
 * A client allocation, with the host's client ops (claim_client): only the
 * driver's word on the claimed handle decides. The client exists now: this
 * call created it (the handle was free in the driver and claimed node-wide
 * before the call, so nobody else could), and it is recorded, confirmed.
 * It does not: nothing is recorded; and if the status says a client was
 * made, the driver made one under another handle (a sibling thread rewrote
 * hObjectNew after the claim): bound to the caller's file, named by no
 * record, it would hold whatever is made under it uncharged: tampering.
 * 1: record it (*@confirmed: the driver's word, else it could not say).
 */
static int confirm_client(struct vcore_call *call, vcore_bool status_ok,
			  vcore_bool *confirmed)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 h = call->client_claim;
	int err = slot->client_ops->driver_has(slot->priv, h, h);

	*confirmed = !err;
	if (!err)
		return 1;
	if (err != -VCORE_ENOENT)
		return status_ok; /* cannot say: the status decides */
	if (status_ok)
		tampered(call, h, h,
			 "the driver made a client under another handle");
	return 0;
}

/*
 * The status says the allocation failed, and the driver has no object under
 * the private copy's hRoot (created_despite_status). But a sibling can have
 * changed hRoot, before the driver read it, to another client of this file,
 * and then the status, after the driver wrote it, to a failure: the driver's
 * object would be recorded nowhere and charged to no one. With the client
 * ops, ask about the handle under this file's other confirmed clients: one
 * the driver has and the table lacks is that object. Failed allocations
 * only (libcuda makes few), one query per other client.
 */
static vcore_bool made_under_another_client(struct vcore_call *call,
					    vcore_u32 h_client, vcore_u32 h)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 clients[VCORE_TAMPER_MAX_CLIENTS];
	vcore_u32 b, n = 0, i;

	vcore_lock(slot);
	for (b = 0; b < VCORE_OBJ_BUCKETS; b++) {
		struct vcore_obj *o;

		for (o = slot->buckets[b]; o; o = o->hnext)
			if (!o->parent && o->h_object == o->h_client &&
			    o->h_client != h_client && o->confirmed &&
			    (call->file->kind != VCORE_FILE_CTL ||
			     o->owner == call->file) &&
			    !vcore_obj_find_locked(slot, o->h_client, h) &&
			    n < VCORE_ARRAY_SIZE(clients))
				clients[n++] = o->h_client;
	}
	vcore_unlock(slot);
	for (i = 0; i < n; i++)
		if (!slot->client_ops->driver_has(slot->priv, clients[i], h))
			return 1;
	return 0;
}

/*
 * After every successful allocation, when the host can ask the driver
 * (issue 4: the driver copies the parameters in again, after the core's
 * copy). 1: tampering was found and handled (nothing is recorded). 0: go on;
 * *@have_trusted says whether *@trusted is the driver's count of the
 * object's GPU memory, to be charged.
 *
 * Only NV_ESC_RM_ALLOC (NVOS21/NVOS64) is checked for tampering: its
 * hClass, hObjectNew and hRoot are re-read by the driver (escape.c:381-430,
 * alloc_free.c). The other escapes that create objects keep the size query
 * of their charged classes.
 */
static int verify_alloc(struct vcore_call *call, vcore_u32 h_root,
			vcore_u32 h_new, vcore_u64 *trusted,
			vcore_bool *have_trusted)
{
	struct vcore_slot *slot = call->slot;
	const struct vcore_class_row *row;
	vcore_bool known;
	int err;

	if (call->nr != NV_ESC_RM_ALLOC) {
		if (call->reply_size_off)
			*have_trusted = !slot->ops->driver_memory(
				slot->priv, h_root, call->h_parent, h_new,
				trusted);
		return 0;
	}
	/*
	 * The driver never creates an object under a handle in use
	 * (NV_ERR_INSERT_DUPLICATE_NAME): a handle the table already has means
	 * the driver read another hObjectNew or hRoot (or the reply's handle
	 * was rewritten), and the record the insert would replace would be
	 * refunded while the driver keeps both.
	 */
	vcore_lock(slot);
	known = vcore_obj_find_locked(slot, h_root, h_new) != VCORE_NULL;
	vcore_unlock(slot);
	if (known) {
		tampered(call, h_root, h_new, "the handle was already in use");
		return 1;
	}
	err = slot->ops->driver_memory(slot->priv, h_root, call->h_parent,
				       h_new, trusted);
	if (err == -VCORE_ENOENT) {
		tampered(call, h_root, h_new, "the driver has no such object");
		return 1;
	}
	if (err)
		return 0; /* not memory, or the driver cannot say */
	/* GPU memory behind a class the core holds to be no GPU memory. */
	row = vcore_abi_class(slot->abi, call->cmd);
	if (*trusted && row && row->kind != VCORE_CLS_VIDMEM &&
	    row->kind != VCORE_CLS_FABRIC &&
	    row->kind != VCORE_CLS_QUOTA_REFUSED) {
		tampered(
			call, h_root, h_new,
			"the driver holds video memory for an uncharged class");
		return 1;
	}
	*have_trusted = 1;
	return 0;
}

int vcore_post_alloc(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	struct vcore_obj *obj = call->new_obj;
	vcore_u32 status = 0, h_root, h_new = 0;
	vcore_u64 charge = call->reserved, reply = 0, trusted = 0;
	vcore_bool have_trusted = 0, is_root, confirmed = 0;
	struct vcore_overquota oq;
	vcore_bool over = 0;
	int ret = 0;

	/* A failed restore is reported, but the object is still recorded. */
	if (call->restore_event_data && restore_event_data(call))
		ret = -VCORE_EFAULT;
	h_root = vcore_rd32(call->argbuf, 0);
	if (call->client_claim) {
		/* A client: the driver's word on the claimed handle. */
		vcore_bool ok = !reply_status(call, &status) && status == NV_OK;

		if (!confirm_client(call, ok, &confirmed))
			return ret;
		h_new = call->client_claim;
	} else if (reply_status(call, &status) || status != NV_OK) {
		h_new = created_despite_status(call, h_root, &trusted);
		if (!h_new) {
			vcore_u32 h = private_handle(call);

			if (slot->client_ops && h &&
			    made_under_another_client(call, h_root, h))
				tampered(call, h_root, h,
					 "the driver made the object under "
					 "another client of this file");
			return ret; /* nothing recorded; unwind refunds */
		}
		have_trusted = 1;
	} else if (call->reply_handle_from_buf) {
		h_new = vcore_rd32(call->argbuf, NVOS32_ALLOCSIZE_HMEMORY_OFF);
		if (!h_new)
			vcore_reply_u32(call, NVOS32_ALLOCSIZE_HMEMORY_OFF,
					&h_new);
	} else {
		/* hObjectNew is in/out: 0 asks RM to pick (abi.md §3). */
		h_new = vcore_rd32(call->argbuf, 8);
		if (!h_new)
			vcore_reply_u32(call, 8, &h_new);
	}
	if (!h_new)
		return ret;
	is_root = is_root_class(obj->cls);
	/*
	 * With the host's client ops, an object only under a client the
	 * driver confirmed this file created: anything else means the driver
	 * read another hRoot than the private copy's (a sibling's store), and
	 * the core would charge, query and free under a client that is not
	 * the tenant's (issue 4: another tenant's, whose handle it guessed).
	 */
	if (!is_root && !own_client(call, h_root)) {
		tampered(call, h_root, h_new,
			 "the object's client is not one this file created");
		return ret;
	}
	/* Memory classes are never roots: the object's client is h_root. */
	if (slot->ops->driver_memory && !is_root && !have_trusted &&
	    verify_alloc(call, h_root, h_new, &trusted, &have_trusted))
		return ret; /* not recorded; vcore_post's unwind refunds */
	if (have_trusted) {
		/*
		 * The driver's word; the reply is not read at all. It is the
		 * charge, as soon as the call ends: when the driver made less
		 * than was reserved (a sibling thread changed hClass, e.g.
		 * 0x40 -> NV50_MEMORY_VIRTUAL, or a flag, between the private
		 * copy and the driver's read; issue 4), the rest of the
		 * reservation goes back now, not at the free.
		 */
		charge = trusted;
		if (charge < call->reserved) {
			vcore_lock(slot);
			vcore_charge_refund(slot, call->reserved - charge);
			vcore_unlock(slot);
			call->reserved = charge;
		}
	} else if (call->reply_size_off) {
		vcore_uptr_t at;

		if (call->params_buf >= 0)
			at = call->bufs[call->params_buf].uaddr;
		else
			at = call->arg;
		if (!vcore_user_read(call, &reply, at + call->reply_size_off,
				     sizeof(reply)) &&
		    call->page_align)
			reply = round_up(reply, call->page_align);
		if (reply > charge)
			charge = reply;
	}
	/*
	 * A trusted size past the reservation is charged atomically against
	 * the quota; what does not fit is freed in the driver, never recorded.
	 */
	if (have_trusted && charge > call->reserved) {
		if (!vcore_charge_try(slot, charge - call->reserved))
			call->reserved = charge;
		else if (!deny_after_alloc(call, h_root, h_new, charge))
			return ret;
	}
	/* Root classes: the new handle is the client itself. */
	if (is_root) {
		obj->h_client = h_new;
		obj->owner = call->file;
		/* A confirmed record holds the claim until it is dropped
		 * (objects.c, release_one); else call_free releases it. */
		obj->confirmed = confirmed;
		obj->unverified = !confirmed && (call->client_claim ||
						 call->client_unverified);
		if (confirmed)
			call->client_claim = 0;
	} else {
		obj->h_client = h_root;
		/* The client's owner file is where its objects die. */
	}
	obj->h_object = h_new;
	vcore_lock(slot);
	if (charge > call->reserved) {
		vcore_charge_force(slot, charge - call->reserved);
		if (vcore_slot_has_quota(slot) &&
		    vcore_charged(slot) > slot->cfg.mem_quota_bytes) {
			slot->stats.overquota_events++;
			over = 1;
		}
	}
	obj->charged = charge;
	call->reserved = 0; /* now owned by the object */
	if (obj->h_object != obj->h_client &&
	    !vcore_obj_find_locked(slot, obj->h_client, obj->h_client))
		add_implicit_client_locked(call, obj->h_client);
	vcore_obj_insert_locked(slot, obj, call->h_parent, call->file);
	call->new_obj = VCORE_NULL;
	oq.h_client = obj->h_client;
	oq.h_parent = call->h_parent;
	oq.h_object = obj->h_object;
	oq.bytes = obj->charged;
	vcore_note_peak_locked(slot);
	vcore_unlock(slot);
	if (over)
		report_overquota(call, &oq);
	if (call->nr == NV_ESC_RM_ALLOC_MEMORY &&
	    call->cmd == NV01_MEMORY_LOCAL_USER)
		return vcore_view_heap_query(call);
	return ret;
}

/*
 * Whether a free took the object away. The status is user memory, and so
 * were the handles the driver read: a sibling thread can make the driver
 * free another handle (or nothing, NV_OK) and leave NV_OK, or rewrite a
 * success into a failure. With the host's driver_has the driver's word
 * decides: a record is dropped (and refunded) exactly when the driver no
 * longer has the object. A record kept for an object the driver freed stays
 * charged until its file closes (never less than the driver holds), and its
 * handle stays claimed (no other tenant can take a client handle the core
 * still names, vcore.h).
 */
static vcore_bool free_took_effect(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 status = 0;
	vcore_bool known;
	int err;

	if (slot->client_ops) {
		vcore_lock(slot);
		known = vcore_obj_find_locked(slot, call->free_client,
					      call->free_object) != VCORE_NULL;
		vcore_unlock(slot);
		if (!known)
			return 0; /* nothing to drop: no query */
		err = slot->client_ops->driver_has(
			slot->priv, call->free_client, call->free_object);
		if (!err)
			return 0;
		if (err == -VCORE_ENOENT)
			return 1;
	}
	return !reply_status(call, &status) && status == NV_OK;
}

int vcore_post_free(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	struct vcore_obj *obj;

	if (!free_took_effect(call))
		return 0;
	vcore_lock(slot);
	obj = vcore_obj_find_locked(slot, call->free_client, call->free_object);
	if (obj) /* unknown handles: nothing to refund */
		vcore_obj_free_tree_locked(slot, obj);
	vcore_note_peak_locked(slot);
	vcore_unlock(slot);
	return 0;
}

int vcore_post_dup(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	struct vcore_obj *obj = call->new_obj, *src;
	vcore_u32 status = 0, h_new = vcore_rd32(call->argbuf, 8);

	if (reply_status(call, &status) || status != NV_OK)
		return 0;
	if (!h_new && vcore_reply_u32(call, 8, &h_new))
		return 0;
	if (!h_new)
		return 0;
	obj->h_client = vcore_rd32(call->argbuf, 0);
	if (!own_client(call, obj->h_client)) {
		tampered(call, obj->h_client, h_new,
			 "the dup's client is not one this file created");
		return 0;
	}
	obj->h_object = h_new;
	vcore_lock(slot);
	src = vcore_obj_find_locked(slot, vcore_rd32(call->argbuf, 12),
				    vcore_rd32(call->argbuf, 16));
	if (src) {
		obj->cls = src->cls;
		obj->dup_src = src;
	}
	if (obj->h_object != obj->h_client &&
	    !vcore_obj_find_locked(slot, obj->h_client, obj->h_client))
		add_implicit_client_locked(call, obj->h_client);
	vcore_obj_insert_locked(slot, obj, call->h_parent, call->file);
	call->new_obj = VCORE_NULL;
	vcore_unlock(slot);
	return 0;
}
