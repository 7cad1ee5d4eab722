// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * dispatch.c - the ioctl entry points: decode (nr, size) the way
 * nvidia_ioctl does (nv.c:2375-2783, abi.md §1.3), unwrap
 * NV_ESC_IOCTL_XFER_CMD, look the escape up in the version's table, run its
 * handler on a private copy, and after the real call run the post step.
 */
#include "vcore_internal.h"
#include "abi/classes.h"
#include "abi/ctrl.h"
#include "abi/nv_escape.h"
#include "abi/nvstatus.h"
#include "abi/uvm.h"

/* ---- user memory, through the host ---- */

int vcore_reply_u32(struct vcore_call *call, vcore_u32 off, vcore_u32 *out)
{
	return vcore_user_read(call, out, call->arg + off, sizeof(*out));
}

/* ---- buffers and fd fields ---- */

/*
 * The top-level argument as vcore_pre_lean read it from user memory, handed
 * on when the call is not a plain one, so that vcore_pre decides on those
 * bytes and never reads them a second time.
 */
struct early_arg {
	vcore_uptr_t addr;
	vcore_u32 size;
	int err; /* the read's result: 0 or -VCORE_EFAULT */
	const void *bytes;
};

/*
 * vcore_copy_arg, inlined into vcore_pre for every escape that is copied.
 * @early: the same bytes already read (vcore_pre_lean), or NULL.
 */
static inline int copy_arg(struct vcore_call *call,
			   const struct early_arg *early)
{
	void *buf;

	if (call->argbuf)
		return 0;
	if (call->size <= VCORE_INLINE_ARG) {
		buf = call->inline_arg;
	} else {
		buf = call->slot->ops->zalloc(call->slot->priv, call->size);
		if (!buf)
			return -VCORE_ENOMEM;
		call->owned[call->argidx] = buf;
		call->owned_mask |= 1u << call->argidx;
	}
	if (early && early->addr == call->arg && early->size == call->size) {
		if (early->err)
			return -VCORE_EFAULT;
		vcore_memcpy(buf, early->bytes, call->size);
	} else if (vcore_user_read(call, buf, call->arg, call->size)) {
		return -VCORE_EFAULT;
	}
	call->argbuf = buf;
	call->bufs[call->argidx].copied = 1;
	call->bufs[call->argidx].priv = buf;
	return 0;
}

int vcore_copy_arg(struct vcore_call *call)
{
	return copy_arg(call, VCORE_NULL);
}

int vcore_add_buf(struct vcore_call *call, int parent, vcore_u32 ptr_off,
		  vcore_uptr_t uaddr, vcore_u32 len, vcore_bool copy)
{
	struct vcore_buf_info *b;
	void *priv;
	int i;

	if (copy && len > VCORE_MAX_ALLOC)
		return -VCORE_E2BIG;
	i = vcore_list_buf(call, parent, ptr_off, uaddr, len);
	if (i < 0 || !copy || !len)
		return i;
	b = &call->bufs[i];
	priv = call->slot->ops->zalloc(call->slot->priv, len);
	if (!priv)
		return -VCORE_ENOMEM;
	call->owned[i] = priv;
	call->owned_mask |= 1u << i;
	if (vcore_user_read(call, priv, uaddr, len))
		return -VCORE_EFAULT;
	b->copied = 1;
	b->priv = priv;
	return (int)i;
}

int vcore_copy_buf(struct vcore_call *call, unsigned int i)
{
	struct vcore_buf_info *b = &call->bufs[i];
	void *priv;

	if (b->copied)
		return 0;
	if (b->len > VCORE_MAX_ALLOC)
		return -VCORE_E2BIG;
	priv = call->slot->ops->zalloc(call->slot->priv, b->len ? b->len : 1);
	if (!priv)
		return -VCORE_ENOMEM;
	if (call->owned_mask & (1u << i)) /* a fault left an earlier copy */
		call->slot->ops->free(call->slot->priv, call->owned[i]);
	call->owned[i] = priv;
	call->owned_mask |= 1u << i;
	if (vcore_user_read(call, priv, b->uaddr, b->len))
		return -VCORE_EFAULT;
	b->copied = 1;
	b->priv = priv;
	return 0;
}

void vcore_add_fd(struct vcore_call *call, vcore_uptr_t uaddr, vcore_s32 value,
		  enum vcore_fd_kind kind)
{
	struct vcore_fd_field *f;

	if (call->n_fds >= VCORE_CALL_MAX_FDS)
		return;
	f = &call->fds[call->n_fds++];
	f->uaddr = uaddr;
	f->value = value;
	f->kind = kind;
}

/* ---- refusals ---- */

static void log_refusal(struct vcore_call *call)
{
	vcore_logf(call->slot, VCORE_LOG_INFO,
		   "pid %u: refused nr 0x%x size %u cmd/class 0x%x: %s (%s %d)",
		   call->ctx.pid, call->nr, call->size, call->cmd, call->reason,
		   call->verdict == VCORE_REFUSE_STATUS ? "status" : "errno",
		   call->verdict == VCORE_REFUSE_STATUS ? (int)call->rm_status
							: call->err);
}

enum vcore_verdict vcore_refuse_errno(struct vcore_call *call, int err,
				      const char *reason)
{
	call->verdict = VCORE_REFUSE_ERRNO;
	call->err = err;
	call->reason = reason;
	return call->verdict;
}

/*
 * Refuse the way RM refuses: status in the struct, ioctl returns 0
 * (abi.md §4.3). The status goes to the effective argument (the XFER
 * payload when wrapped), or into the control's own struct.
 */
enum vcore_verdict vcore_refuse_status(struct vcore_call *call,
				       vcore_u32 status, const char *reason)
{
	const struct vcore_esc_row *row = call->esc;

	if (!row || (row->flags & VCORE_ESC_NO_STATUS) ||
	    vcore_user_write(call, call->arg + call->status_off, &status,
			     sizeof(status)))
		return vcore_refuse_errno(call, -VCORE_EFAULT, reason);
	call->verdict = VCORE_REFUSE_STATUS;
	call->rm_status = status;
	call->reason = reason;
	return call->verdict;
}

enum vcore_verdict vcore_policy_unknown(struct vcore_call *call,
					struct vcore_unknown_list *list,
					vcore_u32 number, int strict_errno,
					vcore_u32 strict_status,
					const char *what)
{
	enum vcore_unknown_policy policy;

	vcore_lock(call->slot);
	vcore_count_unknown_locked(list, number);
	policy = call->slot->cfg.unknown_policy;
	vcore_unlock(call->slot);
	if (policy == VCORE_UNKNOWN_PERMISSIVE) {
		vcore_logf(call->slot, VCORE_LOG_DEBUG,
			   "pid %u: forwarding unknown %s 0x%x (permissive)",
			   call->ctx.pid, what, number);
		return VCORE_FORWARD;
	}
	if (strict_errno)
		return vcore_refuse_errno(call, strict_errno, what);
	return vcore_refuse_status(call, strict_status, what);
}

/* ---- generic escape handlers ---- */

/* Size-checked pass: most escapes need nothing but the size check. */
enum vcore_verdict vcore_esc_pass(struct vcore_call *call)
{
	(void)call;
	return VCORE_FORWARD;
}

/* CONFIG_GET/SET, EXPORT/IMPORT_OBJECT_TO_FD and friends: RmIoctl has no
 * case for them in 580 (abi.md §2), so the driver fails them anyway. */
enum vcore_verdict vcore_esc_no_driver_handler(struct vcore_call *call)
{
	return vcore_refuse_errno(call, -VCORE_EINVAL,
				  "escape has no handler in the 580 driver");
}

/* Registry writes, lockless diagnostics, NUMA status: root-only, and
 * node-wide in effect, so never from a tenant. */
enum vcore_verdict vcore_esc_privileged(struct vcore_call *call)
{
	return vcore_refuse_errno(call, -VCORE_EPERM,
				  "node-wide privileged escape");
}

/* NV_ESC_REGISTER_FD: ctl_fd is fget()-ed as a real ctl (escape.c:876). */
enum vcore_verdict vcore_esc_register_fd(struct vcore_call *call)
{
	vcore_add_fd(call, call->arg, (vcore_s32)vcore_rd32(call->argbuf, 0),
		     VCORE_FD_NV_CTL);
	return VCORE_FORWARD;
}

/* NV_ESC_RM_MAP_MEMORY: the wrapper fd gets the mmap context
 * (nv-usermap.c:45, abi.md §9.3). */
enum vcore_verdict vcore_esc_map_memory(struct vcore_call *call)
{
	vcore_add_fd(call, call->arg + 48,
		     (vcore_s32)vcore_rd32(call->argbuf, 48), VCORE_FD_NV_ANY);
	return VCORE_FORWARD;
}

/* NV_ESC_RM_GET_EVENT_DATA: the kernel writes a 16-byte event at pEvent. */
enum vcore_verdict vcore_esc_get_event_data(struct vcore_call *call)
{
	vcore_uptr_t p = vcore_rd64(call->argbuf, 0);

	if (p)
		vcore_add_buf(call, (int)call->argidx, 0, p, NV_UNIX_EVENT_SIZE,
			      0);
	return VCORE_FORWARD;
}

/* NV_ESC_RM_IDLE_CHANNELS: three nested handle arrays of numChannels. */
enum vcore_verdict vcore_esc_idle_channels(struct vcore_call *call)
{
	vcore_u32 n = vcore_rd32(call->argbuf, 12), i;

	if (n > 4096)
		return vcore_refuse_status(call, NV_ERR_INVALID_ARGUMENT,
					   "IDLE_CHANNELS count too large");
	for (i = 0; i < 3; i++) {
		vcore_uptr_t p = vcore_rd64(call->argbuf, 16 + 8 * i);

		if (p && n)
			vcore_add_buf(call, (int)call->argidx, 16 + 8 * i, p,
				      n * 4, 0);
	}
	return VCORE_FORWARD;
}

/* ---- UVM ---- */

static enum vcore_verdict uvm_pre(struct vcore_call *call)
{
	const struct vcore_uvm_row *row;

	call->nr = call->req;
	call->size = 0;
	row = vcore_slot_uvm(call->slot, call->req);
	if (!row)
		return vcore_policy_unknown(
			call, &call->slot->stats.unknown_escapes, call->req,
			-VCORE_EINVAL, 0, "unknown nvidia-uvm ioctl");
	call->size = row->size;
	vcore_add_buf(call, -1, 0, call->arg, row->size, 0);
	if (call->req == UVM_MM_INITIALIZE) {
		UVM_MM_INITIALIZE_PARAMS p;

		/* Unreadable: the driver faults too, nothing to translate. */
		if (!vcore_user_read(call, &p, call->arg, sizeof(p)))
			vcore_add_fd(call, call->arg, p.uvmFd, VCORE_FD_UVM);
	}
	return VCORE_FORWARD;
}

/* ---- NV_ESC_RM_CONTROL ---- */

/*
 * Controls without a table row that go to the driver untouched: legacy GSS
 * controls go to GSP as opaque bytes, and NV2081_BINAPI is a binary API;
 * gVisor passes both (frontend.go:891-907).
 */
static inline vcore_bool ctrl_passed_untouched(vcore_u32 cmd)
{
	return (cmd & RM_GSS_LEGACY_MASK) || (cmd >> 16) == NV2081_BINAPI;
}

/* paramsSize must equal the registered size (control.c:453-461). */
static inline vcore_bool ctrl_size_ok(const struct vcore_ctrl_row *row,
				      vcore_u32 size)
{
	return (row->flags & VCORE_CTRL_ANY_SIZE) ? size <= row->size
						  : size == row->size;
}

/*
 * NVOS54: dispatch on cmd. Here rather than in rm_control.c so that vcore_pre
 * inlines it: RM_CONTROL is the most frequent escape, and a small control's
 * cost through the proxy is mostly calls like this one
 * (tests/vm/guest/vgpu/vgpu_bench.cc).
 */
static inline __attribute__((always_inline)) enum vcore_verdict
rm_control_pre(struct vcore_call *call)
{
	const struct vcore_ctrl_row *row;
	vcore_u32 cmd = vcore_rd32(call->argbuf, 8);
	vcore_u32 size = vcore_rd32(call->argbuf, 24);
	vcore_uptr_t p = vcore_rd64(call->argbuf, 16);

	call->cmd = cmd;
	if (size > RMAPI_PARAM_COPY_MAX_PARAMS_SIZE)
		return vcore_refuse_status(call, NV_ERR_INVALID_ARGUMENT,
					   "control params over 1 MiB");
	if (p && size) {
		int i = vcore_list_buf(call, (int)call->argidx, 16, p, size);

		if (i >= 0)
			call->params_buf = i; /* listed, copied on demand */
	}
	row = vcore_slot_ctrl(call->slot, cmd);
	if (!row) {
		if (ctrl_passed_untouched(cmd))
			return VCORE_FORWARD;
		return vcore_policy_unknown(
			call, &call->slot->stats.unknown_controls, cmd, 0,
			NV_ERR_NOT_SUPPORTED, "unknown control");
	}
	if (!ctrl_size_ok(row, size))
		return vcore_refuse_status(call, NV_ERR_INVALID_ARGUMENT,
					   "wrong paramsSize for control");
	return row->pre ? row->pre(call) : VCORE_FORWARD;
}

enum vcore_verdict vcore_esc_rm_control(struct vcore_call *call)
{
	return rm_control_pre(call);
}

/* ---- the entry points ---- */

static vcore_bool size_ok(const struct vcore_esc_row *row, vcore_u32 size)
{
	if (row->flags & VCORE_ESC_SIZE_MULTIPLE)
		return size && row->size && size % row->size == 0;
	return size == row->size || (row->alt_size && size == row->alt_size);
}

/* NV_ESC_IOCTL_XFER_CMD: nv.c:2406-2430 swaps in cmd/size/ptr once. */
static enum vcore_verdict unwrap_xfer(struct vcore_call *call)
{
	nv_ioctl_xfer_t x;

	if (call->size != sizeof(x))
		return vcore_refuse_errno(call, -VCORE_EINVAL,
					  "XFER with outer size != 16");
	if (vcore_user_read(call, &x, call->arg, sizeof(x)))
		return vcore_refuse_errno(call, -VCORE_EFAULT,
					  "XFER header unreadable");
	if (x.size > NV_ABSOLUTE_MAX_IOCTL_SIZE)
		return vcore_refuse_errno(call, -VCORE_EINVAL,
					  "XFER payload over 16384 bytes");
	if (x.cmd > 0xff || x.cmd == NV_ESC_IOCTL_XFER_CMD)
		return vcore_refuse_errno(call, -VCORE_EINVAL,
					  "XFER inside XFER or bad inner cmd");
	call->xfer = 1;
	call->nr = x.cmd;
	call->size = x.size;
	call->arg = x.ptr;
	/* The payload is buffer 1: its pointer sits at offset 8 of the
	 * 16-byte header (buffer 0). */
	call->bufs[0].len = sizeof(x);
	if (vcore_add_buf(call, 0, 8, x.ptr, x.size, 0) != 1)
		return vcore_refuse_errno(call, -VCORE_EFAULT, "XFER");
	/* From here on "the argument" is the payload. */
	call->argidx = 1;
	return VCORE_FORWARD;
}

/* Words of struct vcore_call that call_get clears: everything before bufs. */
#define CALL_HEAD_WORDS                                                        \
	(__builtin_offsetof(struct vcore_call, bufs) / sizeof(vcore_u64))
_Static_assert(__builtin_offsetof(struct vcore_call, bufs) %
			       sizeof(vcore_u64) ==
		       0,
	       "the head of struct vcore_call is whole words");

/* Stores through it may alias the call's typed fields. */
typedef vcore_u64 __attribute__((may_alias)) call_word_t;

/*
 * Clear the head with plain word stores. memset() of this size (about 200
 * bytes) compiles to `rep stos`, whose start-up cost dominates at this size
 * on real CPUs, and which QEMU's TCG (the guest tests) runs one iteration per
 * translated block: it was a fifth of the core's cost on a small control. The
 * empty asm keeps the compiler from turning the loop back into memset(); the
 * unrolled stores need no branch.
 */
static inline void call_clear_head(struct vcore_call *call)
{
	call_word_t *w = (call_word_t *)(void *)call;
	unsigned int i;

#pragma GCC unroll 64
	for (i = 0; i < CALL_HEAD_WORDS; i++) {
		w[i] = 0;
		__asm__ __volatile__("" : : "r"(w) : "memory");
	}
}

/*
 * A call from the slot's spare cells, else from the host. Only the head of
 * struct vcore_call is zeroed: the arrays at its end are written before they
 * are read (vcore_internal.h), and zeroing ~1 KiB per call was most of the
 * core's cost on a small control.
 */
static struct vcore_call *call_get(struct vcore_slot *slot)
{
	struct vcore_call *call = VCORE_NULL;
	unsigned int i;

	for (i = 0; i < VCORE_SPARE_CALLS && !call; i++)
		if (vcore_atomic_load(&slot->spare[i]))
			call = vcore_atomic_xchg(&slot->spare[i], VCORE_NULL);
	if (!call)
		call = slot->ops->zalloc(slot->priv, sizeof(*call));
	if (call)
		call_clear_head(call);
	return call;
}

/* Back to a free spare cell, else to the host. */
static void call_put(struct vcore_slot *slot, struct vcore_call *call)
{
	unsigned int i;

	for (i = 0; i < VCORE_SPARE_CALLS && call; i++)
		if (!vcore_atomic_load(&slot->spare[i]))
			call = vcore_atomic_xchg(&slot->spare[i], call);
	/* An exchange may hand back a call another thread put meanwhile. */
	if (call)
		slot->ops->free(slot->priv, call);
}

void vcore_slot_free_spare_calls(struct vcore_slot *slot)
{
	unsigned int i;

	for (i = 0; i < VCORE_SPARE_CALLS; i++)
		slot->ops->free(slot->priv,
				vcore_atomic_xchg(&slot->spare[i], VCORE_NULL));
}

/* vcore_pre; @early: the argument vcore_pre_lean already read, or NULL. */
static enum vcore_verdict pre(struct vcore_file *file, vcore_u32 req,
			      vcore_uptr_t arg,
			      const struct vcore_call_ctx *ctx,
			      struct vcore_call **callp,
			      const struct early_arg *early)
{
	struct vcore_slot *slot = file->slot;
	const struct vcore_esc_row *row;
	struct vcore_call *call;
	enum vcore_verdict v;
	int err;

	call = call_get(slot);
	*callp = call;
	if (!call)
		return VCORE_REFUSE_ERRNO;
	call->slot = slot;
	call->file = file;
	if (ctx)
		call->ctx = *ctx;
	call->req = req;
	call->arg = arg;
	call->params_buf = -1;
	call->verdict = VCORE_FORWARD;
	call->reason = "";

	vcore_atomic_inc(&slot->ioctls);
	vcore_note_pid(file, call->ctx.pid);

	if (vcore_atomic_load(&file->tampered)) {
		v = vcore_refuse_errno(call, -VCORE_ENODEV,
				       "file closed to calls after tampering");
		goto out;
	}
	if (file->kind == VCORE_FILE_UVM) {
		v = uvm_pre(call);
		goto out;
	}
	call->nr = VCORE_IOC_NR(req);
	call->size = VCORE_IOC_SIZE(req);
	vcore_list_buf(call, -1, 0, arg, call->size);
	if (call->nr == NV_ESC_IOCTL_XFER_CMD) {
		v = unwrap_xfer(call);
		if (v != VCORE_FORWARD)
			goto malformed;
	}
	row = vcore_slot_esc(slot, call->nr);
	if (!row) {
		v = vcore_policy_unknown(call, &slot->stats.unknown_escapes,
					 call->nr, -VCORE_EINVAL, 0,
					 "unknown escape");
		goto out;
	}
	call->esc = row;
	call->status_off = row->status_off;
	if (!size_ok(row, call->size)) {
		/* RmIoctl checks dataSize per escape: -EINVAL. */
		v = vcore_refuse_errno(call, -VCORE_EINVAL,
				       "wrong size for escape");
		goto malformed;
	}
	if (row->pre != vcore_esc_pass &&
	    row->pre != vcore_esc_no_driver_handler &&
	    row->pre != vcore_esc_privileged) {
		err = copy_arg(call, early);
		if (err) {
			v = vcore_refuse_errno(call, err,
					       "argument unreadable");
			goto malformed;
		}
	}
	/*
	 * RM_CONTROL, the most frequent escape, by a direct call: an indirect
	 * one is a retpoline on kernels built with them (the pattern of Linux's
	 * INDIRECT_CALL_1, include/linux/indirect_call_wrapper.h).
	 */
	if (row->pre == vcore_esc_rm_control)
		v = rm_control_pre(call);
	else
		v = row->pre(call);
	goto out;

malformed:
	vcore_lock(slot);
	slot->stats.malformed++;
	vcore_unlock(slot);
out:
	call->verdict = v;
	if (v == VCORE_REFUSE_STATUS || v == VCORE_REFUSE_ERRNO) {
		vcore_lock(slot);
		slot->stats.denied++;
		vcore_unlock(slot);
		log_refusal(call);
	}
	return v;
}

enum vcore_verdict vcore_pre(struct vcore_file *file, vcore_u32 req,
			     vcore_uptr_t arg, const struct vcore_call_ctx *ctx,
			     struct vcore_call **callp)
{
	return pre(file, req, arg, ctx, callp, VCORE_NULL);
}

/*
 * A plain control: an RM_CONTROL, not wrapped in XFER, on a ctl or GPU file
 * not closed for tampering, whose NVOS54 is readable, whose paramsSize is
 * within RM's limit and is the one its table row registers, and whose row
 * has no pre handler (so no post step, no fd field, no view); or a legacy
 * GSS or NV2081 binary-API control, which rm_control_pre forwards untouched.
 * Each test below is one vcore_pre makes, in vcore_pre's order, on the same
 * data (the table rows, the file's flag, the one copy of the NVOS54): a call
 * that fails any of them goes to vcore_pre, which makes them again and
 * decides (refuses, counts, logs) exactly as for any other call. A plain
 * control is forwarded as vcore_pre forwards it: the same counters, the same
 * pid note, after the same tests; only the call record, which would carry
 * nothing to vcore_post, is not made.
 */
enum vcore_verdict vcore_pre_lean(struct vcore_file *file, vcore_u32 req,
				  vcore_uptr_t arg,
				  const struct vcore_call_ctx *ctx,
				  struct vcore_call **callp)
{
	struct vcore_slot *slot = file->slot;
	const struct vcore_esc_row *row;
	const struct vcore_ctrl_row *ctrl;
	struct early_arg early = {.bytes = VCORE_NULL};
	/* Read only after the copy into it succeeded. */
	NVOS54_PARAMETERS p VCORE_NO_AUTO_INIT;
	vcore_u32 nr = VCORE_IOC_NR(req), size = VCORE_IOC_SIZE(req);

	if (vcore_atomic_load(&file->tampered) ||
	    file->kind == VCORE_FILE_UVM || nr == NV_ESC_IOCTL_XFER_CMD)
		goto full;
	row = vcore_slot_esc(slot, nr);
	if (!row || !size_ok(row, size) || row->pre != vcore_esc_rm_control ||
	    size != sizeof(p))
		goto full;
	/* copy_arg: the one read of the argument, kept for vcore_pre. */
	early.addr = arg;
	early.size = size;
	early.bytes = &p;
	early.err = vcore_slot_user_read(slot, ctx ? ctx->uctx : VCORE_NULL, &p,
					 arg, size);
	if (early.err || p.paramsSize > RMAPI_PARAM_COPY_MAX_PARAMS_SIZE)
		goto full;
	/* rm_control_pre's lookup and tests. */
	ctrl = vcore_slot_ctrl(slot, p.cmd);
	if (!ctrl) {
		if (!ctrl_passed_untouched(p.cmd))
			goto full; /* the unknown-control policy */
	} else if (ctrl->pre || !ctrl_size_ok(ctrl, p.paramsSize)) {
		goto full;
	}
	vcore_atomic_inc(&slot->ioctls);
	vcore_note_pid(file, ctx ? ctx->pid : 0);
	*callp = VCORE_NULL;
	return VCORE_FORWARD;
full:
	return pre(file, req, arg, ctx, callp,
		   early.bytes ? &early : VCORE_NULL);
}

static void call_free(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	unsigned int i;

	for (i = 0; call->owned_mask >> i; i++)
		if (call->owned_mask & (1u << i))
			slot->ops->free(slot->priv, call->owned[i]);
	/* A claim no record took over (rm_alloc.c, client ops). */
	if (call->client_claim)
		slot->client_ops->release(slot->priv, call->client_claim);
	if (call->new_obj)
		slot->ops->free(slot->priv, call->new_obj);
	call_put(slot, call);
}

/* Undo what pre reserved when the call did not reach a successful post. */
static void call_unwind(struct vcore_call *call)
{
	if (call->reserved) {
		vcore_lock(call->slot);
		vcore_charge_refund(call->slot, call->reserved);
		vcore_unlock(call->slot);
		call->reserved = 0;
	}
}

int vcore_post(struct vcore_call *call, int rc)
{
	int ret;

	if (!call)
		return -VCORE_ENOMEM;
	switch (call->verdict) {
	case VCORE_REFUSE_STATUS:
		ret = 0;
		goto unwind;
	case VCORE_REFUSE_ERRNO:
		ret = call->err ? call->err : -VCORE_EINVAL;
		goto unwind;
	default:
		break;
	}
	ret = rc;
	if (rc)
		goto unwind;
	switch (call->post) {
	case VCORE_POST_ALLOC:
		ret = vcore_post_alloc(call);
		break;
	case VCORE_POST_FREE:
		ret = vcore_post_free(call);
		break;
	case VCORE_POST_DUP:
		ret = vcore_post_dup(call);
		break;
	case VCORE_POST_VHC_INFO:
		ret = vcore_post_vhc_info(call);
		break;
	case VCORE_POST_CTRL:
		ret = call->ctrl_post ? call->ctrl_post(call) : 0;
		break;
	default:
		break;
	}
unwind:
	call_unwind(call);
	call_free(call);
	return ret;
}

/* ---- accessors ---- */

vcore_bool vcore_file_tampered(const struct vcore_file *file)
{
	return vcore_atomic_load(&file->tampered);
}

const char *vcore_call_reason(const struct vcore_call *call)
{
	return call ? call->reason : "out of memory";
}

vcore_u32 vcore_call_nr(const struct vcore_call *call)
{
	return call ? call->nr : 0;
}

vcore_u32 vcore_call_cmd(const struct vcore_call *call)
{
	return call ? call->cmd : 0;
}

unsigned int vcore_call_fd_count(const struct vcore_call *call)
{
	return call ? call->n_fds : 0;
}

const struct vcore_fd_field *vcore_call_fd(const struct vcore_call *call,
					   unsigned int i)
{
	if (!call || i >= call->n_fds)
		return VCORE_NULL;
	return &call->fds[i];
}

unsigned int vcore_call_buffer_count(const struct vcore_call *call)
{
	return call ? call->n_bufs : 0;
}

int vcore_call_buffer(const struct vcore_call *call, unsigned int i,
		      struct vcore_buf_info *out)
{
	if (!call || i >= call->n_bufs)
		return -VCORE_ENOENT;
	*out = call->bufs[i];
	return 0;
}
