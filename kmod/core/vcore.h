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
 * This is the one header a host includes. It declares the calls a host makes
 * (slots, files, calls, sealing, counters) and includes the two other public
 * headers: vcore_host_ops.h (what the host provides: its ops, ledger and
 * client ops) and vcore_registry.h (class roles, per-slot caps and the TSG
 * registry, for the compute controllers).
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
#include "vcore_host_ops.h"
#include "vcore_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* The host's client ops (vcore_host_ops.h); before any file of the slot is
 * opened. */
void vcore_slot_set_client_ops(struct vcore_slot *slot,
			       const struct vcore_client_ops *ops);

#ifdef __cplusplus
}
#endif

#endif /* VCORE_H */
