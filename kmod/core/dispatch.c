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

/* ---- the argument ---- */

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
	const struct vcore_view *view;
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
	if (!vcore_ctrl_size_ok(row, size))
		return vcore_refuse_status(call, NV_ERR_INVALID_ARGUMENT,
					   "wrong paramsSize for control");
	if (row->pre)
		return row->pre(call);
	view = vcore_ctrl_view_of(row);
	return view ? vcore_ctrl_view(call, view) : VCORE_FORWARD;
}

enum vcore_verdict vcore_esc_rm_control(struct vcore_call *call)
{
	return rm_control_pre(call);
}

/* ---- the entry points ---- */

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
	switch (vcore_xfer_check(&x)) {
	case VCORE_XFER_TOO_BIG:
		return vcore_refuse_errno(call, -VCORE_EINVAL,
					  "XFER payload over 16384 bytes");
	case VCORE_XFER_BAD_CMD:
		return vcore_refuse_errno(call, -VCORE_EINVAL,
					  "XFER inside XFER or bad inner cmd");
	case VCORE_XFER_NO_PAYLOAD:
		return vcore_refuse_errno(call, -VCORE_EFAULT,
					  "XFER payload pointer NULL");
	case VCORE_XFER_OK:
		break;
	}
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

/* One log line per refused call. */
static void log_refusal(struct vcore_call *call)
{
	vcore_logf(call->slot, VCORE_LOG_INFO,
		   "pid %u: refused nr 0x%x size %u cmd/class 0x%x: %s (%s %d)",
		   call->ctx.pid, call->nr, call->size, call->cmd, call->reason,
		   call->verdict == VCORE_REFUSE_STATUS ? "status" : "errno",
		   call->verdict == VCORE_REFUSE_STATUS ? (int)call->rm_status
							: call->err);
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
		v = vcore_uvm_pre(call);
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
	if (!vcore_esc_size_ok(row, call->size)) {
		/* RmIoctl checks dataSize per escape: -EINVAL. */
		v = vcore_refuse_errno(call, -VCORE_EINVAL,
				       "wrong size for escape");
		goto malformed;
	}
	if (vcore_esc_decided(row)) {
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
 * has no pre handler (so no fd field and no post step other than a view);
 * or a legacy GSS or NV2081 binary-API control, which rm_control_pre
 * forwards untouched. A view row's control (views.c) with params, on a slot
 * that wants the view, is plain too: vcore_pre would record only which view
 * runs after the driver (vcore_ctrl_view), and @reply says so instead.
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
				  struct vcore_call **callp,
				  struct vcore_reply *reply)
{
	struct vcore_slot *slot = file->slot;
	const struct vcore_esc_row *row;
	const struct vcore_ctrl_row *ctrl;
	const struct vcore_view *view;
	struct early_arg early = {.bytes = VCORE_NULL};
	/* Read only after the copy into it succeeded. */
	NVOS54_PARAMETERS p VCORE_NO_AUTO_INIT;
	vcore_u32 nr = VCORE_IOC_NR(req), size = VCORE_IOC_SIZE(req);

	reply->view = VCORE_NULL;
	if (vcore_atomic_load(&file->tampered) ||
	    file->kind == VCORE_FILE_UVM || nr == NV_ESC_IOCTL_XFER_CMD)
		goto full;
	row = vcore_slot_esc(slot, nr);
	if (!row || !vcore_esc_size_ok(row, size) ||
	    row->pre != vcore_esc_rm_control || size != sizeof(p))
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
	} else if (ctrl->pre || !vcore_ctrl_size_ok(ctrl, p.paramsSize)) {
		goto full;
	} else if ((view = vcore_ctrl_view_of(ctrl)) &&
		   vcore_view_wanted(slot, view)) {
		if (!p.params || !p.paramsSize)
			goto full; /* refused: a view needs params */
		reply->view = view->rewrite;
		reply->arg = arg;
		reply->params = p.params;
		reply->params_size = p.paramsSize;
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
	/* One record, or a chain linked by hnext (export.c). */
	while (call->new_obj) {
		struct vcore_obj *next = call->new_obj->hnext;

		slot->ops->free(slot->priv, call->new_obj);
		call->new_obj = next;
	}
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
	if (call->sysmem_reserved) {
		vcore_lock(call->slot);
		call->slot->sysmem_held -= call->sysmem_reserved;
		vcore_unlock(call->slot);
		call->sysmem_reserved = 0;
	}
}

int vcore_post(struct vcore_call *call, int rc)
{
	int ret;

	if (!call)
		return -VCORE_ENOMEM;
	switch (call->verdict) {
	case VCORE_REFUSE_STATUS:
	case VCORE_ANSWERED:
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
	vcore_uvm_external_end(call);
	call_free(call);
	return ret;
}
