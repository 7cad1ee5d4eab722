/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vcore_internal.h - state shared by the core's files. Not for hosts.
 *
 * Lock: slot->lock (host lock) protects everything reachable from the slot:
 * the object table, the file list, counters, the pid set and the TSG
 * generation. It is never held across a host copy op or the real ioctl.
 * Helpers whose name ends in _locked require it (vcore_assert_locked).
 * Lock-free, so that a call that creates or frees nothing takes no lock:
 * the spare calls, the ioctl and view counters and each file's last noted
 * pid (vcore_atomic_*), and the lookup index (read-only once built).
 */
#ifndef VCORE_INTERNAL_H
#define VCORE_INTERNAL_H

#include "vcore.h"
#include "abi/nvos.h"
#include "abi/uvm.h"

#define VCORE_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * A local that every path writes before it reads: exempt from
 * -ftrivial-auto-var-init (the kernel's CONFIG_INIT_STACK_ALL_ZERO, on in
 * Debian's kernels), which would clear it on every call. GCC 12 and clang.
 */
#if defined(__has_attribute)
#if __has_attribute(__uninitialized__)
#define VCORE_NO_AUTO_INIT __attribute__((__uninitialized__))
#endif
#endif
#ifndef VCORE_NO_AUTO_INIT
#define VCORE_NO_AUTO_INIT
#endif

/* ---------------------------------------------------------------- */
/* ABI tables (tables_580.c): parent + delta per driver branch        */
/* ---------------------------------------------------------------- */

struct vcore_call;

/* Pre handlers decide; they return a verdict and may set call->post. */
typedef enum vcore_verdict (*vcore_pre_fn)(struct vcore_call *call);

/* Escape row flags */
#define VCORE_ESC_SIZE_MULTIPLE 0x1 /* size is a non-zero multiple */
#define VCORE_ESC_REMOVED	0x2 /* delta: not in this version */
#define VCORE_ESC_NO_STATUS	0x4 /* struct has no RM status field */

struct vcore_esc_row {
	vcore_u32 nr;
	vcore_u32 size;	      /* exact size, or the element size */
	vcore_u32 alt_size;   /* a second accepted size (NVOS21 vs 64) */
	vcore_u32 status_off; /* where an RM status is written */
	vcore_u32 flags;
	vcore_pre_fn pre;
	const char *name;
	/* The driver's params struct (kmod/core/abi/, driver name), NULL if
	 * none; tests/unit/core/abi_layout_test.cc checks the size by it. */
	const char *params;
};

/* Control row flags (and VCORE_CTRL_VIEW below) */
#define VCORE_CTRL_ANY_SIZE 0x1 /* size field: maximum, not exact */
#define VCORE_CTRL_REMOVED  0x2
/*
 * A reply view (views.c): the control's only work is to rewrite the driver's
 * reply after a successful call, so it needs no call record (vcore_pre_lean).
 * Its row names the view in its flags, VCORE_CTRL_VIEW(id), and has no pre
 * handler.
 */
enum vcore_view_id {
	VCORE_VIEW_NONE = 0,
	VCORE_VIEW_FB_INFO_V2, /* NV2080_CTRL_CMD_FB_GET_INFO_V2 */
	/* NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2 */
	VCORE_VIEW_PERFMON_SAMPLES,
	VCORE_VIEWS
};
#define VCORE_CTRL_VIEW_SHIFT 8
#define VCORE_CTRL_VIEW(id)   ((vcore_u32)(id) << VCORE_CTRL_VIEW_SHIFT)

struct vcore_view {
	vcore_view_fn rewrite;
	vcore_bool under_quota; /* only on a slot with a memory quota */
};
extern const struct vcore_view vcore_views[VCORE_VIEWS];

struct vcore_ctrl_row {
	vcore_u32 cmd;
	vcore_u32 size;
	vcore_u32 flags;
	vcore_pre_fn pre; /* NULL: the size-checked pass handler */
	const char *name;
	const char *params; /* as in vcore_esc_row; NULL for ANY_SIZE rows */
};

/* A control row's view, or NULL. */
static inline const struct vcore_view *
vcore_ctrl_view_of(const struct vcore_ctrl_row *row)
{
	vcore_u32 id = row->flags >> VCORE_CTRL_VIEW_SHIFT;

	if (!id || id >= VCORE_VIEWS)
		return (const struct vcore_view *)VCORE_NULL; /* C and C++ */
	return &vcore_views[id];
}

/* What the core does with objects of a class. */
enum vcore_class_kind {
	VCORE_CLS_PASS = 0, /* track, no behaviour */
	VCORE_CLS_ROOT,	    /* an RM client */
	VCORE_CLS_VIDMEM,   /* physical vidmem, NV_MEMORY_ALLOCATION_PARAMS */
	VCORE_CLS_FABRIC,   /* physical vidmem, NV00F8 allocSize */
	VCORE_CLS_SYSMEM,   /* driver sysmem, NV_MEMORY_ALLOCATION_PARAMS:
			     * the slot's sysmem budget (F10) */
	VCORE_CLS_UNCHARGED_MEM, /* VA, OS descriptors (the tenant's pages) */
	VCORE_CLS_QUOTA_REFUSED, /* refused when a memory quota is set */
	VCORE_CLS_TSG,
	VCORE_CLS_CHANNEL,
	VCORE_CLS_EVENT,     /* NV0005 params: data is restored after RM */
	VCORE_CLS_DEVICE,    /* tracked; the driver needs a GPU witness */
	VCORE_CLS_SUBDEVICE, /* tracked; the compute hosts' control target */
	VCORE_CLS_VASPACE,   /* charged its estimate, VCORE_SLOT_MAX_VASPACES */
	VCORE_CLS_VA_RANGE,  /* a GPU VA range: charged its page tables' worst
				case (vcore_va_range_ptables), eager refused */
	VCORE_CLS_REMOVED,   /* delta: not in this version */
};

/*
 * A class swap (a sibling thread rewrote hClass between the core's private
 * copy and the driver's own read; issue 17, F10/F11.1): the driver made an
 * object of @made_kind where the core checked @checked_kind. It escapes
 * nothing only when the object made is one the core neither limits nor acts
 * on (VCORE_CLS_PASS, VCORE_CLS_UNCHARGED_MEM, or a VA range, whose page
 * tables the post step charges at the driver's size as for any range:
 * rm_alloc_post.c, vcore_va_range_ptables), and the record the
 * core keeps is memory the driver's size settles (VIDMEM, FABRIC, SYSMEM:
 * rm_alloc_post.c charges what the driver holds) or such a class itself.
 * Every other swap is tampering (rm_alloc_verify.c): into a TSG, channel or
 * VA space (never counted against the slot's caps, charged at the checked
 * class's size instead of its estimate, a TSG never registered with the
 * compute controller), into memory the core charges, into any tracked kind,
 * or out of a TSG, channel or VA space (a record that counts, registers or
 * charges an object the driver does not have). The one definition of which
 * kinds hold what: this enum, as the class table (tables_580.c) assigns it.
 */
static inline vcore_bool
vcore_class_swap_harmless(enum vcore_class_kind checked_kind,
			  enum vcore_class_kind made_kind)
{
	vcore_bool made_free = made_kind == VCORE_CLS_PASS ||
			       made_kind == VCORE_CLS_UNCHARGED_MEM ||
			       made_kind == VCORE_CLS_VA_RANGE;

	switch (checked_kind) {
	case VCORE_CLS_PASS:
	case VCORE_CLS_UNCHARGED_MEM:
	case VCORE_CLS_VIDMEM:
	case VCORE_CLS_FABRIC:
	case VCORE_CLS_SYSMEM:
		return made_free;
	default:
		return 0;
	}
}

struct vcore_class_row {
	vcore_u32 cls;
	vcore_u32 params_size; /* 0: no params, or not read */
	enum vcore_class_kind kind;
	const char *name;
	const char *params; /* as in vcore_esc_row; NULL when 0 */
	/*
	 * Video memory the driver allocates for one object of the class that
	 * no RM_ALLOC of memory reports (TSGs, channels: instance blocks, GR
	 * context buffers; VA spaces: page directories), charged as a fixed
	 * estimate (issue 17 F11.1, rm_alloc.c); 0 for the rest.
	 */
	vcore_u64 rm_internal_bytes;
};

/*
 * A command whose params the driver must read from a sealed copy
 * (vcore_sealed_size, seal.c): the core decides on what it read of them, and
 * the driver reads them again itself.
 */
#define VCORE_UVM_SEALED 1u

struct vcore_uvm_row {
	vcore_u32 cmd;
	vcore_u32 size; /* params size, 0 if the core never reads */
	const char *name;
	vcore_u32 flags; /* VCORE_UVM_SEALED */
};

struct vcore_abi {
	const char *name; /* "580" */
	const struct vcore_abi *parent;
	const struct vcore_esc_row *esc;
	vcore_size_t n_esc;
	const struct vcore_ctrl_row *ctrl; /* controls with behaviour */
	vcore_size_t n_ctrl;
	const struct vcore_ctrl_row *ctrl_pass; /* plain pass-through */
	vcore_size_t n_ctrl_pass;
	const struct vcore_class_row *cls;
	vcore_size_t n_cls;
	const struct vcore_uvm_row *uvm;
	vcore_size_t n_uvm;
};

/*
 * Video memory the driver reserves for the page tables of a GPU virtual
 * range of @range bytes made eager (without NVOS32_ALLOC_FLAGS_LAZY, or
 * SPARSE): the most a range of that size can hold (tables_580.c).
 */
vcore_u64 vcore_va_range_ptables(vcore_u64 range);
/*
 * Video memory UVM can allocate for the page tables of one external mapping
 * of [base, base + length) on one GPU: the worst case, every directory and
 * PTE table the span touches newly made, at 4 KiB pages (tables_580.c).
 */
vcore_u64 vcore_uvm_map_ptables(vcore_u64 base, vcore_u64 length);

/* Lookups walk the delta chain; a REMOVED row ends the search (NULL). */
const struct vcore_esc_row *vcore_abi_esc(const struct vcore_abi *abi,
					  vcore_u32 nr);
const struct vcore_ctrl_row *vcore_abi_ctrl(const struct vcore_abi *abi,
					    vcore_u32 cmd);
const struct vcore_class_row *vcore_abi_class(const struct vcore_abi *abi,
					      vcore_u32 cls);
const struct vcore_uvm_row *vcore_abi_uvm(const struct vcore_abi *abi,
					  vcore_u32 cmd);
/*
 * index.c: a slot's keys resolved once through the walkers above. @row NULL
 * with @used set: the branch removed that key.
 */
struct vcore_index_ent {
	vcore_u32 key;
	vcore_u32 used;
	const void *row;
};

struct vcore_index {
	struct vcore_index_ent *ent; /* mask + 1 entries, at most half used */
	vcore_u32 mask;
	vcore_u32 shift; /* 32 - log2(mask + 1) */
};

/* Fibonacci hashing: the top bits of key * 2^32/phi. */
static inline vcore_u32 vcore_index_home(const struct vcore_index *ix,
					 vcore_u32 key)
{
	return (key * 0x9e3779b1u) >> ix->shift;
}

static inline const void *vcore_index_find(const struct vcore_index *ix,
					   vcore_u32 key)
{
	vcore_u32 i = vcore_index_home(ix, key);

	/* At most half full (index.c), so an empty entry ends the probe. */
	for (;; i = (i + 1) & ix->mask) {
		const struct vcore_index_ent *e = &ix->ent[i];

		if (!e->used)
			return VCORE_NULL;
		if (e->key == key)
			return e->row;
	}
}
/* The ABI for a driver version string, or NULL. */
const struct vcore_abi *vcore_abi_for_version(const char *version);
/*
 * One more branch, for driver versions of major @major, defined outside
 * tables_580.c: the test that proves a branch is tables only
 * (tests/unit/core/delta_branch.c) runs the unchanged hosts over a made-up
 * one. No host calls it. Call before any slot is created (not locked).
 */
void vcore_abi_add_branch(vcore_u32 major, const struct vcore_abi *abi);
extern const struct vcore_abi vcore_abi_580;

/* ---------------------------------------------------------------- */
/* Objects                                                            */
/* ---------------------------------------------------------------- */

/*
 * The call path's lock-free steps use the compiler's atomic builtins (GCC and
 * clang provide them freestanding; on x86-64 and arm64 they compile to single
 * instructions, no libatomic). Relaxed: counters and caches whose readers
 * take no decision that needs ordering; the spare-call exchange is acq_rel so
 * a call's contents are published with it.
 */
#define vcore_atomic_load(p)	 __atomic_load_n((p), __ATOMIC_RELAXED)
#define vcore_atomic_store(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define vcore_atomic_inc(p)	 __atomic_fetch_add((p), 1, __ATOMIC_RELAXED)
#define vcore_atomic_xchg(p, v)	 __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)

#define VCORE_SPARE_CALLS 4

#define VCORE_OBJ_BUCKETS 1024
#define VCORE_MAX_OBJECTS 65536 /* per slot; beyond it allocs are refused */
#define VCORE_PID_SET	  64

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
	 * not on the runlist and must not be controlled (vcore.h).
	 */
	vcore_bool scheduled;
	/*
	 * Clients, with the host's client ops (vcore.h,
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

struct vcore_file {
	struct vcore_slot *slot;
	enum vcore_file_kind kind;
	void *host_priv;
	vcore_u64 uvm_mapped; /* charged UVM mappings' bytes; slot lock */
	/* Set once (rm_alloc_verify.c, vcore_tampered), read lock-free
	 * (vcore_pre). */
	vcore_bool tampered;
	/*
	 * (slot->pid_gen << 32 | pid) of the last caller noted in the slot's
	 * pid set; read and written with relaxed atomics, no lock. A call by
	 * the same pid skips the slot lock (vcore_note_pid).
	 */
	vcore_u64 pid_seen;
	/*
	 * Objects exported to this file (EXPORT_OBJECTS_TO_FD, export.c), or
	 * mapped through it (a UVM file, uvm_external.c): one hold each, linked
	 * by hnext, never in the slot's table (no tenant handle names them).
	 * Slot lock.
	 */
	struct vcore_obj *holds;
	vcore_u32
		uvm_holds; /* of them, a UVM file's mappings (uvm_external.c) */
	/* UVM files (uvm_external.c): a host lock that serialises the file's
	 * external-range calls from pre to post, and the candidate ranges
	 * (their count: uvm_n_ranges), both under it. */
	void *uvm_lock;
	struct vcore_uvm_range *uvm_ranges;
	vcore_u32 uvm_n_ranges;
	struct vcore_file *next;
	struct vcore_file *prev;
};

struct vcore_slot {
	const struct vcore_host_ops *ops;
	void *priv;
	void *lock;
	struct vcore_slot_config cfg;
	const struct vcore_abi *abi;
	struct vcore_ledger ledger;
	vcore_u64 own_ledger_charged; /* the default ledger's state */
	/* The slot keeps the default ledger (the host gave none): its charge
	 * is own_ledger_charged, which views.c reads without the lock. */
	vcore_bool own_ledger;
	vcore_overquota_fn overquota_fn;
	const struct vcore_client_ops *client_ops; /* optional (vcore.h) */

	struct vcore_obj *buckets[VCORE_OBJ_BUCKETS];
	struct vcore_file *files;
	struct vcore_stats stats;
	vcore_u32 pids[VCORE_PID_SET];
	vcore_u32 n_pids;
	vcore_u32 pid_gen; /* bumped when a pid leaves the set */
	vcore_u64 tsg_gen;
	vcore_u32 n_dups; /* objects with dup_src set */
	/* The host's compute controller sets the TSGs' timeslices (weight
	 * mode): the app's own SET_TIMESLICE is recorded, not forwarded. */
	vcore_bool host_owns_timeslice;
	vcore_u32 n_channels;  /* live channels (class 0x??6f) */
	vcore_u32 n_vaspaces;  /* live VA spaces (VCORE_CLS_VASPACE) */
	vcore_u32 n_uvm_files; /* open UVM files (VCORE_SLOT_MAX_UVM_FILES) */
	/* Driver system memory the records hold (VCORE_CLS_SYSMEM), against
	 * cfg.sysmem_budget_bytes; reservations of calls in flight included. */
	vcore_u64 sysmem_held;

	/* Lock-free (relaxed atomics): stats.ioctls and views_rewritten. */
	vcore_u64 ioctls;
	vcore_u64 views_rewritten;
	/* Calls kept for reuse: taken and put back with one atomic exchange
	 * per cell, so the common call allocates nothing (dispatch.c). */
	struct vcore_call *spare[VCORE_SPARE_CALLS];

	/* Read-only after vcore_slot_create (index.c). */
	const struct vcore_esc_row *esc_by_nr[256];
	struct vcore_index ctrl_index;
	struct vcore_index uvm_index;
};

/* dispatch.c: free the calls kept for reuse (slot teardown). */
void vcore_slot_free_spare_calls(struct vcore_slot *slot);
/* index.c: build (0 or -VCORE_ENOMEM) and free a slot's lookup index. */
int vcore_slot_index_build(struct vcore_slot *slot);
void vcore_slot_index_free(struct vcore_slot *slot);

static inline const struct vcore_esc_row *
vcore_slot_esc(const struct vcore_slot *slot, vcore_u32 nr)
{
	if (nr >= VCORE_ARRAY_SIZE(slot->esc_by_nr))
		return (const struct vcore_esc_row *)VCORE_NULL;
	return slot->esc_by_nr[nr];
}

/* The escape's size as RmIoctl checks it (dataSize per escape). */
static inline vcore_bool vcore_esc_size_ok(const struct vcore_esc_row *row,
					   vcore_u32 size)
{
	if (row->flags & VCORE_ESC_SIZE_MULTIPLE)
		return size && row->size && size % row->size == 0;
	return size == row->size || (row->alt_size && size == row->alt_size);
}

/* paramsSize must equal the registered size (control.c:453-461). */
static inline vcore_bool vcore_ctrl_size_ok(const struct vcore_ctrl_row *row,
					    vcore_u32 size)
{
	return (row->flags & VCORE_CTRL_ANY_SIZE) ? size <= row->size
						  : size == row->size;
}

enum vcore_verdict vcore_esc_pass(struct vcore_call *call);
enum vcore_verdict vcore_esc_no_driver_handler(struct vcore_call *call);
enum vcore_verdict vcore_esc_privileged(struct vcore_call *call);

/* An escape whose argument the core copies and decides on (vcore_pre):
 * every one but the size-checked passes and the refused ones. */
static inline vcore_bool vcore_esc_decided(const struct vcore_esc_row *row)
{
	return row->pre != vcore_esc_pass &&
	       row->pre != vcore_esc_no_driver_handler &&
	       row->pre != vcore_esc_privileged;
}

static inline const struct vcore_ctrl_row *
vcore_slot_ctrl(const struct vcore_slot *slot, vcore_u32 cmd)
{
	return (const struct vcore_ctrl_row *)vcore_index_find(
		&slot->ctrl_index, cmd);
}

static inline const struct vcore_uvm_row *
vcore_slot_uvm(const struct vcore_slot *slot, vcore_u32 cmd)
{
	return (const struct vcore_uvm_row *)vcore_index_find(&slot->uvm_index,
							      cmd);
}

void vcore_note_pid_slow(struct vcore_file *file, vcore_u32 pid);
/*
 * Note the caller's pid in the slot's set; takes the slot lock only when
 * @file's last caller was another pid or the set forgot a pid since.
 */
static inline void vcore_note_pid(struct vcore_file *file, vcore_u32 pid)
{
	vcore_u64 seen = vcore_atomic_load(&file->pid_seen);
	vcore_u32 gen = vcore_atomic_load(&file->slot->pid_gen);

	if (pid && seen != ((vcore_u64)gen << 32 | pid))
		vcore_note_pid_slow(file, pid);
}

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

/* slot.c */
void vcore_lock(struct vcore_slot *slot);
void vcore_unlock(struct vcore_slot *slot);
void vcore_logf(struct vcore_slot *slot, enum vcore_log_level level,
		const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void vcore_count_unknown_locked(struct vcore_unknown_list *list,
				vcore_u32 number);
void vcore_note_pid_locked(struct vcore_slot *slot, vcore_u32 pid);
vcore_bool vcore_pid_in_slot(struct vcore_slot *slot, vcore_u32 pid);
/* Ledger wrappers that keep charged/peak counters current. */
int vcore_charge_try(struct vcore_slot *slot, vcore_u64 bytes);
/* The same with the slot lock held. */
int vcore_charge_try_locked(struct vcore_slot *slot, vcore_u64 bytes);
void vcore_charge_force(struct vcore_slot *slot, vcore_u64 bytes);
void vcore_charge_refund(struct vcore_slot *slot, vcore_u64 bytes);
vcore_u64 vcore_charged(struct vcore_slot *slot);
void vcore_note_peak_locked(struct vcore_slot *slot);
/* Read without the lock: the views and the lean path test it per call. */
static inline vcore_bool vcore_slot_has_quota(const struct vcore_slot *slot)
{
	return slot->cfg.mem_quota_bytes != 0;
}
/* Managed memory refused by the slot's policy (counted as a managed-memory
 * denial, not as a denied call: the caller refuses and counts that). */
vcore_bool vcore_managed_refused(struct vcore_slot *slot);

/* fmt.c: a tiny vsnprintf (%s %c %d %u %x %llu %lld %llx %p-free) */
int vcore_vsnprintf(char *buf, vcore_size_t len, const char *fmt,
		    __builtin_va_list ap);
int vcore_snprintf(char *buf, vcore_size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
vcore_size_t vcore_strnlen(const char *s, vcore_size_t max);
int vcore_strncmp(const char *a, const char *b, vcore_size_t n);

#define vcore_memcpy __builtin_memcpy
#define vcore_memset __builtin_memset
#define vcore_memcmp __builtin_memcmp

/* ---------------------------------------------------------------- */
/* Calls                                                              */
/* ---------------------------------------------------------------- */

#define VCORE_CALL_MAX_BUFS 8
#define VCORE_CALL_MAX_FDS  4
#define VCORE_INLINE_ARG    256

enum vcore_post_kind {
	VCORE_POST_NONE = 0,
	VCORE_POST_ALLOC, /* RM_ALLOC, ALLOC_OBJECT, ALLOC_MEMORY, VHC */
	VCORE_POST_FREE,  /* RM_FREE, NVOS32 FREE */
	VCORE_POST_DUP,
	VCORE_POST_CTRL,     /* a control with a reply step */
	VCORE_POST_VHC_INFO, /* NVOS32 INFO view */
};

typedef int (*vcore_ctrl_post_fn)(struct vcore_call *call);
/* A reply's rewrite in its private copy @prm of @len bytes; 1: it changed
 * (vcore_post_rewrite_reply). */
typedef int (*vcore_reply_rewrite_fn)(const struct vcore_call *call,
				      vcore_u8 *prm, vcore_u32 len);

struct vcore_call {
	struct vcore_slot *slot;
	struct vcore_file *file;
	struct vcore_call_ctx ctx;
	enum vcore_verdict verdict;
	int err;	     /* REFUSE_ERRNO: negative errno */
	vcore_u32 rm_status; /* REFUSE_STATUS: what was written */
	const char *reason;

	vcore_u32 req;	/* as issued */
	vcore_u32 nr;	/* effective (after XFER) */
	vcore_u32 size; /* effective */
	vcore_u32 cmd;	/* control cmd or class */
	vcore_bool xfer;
	const struct vcore_esc_row *esc;
	vcore_u32 status_off; /* RM status in the argument */

	/* Effective top-level argument: its address and private copy. */
	vcore_uptr_t arg;
	unsigned int argidx; /* bufs index of it: 0, or 1 (XFER) */
	vcore_u8 *argbuf;    /* NULL when not copied */

	unsigned int n_bufs;
	unsigned int n_fds;
	vcore_u32 owned_mask; /* bit i: owned[i] is a private copy to free */

	/* Post step */
	enum vcore_post_kind post;
	vcore_ctrl_post_fn ctrl_post;
	struct vcore_obj *new_obj; /* preallocated record */
	vcore_u32 h_parent;
	vcore_u64 reserved;  /* ledger bytes reserved in pre */
	vcore_u64 internal;  /* of which the class's rm_internal_bytes */
	vcore_u64 requested; /* vidmem bytes asked (vcore_call_request_bytes) */
	vcore_bool quota_refused;  /* refused by the memory quota */
	vcore_u64 sysmem_reserved; /* sysmem_held bytes reserved in pre */
	vcore_u32 page_align;	   /* rounding for the settle */
	int params_buf;		   /* bufs index of class/ctrl params */
	vcore_u32 reply_size_off;  /* offset of the size in the reply */
	vcore_u32 reply_size_buf;  /* bufs index holding it */
	vcore_bool reply_handle_from_buf; /* NVOS32: hMemory in top-level */
	vcore_bool restore_event_data;	  /* NV0005.data back to the caller's */
	vcore_u32 free_client, free_object;
	/* The host's vcore_file behind each fd field (vcore_call_set_fd_file),
	 * NULL when not given. */
	struct vcore_file *fd_files[VCORE_CALL_MAX_FDS];
	/* DUP_OBJECT from a client of another process of this slot. */
	vcore_bool xdup;
	vcore_u32 client_claim; /* a client handle claimed for this call */
	vcore_bool client_unverified; /* the driver could not be asked */
	int list_buf;		      /* FB_GET_INFO v1: the nested list */
	/* UVM_FREE / UNMAP_EXTERNAL (uvm_external.c): the span, its
	 * candidate range, the unmap's GPU; the file's uvm_lock is held. */
	vcore_u64 uvm_base, uvm_end;
	struct vcore_uvm_range *uvm_range;
	vcore_u8 uvm_gpu[VCORE_UVM_UUID_SIZE];
	vcore_bool uvm_locked;
	vcore_view_fn view; /* a view row's rewrite (views.c) */
	vcore_reply_rewrite_fn reply_rewrite; /* vcore_post_rewrite_reply */

	/*
	 * Everything above is zeroed for each call (call_init); what follows
	 * is written before it is read: bufs[i], fds[i] and owned[i] below
	 * n_bufs / n_fds / owned_mask, and inline_arg up to the call's size
	 * (handlers read the argument only within the size the escape row
	 * accepted, dispatch.c size_ok).
	 */
	struct vcore_buf_info bufs[VCORE_CALL_MAX_BUFS];
	struct vcore_fd_field fds[VCORE_CALL_MAX_FDS];
	void *owned[VCORE_CALL_MAX_BUFS];
	vcore_u8 inline_arg[VCORE_INLINE_ARG];
};

/* escapes.c: refusals, for handlers */
enum vcore_verdict vcore_refuse_errno(struct vcore_call *call, int err,
				      const char *reason);
enum vcore_verdict vcore_refuse_status(struct vcore_call *call,
				       vcore_u32 status, const char *reason);
enum vcore_verdict vcore_refuse_status_at(struct vcore_call *call,
					  vcore_u32 status_off,
					  vcore_u32 status, const char *reason);
/* vcore_refuse_status for a refusal by the memory quota
 * (vcore_call_refusal: VCORE_REFUSAL_QUOTA). */
enum vcore_verdict vcore_refuse_quota(struct vcore_call *call, vcore_u32 status,
				      const char *reason);
/* The driver's answer to a call the host issued with the core's copy
 * (VCORE_ANSWERED): @status written into the user's struct. */
enum vcore_verdict vcore_answer_status(struct vcore_call *call,
				       vcore_u32 status);
enum vcore_verdict vcore_policy_unknown(struct vcore_call *call,
					struct vcore_unknown_list *list,
					vcore_u32 number, int strict_errno,
					vcore_u32 strict_status,
					const char *what);
/* call.c (and dispatch.c: vcore_copy_arg): a call's buffers and fd fields */
/* Copy the top-level argument (call->size bytes) into call->argbuf. */
int vcore_copy_arg(struct vcore_call *call);
/* Add a nested buffer; @copy: also take a private copy. Returns its index
 * or a negative errno (-VCORE_EFAULT when the copy faults). */
int vcore_add_buf(struct vcore_call *call, int parent, vcore_u32 ptr_off,
		  vcore_uptr_t uaddr, vcore_u32 len, vcore_bool copy);
/* List a buffer without copying it: index, or -VCORE_E2BIG. */
static inline int vcore_list_buf(struct vcore_call *call, int parent,
				 vcore_u32 ptr_off, vcore_uptr_t uaddr,
				 vcore_u32 len)
{
	struct vcore_buf_info *b;
	unsigned int i = call->n_bufs;

	if (i >= VCORE_CALL_MAX_BUFS)
		return -VCORE_E2BIG;
	b = &call->bufs[i];
	b->parent = parent;
	b->ptr_off = ptr_off;
	b->uaddr = uaddr;
	b->len = len;
	b->copied = 0;
	b->priv = VCORE_NULL;
	call->n_bufs = i + 1;
	return (int)i;
}
/* Take the private copy of an already listed buffer. */
int vcore_copy_buf(struct vcore_call *call, unsigned int i);
void vcore_add_fd(struct vcore_call *call, vcore_uptr_t uaddr, vcore_s32 value,
		  enum vcore_fd_kind kind);

/* Little-endian field access on private copies (one load or store each). */
static inline vcore_u32 vcore_rd32(const void *p, vcore_u32 off)
{
	vcore_u32 v;

	vcore_memcpy(&v, (const vcore_u8 *)p + off, sizeof(v));
	return v;
}

static inline vcore_u64 vcore_rd64(const void *p, vcore_u32 off)
{
	vcore_u64 v;

	vcore_memcpy(&v, (const vcore_u8 *)p + off, sizeof(v));
	return v;
}

static inline void vcore_wr32(void *p, vcore_u32 off, vcore_u32 v)
{
	vcore_memcpy((vcore_u8 *)p + off, &v, sizeof(v));
}

static inline void vcore_wr64(void *p, vcore_u32 off, vcore_u64 v)
{
	vcore_memcpy((vcore_u8 *)p + off, &v, sizeof(v));
}
/* Read a u32 of the driver's reply (at @off of the top-level). */
int vcore_reply_u32(struct vcore_call *call, vcore_u32 off, vcore_u32 *out);
/* Whether the driver answered NV_OK: the status at the call's row's offset
 * (call->status_off); a reply that cannot be read did not. */
vcore_bool vcore_reply_ok(struct vcore_call *call);
/* User memory through the host's copy ops (0 or -VCORE_EFAULT), for a call
 * of @slot whose context has @uctx (struct vcore_call_ctx). */
static inline int vcore_slot_user_read(const struct vcore_slot *slot,
				       void *uctx, void *dst, vcore_uptr_t src,
				       vcore_size_t n)
{
	const struct vcore_host_ops *ops = slot->ops;
	int err;

	if (!n)
		return 0;
	if (src + n < src)
		return -VCORE_EFAULT;
#ifdef VCORE_HOST_COPY_FROM_USER
	if (__builtin_expect(ops->copy_from_user == VCORE_HOST_COPY_FROM_USER,
			     1))
		err = VCORE_HOST_COPY_FROM_USER(uctx, dst, src, n);
	else
#endif
		err = ops->copy_from_user(uctx, dst, src, n);
	return err ? -VCORE_EFAULT : 0;
}

/*
 * Two small reads (each at most 64 bytes, a multiple of 4), in one
 * user-access window where the host can (VCORE_HOST_COPY_FROM_USER2): 0, or
 * -VCORE_EFAULT when either faults, without saying which.
 */
static inline int vcore_slot_user_read2(const struct vcore_slot *slot,
					void *uctx, void *d1, vcore_uptr_t s1,
					vcore_size_t n1, void *d2,
					vcore_uptr_t s2, vcore_size_t n2)
{
#if defined(VCORE_HOST_COPY_FROM_USER2) && defined(VCORE_HOST_COPY_FROM_USER)
	if (__builtin_expect(slot->ops->copy_from_user ==
				     VCORE_HOST_COPY_FROM_USER,
			     1)) {
		if (s1 + n1 < s1 || s2 + n2 < s2)
			return -VCORE_EFAULT;
		return VCORE_HOST_COPY_FROM_USER2(uctx, d1, s1, n1, d2, s2, n2)
			       ? -VCORE_EFAULT
			       : 0;
	}
#endif
	if (vcore_slot_user_read(slot, uctx, d1, s1, n1))
		return -VCORE_EFAULT;
	return vcore_slot_user_read(slot, uctx, d2, s2, n2);
}

static inline int vcore_user_read(struct vcore_call *call, void *dst,
				  vcore_uptr_t src, vcore_size_t n)
{
	return vcore_slot_user_read(call->slot, call->ctx.uctx, dst, src, n);
}

static inline int vcore_slot_user_write(const struct vcore_slot *slot,
					void *uctx, vcore_uptr_t dst,
					const void *src, vcore_size_t n)
{
	const struct vcore_host_ops *ops = slot->ops;
	int err;

	if (!n)
		return 0;
	if (dst + n < dst)
		return -VCORE_EFAULT;
#ifdef VCORE_HOST_COPY_TO_USER
	if (__builtin_expect(ops->copy_to_user == VCORE_HOST_COPY_TO_USER, 1))
		err = VCORE_HOST_COPY_TO_USER(uctx, dst, src, n);
	else
#endif
		err = ops->copy_to_user(uctx, dst, src, n);
	return err ? -VCORE_EFAULT : 0;
}

static inline int vcore_user_write(struct vcore_call *call, vcore_uptr_t dst,
				   const void *src, vcore_size_t n)
{
	return vcore_slot_user_write(call->slot, call->ctx.uctx, dst, src, n);
}

/* Escape handlers (escapes.c, rm_alloc.c, rm_control.c) and the UVM
 * file's pre step (uvm.c). */
enum vcore_verdict vcore_uvm_pre(struct vcore_call *call);
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
enum vcore_verdict vcore_esc_register_fd(struct vcore_call *call);
enum vcore_verdict vcore_esc_map_memory(struct vcore_call *call);
enum vcore_verdict vcore_esc_map_memory_dma(struct vcore_call *call);
enum vcore_verdict vcore_esc_get_event_data(struct vcore_call *call);
enum vcore_verdict vcore_esc_idle_channels(struct vcore_call *call);
enum vcore_verdict vcore_esc_rm_alloc(struct vcore_call *call);
enum vcore_verdict vcore_esc_rm_alloc_object(struct vcore_call *call);
enum vcore_verdict vcore_esc_rm_alloc_memory(struct vcore_call *call);
enum vcore_verdict vcore_esc_rm_free(struct vcore_call *call);
enum vcore_verdict vcore_esc_rm_dup_object(struct vcore_call *call);
enum vcore_verdict vcore_esc_rm_share(struct vcore_call *call);
enum vcore_verdict vcore_esc_vid_heap_control(struct vcore_call *call);
enum vcore_verdict vcore_esc_rm_control(struct vcore_call *call);
int vcore_post_alloc(struct vcore_call *call);
int vcore_post_free(struct vcore_call *call);
int vcore_post_dup(struct vcore_call *call);
int vcore_post_vhc_info(struct vcore_call *call);

/* Control handlers (rm_control.c, views.c) */
enum vcore_verdict vcore_ctrl_fb_get_info(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_get_pids(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_get_pid_info(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_unix_fd_at0(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_unix_export_objects(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_unix_import_objects(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_unix_export_object_to_fd(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_unix_create_export_fd(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_attach_gpu(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_export_mem(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_tsg_set_timeslice(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_tsg_schedule(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_tsg_preempt(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_sched_reserved(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_node_private(struct vcore_call *call);
enum vcore_verdict vcore_esc_export_dmabuf(struct vcore_call *call);
/* gpus.c: the node's GPUs, confined to the slot's (cfg.gpu_id) */
enum vcore_verdict vcore_esc_card_info(struct vcore_call *call);
enum vcore_verdict vcore_esc_attach_gpus_to_fd(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_gpu_attached_ids(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_gpu_probed_ids(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_gpu_active_device_ids(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_gpu_id_at0(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_gpu_attach_ids(struct vcore_call *call);
enum vcore_verdict vcore_ctrl_gpu_detach_ids(struct vcore_call *call);
/* objects.c: a TSG or channel allocation past the slot's limits (vcore.h
 * VCORE_SLOT_MAX_TSGS/CHANNELS), or a channel outside a TSG, is refused. */
enum vcore_verdict vcore_sched_obj_limit(struct vcore_call *call,
					 vcore_bool tsg, vcore_u32 h_root);
/* objects.c: a VA space past VCORE_SLOT_MAX_VASPACES is refused. */
enum vcore_verdict vcore_vaspace_limit(struct vcore_call *call);

/*
 * views.c: a pre step that copied the control's params (call->params_buf)
 * makes this its post step: after a successful call the reply is read into
 * that private copy, rewritten by @fn (1: it changed), and written back and
 * counted as a view when it changed. The reply views of views.c and gpus.c.
 */
void vcore_post_rewrite_reply(struct vcore_call *call,
			      vcore_reply_rewrite_fn fn);

/* views.c: a reply rewritten (stats.views_rewritten), lock-free */
static inline void vcore_count_view(struct vcore_slot *slot)
{
	vcore_atomic_inc(&slot->views_rewritten);
}
/*
 * A view row (struct vcore_ctrl_row .view): whether the slot wants its
 * rewrite, and vcore_pre's handler for it (vcore_pre_lean needs none).
 */
static inline vcore_bool vcore_view_wanted(const struct vcore_slot *slot,
					   const struct vcore_view *view)
{
	return !view->under_quota || vcore_slot_has_quota(slot);
}
enum vcore_verdict vcore_ctrl_view(struct vcore_call *call,
				   const struct vcore_view *view);
int vcore_view_heap_query(struct vcore_call *call);

#endif /* VCORE_INTERNAL_H */
