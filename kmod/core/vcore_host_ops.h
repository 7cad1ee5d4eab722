/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vcore_host_ops.h - what a host provides to the filter core: the ops table
 * (user copies, allocation, locks, log lines, the clock, the optional driver
 * queries), the user copies a host may name at build time, the slot's memory
 * ledger, and the client ops through which the driver confirms client
 * records. A host fills these and the core calls them; no core function is
 * declared here. Hosts (kmod/, shim/, the tests' hosts) include vcore.h,
 * which includes this header; so do the core's own files, through
 * vcore_internal.h.
 */
#ifndef VCORE_HOST_OPS_H
#define VCORE_HOST_OPS_H

#include "vcore_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Host operations                                                     */
/* ------------------------------------------------------------------ */

/* Log levels (kernel host: pr_err..pr_debug, ratelimited). */
enum vcore_log_level {
	VCORE_LOG_ERR = 3,
	VCORE_LOG_WARN = 4,
	VCORE_LOG_INFO = 6,
	VCORE_LOG_DEBUG = 7,
};

/*
 * One const table per host. @priv is the host pointer given to
 * vcore_slot_create(); @uctx is the per-call user context given in
 * struct vcore_call_ctx (the kernel host passes NULL and copies against
 * current->mm; the replay host passes its simulated address space).
 * Every op is required unless marked optional.
 */
/*
 * The driver's own record of one object (host op driver_memory): what the
 * core charges instead of the sizes in user memory a sibling thread can
 * rewrite during the call.
 */
struct vcore_driver_mem {
	vcore_u64 gpu; /* bytes of video (or fabric) memory */
	vcore_u64 sys; /* bytes of system memory (class 0x3e: the driver's
			  own pages, issue 17 F10; 0x71: the caller's) */
	vcore_u32 cls; /* the object's class; 0 when the driver cannot say */
	vcore_u64 va;  /* bytes of GPU virtual address: a VA range's size,
			  whose page tables the core charges (issue 17 F11.1) */
};

struct vcore_host_ops {
	/* Return 0, or -VCORE_EFAULT when any byte is not accessible. */
	int (*copy_from_user)(void *uctx, void *dst, vcore_uptr_t src,
			      vcore_size_t n);
	int (*copy_to_user)(void *uctx, vcore_uptr_t dst, const void *src,
			    vcore_size_t n);
	/*
	 * Zeroed allocation of up to VCORE_MAX_ALLOC bytes (kernel:
	 * kvzalloc(GFP_KERNEL)); NULL on failure. free(NULL) is a no-op.
	 */
	void *(*zalloc)(void *priv, vcore_size_t n);
	void (*free)(void *priv, void *p);
	/* A sleeping lock (kernel: a kmalloc'ed struct mutex). */
	void *(*lock_create)(void *priv);
	void (*lock_destroy)(void *priv, void *lock);
	void (*lock)(void *lock);
	void (*unlock)(void *lock);
	/* One message, no trailing newline; the kernel host ratelimits. */
	void (*log)(void *priv, enum vcore_log_level level, const char *msg);
	/* Monotonic nanoseconds. */
	vcore_u64 (*clock_ns)(void *priv);
	/*
	 * Optional: does @pid (as the driver reports it in GET_PIDS, i.e. the
	 * driver's pid namespace) belong to this slot? NULL: the core uses the
	 * pids that issued calls through this slot (vcore_call_ctx.pid). Called
	 * without the slot lock held.
	 */
	vcore_bool (*pid_in_slot)(void *priv, vcore_u32 pid);
	/*
	 * Optional: the driver's own word on a memory object a call of this
	 * slot just created (@h_client, @h_parent, @h_object), for the TOCTOU
	 * hole: the reply's size and status sit in user memory that another
	 * thread can rewrite (abi.md §9.5). With @bytes: store what the driver
	 * holds for the object (struct vcore_driver_mem: its GPU memory, its
	 * system memory, its class; zeros for what it does not hold or cannot
	 * say) and return 0, or return a negative error when the driver
	 * cannot say (the core then settles from the reply, as without this
	 * op); -VCORE_ENOENT means the driver has no such object. With @bytes
	 * NULL: free the object in the driver (it is past the quota and the
	 * core has not recorded it); 0 when freed. When @h_object is the
	 * client itself (or 0, no client to free) with @bytes NULL, the call
	 * was tampered with (the driver's object differs from the core's copy
	 * of the parameters): the host frees the client and kills the caller.
	 * Called from vcore_post in the calling task, slot lock not held,
	 * after every RM_ALLOC (existence for all classes, size for memory),
	 * never for controls. The kernel host asks through the driver's
	 * in-kernel RM entry (kmod/driver_query.c); the shim leaves it NULL (an
	 * in-process filter can be bypassed anyway).
	 */
	int (*driver_memory)(void *priv, vcore_u32 h_client, vcore_u32 h_parent,
			     vcore_u32 h_object,
			     struct vcore_driver_mem *bytes);
	/*
	 * Optional: the driver's word on the class of ANY object a call of this
	 * slot just created (@h_client, @h_object): store the class the driver
	 * made it as (its external class id) in *@cls and return 0;
	 * -VCORE_ENOENT when the driver has no such object; another negative
	 * error when it cannot say. driver_memory names the class of memory
	 * only; a sibling thread can rewrite hClass into a TSG, a channel or a
	 * VA space, which hold no memory the size query answers for (issue 17,
	 * F11.1; rm_alloc_verify.c). Called from vcore_post in the calling
	 * task, slot lock not held, after every RM_ALLOC of a non-root class.
	 * The kernel host asks NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO (index
	 * CLASSID) through the in-kernel RM entry (kmod/driver_query.c); the
	 * shim and the replay leave it NULL, as driver_memory.
	 */
	int (*driver_class)(void *priv, vcore_u32 h_client, vcore_u32 h_object,
			    vcore_u32 *cls);
	/*
	 * Optional: issue RM_CONTROL @cmd on (@h_client, @h_object) with
	 * @params, the core's private copy of @size bytes, through the
	 * driver's in-kernel entry, so that the driver reads the parameters
	 * the core checked and no user memory (issue 17, F7: a sibling's
	 * store into nested params between the core's read and the driver's).
	 * 0 and the driver's status in @status, or a negative error when the
	 * driver cannot be asked (the core then forwards the call as usual).
	 * The core asks only for controls on objects it recorded under a
	 * client the caller's file created. Called from vcore_pre in the
	 * calling task, slot lock not held. The shim leaves it NULL.
	 */
	int (*control_copy)(void *priv, vcore_u32 h_client, vcore_u32 h_object,
			    vcore_u32 cmd, void *params, vcore_u32 size,
			    vcore_u32 *status);
	/*
	 * Optional: a TSG of this slot went on the runlist (GPFIFO_SCHEDULE
	 * with bEnable=1 answered NV_OK and the registry says so now). Called
	 * in the calling task, slot lock not held. A TSG scheduled while its
	 * slot is gated off runs free until the host's compute controller
	 * gates it (vcore_sched.h: at once); the kernel host wakes its
	 * controller here rather than at the next gate edge, up to a cap
	 * period later (docs/results/compute-kernel-host.md). The shim leaves
	 * it NULL.
	 */
	void (*tsg_scheduled)(void *priv);
	/*
	 * Optional: the same for a UVM file's lock, held across the real ioctl
	 * and user copies (uvm_external.c), so a lock checker can tell it from
	 * slot locks (which the mmap path takes under mmap_lock). NULL:
	 * lock_create.
	 */
	void *(*lock_create_file)(void *priv);
	/*
	 * Optional: take such a file lock, giving up when the calling task is
	 * killed while it waits (0, or -VCORE_EINTR: not taken). A UVM call
	 * can wait behind another of the file's calls for as long as the driver
	 * runs that one; a killed task must not stay in the wait. NULL: lock.
	 */
	int (*lock_file_killable)(void *lock);
};

/*
 * A host may name its user copies at build time (the kernel host does, in
 * core.mk): the core then calls them directly when the slot's ops are those
 * functions, as Linux's INDIRECT_CALL_1 does
 * (include/linux/indirect_call_wrapper.h). Every call copies its argument, and
 * an indirect call is a retpoline on kernels built with them. Same contract
 * as the ops above.
 */
#ifdef VCORE_HOST_COPY_FROM_USER
int VCORE_HOST_COPY_FROM_USER(void *uctx, void *dst, vcore_uptr_t src,
			      vcore_size_t n);
#endif
#ifdef VCORE_HOST_COPY_TO_USER
int VCORE_HOST_COPY_TO_USER(void *uctx, vcore_uptr_t dst, const void *src,
			    vcore_size_t n);
#endif
/*
 * Two small reads in one: (@d1, @s1, @n1), then (@d2, @s2, @n2), each at most
 * 64 bytes and a multiple of 4. 0, or -VCORE_EFAULT when either faults. The
 * kernel host makes both in one user-access window; used with
 * VCORE_HOST_COPY_FROM_USER's ops only.
 */
#ifdef VCORE_HOST_COPY_FROM_USER2
int VCORE_HOST_COPY_FROM_USER2(void *uctx, void *d1, vcore_uptr_t s1,
			       vcore_size_t n1, void *d2, vcore_uptr_t s2,
			       vcore_size_t n2);
#endif

/*
 * A reply list of {key, value} pairs that a view rewrites in place, after the
 * driver ran (RM's NVXXXX_CTRL_XXX_INFO lists: views.c asserts the layout).
 * @list is the list's u32 size, its entries right after it. When the u32 at
 * @status reads @status_ok, each of the first min(size, @max) entries whose
 * key is one of @subst[0..@nsubst) gets the value beside that key; nothing
 * else is written.
 */
struct vcore_kv32 {
	vcore_u32 key;
	vcore_u32 value;
};
struct vcore_list_patch {
	vcore_uptr_t status;
	vcore_uptr_t list;
	vcore_u32 status_ok;
	vcore_u32 max;
	vcore_u32 nsubst;
	const struct vcore_kv32 *subst;
};
/*
 * Apply @p with one user-access window: the status, the size and the entries
 * read and each entry whose value differs written, with no stac/clac in
 * between (views.c makes the same reads and writes through the copy ops for a
 * host without it). 1: an entry was rewritten; 0: none, or the status is
 * unreadable or not @status_ok; -VCORE_EFAULT: the size or an entry faulted.
 * Used with VCORE_HOST_COPY_FROM_USER's and _TO_USER's ops only.
 */
#ifdef VCORE_HOST_PATCH_USER_LIST
int VCORE_HOST_PATCH_USER_LIST(void *uctx, const struct vcore_list_patch *p);
#endif

/* The largest single allocation the core asks for (GET_PID_INFO params). */
#define VCORE_MAX_ALLOC (64u * 1024u)

/*
 * Slot-wide memory accounting. In the kernel every process of a slot shares
 * one struct vcore_slot, so the default in-core ledger is enough; in the shim
 * each process runs its own core and the slot's processes share one ledger in
 * shared memory. Every op must be atomic with respect to all users. The core
 * calls the ops with the slot lock (lock_create's lock) held: they must not
 * sleep for long and must not call back into the core.
 */
struct vcore_ledger_ops {
	/*
	 * Add @bytes if @quota == 0 or charged + @bytes <= @quota; return 0.
	 * Otherwise change nothing and return -VCORE_ENOSPC.
	 */
	int (*try_charge)(void *ledger, vcore_u64 bytes, vcore_u64 quota);
	/* Add @bytes unconditionally (the driver already allocated them). */
	void (*force_charge)(void *ledger, vcore_u64 bytes);
	/* Subtract @bytes (never below zero). */
	void (*uncharge)(void *ledger, vcore_u64 bytes);
	/* Bytes charged now. */
	vcore_u64 (*charged)(void *ledger);
	/*
	 * Optional (NULL in the default ledger, whose one core sees every
	 * process of the slot): sharing between processes of one slot when
	 * each runs its own core (CUDA IPC, torch.multiprocessing). An
	 * RM_DUP_OBJECT whose source client another process of the slot made
	 * is legal; the memory stays charged once, to its owner, and the
	 * charge follows the last reference, as objects.c does within a core.
	 *
	 * client: this core recorded RM client @h_client (@live 1) or dropped
	 * it (0). client_in_slot: a live process of this slot recorded
	 * @h_client. dup: this process now holds (@live 1) or no longer holds
	 * (0) a dup of (@h_client, @h_object), another process's object; on
	 * release the ledger moves whatever charge it passed to this process
	 * to another holder, or drops it. pass_charge: this process drops its
	 * own object (@h_client, @h_object) charged @bytes; return 1 when
	 * another process of the slot still holds a dup of it and the ledger
	 * moved the charge to that process (the core then refunds nothing),
	 * 0 to refund as usual.
	 */
	void (*client)(void *ledger, vcore_u32 h_client, vcore_bool live);
	vcore_bool (*client_in_slot)(void *ledger, vcore_u32 h_client);
	void (*dup)(void *ledger, vcore_u32 h_client, vcore_u32 h_object,
		    vcore_bool live);
	vcore_bool (*pass_charge)(void *ledger, vcore_u32 h_client,
				  vcore_u32 h_object, vcore_u64 bytes);
};

struct vcore_ledger {
	const struct vcore_ledger_ops *ops;
	void *priv;
};

/*
 * Optional, for a host that can ask the driver
 * (docs/results/kmod-issue4-tamper.md: client records confirmed by the driver).
 * RM client handles are one namespace for the whole driver, and the core's
 * record of a client is what it charges to, queries under and frees: a record
 * must name a client its call really created through the caller's file, never
 * one of another tenant whose handle the caller wrote into its parameters (or a
 * sibling thread wrote into the reply). @priv is the slot's host pointer. All
 * three required.
 *
 * claim: before an allocation of a client, reserve its handle *@h_client
 * node-wide (0: the host picks a fresh one and stores it). 0 when reserved;
 * -VCORE_EEXIST when the driver already has such a client or any slot holds
 * or claims the handle (the driver would refuse the duplicate anyway);
 * another negative errno when the driver cannot say (nothing is held; the
 * core then records the client unverified, as without these ops). A claim
 * the call turns into a record stays held until the record is dropped, so
 * no tenant can create a client under a handle any slot's table names.
 *
 * release: drop a claim (the call did not create the client, or its record
 * was dropped). Called with or without the slot lock held: must not sleep.
 *
 * driver_has: does the driver hold (@h_client, @h_object) now (@h_object ==
 * @h_client: the client itself)? 0: yes; -VCORE_ENOENT: no; another
 * negative errno: it cannot say. Asked after a client allocation (whatever
 * the status in user memory says) and after a free of a recorded object.
 * Slot lock not held.
 */
struct vcore_client_ops {
	int (*claim)(void *priv, vcore_u32 *h_client);
	void (*release)(void *priv, vcore_u32 h_client);
	int (*driver_has)(void *priv, vcore_u32 h_client, vcore_u32 h_object);
};

#ifdef __cplusplus
}
#endif

#endif /* VCORE_HOST_OPS_H */
