// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * index.c - per-slot lookup index over a driver branch's ABI tables.
 *
 * The tables (tables_580.c) stay plain data walked parent + delta, as gVisor
 * nvproxy builds its maps (version.go); walking them per call costs a linear
 * scan of ~180 control rows for every RM_CONTROL. A slot resolves every key
 * of its branch once, at creation, through the same walkers (so a REMOVED row
 * still hides its parent's row), and the hot path then costs one array load
 * for an escape and one or two hash probes for a control or UVM command.
 */
#include "vcore_internal.h"

static int index_alloc(struct vcore_slot *slot, struct vcore_index *ix,
		       vcore_size_t max_keys)
{
	vcore_u32 size = 16, bits = 4;

	while (size < 2 * max_keys) {
		size <<= 1;
		bits++;
	}
	if ((vcore_size_t)size * sizeof(*ix->ent) > VCORE_MAX_ALLOC)
		return -VCORE_E2BIG;
	ix->ent = slot->ops->zalloc(slot->priv, size * sizeof(*ix->ent));
	if (!ix->ent)
		return -VCORE_ENOMEM;
	ix->mask = size - 1;
	ix->shift = 32 - bits;
	return 0;
}

/* Add @key -> @row (NULL: the branch removed it) unless @key is present. */
static void index_add(struct vcore_index *ix, vcore_u32 key, const void *row)
{
	vcore_u32 i = vcore_index_home(ix, key);

	for (;; i = (i + 1) & ix->mask) {
		struct vcore_index_ent *e = &ix->ent[i];

		if (!e->used) {
			e->used = 1;
			e->key = key;
			e->row = row;
			return;
		}
		if (e->key == key)
			return;
	}
}

static void index_free(struct vcore_slot *slot, struct vcore_index *ix)
{
	slot->ops->free(slot->priv, ix->ent);
	ix->ent = VCORE_NULL;
}

static int index_controls(struct vcore_slot *slot)
{
	const struct vcore_abi *a;
	vcore_size_t n = 0, i;
	int err;

	for (a = slot->abi; a; a = a->parent)
		n += a->n_ctrl + a->n_ctrl_pass;
	err = index_alloc(slot, &slot->ctrl_index, n);
	if (err)
		return err;
	for (a = slot->abi; a; a = a->parent) {
		for (i = 0; i < a->n_ctrl; i++)
			index_add(&slot->ctrl_index, a->ctrl[i].cmd,
				  vcore_abi_ctrl(slot->abi, a->ctrl[i].cmd));
		for (i = 0; i < a->n_ctrl_pass; i++)
			index_add(
				&slot->ctrl_index, a->ctrl_pass[i].cmd,
				vcore_abi_ctrl(slot->abi, a->ctrl_pass[i].cmd));
	}
	return 0;
}

static int index_uvm(struct vcore_slot *slot)
{
	const struct vcore_abi *a;
	vcore_size_t n = 0, i;
	int err;

	for (a = slot->abi; a; a = a->parent)
		n += a->n_uvm;
	err = index_alloc(slot, &slot->uvm_index, n);
	if (err)
		return err;
	for (a = slot->abi; a; a = a->parent)
		for (i = 0; i < a->n_uvm; i++)
			index_add(&slot->uvm_index, a->uvm[i].cmd,
				  vcore_abi_uvm(slot->abi, a->uvm[i].cmd));
	return 0;
}

int vcore_slot_index_build(struct vcore_slot *slot)
{
	vcore_u32 nr;
	int err;

	/* _IOC_NR is 8 bits: every escape number has a cell. */
	for (nr = 0; nr < VCORE_ARRAY_SIZE(slot->esc_by_nr); nr++)
		slot->esc_by_nr[nr] = vcore_abi_esc(slot->abi, nr);
	err = index_controls(slot);
	if (!err)
		err = index_uvm(slot);
	if (err)
		vcore_slot_index_free(slot);
	return err;
}

void vcore_slot_index_free(struct vcore_slot *slot)
{
	index_free(slot, &slot->ctrl_index);
	index_free(slot, &slot->uvm_index);
}
