// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * rm_alloc_verify.c - the driver's word after an allocation
 * (docs/results/kmod-issue4-tamper.md).
 *
 * The core decides from its private copy of the parameters, but the driver
 * copies them in again, and the status and handles it writes back are user
 * memory: a sibling thread can rewrite them in between. Where the host can
 * ask the driver (host ops driver_class and driver_memory, and
 * client_ops->driver_has), these
 * helpers ask whether the call made what the private copy says, under a
 * client this file created; anything else is tampering: the file's clients
 * are freed in the driver and the caller is killed. vcore_post_alloc and
 * vcore_post_dup (rm_alloc_post.c) call them before they record anything.
 */
#include "rm_alloc_internal.h"
#include "abi/classes.h"
#include "abi/nvstatus.h"
#include "abi/nv_escape.h"

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
vcore_bool vcore_own_client(struct vcore_call *call, vcore_u32 h_client)
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
vcore_u32 vcore_created_despite_status(struct vcore_call *call,
				       vcore_u32 h_client,
				       struct vcore_driver_mem *bytes)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 h = private_handle(call);
	vcore_bool known;

	if (!h || !slot->ops->driver_memory)
		return 0;
	/* Never another tenant's object: the private hRoot is the tenant's
	 * to choose, and the driver's query answers for any client. */
	if (!vcore_own_client(call, h_client))
		return 0;
	vcore_lock(slot);
	known = vcore_obj_find_locked(slot, h_client, h) != VCORE_NULL;
	vcore_unlock(slot);
	if (known)
		return 0;
	/*
	 * Every class, not only charged ones: hClass may have been changed
	 * too. With driver_class the driver names any object, and the caller
	 * verifies it as any other (vcore_verify_alloc: its class, then its
	 * size); the size query alone answers only for memory, and a TSG,
	 * channel or VA space made under a failure status would be recorded
	 * nowhere, counted against no cap (issue 17, F11.1).
	 */
	if (slot->ops->driver_class) {
		vcore_u32 cls;

		return slot->ops->driver_class(slot->priv, h_client, h, &cls)
			       ? 0
			       : h;
	}
	if (slot->ops->driver_memory(slot->priv, h_client, call->h_parent, h,
				     bytes))
		return 0;
	return h;
}

/*
 * The driver holds more than the quota (or, for system memory, the slot's
 * budget) allows: the parameters changed between the private copy and the
 * driver's own read. Free the object in
 * the driver and answer NV_ERR_NO_MEMORY, what the driver says when memory
 * runs out (abi.md §4.3). 0 when done; the object is then not recorded, and
 * vcore_post's unwind refunds the reservation. -1 when the driver would not
 * free it: the caller records and charges it instead.
 */
int vcore_deny_after_alloc(struct vcore_call *call, vcore_u32 h_client,
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
		   "%llu bytes, past the quota or the system memory budget "
		   "(parameters changed during the call): freed, "
		   "NV_ERR_NO_MEMORY returned",
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
 * call (docs/results/kmod-issue4-tamper.md), and the driver may hold memory the
 * core never charged. Every client this file owns is dropped from the table and
 * freed in the driver with kernel privilege (a client free frees all under it),
 * and the host kills the caller (driver_memory on a client, or on handle 0 when
 * the file owns none). Only clients recorded as owned by this file are freed:
 * the private copy's hRoot is tenant-chosen and may name another's client.
 */
void vcore_tampered(struct vcore_call *call, vcore_u32 h_client,
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
	 * (kmod/driver_query.c). A record whose free failed stays, and charged.
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
int vcore_confirm_client(struct vcore_call *call, vcore_bool status_ok,
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
		vcore_tampered(call, h, h,
			       "the driver made a client under another handle");
	return 0;
}

/*
 * The status says the allocation failed, and the driver has no object under
 * the private copy's hRoot (vcore_created_despite_status). But a sibling can
 * have changed hRoot, before the driver read it, to another client of this
 * file, and then the status, after the driver wrote it, to a failure: the
 * driver's object would be recorded nowhere and charged to no one. With the
 * client ops, ask about the handle under this file's other confirmed clients:
 * one the driver has and the table lacks is that object. Failed allocations
 * only (libcuda makes few), one query per other client.
 */
vcore_bool vcore_made_under_another_client(struct vcore_call *call,
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
 * The driver made @made (0: it did not say) where the private copy names
 * call->cmd: a sibling rewrote hClass during the call. Tampering unless the
 * swap lets nothing escape (vcore_class_swap_harmless: e.g. memory into a VA
 * range, which the driver's size settles; Tamper.ClassSwappedAwayFromVidmem
 * ...). A class the table does not know is tampering too: the core checked
 * nothing of it.
 */
static vcore_bool class_swapped(struct vcore_call *call, vcore_u32 made)
{
	const struct vcore_class_row *checked, *row;

	if (!made || made == call->cmd)
		return 0;
	checked = vcore_abi_class(call->slot->abi, call->cmd);
	row = vcore_abi_class(call->slot->abi, made);
	/* An unknown class is recorded as VCORE_CLS_PASS (objects.c). */
	return !row ||
	       !vcore_class_swap_harmless(
		       checked ? checked->kind : VCORE_CLS_PASS, row->kind);
}

/*
 * Whether the table names @cls a class that is no RM Memory object (a
 * client, device, subdevice, event, TSG, channel or VA space): the size
 * query (GET_SURFACE_INFO, a Memory control) has nothing to answer for it.
 * Every other class, and one the table does not know, is asked as before.
 */
static vcore_bool made_no_memory(const struct vcore_slot *slot, vcore_u32 cls)
{
	const struct vcore_class_row *row = vcore_abi_class(slot->abi, cls);

	if (!row)
		return 0;
	switch (row->kind) {
	case VCORE_CLS_ROOT:
	case VCORE_CLS_DEVICE:
	case VCORE_CLS_SUBDEVICE:
	case VCORE_CLS_EVENT:
	case VCORE_CLS_TSG:
	case VCORE_CLS_CHANNEL:
	case VCORE_CLS_VASPACE:
		return 1;
	default:
		return 0;
	}
}

/*
 * After every successful allocation, when the host can ask the driver
 * (docs/results/kmod-issue4-tamper.md: the driver copies the parameters in
 * again, after the core's copy). 1: tampering was found and handled (nothing is
 * recorded). 0: go on;
 * *@have_trusted says whether *@trusted is the driver's count of the
 * object's GPU memory, to be charged.
 *
 * NV_ESC_RM_ALLOC (NVOS21/NVOS64) is checked for tampering: its hClass,
 * hObjectNew and hRoot are re-read by the driver (escape.c:381-430,
 * alloc_free.c). The driver's class of the new object is asked first, for
 * every class (driver_class; issue 17, F11.1: a swap into a TSG, channel or
 * VA space holds no memory the size query could name), then the size of
 * memory (driver_memory). So is a VID_HEAP allocation under a quota, whose
 * handle must be the one the driver made. The other escapes that create
 * objects keep the size query of their charged classes (ALLOC_OBJECT has no
 * params, which the driver requires of a TSG, channel or VA space).
 */
int vcore_verify_alloc(struct vcore_call *call, vcore_u32 h_root,
		       vcore_u32 h_new, struct vcore_driver_mem *trusted,
		       vcore_bool *have_trusted)
{
	struct vcore_slot *slot = call->slot;
	const struct vcore_class_row *row;
	vcore_bool known;
	int err;

	if (call->nr == NV_ESC_RM_VID_HEAP_CONTROL &&
	    vcore_slot_has_quota(slot)) {
		/*
		 * The driver reads flags and hMemory again: with
		 * MEMORY_HANDLE_PROVIDED cleared in its copy it makes its own
		 * handle (_rmVidHeapControlAllocCommon), and the record under
		 * hMemory would name nothing (issue 17, F9).
		 */
		err = slot->ops->driver_memory(slot->priv, h_root,
					       call->h_parent, h_new, trusted);
		if (err == -VCORE_ENOENT) {
			vcore_tampered(call, h_root, h_new,
				       "the driver has no object under the "
				       "VID_HEAP allocation's handle");
			return 1;
		}
		/* Every function: the driver's VIRTUAL flag decides what it
		 * made (a VA range's page tables, F11.1; or video memory). */
		*have_trusted = !err;
		return 0;
	}
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
		vcore_tampered(call, h_root, h_new,
			       "the handle was already in use");
		return 1;
	}
	/*
	 * The class first, for every object: the size query below answers
	 * for memory only, and a swap into a TSG, channel or VA space would
	 * read as "not memory" (issue 17, F11.1).
	 */
	if (slot->ops->driver_class) {
		vcore_u32 cls = 0;

		err = slot->ops->driver_class(slot->priv, h_root, h_new, &cls);
		if (err == -VCORE_ENOENT) {
			vcore_tampered(call, h_root, h_new,
				       "the driver has no such object");
			return 1;
		}
		if (!err && class_swapped(call, cls)) {
			vcore_tampered(call, h_root, h_new,
				       "the driver made another class");
			return 1;
		}
		/* No memory object: no size to ask (a TSG's, channel's or
		 * VA space's estimate stays its charge, rm_alloc_post.c). */
		if (!err && made_no_memory(slot, cls))
			return 0;
	}
	err = slot->ops->driver_memory(slot->priv, h_root, call->h_parent,
				       h_new, trusted);
	if (err == -VCORE_ENOENT) {
		vcore_tampered(call, h_root, h_new,
			       "the driver has no such object");
		return 1;
	}
	if (err)
		return 0; /* not memory, or the driver cannot say */
	/* The same rule with the size query's class (a host without
	 * driver_class). */
	if (class_swapped(call, trusted->cls)) {
		vcore_tampered(call, h_root, h_new,
			       "the driver made another class");
		return 1;
	}
	/* GPU memory behind a class the core holds to be no GPU memory. */
	row = vcore_abi_class(slot->abi, call->cmd);
	if (trusted->gpu && row && row->kind != VCORE_CLS_VIDMEM &&
	    row->kind != VCORE_CLS_FABRIC &&
	    row->kind != VCORE_CLS_QUOTA_REFUSED) {
		vcore_tampered(
			call, h_root, h_new,
			"the driver holds video memory for an uncharged class");
		return 1;
	}
	*have_trusted = 1;
	return 0;
}
