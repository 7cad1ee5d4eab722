// SPDX-License-Identifier: GPL-2.0
/*
 * Slots: one tenant's view of one GPU (slot.h). A slot owns its nodes
 * (VGPU_MINORS_PER_SLOT minors of the module's region, nodes.c), its
 * configuration, its process list and its counters. Lifetime follows
 * wireguard's peer.c: the table holds one reference, every open file one more;
 * destroy unlinks (table, nodes) and drops the table's reference; the last put
 * frees.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/idr.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "event.h"
#include "real.h"
#include "slot.h"

/* vgpu_slots_lock protects the slot table: vgpu_slots, vgpu_generation,
 * vgpu_nslots. */
static DEFINE_MUTEX(vgpu_slots_lock);
static DEFINE_IDR(vgpu_slots);
static u32 vgpu_generation = 1;
static u32 vgpu_nslots;

u32 vgpu_slots_generation(void)
{
	return READ_ONCE(vgpu_generation);
}

u32 vgpu_slots_count(void)
{
	return READ_ONCE(vgpu_nslots);
}

static void vgpu_slot_bump(void)
{
	lockdep_assert_held(&vgpu_slots_lock);
	/* Never 0: cb->seq == 0 disables the dump consistency check. */
	WRITE_ONCE(vgpu_generation, vgpu_generation + 1 ?: 1);
}

void vgpu_slot_get(struct vgpu_slot *slot)
{
	kref_get(&slot->ref);
}

static void vgpu_slot_release(struct kref *ref)
{
	struct vgpu_slot *slot = container_of(ref, struct vgpu_slot, ref);
	struct vgpu_proc *p, *tmp;
	int k;

	/* Unlinked by vgpu_slot_destroy already; nothing can find it any more.
	 */
	if (slot->state == VGPU_SLOT_STATE_DYING)
		vgpu_event_proc(slot->id, VGPU_EVENT_SLOT_GONE, 0, NULL);
	vgpu_filter_slot_free(slot->filter);
	for (k = 0; k < VGPU_NODE_KINDS; k++)
		if (slot->real[k].dentry)
			path_put(&slot->real[k]);
	list_for_each_entry_safe(p, tmp, &slot->procs, node) kfree(p);
	mutex_destroy(&slot->lock);
	kfree(slot);
}

/* Accepts NULL, like wg_peer_put. */
void vgpu_slot_put(struct vgpu_slot *slot)
{
	if (slot)
		kref_put(&slot->ref, vgpu_slot_release);
}

/* Returns the slot with a reference (pairs with vgpu_slot_put by the caller).
 */
struct vgpu_slot *vgpu_slot_lookup(u32 id)
{
	struct vgpu_slot *slot;

	mutex_lock(&vgpu_slots_lock);
	slot = idr_find(&vgpu_slots, id);
	if (slot)
		vgpu_slot_get(slot);
	mutex_unlock(&vgpu_slots_lock);
	return slot;
}

/* The first slot with id >= *id, referenced (pairs with vgpu_slot_put); *id is
 * set to its id. */
struct vgpu_slot *vgpu_slot_next(u32 *id)
{
	struct vgpu_slot *slot;
	int next = *id;

	mutex_lock(&vgpu_slots_lock);
	slot = idr_get_next(&vgpu_slots, &next);
	if (slot) {
		vgpu_slot_get(slot);
		*id = next;
	}
	mutex_unlock(&vgpu_slots_lock);
	return slot;
}

static int vgpu_slot_resolve(struct vgpu_slot *slot)
{
	int err;

	err = vgpu_real_ctl_path(&slot->real[VGPU_NODE_CTL]);
	if (err)
		return err;
	err = vgpu_real_dev_path(slot->gpu, &slot->real[VGPU_NODE_DEV]);
	if (err)
		return err;
	if (slot->flags & VGPU_SLOT_F_UVM)
		err = vgpu_real_uvm_path(&slot->real[VGPU_NODE_UVM]);
	return err;
}

static void vgpu_slot_unlink_nodes(struct vgpu_slot *slot)
{
	int k;

	for (k = 0; k < VGPU_NODE_KINDS; k++) {
		if (!slot->nodes[k])
			continue;
		vgpu_node_destroy(slot->nodes[k]);
		slot->nodes[k] = NULL;
	}
}

static int vgpu_slot_link_nodes(struct vgpu_slot *slot)
{
	int k;

	for (k = 0; k < VGPU_NODE_KINDS; k++) {
		struct device *d;

		if (!slot->real[k].dentry)
			continue;
		d = vgpu_node_create(slot->id, k, slot);
		if (IS_ERR(d)) {
			vgpu_slot_unlink_nodes(slot);
			return PTR_ERR(d);
		}
		slot->nodes[k] = d;
	}
	return 0;
}

int vgpu_slot_create(u32 gpu, u32 flags, const struct vgpu_slot_config *cfg,
		     u32 *id)
{
	struct vgpu_slot *slot;
	int err;

	slot = kzalloc(sizeof(*slot), GFP_KERNEL);
	if (!slot)
		return -ENOMEM;
	kref_init(&slot->ref); /* the table's reference, dropped by destroy */
	mutex_init(&slot->lock);
	INIT_LIST_HEAD(&slot->procs);
	slot->gpu = gpu;
	slot->flags = flags;
	slot->cfg = *cfg;
	slot->state = VGPU_SLOT_STATE_ACTIVE;

	mutex_lock(&vgpu_slots_lock);
	/*
	 * Cyclic: a destroyed slot's id, and with it its minors, comes back
	 * only after every other id was handed out (F11.5). A container that
	 * outlives its slot's destroy keeps the device-cgroup rule and node
	 * path of those minors; at once reused, they would open the next
	 * tenant's slot.
	 */
	err = idr_alloc_cyclic(&vgpu_slots, NULL, 0, VGPU_MAX_SLOTS,
			       GFP_KERNEL);
	if (err < 0)
		goto out_unlock;
	slot->id = err;
	err = vgpu_slot_resolve(slot);
	if (err)
		goto out_remove_id;
	slot->filter = vgpu_filter_slot_new(slot->id, &slot->cfg);
	if (IS_ERR(slot->filter)) {
		err = PTR_ERR(slot->filter);
		slot->filter = NULL;
		goto out_remove_id;
	}
	err = vgpu_slot_link_nodes(slot);
	if (err)
		goto out_remove_id;
	/* Published last: opens find it only with nodes and filter state in
	 * place. */
	idr_replace(&vgpu_slots, slot, slot->id);
	vgpu_nslots++;
	vgpu_slot_bump();
	*id = slot->id;
	mutex_unlock(&vgpu_slots_lock);
	/* Published: a concurrent destroy may free it now, so no slot-> here.
	 */
	pr_info("slot %u created: gpu %u, quota %llu bytes, share %u%%, name "
		"'%s'\n",
		*id, gpu, cfg->mem_quota, cfg->compute_share, cfg->name);
	return 0;

out_remove_id:
	idr_remove(&vgpu_slots, slot->id);
out_unlock:
	mutex_unlock(&vgpu_slots_lock);
	vgpu_slot_put(slot); /* frees filter state and paths taken so far */
	return err == -ENOSPC ? -ENOSPC : err;
}

/* Slot @id with the table's lock and its own held (outer first); NULL, and
 * neither held, when there is no such slot. */
static struct vgpu_slot *vgpu_slot_find_lock(u32 id)
{
	struct vgpu_slot *slot;

	mutex_lock(&vgpu_slots_lock);
	slot = idr_find(&vgpu_slots, id);
	if (!slot) {
		mutex_unlock(&vgpu_slots_lock);
		return NULL;
	}
	mutex_lock(&slot->lock);
	return slot;
}

int vgpu_slot_update(u32 id, const struct vgpu_slot_config *cfg, u32 mask)
{
	struct vgpu_slot *slot = vgpu_slot_find_lock(id);

	if (!slot)
		return -ENOENT;
	if (mask & VGPU_CFG(name))
		strscpy(slot->cfg.name, cfg->name, sizeof(slot->cfg.name));
#define VGPU_CFG_COPY(field, ...)                                              \
	if (mask & VGPU_CFG(field))                                            \
		slot->cfg.field = cfg->field;
	VGPU_SLOT_NUMBERS(VGPU_CFG_COPY)
	VGPU_SLOT_ENUMS(VGPU_CFG_COPY)
#undef VGPU_CFG_COPY
	vgpu_filter_slot_config(slot->filter, &slot->cfg);
	mutex_unlock(&slot->lock);
	vgpu_slot_bump();
	mutex_unlock(&vgpu_slots_lock);
	return 0;
}

int vgpu_slot_destroy(u32 id, u32 flags)
{
	struct vgpu_slot *slot = vgpu_slot_find_lock(id);
	unsigned int open;

	if (!slot)
		return -ENOENT;
	/*
	 * Opens take vgpu_slots_lock before they count themselves in open_files
	 * (vgpu_slot_open), so the count cannot grow behind this check.
	 */
	open = slot->open_files;
	if (open && !(flags & VGPU_DEL_F_DEFER)) {
		mutex_unlock(&slot->lock);
		mutex_unlock(&vgpu_slots_lock);
		return -EBUSY;
	}
	slot->state = VGPU_SLOT_STATE_DYING;
	mutex_unlock(&slot->lock);
	idr_remove(&vgpu_slots, id);
	vgpu_nslots--;
	vgpu_slot_bump();
	/* Nodes go before the table lock drops: the id is free from here on
	 * (reused only after every other one, vgpu_slot_create). */
	vgpu_slot_unlink_nodes(slot);
	mutex_unlock(&vgpu_slots_lock);
	pr_info("slot %u destroyed%s\n", id,
		open ? " (deferred: files still open, revoked)" : "");
	vgpu_slot_put(slot); /* the table's reference, from vgpu_slot_create */
	return 0;
}

/* Counts a process's files in the slot; the first one is an attach. */
static void vgpu_slot_attach(struct vgpu_slot *slot, pid_t tgid)
{
	struct vgpu_proc *p, *found = NULL;

	mutex_lock(&slot->lock);
	slot->open_files++;
	list_for_each_entry(p, &slot->procs, node)
	{
		if (p->tgid == tgid) {
			found = p;
			break;
		}
	}
	if (!found) {
		/* A failed allocation only loses the attach event and the PID
		 * view. */
		found = kzalloc(sizeof(*found), GFP_KERNEL);
		if (found) {
			found->tgid = tgid;
			list_add_tail(&found->node, &slot->procs);
		}
	}
	if (found)
		found->files++;
	mutex_unlock(&slot->lock);
	if (found && found->files == 1) {
		vgpu_stat_inc(slot, VGPU_STAT_ATTACHES);
		vgpu_event_proc(slot->id, VGPU_EVENT_ATTACH, tgid,
				current->comm);
	}
}

void vgpu_slot_detach(struct vgpu_slot *slot, pid_t tgid)
{
	struct vgpu_proc *p, *gone = NULL;

	mutex_lock(&slot->lock);
	slot->open_files--;
	list_for_each_entry(p, &slot->procs, node)
	{
		if (p->tgid == tgid) {
			if (--p->files == 0) {
				list_del(&p->node);
				gone = p;
			}
			break;
		}
	}
	mutex_unlock(&slot->lock);
	if (gone) {
		vgpu_event_proc(slot->id, VGPU_EVENT_EXIT, tgid, NULL);
		kfree(gone);
	}
}

/*
 * The slot reference and the open_files count are taken under vgpu_slots_lock
 * so that vgpu_slot_destroy sees either this open or no slot at all.
 */
struct vgpu_slot *vgpu_slot_open(u32 id, enum vgpu_node_kind kind, pid_t tgid,
				 struct path *real)
{
	struct vgpu_slot *slot;

	mutex_lock(&vgpu_slots_lock);
	slot = idr_find(&vgpu_slots, id);
	if (!slot || slot->state != VGPU_SLOT_STATE_ACTIVE ||
	    !slot->real[kind].dentry) {
		mutex_unlock(&vgpu_slots_lock);
		return NULL;
	}
	vgpu_slot_get(slot);
	*real = slot->real[kind];
	path_get(real);
	vgpu_slot_attach(slot, tgid);
	mutex_unlock(&vgpu_slots_lock);
	return slot;
}

void vgpu_slot_refusal(struct vgpu_slot *slot, u32 type, u64 size,
		       const char *detail)
{
	vgpu_event_refusal(slot->id, READ_ONCE(slot->cfg.mem_quota), type, size,
			   vgpu_filter_charged(slot->filter), detail);
}

/*
 * Module exit: no file is open (each holds a module reference through the
 * cdev's owner), and netlink is gone, so every remaining slot holds only the
 * table's reference.
 */
void vgpu_slots_exit(void)
{
	struct vgpu_slot *slot;
	int id;

	mutex_lock(&vgpu_slots_lock);
	idr_for_each_entry(&vgpu_slots, slot, id)
	{
		idr_remove(&vgpu_slots, id);
		vgpu_slot_unlink_nodes(slot);
		WARN_ON(kref_read(&slot->ref) != 1);
		vgpu_slot_put(slot);
	}
	vgpu_nslots = 0;
	mutex_unlock(&vgpu_slots_lock);
	idr_destroy(&vgpu_slots);
}
