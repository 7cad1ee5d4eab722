// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * call.c - a call's buffers and fd fields, listed and copied for the
 * handlers, and the accessors the host reads them through (vcore.h).
 */
#include "vcore_internal.h"
#include "abi/classes.h"
#include "abi/nv_escape.h"
#include "abi/nvstatus.h"
#include "abi/uvm.h"

/* ---- user memory, through the host ---- */

int vcore_reply_u32(struct vcore_call *call, vcore_u32 off, vcore_u32 *out)
{
	return vcore_user_read(call, out, call->arg + off, sizeof(*out));
}

vcore_bool vcore_reply_ok(struct vcore_call *call)
{
	vcore_u32 status = 1;

	return !vcore_reply_u32(call, call->status_off, &status) &&
	       status == NV_OK;
}

/* ---- buffers and fd fields ---- */

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

vcore_bool vcore_call_unwrapped(const struct vcore_call *call, vcore_u32 *nr,
				vcore_u32 *size, vcore_uptr_t *arg)
{
	if (!call || !call->xfer)
		return 0;
	*nr = call->nr;
	*size = call->size;
	*arg = call->arg;
	return 1;
}

unsigned int vcore_call_needs(const struct vcore_call *call)
{
	const struct vcore_class_row *row;

	if (!call)
		return 0;
	switch (call->file->kind) {
	case VCORE_FILE_UVM:
		return call->nr == UVM_REGISTER_GPU ? VCORE_NEED_GPU_WITNESS
						    : 0;
	case VCORE_FILE_CTL:
		if (call->nr == NV_ESC_RM_ALLOC_MEMORY)
			return VCORE_NEED_UNPRIVILEGED;
		if (call->nr != NV_ESC_RM_ALLOC)
			return 0;
		row = vcore_abi_class(call->slot->abi, call->cmd);
		return row && row->kind == VCORE_CLS_DEVICE
			       ? VCORE_NEED_GPU_WITNESS
			       : 0;
	default:
		return call->nr == NV_ESC_RM_ALLOC_MEMORY
			       ? VCORE_NEED_UNPRIVILEGED
			       : 0;
	}
}

vcore_uptr_t vcore_call_status_addr(const struct vcore_call *call)
{
	if (!call || !call->esc || (call->esc->flags & VCORE_ESC_NO_STATUS))
		return 0;
	return call->arg + call->status_off;
}

enum vcore_refusal vcore_call_refusal(const struct vcore_call *call)
{
	if (!call)
		return VCORE_REFUSAL_POLICY;
	if (call->verdict != VCORE_REFUSE_STATUS &&
	    call->verdict != VCORE_REFUSE_ERRNO)
		return VCORE_REFUSAL_NONE;
	return call->quota_refused ? VCORE_REFUSAL_QUOTA : VCORE_REFUSAL_POLICY;
}

vcore_u64 vcore_call_request_bytes(const struct vcore_call *call)
{
	return call ? call->requested : 0;
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

void vcore_call_set_fd_file(struct vcore_call *call, unsigned int i,
			    struct vcore_file *file)
{
	if (call && i < call->n_fds)
		call->fd_files[i] = file;
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
