// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * objects.c - the per-slot RM object table: (client, handle) -> class,
 * parent, charge. Freeing an object frees its subtree, as RM does
 * (NVOS00 frees "all children", abi.md §3; gVisor keeps the same tree in
 * nvproxy/object.go). Every function here runs under slot->lock.
 */
#include "vcore_internal.h"
#include "abi/classes.h"
#include "abi/nvstatus.h"

static vcore_u32 bucket_of(vcore_u32 h_client, vcore_u32 h_object)
{
	vcore_u32 h = h_client * 0x9e3779b1u ^ h_object * 0x85ebca6bu;

	return (h ^ (h >> 15)) & (VCORE_OBJ_BUCKETS - 1);
}

struct vcore_obj *vcore_obj_find_locked(struct vcore_slot *slot,
					vcore_u32 h_client, vcore_u32 h_object)
{
	struct vcore_obj *o = slot->buckets[bucket_of(h_client, h_object)];

	for (; o; o = o->hnext)
		if (o->h_client == h_client && o->h_object == h_object)
			return o;
	return VCORE_NULL;
}

/* By the class rows of the slot's branch (vcore_obj_insert_locked). */
static vcore_bool is_channel(const struct vcore_obj *obj)
{
	return obj->kind == VCORE_CLS_CHANNEL;
}

static vcore_bool is_tsg(const struct vcore_obj *obj)
{
	return obj->kind == VCORE_CLS_TSG;
}

static void hash_unlink(struct vcore_slot *slot, struct vcore_obj *obj)
{
	struct vcore_obj **pp =
		&slot->buckets[bucket_of(obj->h_client, obj->h_object)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == obj) {
			*pp = obj->hnext;
			return;
		}
	}
}

static void tree_unlink(struct vcore_obj *obj)
{
	struct vcore_obj **pp;

	if (!obj->parent)
		return;
	for (pp = &obj->parent->child; *pp; pp = &(*pp)->sibling) {
		if (*pp == obj) {
			*pp = obj->sibling;
			break;
		}
	}
	obj->parent = VCORE_NULL;
	obj->sibling = VCORE_NULL;
}

/*
 * A record that is a dup of @obj: the table's objects first, then the holds of
 * the export files (export.c), so that a charge goes to a tenant's handle when
 * one is left and to an export file only otherwise.
 */
static struct vcore_obj *find_dup_of(struct vcore_slot *slot,
				     const struct vcore_obj *obj)
{
	struct vcore_file *f;
	struct vcore_obj *o;
	vcore_u32 b;

	for (b = 0; b < VCORE_OBJ_BUCKETS; b++)
		for (o = slot->buckets[b]; o; o = o->hnext)
			if (o->dup_src == obj)
				return o;
	for (f = slot->files; f; f = f->next)
		for (o = f->holds; o; o = o->hnext)
			if (o->dup_src == obj)
				return o;
	return VCORE_NULL;
}

/*
 * A freed object whose memory is still referenced by a dup keeps the
 * memory alive in RM: hand the charge to one surviving dup instead of
 * refunding it.
 */
vcore_bool vcore_obj_pass_charge_to_dup_locked(struct vcore_slot *slot,
					       struct vcore_obj *obj)
{
	struct vcore_obj *o;

	if (!slot->n_dups)
		return 0;
	o = find_dup_of(slot, obj);
	if (!o)
		return 0;
	o->charged += obj->charged;
	o->internal += obj->internal;
	obj->charged = 0;
	obj->internal = 0;
	return 1;
}

/*
 * RM's dup of a dup references the same memory (mem.c memCopyConstruct_IMPL):
 * when @obj goes, its dups become dups of @obj's own source, so that the
 * charge still follows the last reference (an import of an export hold whose
 * file closed while the exported object lives, export.c).
 */
void vcore_obj_unlink_dups_locked(struct vcore_slot *slot,
				  struct vcore_obj *obj)
{
	struct vcore_obj *o;

	if (!slot->n_dups)
		return;
	while ((o = find_dup_of(slot, obj)) != VCORE_NULL) {
		o->dup_src = obj->dup_src;
		if (!o->dup_src)
			slot->n_dups--;
	}
}

/* The same across processes of the slot, through the ledger (vcore.h). */
static vcore_bool pass_charge_to_process(struct vcore_slot *slot,
					 struct vcore_obj *obj)
{
	const struct vcore_ledger_ops *l = slot->ledger.ops;

	if (!l->pass_charge || !l->pass_charge(slot->ledger.priv, obj->h_client,
					       obj->h_object, obj->charged))
		return 0;
	obj->charged = 0;
	slot->stats.charged_bytes = l->charged(slot->ledger.priv);
	return 1;
}

static void release_one(struct vcore_slot *slot, struct vcore_obj *obj)
{
	const struct vcore_ledger_ops *l = slot->ledger.ops;

	if (obj->charged && !vcore_obj_pass_charge_to_dup_locked(slot, obj) &&
	    !pass_charge_to_process(slot, obj))
		vcore_charge_refund(slot, obj->charged);
	slot->stats.internal_charged_bytes -= obj->internal;
	slot->sysmem_held -= obj->sysmem;
	if (obj->xdup_client && l->dup)
		l->dup(slot->ledger.priv, obj->xdup_client, obj->xdup_object,
		       0);
	if (obj->h_object == obj->h_client && l->client)
		l->client(slot->ledger.priv, obj->h_client, 0);
	vcore_obj_unlink_dups_locked(slot, obj);
	if (obj->dup_src) {
		obj->dup_src = VCORE_NULL;
		slot->n_dups--;
	}
	if (is_tsg(obj)) {
		slot->stats.tsgs--;
		slot->tsg_gen++;
	}
	if (obj->kind == VCORE_CLS_VASPACE && slot->n_vaspaces)
		slot->n_vaspaces--;
	if (is_channel(obj)) {
		if (obj->parent && is_tsg(obj->parent) &&
		    obj->parent->n_channels)
			obj->parent->n_channels--;
		if (slot->n_channels)
			slot->n_channels--;
		slot->tsg_gen++;
	}
	if (!obj->parent)
		slot->stats.clients--;
	/* The handle may now be created by anyone (vcore.h, client ops). */
	if (obj->confirmed)
		slot->client_ops->release(slot->priv, obj->h_client);
	slot->stats.objects--;
	hash_unlink(slot, obj);
	tree_unlink(obj);
	slot->ops->free(slot->priv, obj);
}

/*
 * An export hold (export.c) goes with its export file, or is replaced: its
 * charge passes to a surviving dup (an import), to another process's dup,
 * or is refunded. It is not in the table and counts as no object. A UVM
 * mapping's page tables (uvm_external.c) go with it: refunded.
 */
void vcore_obj_drop_hold_locked(struct vcore_slot *slot, struct vcore_obj *hold)
{
	if (hold->charged && !vcore_obj_pass_charge_to_dup_locked(slot, hold) &&
	    !pass_charge_to_process(slot, hold))
		vcore_charge_refund(slot, hold->charged);
	slot->stats.internal_charged_bytes -= hold->internal;
	if (hold->hold_ptables) {
		vcore_charge_refund(slot, hold->hold_ptables);
		slot->stats.internal_charged_bytes -= hold->hold_ptables;
		slot->uvm_ptables -= hold->hold_ptables;
	}
	vcore_obj_unlink_dups_locked(slot, hold);
	if (hold->dup_src)
		slot->n_dups--;
	slot->ops->free(slot->priv, hold);
}

/* Iterative post-order walk: the tree depth is attacker-controlled. */
void vcore_obj_free_tree_locked(struct vcore_slot *slot, struct vcore_obj *obj)
{
	struct vcore_obj *cur = obj;

	for (;;) {
		struct vcore_obj *parent;

		while (cur->child)
			cur = cur->child;
		if (cur == obj)
			break;
		parent = cur->parent;
		release_one(slot, cur);
		cur = parent;
	}
	release_one(slot, obj);
}

void vcore_obj_insert_locked(struct vcore_slot *slot, struct vcore_obj *obj,
			     vcore_u32 h_parent, struct vcore_file *file)
{
	const struct vcore_class_row *row =
		vcore_abi_class(slot->abi, obj->cls);
	struct vcore_obj *old, *parent = VCORE_NULL;
	vcore_u32 b;

	obj->kind = (vcore_u8)(row ? row->kind : VCORE_CLS_PASS);
	old = vcore_obj_find_locked(slot, obj->h_client, obj->h_object);
	if (old) {
		/* The stale tree may hold the dup source: drop the link
		 * rather than keep a pointer into freed memory. */
		obj->dup_src = VCORE_NULL;
		vcore_obj_free_tree_locked(slot, old);
	}
	if (obj->h_object != obj->h_client) {
		parent = vcore_obj_find_locked(slot, obj->h_client, h_parent);
		if (!parent)
			parent = vcore_obj_find_locked(slot, obj->h_client,
						       obj->h_client);
	}
	obj->parent = parent;
	if (parent) {
		obj->sibling = parent->child;
		parent->child = obj;
	} else {
		if (!obj->owner)
			obj->owner = file;
		slot->stats.clients++;
	}
	if (obj->h_object == obj->h_client && slot->ledger.ops->client)
		slot->ledger.ops->client(slot->ledger.priv, obj->h_client, 1);
	if (obj->xdup_client && slot->ledger.ops->dup)
		slot->ledger.ops->dup(slot->ledger.priv, obj->xdup_client,
				      obj->xdup_object, 1);
	b = bucket_of(obj->h_client, obj->h_object);
	obj->hnext = slot->buckets[b];
	slot->buckets[b] = obj;
	slot->stats.objects++;
	if (obj->dup_src)
		slot->n_dups++;
	if (is_tsg(obj)) {
		slot->stats.tsgs++;
		slot->tsg_gen++;
	}
	if (obj->kind == VCORE_CLS_VASPACE)
		slot->n_vaspaces++;
	if (is_channel(obj)) {
		if (parent && is_tsg(parent))
			parent->n_channels++;
		slot->n_channels++;
		slot->tsg_gen++;
	}
}

void vcore_obj_free_file_clients_locked(struct vcore_slot *slot,
					struct vcore_file *file)
{
	vcore_u32 b;

	for (b = 0; b < VCORE_OBJ_BUCKETS; b++) {
		struct vcore_obj *o = slot->buckets[b];

		while (o) {
			if (!o->parent && o->owner == file) {
				vcore_obj_free_tree_locked(slot, o);
				o = slot->buckets[b]; /* chain changed */
				continue;
			}
			o = o->hnext;
		}
	}
}

void vcore_obj_free_all_locked(struct vcore_slot *slot)
{
	vcore_u32 b;

	for (b = 0; b < VCORE_OBJ_BUCKETS; b++) {
		while (slot->buckets[b]) {
			struct vcore_obj *o = slot->buckets[b];

			while (o->parent)
				o = o->parent;
			vcore_obj_free_tree_locked(slot, o);
		}
	}
}

/* ---- TSG registry ---- */

/* Under the slot lock: @visit on every object, until one returns non-zero. */
static int walk_objs(struct vcore_slot *slot,
		     int (*visit)(const struct vcore_obj *o, void *walk),
		     void *walk)
{
	int ret = 0;
	vcore_u32 b;

	vcore_lock(slot);
	for (b = 0; b < VCORE_OBJ_BUCKETS && !ret; b++) {
		struct vcore_obj *o;

		for (o = slot->buckets[b]; o && !ret; o = o->hnext)
			ret = visit(o, walk);
	}
	vcore_unlock(slot);
	return ret;
}

struct tsg_walk {
	vcore_tsg_fn fn;
	void *arg;
};

static int visit_tsg(const struct vcore_obj *o, void *walk)
{
	const struct tsg_walk *w = walk;
	const struct vcore_obj *client = o;
	struct vcore_tsg_info info;

	if (!is_tsg(o))
		return 0;
	while (client->parent)
		client = client->parent;
	info.h_client = o->h_client;
	info.h_device = o->parent ? o->parent->h_object : 0;
	info.h_tsg = o->h_object;
	info.tsg_class = o->cls;
	info.engine_type = o->engine_type;
	info.n_channels = o->n_channels;
	info.pid = o->pid;
	info.file = client->owner;
	info.scheduled = o->scheduled;
	return w->fn(w->arg, &info);
}

int vcore_slot_for_each_tsg(struct vcore_slot *slot, vcore_tsg_fn fn, void *arg)
{
	struct tsg_walk w = {.fn = fn, .arg = arg};

	return walk_objs(slot, visit_tsg, &w);
}

struct channel_walk {
	vcore_channel_fn fn;
	void *arg;
};

static int visit_channel(const struct vcore_obj *o, void *walk)
{
	const struct channel_walk *w = walk;
	vcore_bool in_tsg = o->parent && is_tsg(o->parent);
	struct vcore_channel_info info;

	if (!is_channel(o))
		return 0;
	info.h_client = o->h_client;
	info.h_tsg = in_tsg ? o->parent->h_object : 0;
	info.h_channel = o->h_object;
	info.channel_class = o->cls;
	info.tsg_scheduled = in_tsg && o->parent->scheduled;
	return w->fn(w->arg, &info);
}

int vcore_slot_for_each_channel(struct vcore_slot *slot, vcore_channel_fn fn,
				void *arg)
{
	struct channel_walk w = {.fn = fn, .arg = arg};

	return walk_objs(slot, visit_channel, &w);
}

vcore_bool vcore_slot_tsg_scheduled(struct vcore_slot *slot, vcore_u32 h_client,
				    vcore_u32 h_tsg)
{
	struct vcore_obj *o;
	vcore_bool on;

	vcore_lock(slot);
	o = vcore_obj_find_locked(slot, h_client, h_tsg);
	on = o && is_tsg(o) && o->scheduled;
	vcore_unlock(slot);
	return on;
}

vcore_u64 vcore_slot_tsg_generation(struct vcore_slot *slot)
{
	vcore_u64 gen;

	vcore_lock(slot);
	gen = slot->tsg_gen;
	vcore_unlock(slot);
	return gen;
}

/*
 * The slot's limits on TSGs and channels (vcore.h), and channels only under a
 * TSG: one allocated straight under a device gets an RM-internal TSG the
 * registry never sees, so the compute controller could never gate it (F7).
 */
enum vcore_verdict vcore_sched_obj_limit(struct vcore_call *call,
					 vcore_bool tsg, vcore_u32 h_root)
{
	struct vcore_slot *slot = call->slot;
	const struct vcore_obj *parent;
	const char *why = VCORE_NULL;
	vcore_u32 status = NV_ERR_INSUFFICIENT_RESOURCES;

	vcore_lock(slot);
	if (tsg) {
		if (slot->stats.tsgs >= VCORE_SLOT_MAX_TSGS)
			why = "TSG limit of the slot reached";
	} else {
		parent = vcore_obj_find_locked(slot, h_root, call->h_parent);
		if (!parent || !is_tsg(parent)) {
			why = "channel outside a channel group";
			status = NV_ERR_INVALID_ARGUMENT;
		} else if (slot->n_channels >= VCORE_SLOT_MAX_CHANNELS) {
			why = "channel limit of the slot reached";
		}
	}
	vcore_unlock(slot);
	return why ? vcore_refuse_status(call, status, why) : VCORE_FORWARD;
}

/* The slot's limit on VA spaces (vcore.h): each holds page directories of
 * the driver's video memory, and a tenant could make any number. */
enum vcore_verdict vcore_vaspace_limit(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	vcore_bool full;

	vcore_lock(slot);
	full = slot->n_vaspaces >= VCORE_SLOT_MAX_VASPACES;
	vcore_unlock(slot);
	return full ? vcore_refuse_status(call, NV_ERR_INSUFFICIENT_RESOURCES,
					  "VA space limit of the slot reached")
		    : VCORE_FORWARD;
}
