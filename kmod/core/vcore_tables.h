/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vcore_tables.h - the driver's RM ABI as data: the row types of the escape,
 * control, class and UVM tables (tables_580.c: one struct vcore_abi per driver
 * branch, parent + delta), their lookups and the per-slot lookup index
 * (index.c), the size tests RM makes against a row, and the pre handlers and
 * post steps the rows name. Not for hosts, which ask vcore.h's API: the core's
 * files and the table tests include it through vcore_internal.h. The tables
 * are read-only data and take no lock.
 */
#ifndef VCORE_TABLES_H
#define VCORE_TABLES_H

#include "vcore.h"
#include "abi/nv_escape.h"

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

/*
 * The inner call of an NV_ESC_IOCTL_XFER_CMD header, as the core takes it: a
 * payload no larger than nvidia_ioctl accepts (nv.c:2406-2433 swaps in cmd,
 * size and ptr once and refuses a larger size), and an inner command that is
 * an escape number (an _IOC_NR, 8 bits) other than XFER itself, at a non-NULL
 * address (the driver's copy-in from 0 fails with -EFAULT; only a task with
 * CAP_SYS_RAWIO could map page 0, mmap_min_addr). vcore_pre
 * refuses a header that fails, naming the test (dispatch.c, unwrap_xfer);
 * the seal takes no payload from it (seal.c, sealed_xfer). One test for both,
 * so that the core never decides on a payload the seal left unsealed.
 */
enum vcore_xfer_fault {
	VCORE_XFER_OK = 0,
	VCORE_XFER_TOO_BIG,    /* payload over NV_ABSOLUTE_MAX_IOCTL_SIZE */
	VCORE_XFER_BAD_CMD,    /* inner cmd not an escape number, or XFER */
	VCORE_XFER_NO_PAYLOAD, /* ptr is NULL */
};

static inline enum vcore_xfer_fault vcore_xfer_check(const nv_ioctl_xfer_t *x)
{
	if (x->size > NV_ABSOLUTE_MAX_IOCTL_SIZE)
		return VCORE_XFER_TOO_BIG;
	if (x->cmd > 0xff || x->cmd == NV_ESC_IOCTL_XFER_CMD)
		return VCORE_XFER_BAD_CMD;
	if (!x->ptr)
		return VCORE_XFER_NO_PAYLOAD;
	return VCORE_XFER_OK;
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

/* Escape handlers (escapes.c, rm_alloc.c, rm_control.c) and the UVM
 * file's pre step (uvm.c). */
enum vcore_verdict vcore_uvm_pre(struct vcore_call *call);
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

#endif /* VCORE_TABLES_H */
