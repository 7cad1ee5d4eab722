// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * rm_alloc_post.c - the post steps of the escapes in rm_alloc.c: once the
 * driver has answered, settle the reservation into the object's charge and
 * record the object (RM_ALLOC, ALLOC_OBJECT, ALLOC_MEMORY, VID_HEAP_CONTROL
 * allocs, DUP_OBJECT), or drop a freed subtree and refund it (RM_FREE,
 * VID_HEAP_CONTROL free). The charge rules are in rm_alloc.c's head; what
 * the driver is asked before anything is recorded is in rm_alloc_verify.c.
 */
#include "rm_alloc_internal.h"
#include "abi/classes.h"
#include "abi/nvstatus.h"
#include "abi/nv_escape.h"

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

/*
 * The system memory a class 0x3e allocation holds, by the driver's own word
 * (host op driver_memory, the memory descriptor's size; issue 17, F10): a
 * sibling thread can raise the size between the private copy and the
 * driver's read and lower the reply again before post reads it, so the reply
 * says nothing. The part past the reservation is taken from the slot's
 * budget; 1 when it does not fit (the caller frees the object, as video
 * memory past the quota), unless @force (the driver would not free it: it is
 * held and counted). An unused part of the reservation goes back at once.
 */
static vcore_bool sysmem_settle_trusted(struct vcore_call *call,
					vcore_u64 bytes, vcore_bool force)
{
	struct vcore_slot *slot = call->slot;
	vcore_u64 budget = slot->cfg.sysmem_budget_bytes, more;
	vcore_bool over = 0;

	bytes = round_up(bytes, 0x1000);
	vcore_lock(slot);
	if (bytes > call->sysmem_reserved && !force) {
		more = bytes - call->sysmem_reserved;
		over = more > budget || slot->sysmem_held > budget - more;
	}
	if (!over) {
		slot->sysmem_held += bytes - call->sysmem_reserved;
		call->sysmem_reserved = bytes;
	}
	vcore_unlock(slot);
	return over;
}

/*
 * Without the driver's word (a host without driver_memory, or the driver
 * could not say): what pre reserved, or the size the driver wrote back when
 * larger (a sibling thread raised the size between the private copy and the
 * driver's read). The budget can go over by that much once; later
 * allocations are refused until it is back. A sibling that lowers the reply
 * again hides the raise: only the driver's word closes that.
 */
static vcore_u64 sysmem_settled(struct vcore_call *call)
{
	vcore_u64 reply = 0;

	if (!call->sysmem_reserved || call->params_buf < 0 ||
	    vcore_user_read(call, &reply,
			    call->bufs[call->params_buf].uaddr + 64,
			    sizeof(reply)))
		return call->sysmem_reserved;
	reply = round_up(reply, 0x1000);
	return reply > call->sysmem_reserved ? reply : call->sysmem_reserved;
}

int vcore_post_alloc(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	struct vcore_obj *obj = call->new_obj;
	vcore_u32 status = 0, h_root, h_new = 0;
	struct vcore_driver_mem trusted = {0};
	vcore_u64 charge = call->reserved, reply = 0;
	vcore_bool have_trusted = 0, is_root, confirmed = 0;
	struct vcore_overquota oq;
	vcore_bool over = 0;
	vcore_u64 sysmem;
	int ret = 0;

	/* A failed restore is reported, but the object is still recorded. */
	if (call->restore_event_data && restore_event_data(call))
		ret = -VCORE_EFAULT;
	h_root = vcore_rd32(call->argbuf, 0);
	if (call->client_claim) {
		/* A client: the driver's word on the claimed handle. */
		vcore_bool ok = !reply_status(call, &status) && status == NV_OK;

		if (!vcore_confirm_client(call, ok, &confirmed))
			return ret;
		h_new = call->client_claim;
	} else if (reply_status(call, &status) || status != NV_OK) {
		h_new = vcore_created_despite_status(call, h_root, &trusted);
		if (!h_new) {
			vcore_u32 h = private_handle(call);

			if (slot->client_ops && h &&
			    vcore_made_under_another_client(call, h_root, h))
				vcore_tampered(
					call, h_root, h,
					"the driver made the object under "
					"another client of this file");
			return ret; /* nothing recorded; unwind refunds */
		}
		/* Found by its class: verified below like any other. */
		have_trusted = !slot->ops->driver_class;
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
	 * the tenant's (docs/results/kmod-issue4-tamper.md: another tenant's,
	 * whose handle it guessed).
	 */
	if (!is_root && !vcore_own_client(call, h_root)) {
		vcore_tampered(
			call, h_root, h_new,
			"the object's client is not one this file created");
		return ret;
	}
	/* Memory classes are never roots: the object's client is h_root. */
	if (slot->ops->driver_memory && !is_root && !have_trusted &&
	    vcore_verify_alloc(call, h_root, h_new, &trusted, &have_trusted))
		return ret; /* not recorded; vcore_post's unwind refunds */
	if (have_trusted) {
		/*
		 * The driver's word; the reply is not read at all. It is the
		 * charge, as soon as the call ends: when the driver made less
		 * than was reserved (a sibling thread changed hClass, e.g.
		 * 0x40 -> NV50_MEMORY_VIRTUAL, or a flag, between the private
		 * copy and the driver's read;
		 * docs/results/kmod-issue4-tamper.md), the rest of the
		 * reservation goes back now, not at the free.
		 */
		/* The driver reports none of a TSG's, channel's or VA
		 * space's own memory: its estimate stays (rm_alloc.c). A
		 * VA range's page tables follow the driver's own size of
		 * it, whatever the core was asked (F11.1, va_range). */
		if (trusted.va)
			call->internal = vcore_va_range_ptables(trusted.va);
		charge = trusted.gpu + call->internal;
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
		else if (!vcore_deny_after_alloc(call, h_root, h_new, charge))
			return ret;
	}
	/* The same for system memory, against the slot's budget (F10). */
	if (have_trusted && call->sysmem_reserved &&
	    sysmem_settle_trusted(call, trusted.sys, 0)) {
		if (!vcore_deny_after_alloc(call, h_root, h_new, trusted.sys))
			return ret;
		sysmem_settle_trusted(call, trusted.sys, 1);
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
	sysmem = have_trusted ? call->sysmem_reserved : sysmem_settled(call);
	vcore_lock(slot);
	slot->sysmem_held += sysmem - call->sysmem_reserved;
	obj->sysmem = sysmem;
	call->sysmem_reserved = 0; /* now owned by the object */
	if (charge > call->reserved) {
		vcore_charge_force(slot, charge - call->reserved);
		if (vcore_slot_has_quota(slot) &&
		    vcore_charged(slot) > slot->cfg.mem_quota_bytes) {
			slot->stats.overquota_events++;
			over = 1;
		}
	}
	obj->charged = charge;
	obj->internal = call->internal;
	slot->stats.internal_charged_bytes += obj->internal;
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
	if (!vcore_own_client(call, obj->h_client)) {
		vcore_tampered(call, obj->h_client, h_new,
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
	} else if (call->xdup) {
		obj->xdup_client = vcore_rd32(
			call->argbuf, VCORE_OFF(NVOS55_PARAMETERS, hClientSrc));
		obj->xdup_object = vcore_rd32(
			call->argbuf, VCORE_OFF(NVOS55_PARAMETERS, hObjectSrc));
	}
	if (obj->h_object != obj->h_client &&
	    !vcore_obj_find_locked(slot, obj->h_client, obj->h_client))
		add_implicit_client_locked(call, obj->h_client);
	vcore_obj_insert_locked(slot, obj, call->h_parent, call->file);
	call->new_obj = VCORE_NULL;
	vcore_unlock(slot);
	return 0;
}
