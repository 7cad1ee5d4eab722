/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vcore_objects.h - the core's record of what the driver holds for a slot:
 * one struct vcore_obj per RM object (a tree per client, hashed in the slot's
 * table, objects.c), the holds an export file or a UVM file keeps on the
 * objects it carries (export.c, uvm_external.c), a UVM file's candidate
 * external ranges, and what of objects.c, export.c and uvm_external.c the
 * rest of the core calls. Not for hosts: the core's files include it through
 * vcore_internal.h, whose top comment gives the locking (slot->lock; a UVM
 * file's uvm_lock for its ranges).
 */
#ifndef VCORE_OBJECTS_H
#define VCORE_OBJECTS_H

#include "vcore.h"
#include "abi/uvm.h"

/* ---------------------------------------------------------------- */
/* Objects                                                            */
/* ---------------------------------------------------------------- */

struct vcore_obj {
	vcore_u32 h_client;
	vcore_u32 h_object; /* == h_client for the client itself */
	vcore_u32 cls;
	/* What cls is on the slot's branch (enum vcore_class_kind, set when
	 * recorded): TSGs and channels are known by it, not by number. */
	vcore_u8 kind;
	vcore_u32 pid;
	vcore_u64 charged;	   /* bytes charged in the ledger for this */
	vcore_u64 internal;	   /* of which the class's rm_internal_bytes */
	vcore_u64 sysmem;	   /* bytes of the slot's sysmem_held */
	struct vcore_obj *hnext;   /* hash chain */
	struct vcore_obj *parent;  /* NULL for clients */
	struct vcore_obj *child;   /* first child */
	struct vcore_obj *sibling; /* next child of parent */
	struct vcore_obj *dup_src; /* object this one was duped from */
	/* A dup of another process's object (ledger ops dup): its source. */
	vcore_u32 xdup_client, xdup_object;
	struct vcore_file *owner; /* clients: the ctl file */
	/* TSG registry */
	vcore_u32 engine_type;
	vcore_u32 n_channels;
	vcore_u64 app_timeslice_us; /* last SET_TIMESLICE by the app */
	/*
	 * TSGs: GPFIFO_SCHEDULE(bEnable=1) on it returned NV_OK and no
	 * successful bEnable=0 followed (rm_control.c). Until then the TSG is
	 * not on the runlist and must not be controlled (vcore_registry.h).
	 */
	vcore_bool scheduled;
	/*
	 * Clients, with the host's client ops (vcore_host_ops.h,
	 * docs/results/kmod-issue4-tamper.md): the driver confirmed that the
	 * call which made this record created the client under this handle
	 * (claimed node-wide; the claim is released when the record is
	 * dropped). @unverified: the driver could not be asked; recorded from
	 * the parameters as without those ops.
	 */
	vcore_bool confirmed;
	vcore_bool unverified;
	/* Holds (export.c): the export file's slot index of this object. */
	vcore_u32 hold_index;
	/* Holds of a UVM file (uvm_external.c): the GPU VA span
	 * [hold_base, hold_end) UVM maps the object at, the candidate external
	 * range the map was made in (NULL: a hold only the file's close drops)
	 * and, for a map on one GPU, that GPU's uuid. */
	vcore_u64 hold_base, hold_end;
	struct vcore_uvm_range *hold_range;
	vcore_u8 hold_gpu[VCORE_UVM_UUID_SIZE];
	vcore_bool hold_one_gpu;
	/* ... and what the mapping's page tables are charged
	 * (vcore_uvm_map_ptables per GPU it maps on): refunded when the record
	 * goes, never passed on with the object's charge. */
	vcore_u64 hold_ptables;
};

/*
 * A UVM file's candidate external range [base, end): recorded when the core
 * forwards a UVM_CREATE_EXTERNAL_RANGE, gone with a UVM_FREE of exactly it or
 * the file (uvm_external.c). The file's uvm_lock.
 */
struct vcore_uvm_range {
	vcore_u64 base, end;
	struct vcore_uvm_range *next;
};

/* objects.c (all _locked) */
struct vcore_obj *vcore_obj_find_locked(struct vcore_slot *slot,
					vcore_u32 h_client, vcore_u32 h_object);
/* Link @obj (zeroed by the caller, keys set) under its parent; the parent
 * is (h_client, h_parent), or the client when not tracked. An existing
 * object with the same key is freed first (stale: the driver reused it).
 * An object that ends up a root without an owner is owned by @file, so that
 * closing the file always frees it. */
void vcore_obj_insert_locked(struct vcore_slot *slot, struct vcore_obj *obj,
			     vcore_u32 h_parent, struct vcore_file *file);
/* Free @obj and its subtree, refunding their charges. */
void vcore_obj_free_tree_locked(struct vcore_slot *slot, struct vcore_obj *obj);
void vcore_obj_free_file_clients_locked(struct vcore_slot *slot,
					struct vcore_file *file);
void vcore_obj_free_all_locked(struct vcore_slot *slot);
/* A freed @obj's charge to a surviving dup (its own dups, then the export
 * holds): 1 when passed. */
vcore_bool vcore_obj_pass_charge_to_dup_locked(struct vcore_slot *slot,
					       struct vcore_obj *obj);
/* @obj goes: its dups become dups of what it was a dup of (same memory). */
void vcore_obj_unlink_dups_locked(struct vcore_slot *slot,
				  struct vcore_obj *obj);
/* Free one export hold (not in the table), passing on or refunding its
 * charge; the caller unlinked it from its file. */
void vcore_obj_drop_hold_locked(struct vcore_slot *slot,
				struct vcore_obj *hold);
/* export.c: drop every hold of @file, passing on or refunding its charge. */
void vcore_export_holds_free_locked(struct vcore_slot *slot,
				    struct vcore_file *file);

/* uvm_external.c: external mappings hold their RM memory (issue 17, F3) */
enum vcore_verdict vcore_uvm_external_pre(struct vcore_call *call);
/* Ends what pre began for an external-range call (vcore_post). */
void vcore_uvm_external_end(struct vcore_call *call);
/* A UVM file's lock (vcore_file_open); 0 or -VCORE_ENOMEM. */
int vcore_uvm_external_open(struct vcore_file *file);
/* Its candidate ranges and lock go with it (vcore_file_close, after the
 * holds). */
void vcore_uvm_external_close(struct vcore_file *file);
/* The sealed params of a UVM map were replaced (vcore_call_params_replaced):
 * the file holds every memory object of the caller's until it closes. */
void vcore_uvm_external_replaced(struct vcore_call *call);

/* objects.c: a TSG or channel allocation past the slot's limits
 * (vcore_registry.h VCORE_SLOT_MAX_TSGS/CHANNELS), or a channel outside a TSG,
 * is refused. */
enum vcore_verdict vcore_sched_obj_limit(struct vcore_call *call,
					 vcore_bool tsg, vcore_u32 h_root);
/* objects.c: a VA space past VCORE_SLOT_MAX_VASPACES is refused. */
enum vcore_verdict vcore_vaspace_limit(struct vcore_call *call);

#endif /* VCORE_OBJECTS_H */
