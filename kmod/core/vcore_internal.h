/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vcore_internal.h - state shared by the core's files. Not for hosts.
 *
 * Lock: slot->lock (host lock) protects everything reachable from the slot:
 * the object table, the file list, counters, the pid set and the TSG
 * generation. It is never held across a host copy op or the real ioctl.
 * Helpers whose name ends in _locked require it.
 * Lock-free, so that a call that creates or frees nothing takes no lock:
 * the spare calls, the ioctl and view counters and each file's last noted
 * pid (vcore_atomic_*), and the lookup index (read-only once built).
 *
 * This header holds the slot, the file and the call, and what the core's
 * files share about them; it includes vcore_tables.h (the ABI as data and the
 * handlers the rows name) and vcore_objects.h (the object records and holds).
 * The core's files include it; of the tests, those that look inside a slot.
 */
#ifndef VCORE_INTERNAL_H
#define VCORE_INTERNAL_H

#include "vcore.h"
#include "abi/nvos.h"
#include "abi/uvm.h"
#include "vcore_tables.h"
#include "vcore_objects.h"

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
/* Slots and files                                                    */
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
	vcore_u64 uvm_ptables; /* charged for them (vcore_uvm_ptables_cap) */
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
