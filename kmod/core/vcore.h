/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vcore.h - public API of the vgpu filter core.
 *
 * The core decides, for one NVIDIA RM ioctl issued by a tenant ("slot"),
 * whether it is forwarded to the real driver, forwarded with rewrites, or
 * refused; after the real call it charges video memory from the driver's
 * reply, records the objects the driver created, and rewrites the replies
 * that would leak the real GPU's totals. Facts the rules rest on:
 * docs/nvidia-rm-abi.md (cited as "abi.md §N").
 *
 * Two hosts embed the core: vgpu.ko (kmod/) and libvgpu-shim.so (shim/).
 * Each fills one const struct vcore_host_ops. The core includes no kernel or
 * libc header (vcore_types.h), takes every lock through the host, and never
 * touches user memory except through the host's copy ops.
 *
 * How a host serves one ioctl (every host, every file kind):
 *
 *	struct vcore_call *call;
 *	enum vcore_verdict v = vcore_pre(file, req, arg, &ctx, &call);
 *	int rc = 0;
 *
 *	if (v == VCORE_FORWARD || v == VCORE_FORWARD_REWRITTEN) {
 *		// kernel host: translate vcore_call_fd(call, i) fields (abi.md
 *		// §9.5), call the real driver with (req, arg), restore the fds.
 *		rc = real_ioctl(req, arg);	// 0 or -errno
 *	}
 *	return vcore_post(call, rc);	// always, exactly once; frees call
 *
 * vcore_post() returns what the host returns to the application: rc
 * unchanged for forwarded calls (or -VCORE_EFAULT if the core could not
 * rewrite a reply), 0 for VCORE_REFUSE_STATUS, the negative errno for
 * VCORE_REFUSE_ERRNO.
 *
 * Locking: each slot has one host-provided lock (ops->lock_create). The core
 * takes it inside vcore_pre/vcore_post/vcore_file_close/vcore_slot_* for the
 * object table, counters and TSG registry; it never holds it while calling
 * copy_from_user/copy_to_user or across the host's real ioctl. A UVM
 * file's external-range calls also take a lock of that file from vcore_pre
 * to vcore_post, across the real ioctl (uvm_external.c). A call that
 * creates, frees or rewrites nothing (most controls) takes no lock and, once
 * the slot is warm, makes no host allocation. The host's
 * ledger does its own locking (it may be shared between processes). No core
 * function may be called from atomic context: hosts may sleep in every op.
 *
 * TOCTOU (abi.md §9.5): vcore_pre copies the top-level argument and every
 * nested buffer it needs into private memory and decides on that copy only.
 * The real driver then reads the user's memory again, and another thread may
 * change it in between. What the core does about it:
 *   - memory quota: vcore_pre reserves the size the private copy asks for
 *     (rounded as the driver rounds) in the ledger, atomically against the
 *     quota; vcore_post re-reads the reply and settles the charge at
 *     max(reserved, size the reply reports, rounded). A racing thread can
 *     therefore never make the core charge less than the driver allocated,
 *     as long as the reply itself is read before the app can overwrite it.
 *   - what remains racy: (1) the app can rewrite the class or size between
 *     the check and the driver's own read, so the driver allocates more than
 *     was reserved; post then charges the larger size (the slot goes over
 *     quota) and reports it through vcore_call_overquota(); (2) the app can
 *     rewrite the reply before vcore_post reads it back.
 *   - how a host closes it: either place the private image in memory the app
 *     cannot race (the kernel host can vm_mmap a scratch area and relocate
 *     the buffers listed by vcore_call_buffer(); the shim is in-process and
 *     accepts the race), or act on vcore_call_overquota() after the call by
 *     freeing the named object through the driver and reporting
 *     NV_ERR_NO_MEMORY, which is what the driver would have said.
 */
#ifndef VCORE_H
#define VCORE_H

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

/* ------------------------------------------------------------------ */
/* Slots                                                               */
/* ------------------------------------------------------------------ */

enum vcore_unknown_policy {
	/* Refuse unknown escapes (-EINVAL), controls (NV_ERR_NOT_SUPPORTED),
	 * classes (NV_ERR_INVALID_CLASS), as gVisor nvproxy does (abi.md §8).
	 */
	VCORE_UNKNOWN_STRICT = 0,
	/* Forward them and count them by number. */
	VCORE_UNKNOWN_PERMISSIVE = 1,
};

enum vcore_managed_policy {
	/* REFUSE when a memory quota is set, ALLOW_UNCOUNTED otherwise. */
	VCORE_MANAGED_DEFAULT = 0,
	/* Managed memory under the quota: UVM allocates its pages inside the
	 * kernel where no RM ioctl shows them (abi.md §7), so each mapping of
	 * /dev/nvidia-uvm is charged its size (vcore_uvm_map) and what has no
	 * size to charge (UVM migration, populate) is refused. */
	VCORE_MANAGED_REFUSE = 1,
	/* Allow it; it is not counted against the quota. */
	VCORE_MANAGED_ALLOW_UNCOUNTED = 2,
};

#define VCORE_VERSION_MAX 64

/*
 * Driver system memory (class NV01_MEMORY_SYSTEM) one slot may hold, in MiB,
 * unless its host says otherwise (vgpu.ko: the slot_sysmem_mib parameter;
 * libvgpu-shim.so takes it as it is): nvidia.ko charges those pages to no
 * memory cgroup (issue 17, F10). libcuda takes about 70 MiB per context
 * (tests/data/traces), and a slot holds at most 16 contexts
 * (VCORE_SLOT_MAX_TSGS / 4), so 2 GiB leaves headroom.
 */
#define VCORE_SLOT_SYSMEM_DEFAULT_MIB 2048

struct vcore_slot_config {
	vcore_u32 id;		   /* slot number, for log lines */
	vcore_u64 mem_quota_bytes; /* 0 = unlimited */
	/*
	 * Driver system memory (class NV01_MEMORY_SYSTEM) the slot's objects
	 * may hold, in bytes; 0 = unlimited. The driver's pages are charged
	 * to no memory cgroup (docs/security/kernel-lifetime-compute.md,
	 * F10). Taken at vcore_slot_create; vcore_slot_update_config keeps it.
	 */
	vcore_u64 sysmem_budget_bytes;
	/*
	 * The driver's id of the slot's GPU (nv->gpu_id: NV_ESC_CARD_INFO's
	 * gpu_id, every NV0000 gpuId; gpuGenerate32BitId of its PCI address).
	 * The driver's GPU lists then name only it, and calls naming another
	 * GPU are refused (gpus.c, issue 17 F11.3). 0: the host cannot say;
	 * nothing is confined. Taken at vcore_slot_create only.
	 */
	vcore_u32 gpu_id;
	enum vcore_unknown_policy unknown_policy;
	enum vcore_managed_policy managed_policy;
	/* Use the newest known tables for a driver the core does not know. */
	vcore_bool allow_unknown_driver_version;
	/* The real driver's version, e.g. "580.159.04" (NUL-terminated):
	 * /sys/module/nvidia/version, or CHECK_VERSION_STR cmd '2'. */
	char driver_version[VCORE_VERSION_MAX];
};

struct vcore_slot;
struct vcore_file;
struct vcore_call;

/*
 * Create a slot. @ledger may be NULL (the core's own ledger). On failure
 * returns NULL and, if @err is not NULL, stores -VCORE_ENOMEM, -VCORE_EINVAL
 * (bad config) or -VCORE_EOPNOTSUPP (driver version not supported and not
 * allowed; the message naming the version is also logged).
 */
struct vcore_slot *vcore_slot_create(const struct vcore_host_ops *ops,
				     void *priv,
				     const struct vcore_slot_config *cfg,
				     const struct vcore_ledger *ledger,
				     int *err);
/*
 * vcore_slot_config.gpu_id from the driver: a host issues @req (returned,
 * with the argument's size in *@len) on the driver's ctl file, with a
 * zeroed argument of *@len bytes (NV_ESC_CARD_INFO), and hands the reply
 * to vcore_card_info_gpu_id with the minor number of the slot's
 * /dev/nvidiaN: the GPU's id, or 0 when the reply lists no such minor.
 */
vcore_u32 vcore_card_info_req(vcore_size_t *len);
vcore_u32 vcore_card_info_gpu_id(const void *reply, vcore_size_t len,
				 vcore_u32 minor);
/* Destroy a slot; closes (vcore_file_close) any file still open. */
void vcore_slot_destroy(struct vcore_slot *slot);
/* Change quota/policies at run time (the version fields are ignored). A
 * quota below what is charged refuses new allocations; nothing is freed. */
int vcore_slot_update_config(struct vcore_slot *slot,
			     const struct vcore_slot_config *cfg);

/*
 * Is this driver version supported? 1 = yes, 0 = no. Writes a one-line
 * explanation into @msg (NUL-terminated, may be NULL). 580.x is one ABI
 * (gVisor lists 580.65.06 .. 580.159.04 without layout change, abi.md §0).
 */
int vcore_driver_version_supported(const char *version, char *msg,
				   vcore_size_t msg_len);

/*
 * Managed memory is an mmap of a UVM file: nvidia-uvm makes a managed range of
 * exactly the mapping's size (uvm_mmap -> uvm_va_range_create_mmap,
 * kernel-open/nvidia-uvm/uvm.c), populated on CPU or GPU faults up to that
 * size, in video memory or not. VM_DONTEXPAND keeps mremap from growing it; a
 * split or partial munmap shrinks it (uvm_vm_open_managed splits the range,
 * uvm_vm_close_managed destroys what went); a moved or forked copy is disabled
 * and holds nothing. So a mapping's size bounds what it can hold, and that is
 * what it is charged (docs/nvidia-rm-abi.md §7).
 *
 * libcuda maps VCORE_UVM_CONTEXT_MAPPING_BYTES for each context it creates,
 * before any allocation is possible (measured on the H200 with 580.159.04,
 * docs/results/shim-h200.md), and is charged for it like any mapping: a free
 * one per process would give a tenant that forks N processes N of them.
 *
 * Under the managed policy "refuse" (the default under a quota) a mapping is
 * charged its @length against the slot's quota: 0 and *@charged = @length,
 * or -VCORE_ENOMEM (counted as a quota denial) when it does not fit. Under
 * "allow-uncounted" it is allowed and charged nothing. The host reports each
 * charged mapping's end, or part of it, with vcore_uvm_unmap() after the
 * driver dropped it; what is left is refunded at vcore_file_close(), which a
 * host calls only after the driver's last reference to the file went.
 * -VCORE_EINVAL for a file that is not a UVM file.
 */
#define VCORE_UVM_CONTEXT_MAPPING_BYTES (2ull << 20)
int vcore_uvm_map(struct vcore_file *file, vcore_u64 length,
		  vcore_u64 *charged);
/* @bytes of a charged mapping of @file went (munmap, a closed piece). */
void vcore_uvm_unmap(struct vcore_file *file, vcore_u64 bytes);
/*
 * A file on which the core found tampering (a sibling thread changed an
 * allocation during the call, docs/results/kmod-issue4-tamper.md): its clients
 * were freed, and every later call through it is refused (-VCORE_ENODEV), from
 * any process that shares it, so that no client the driver made for it unseen
 * can be used. The host refuses its mmaps too.
 */
vcore_bool vcore_file_tampered(const struct vcore_file *file);

/*
 * Sealing (issue 17, F2/F3; kmod/core/seal.c). The core reads a call's
 * argument, and some nested buffers, and decides; the driver then copies them
 * in again from the same user addresses (nvidia_ioctl, RM's
 * rmapiParamsAcquire, nvidia-uvm's routing). Between the two reads a sibling
 * thread could change them. A host that can must run such a call from a
 * sealed copy: the pieces named here copied once from the caller into memory
 * no other task can store into, mapped into the caller's address space, each
 * nested piece's pointer in its parent's copy rewritten to the piece's copy,
 * and the whole call (vcore_pre, the driver, vcore_post) run with the first
 * piece's address as its argument. Afterwards each piece goes back to the
 * caller's own address, with the caller's own pointers restored.
 * The kernel host seals (kmod/seal.c); the shim cannot (one address space)
 * and does not call these.
 */
#define VCORE_SEAL_LEAF	      0xffffffffu /* a piece with nothing nested */
#define VCORE_SEAL_MAX_PIECES 3		  /* XFER header, argument, params */
struct vcore_seal_piece {
	vcore_u32 nr;	   /* the escape whose argument it is, or LEAF */
	vcore_u32 size;	   /* bytes */
	vcore_u32 ptr_off; /* of its u64 pointer in the previous piece */
};
/*
 * The first piece of call @req on @file: @return its size (*@top filled),
 * 0 when the call needs no seal (nothing the core decides on: a pass, an
 * unknown or wrongly sized escape, a tampered file, a UVM call the core does
 * not read).
 */
vcore_u32 vcore_sealed_size(const struct vcore_file *file, vcore_u32 req,
			    struct vcore_seal_piece *top);
/*
 * The piece nested in @cur, whose sealed bytes are @bytes: @return its size
 * (*@next filled; its pointer is the u64 at next->ptr_off of @bytes), 0 when
 * none. Decided on the sealed bytes only, so the pieces agree with what the
 * core will read.
 */
vcore_u32 vcore_sealed_next(const struct vcore_file *file,
			    const struct vcore_seal_piece *cur,
			    const void *bytes, struct vcore_seal_piece *next);
/*
 * The sealed copy of @call's params was replaced during the call (unmapped,
 * or a mapping put in its place): the driver may have read anything. Before
 * vcore_post. Tampering: the file is closed to every later call and mapping
 * (vcore_file_tampered), it is logged and counted, the caller is killed (the
 * host's driver_memory op, as for any tampered call: every client the file
 * owns is freed in the driver), and after a
 * UVM_MAP_EXTERNAL_ALLOCATION the file holds every memory object of the
 * caller's process until it closes, since UVM may have dupped any of them.
 * The call's post then changes no record (a replaced UVM_FREE drops no hold).
 */
void vcore_call_params_replaced(struct vcore_call *call);

/* Per-slot counters (for genl stats, metrics and vgpu-trace replay). */
#define VCORE_UNKNOWN_SLOTS 16
struct vcore_unknown_list {
	vcore_u32 n;	   /* distinct numbers kept (<= VCORE_UNKNOWN_SLOTS) */
	vcore_u32 dropped; /* distinct numbers seen after the list filled */
	vcore_u32 number[VCORE_UNKNOWN_SLOTS]; /* escape nr, cmd or class */
	vcore_u32 count[VCORE_UNKNOWN_SLOTS];
};

struct vcore_stats {
	vcore_u64 ioctls;	/* every vcore_pre */
	vcore_u64 denied;	/* every refusal (quota, policy, malformed) */
	vcore_u64 denied_quota; /* NV_ERR_NO_MEMORY for the quota */
	vcore_u64 malformed;	/* bad sizes, faults, bad XFER */
	vcore_u64 views_rewritten;    /* replies rewritten (memory, pids) */
	vcore_u64 charged_bytes;      /* ledger charge now */
	vcore_u64 charged_peak_bytes; /* highest charge after a settle */
	/* Of charged_bytes, the fixed estimate of the driver's own memory for
	 * the slot's TSGs and channels (issue 17 F11.1, tables_580.c); the
	 * rest is memory the driver reported. */
	vcore_u64 internal_charged_bytes;
	vcore_u64
		overquota_events; /* driver allocated beyond the reservation */
	vcore_u64 uvm_mmap_refused; /* UVM migrations refused by the policy */
	vcore_u32 objects;	    /* live objects in the table */
	vcore_u32 clients;
	vcore_u32 tsgs;
	vcore_u32 files;
	struct vcore_unknown_list unknown_escapes;  /* nr (UVM: cmd word) */
	struct vcore_unknown_list unknown_controls; /* NVOS54 cmd */
	struct vcore_unknown_list unknown_classes;  /* hClass */
};

void vcore_slot_get_stats(struct vcore_slot *slot, struct vcore_stats *out);
/* The ledger's charge now (vcore_stats.charged_bytes without the copy). */
vcore_u64 vcore_slot_charged(struct vcore_slot *slot);

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

enum vcore_file_kind {
	VCORE_FILE_CTL = 0, /* /dev/nvidiactl */
	VCORE_FILE_DEV = 1, /* /dev/nvidiaN */
	VCORE_FILE_UVM = 2, /* /dev/nvidia-uvm */
};

/* NULL on allocation failure or past a cap. @host_priv is returned by
 * vcore_file_priv(). */
struct vcore_file *vcore_file_open(struct vcore_slot *slot,
				   enum vcore_file_kind kind, void *host_priv);
/* The same, saying why in *@err: -VCORE_ENOMEM, -VCORE_EINVAL (no such
 * kind), -VCORE_EMFILE (the slot has VCORE_SLOT_MAX_UVM_FILES UVM files). */
struct vcore_file *vcore_file_open_err(struct vcore_slot *slot,
				       enum vcore_file_kind kind,
				       void *host_priv, int *err);
/*
 * The application closed the file (after the host released the real file).
 * Frees, and refunds, every RM client the file owns, as the driver's
 * rm_cleanup_file_private does (abi.md §9.1). @file is invalid afterwards.
 */
void vcore_file_close(struct vcore_file *file);
void *vcore_file_priv(const struct vcore_file *file);
enum vcore_file_kind vcore_file_kind(const struct vcore_file *file);

/* ------------------------------------------------------------------ */
/* Calls                                                               */
/* ------------------------------------------------------------------ */

enum vcore_verdict {
	/* Forward (req, arg) unchanged, then vcore_post(call, rc). */
	VCORE_FORWARD = 0,
	/* The core rewrote input fields in the user's memory (listed by
	 * vcore_call_buffer()); forward, then vcore_post restores them.
	 * Reserved: no 580 handler rewrites inputs yet; hosts must treat it
	 * like VCORE_FORWARD. */
	VCORE_FORWARD_REWRITTEN = 1,
	/* Refused as the driver refuses: the RM status is already written
	 * into the user's struct; the host returns 0 without forwarding. */
	VCORE_REFUSE_STATUS = 2,
	/* Refused with an errno; vcore_post returns it (negative). */
	VCORE_REFUSE_ERRNO = 3,
	/* Answered by the driver through the host's control_copy with the
	 * core's private copy: the driver's status is already written into
	 * the user's struct; the host returns 0 without forwarding. Not a
	 * refusal. */
	VCORE_ANSWERED = 4,
};

struct vcore_call_ctx {
	void *uctx;    /* handed to copy_from_user/copy_to_user */
	vcore_u32 pid; /* tgid of the caller (driver's namespace) */
	vcore_u32 tid;
};

/*
 * Decide one ioctl. @req is the request word as issued (the core decodes
 * _IOC_NR/_IOC_SIZE only, abi.md §1.3; UVM words are plain numbers, §7);
 * @arg the user address of its argument. Always stores a call in *@callp
 * (NULL only when the call state could not be allocated: then the verdict
 * is VCORE_REFUSE_ERRNO and vcore_post(NULL, x) returns -VCORE_ENOMEM).
 */
enum vcore_verdict vcore_pre(struct vcore_file *file, vcore_u32 req,
			     vcore_uptr_t arg, const struct vcore_call_ctx *ctx,
			     struct vcore_call **callp);
/*
 * A reply view (kmod/core/views.c) of a call forwarded with no record: a
 * control whose only work is to rewrite the driver's reply in the caller's
 * memory after a successful call. vcore_pre_lean fills it; the host passes
 * it to vcore_post_view after the driver when ->view is set.
 */
struct vcore_reply;
typedef int (*vcore_view_fn)(struct vcore_slot *slot, void *uctx,
			     const struct vcore_reply *reply);
struct vcore_reply {
	vcore_view_fn view;    /* NULL: nothing to do after the driver */
	vcore_uptr_t arg;      /* the control's NVOS54 (status word inside) */
	vcore_uptr_t params;   /* its params, never 0 */
	vcore_u32 params_size; /* never 0 */
};

/*
 * vcore_pre for a host that can forward a call without a record of it. For a
 * plain control (dispatch.c: an RM_CONTROL whose table row has no handler and
 * whose NVOS54 passes every test vcore_pre makes) it returns VCORE_FORWARD
 * and stores NULL in *@callp: the host forwards (req, arg) and makes no
 * vcore_post call; the call has no fd field, no buffer and no post step, and
 * what the host returns is the real ioctl's result, as vcore_post would. A
 * control whose row has only a view is such a call too, with @reply->view
 * set: the host then returns vcore_post_view(file, reply, ctx, rc) instead.
 * The counters and the caller's pid are noted as by vcore_pre. Any other
 * call is decided by vcore_pre, with the argument this function already read
 * (never read twice), and stores a call in *@callp as vcore_pre does; the
 * host then proceeds as above. @reply->view is NULL unless set as said. The
 * kernel host uses it (kmod/ioctl.c).
 */
enum vcore_verdict vcore_pre_lean(struct vcore_file *file, vcore_u32 req,
				  vcore_uptr_t arg,
				  const struct vcore_call_ctx *ctx,
				  struct vcore_call **callp,
				  struct vcore_reply *reply);
/*
 * After the driver ran a call vcore_pre_lean returned with @reply->view set:
 * @rc is the real ioctl's result. Rewrites the reply when the call succeeded
 * (as vcore_post does for the same control) and returns what the host
 * returns to the application.
 */
int vcore_post_view(struct vcore_file *file, const struct vcore_reply *reply,
		    const struct vcore_call_ctx *ctx, int rc);
/*
 * Finish one call: @rc is what the real ioctl returned (0 or -errno), or 0
 * when the call was refused. Settles charges, records or frees objects,
 * rewrites views. Returns what the host returns to the application. Frees
 * @call.
 */
int vcore_post(struct vcore_call *call, int rc);

/* Why the call was refused (static string, "" when forwarded). */
const char *vcore_call_reason(const struct vcore_call *call);
/* Effective escape nr after XFER unwrapping (UVM: the command number). */
vcore_u32 vcore_call_nr(const struct vcore_call *call);
/* RM_CONTROL cmd or RM_ALLOC hClass of this call, 0 if neither. */
vcore_u32 vcore_call_cmd(const struct vcore_call *call);
/*
 * A call the core unwrapped from NV_ESC_IOCTL_XFER_CMD: 1, with the inner
 * escape number, size and argument the core read from the header and
 * checked; else 0. The header is user memory that a sibling thread can
 * rewrite after the core read it, and the driver reads it again (nv.c,
 * nvidia_ioctl): a host must issue the inner escape itself, so that the
 * driver runs the call the core decided on (issue 17, F2).
 */
vcore_bool vcore_call_unwrapped(const struct vcore_call *call, vcore_u32 *nr,
				vcore_u32 *size, vcore_uptr_t *arg);

/*
 * What the host must do for this call besides forwarding it, decided by the
 * core from the call's escape, class and file (no host tests an RM number):
 *   VCORE_NEED_GPU_WITNESS: the driver looks for a real /dev/nvidiaN in the
 *	caller's fd table during the call (abi.md §9.3 item 2: NV01_DEVICE_0
 *	allocated on a ctl file, UVM_REGISTER_GPU on a UVM file);
 *   VCORE_NEED_UNPRIVILEGED: forward without CAP_SYS_ADMIN
 *	(NV_ESC_RM_ALLOC_MEMORY: its legacy heap query hands an administrator
 *	a handle on the whole framebuffer, issue 17 F11.2).
 * 0 for NULL.
 */
#define VCORE_NEED_GPU_WITNESS	0x1u
#define VCORE_NEED_UNPRIVILEGED 0x2u
unsigned int vcore_call_needs(const struct vcore_call *call);
/*
 * The user address of the RM status word in the call's parameters (under
 * XFER, in the payload; NVOS21 or NVOS64 by the size issued), 0 when the
 * escape has none. A host that undoes an allocation after vcore_post writes
 * NV_ERR_NO_MEMORY there (abi/nvstatus.h). Valid until vcore_post.
 */
vcore_uptr_t vcore_call_status_addr(const struct vcore_call *call);
/* What kind of refusal a refused call is (vcore_call_reason is for people). */
enum vcore_refusal {
	VCORE_REFUSAL_NONE = 0,	  /* forwarded or answered */
	VCORE_REFUSAL_QUOTA = 1,  /* the slot's video memory quota */
	VCORE_REFUSAL_POLICY = 2, /* anything else; also a NULL call */
};
enum vcore_refusal vcore_call_refusal(const struct vcore_call *call);
/*
 * Bytes of video memory the call asks for, as the core reserves them against
 * the quota (rounded as the driver rounds), also when the quota refused them;
 * 0 when the call allocates no counted video memory. For refusal lines.
 */
vcore_u64 vcore_call_request_bytes(const struct vcore_call *call);

/*
 * fd fields inside the call's parameters that the driver resolves with
 * fget() in the caller's table (abi.md §9.3). A kernel host installs the
 * paired real file on a temporary fd, writes it at @uaddr for the call, and
 * restores @value afterwards (§9.5). @value < 0 means "no fd" (e.g. the
 * NVOS02 wrapper fd = -1): leave it alone.
 */
enum vcore_fd_kind {
	VCORE_FD_NV_CTL = 0, /* must be a real /dev/nvidiactl */
	/*
	 * must be a real /dev/nvidiaN, and the driver compares its f_op
	 * (NV00E0/NV00FD devDescriptor: nv_match_dev_state, nv.c:5762-5783):
	 * only the real file passes, so a kernel host must not put it in a
	 * table tenants share (kmod/kthread_call.c)
	 */
	VCORE_FD_NV_DEV = 1,
	VCORE_FD_NV_ANY = 2, /* ctl or dev (mmap context target) */
	/* must be a real /dev/nvidia-uvm, f_op compared too (uvm.c:59-76) */
	VCORE_FD_UVM = 3,
	VCORE_FD_EXPORT = 4, /* NV0000_CTRL_CMD_OS_UNIX_* export/import fd:
			      * the RMAPI library opens /dev/nvidiactl to
			      * carry exported objects and RM requires a
			      * ctl file there (os.c:2275-2644): translate
			      * it like VCORE_FD_NV_CTL */
};

struct vcore_fd_field {
	vcore_uptr_t uaddr; /* user address of the 4-byte int field */
	vcore_s32 value;    /* the value in the private copy */
	enum vcore_fd_kind kind;
};

unsigned int vcore_call_fd_count(const struct vcore_call *call);
/*
 * The host names the core's file behind fd field @i (a file of this slot it
 * translated, or NULL), before the real call. The core keeps the charge of
 * objects exported to a file with that file (EXPORT_OBJECTS_TO_FD): the
 * driver's export object holds the memory until the file's last close
 * (docs/security/kernel-lifetime-compute.md, F3). The core checks in
 * vcore_post that the file is still open in the slot.
 */
void vcore_call_set_fd_file(struct vcore_call *call, unsigned int i,
			    struct vcore_file *file);
/* NULL when @i >= count. Valid until vcore_post. */
const struct vcore_fd_field *vcore_call_fd(const struct vcore_call *call,
					   unsigned int i);

/*
 * Buffers the call carries: index 0 is the top-level argument; the others
 * are nested buffers, each named by the buffer holding its pointer
 * (@parent, an index) and the pointer's offset there (@ptr_off). XFER
 * payloads and the buffers under them are listed the same way (the payload
 * is the buffer at parent 0, ptr_off 8). @copied is 1 when the core holds a
 * private copy (@priv, @len bytes, the image the core decided on).
 * Recorders (vgpu-trace record) use this list to know what to save.
 */
struct vcore_buf_info {
	vcore_s32 parent; /* -1 for the top-level argument */
	vcore_u32 ptr_off;
	vcore_uptr_t uaddr;
	vcore_u32 len;
	vcore_bool copied;
	const void *priv;
};

unsigned int vcore_call_buffer_count(const struct vcore_call *call);
int vcore_call_buffer(const struct vcore_call *call, unsigned int i,
		      struct vcore_buf_info *out);

/*
 * After vcore_post's settle found the driver allocated more than the quota
 * allowed (a TOCTOU race, see the top of this file): returns 1 and the
 * object to free. The host may free it through the driver (RM_FREE on the
 * same real ctl file) and then report NV_ERR_NO_MEMORY. Valid only from a
 * overquota hook; see vcore_slot_set_overquota_hook().
 */
struct vcore_overquota {
	vcore_u32 h_client;
	vcore_u32 h_parent;
	vcore_u32 h_object;
	vcore_u64 bytes;
};
typedef void (*vcore_overquota_fn)(void *priv, struct vcore_file *file,
				   const struct vcore_overquota *oq);
/* Optional hook, called from vcore_post (slot lock not held). */
void vcore_slot_set_overquota_hook(struct vcore_slot *slot,
				   vcore_overquota_fn fn);

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
/* Before any file of the slot is opened. */
void vcore_slot_set_client_ops(struct vcore_slot *slot,
			       const struct vcore_client_ops *ops);

/*
 * The host's compute controller owns the timeslices of this slot's TSGs (weight
 * mode): from now on the app's NVA06C SET_TIMESLICE is recorded and answered
 * NV_OK without reaching the driver, so a tenant cannot re-issue its own value
 * between the controller's (docs/security/kernel-lifetime-compute.md, F7).
 */
void vcore_slot_set_host_owns_timeslice(struct vcore_slot *slot, vcore_bool on);

/* ------------------------------------------------------------------ */
/* Driver classes, for hosts                                           */
/* ------------------------------------------------------------------ */

/*
 * What an RM class is on a slot's driver branch (the class rows of
 * tables_580.c and its deltas), so that a host that follows objects (the
 * shim's compute thread, the recorder) asks the core instead of testing class
 * numbers. @slot NULL: the newest branch the core knows.
 */
enum vcore_class_role {
	VCORE_CLASS_UNKNOWN = 0, /* not in the branch's tables */
	VCORE_CLASS_OTHER,
	VCORE_CLASS_CLIENT,    /* an RM client (NV01_ROOT*) */
	VCORE_CLASS_DEVICE,    /* NV01_DEVICE_0 */
	VCORE_CLASS_SUBDEVICE, /* NV20_SUBDEVICE_0 */
	VCORE_CLASS_MEMORY,    /* any memory class, counted or not */
	VCORE_CLASS_TSG,       /* KEPLER_CHANNEL_GROUP_A */
	VCORE_CLASS_CHANNEL,   /* a GPFIFO channel (0x??6f) */
};
enum vcore_class_role vcore_class_role_of(const struct vcore_slot *slot,
					  vcore_u32 cls);
/* Size of the class's allocation parameters (RM derives it from the class,
 * abi.md §3 NVOS64), 0 when the tables do not give one. */
vcore_u32 vcore_class_params_size(const struct vcore_slot *slot, vcore_u32 cls);

/* ------------------------------------------------------------------ */
/* TSG registry (for the time-slice scheduler, kmod/core/sched)        */
/* ------------------------------------------------------------------ */

/*
 * Per-slot limits on scheduling objects (F11.1): past them an allocation is
 * refused with NV_ERR_INSUFFICIENT_RESOURCES, as RM refuses when it runs out.
 * Channel ids are GPU-wide, so one tenant must not take them all, and every
 * TSG and channel a slot can have is one the compute controller measures and
 * gates (kmod/compute.h sizes its tables from these). libcuda makes 4 TSGs
 * and 20 channels per context, all channels under a TSG (every recorded
 * trace in tests/data/traces): 16 contexts per slot.
 */
#define VCORE_SLOT_MAX_TSGS	64
#define VCORE_SLOT_MAX_CHANNELS 1024
/*
 * VA spaces (FERMI_VASPACE_A) per slot (issue 17 F11.1): their page
 * directories are the driver's video memory, charged as a fixed estimate
 * each (tables_580.c). libcuda makes 2 per process and later contexts reuse
 * them (every recorded trace in tests/data/traces): twice what the 16
 * contexts of the TSG limit need as processes of their own.
 */
#define VCORE_SLOT_MAX_VASPACES (VCORE_SLOT_MAX_TSGS / 4 * 2 * 2)
/*
 * UVM files (/dev/nvidia-uvm opens) per slot (issue 17 F11.1): each is a
 * va_space of UVM's with page trees of its own per registered GPU, and its
 * external mappings are capped per file (VCORE_MAX_OBJECTS). libcuda opens
 * two per process (the va_space and the UVM_MM_INITIALIZE file), and the
 * recordings in tests/data/traces at most four (PyTorch); the VA-space cap
 * allows VCORE_SLOT_MAX_VASPACES / 2 processes, so four each. Past it an
 * open fails with EMFILE (vcore_file_open_err).
 */
#define VCORE_SLOT_MAX_UVM_FILES (VCORE_SLOT_MAX_VASPACES / 2 * 4)

/*
 * A TSG (KEPLER_CHANNEL_GROUP_A 0xa06c or a successor) the slot's clients
 * allocated, with the engine type from NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS
 * @12 (abi.md §6.3) and the number of channels (class 0x??6f) under it.
 *
 * @scheduled: the app's NVA06C_CTRL_CMD_GPFIFO_SCHEDULE(bEnable=1) on this
 * TSG returned NV_OK, and no successful bEnable=0 came after it (bEnable read
 * from the core's private copy of the params). libcuda creates the TSG, its
 * channels, registers them with UVM and only then schedules the TSG (abi.md
 * §6.1): before that the TSG is not on the runlist. A controller must leave
 * an unscheduled TSG and its channels alone: on the H200 a PREEMPT(bWait=1)
 * of it waited 4 s for RM's timeout, and FIFO_DISABLE_CHANNELS on its
 * channels before the schedule left the tenant frozen for good
 * (docs/results/compute-h200.md, the lead's cap-from-the-first-kernel run).
 * A change of @scheduled bumps the registry generation.
 */
struct vcore_tsg_info {
	vcore_u32 h_client;
	vcore_u32 h_device; /* parent of the TSG */
	vcore_u32 h_tsg;
	vcore_u32 tsg_class;
	vcore_u32 engine_type; /* NV2080_ENGINE_TYPE_*: 1 = GR0 */
	vcore_u32 n_channels;
	vcore_u32 pid;		 /* process that allocated it */
	struct vcore_file *file; /* ctl file owning the client */
	vcore_bool scheduled;	 /* see above */
};

struct vcore_channel_info {
	vcore_u32 h_client;
	vcore_u32 h_tsg; /* 0 when allocated directly under a device */
	vcore_u32 h_channel;
	vcore_u32 channel_class;
	/* The parent TSG is scheduled (vcore_tsg_info.scheduled); always 0
	 * for a channel without a TSG parent in the table. */
	vcore_bool tsg_scheduled;
};

/* Visitors run under the slot lock: they must not call back into the core
 * and must not sleep long. A non-zero return stops the walk and is returned. */
typedef int (*vcore_tsg_fn)(void *arg, const struct vcore_tsg_info *tsg);
typedef int (*vcore_channel_fn)(void *arg, const struct vcore_channel_info *ch);
int vcore_slot_for_each_tsg(struct vcore_slot *slot, vcore_tsg_fn fn,
			    void *arg);
int vcore_slot_for_each_channel(struct vcore_slot *slot, vcore_channel_fn fn,
				void *arg);
/* Is (@h_client, @h_tsg) a TSG of this slot, scheduled now? Takes the slot
 * lock; for a host that acts on a TSG some time after its walk. */
vcore_bool vcore_slot_tsg_scheduled(struct vcore_slot *slot, vcore_u32 h_client,
				    vcore_u32 h_tsg);
/* Bumped on every TSG or channel added or removed, every TSG whose
 * scheduled state changed, and every app SET_TIMESLICE (cheap change check). */
vcore_u64 vcore_slot_tsg_generation(struct vcore_slot *slot);

#ifdef __cplusplus
}
#endif

#endif /* VCORE_H */
