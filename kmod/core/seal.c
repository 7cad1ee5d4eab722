// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * seal.c - what a host that can must run from a sealed copy (vcore.h,
 * vcore_sealed_size): the argument of every call the core decides on, and
 * the nested buffers it reads to decide, because the driver reads them again
 * from the same user addresses after the core did (issue 17, F2/F3;
 * docs/security/kernel-call-path.md).
 *
 * The driver's reads: nvidia_ioctl copies an escape's argument (_IOC_SIZE
 * bytes; for NV_ESC_IOCTL_XFER_CMD the header, then the payload at its ptr)
 * in itself (nv.c); RM then copies RM_ALLOC's class params in from
 * pAllocParms, sized by class (rmapiGetClassAllocParamSize, resource_desc.c;
 * the class rows' params_size), and a control's params from NVOS54.params,
 * paramsSize bytes (rmapiParamsAcquire); nvidia-uvm copies its params in once
 * at entry (__UVM_ROUTE_CMD_STACK/_ALLOC, uvm_api.h).
 */
#include "vcore_internal.h"
#include "abi/ctrl.h"
#include "abi/nv_escape.h"
#include "abi/nvos.h"
#include "abi/uvm.h"
#include "rm_alloc_internal.h"

vcore_u32 vcore_sealed_size(const struct vcore_file *file, vcore_u32 req,
			    struct vcore_seal_piece *top)
{
	const struct vcore_esc_row *row;
	vcore_u32 nr = VCORE_IOC_NR(req), size = VCORE_IOC_SIZE(req);

	top->nr = VCORE_SEAL_LEAF;
	top->ptr_off = 0;
	top->size = 0;
	if (!file || vcore_atomic_load(&file->tampered))
		return 0; /* refused before anything is read */
	if (file->kind == VCORE_FILE_UVM) {
		const struct vcore_uvm_row *uvm =
			vcore_slot_uvm(file->slot, req);

		if (uvm && (uvm->flags & VCORE_UVM_SEALED))
			top->size = uvm->size;
		return top->size;
	}
	if (nr == NV_ESC_IOCTL_XFER_CMD) {
		if (size != sizeof(nv_ioctl_xfer_t))
			return 0; /* refused on the size */
	} else {
		row = vcore_slot_esc(file->slot, nr);
		/* Unknown, wrongly sized or not decided on: the core reads
		 * nothing the driver reads after it. */
		if (!row || !vcore_esc_size_ok(row, size) ||
		    !vcore_esc_decided(row))
			return 0;
	}
	top->nr = nr;
	top->size = size;
	return size;
}

/* XFER: the payload, when the core decides on its escape (the header test
 * is vcore_pre's, vcore_xfer_check: a header that fails it, a NULL payload
 * pointer included, is refused there, so nothing is sealed for it). */
static vcore_u32 sealed_xfer(const struct vcore_file *file, const void *bytes,
			     struct vcore_seal_piece *next)
{
	const nv_ioctl_xfer_t *x = (const nv_ioctl_xfer_t *)bytes;
	const struct vcore_esc_row *row;

	if (vcore_xfer_check(x) != VCORE_XFER_OK)
		return 0;
	row = vcore_slot_esc(file->slot, x->cmd);
	if (!row || !vcore_esc_size_ok(row, x->size) || !vcore_esc_decided(row))
		return 0;
	next->nr = x->cmd;
	next->ptr_off = VCORE_OFF(nv_ioctl_xfer_t, ptr);
	next->size = x->size;
	return next->size;
}

/* RM_ALLOC (NVOS21 or NVOS64): the class params, sized by class as RM
 * sizes them (rm_alloc.c reads the same). */
static vcore_u32 sealed_alloc_params(const struct vcore_file *file,
				     const void *bytes,
				     struct vcore_seal_piece *next)
{
	vcore_u32 cls = vcore_rd32(bytes, VCORE_OFF(NVOS21_PARAMETERS, hClass));
	const struct vcore_class_row *row =
		vcore_abi_class(file->slot->abi, cls);

	if (!row || !row->params_size ||
	    !vcore_rd64(bytes, VCORE_OFF(NVOS21_PARAMETERS, pAllocParms)))
		return 0;
	next->ptr_off = VCORE_OFF(NVOS21_PARAMETERS, pAllocParms);
	next->size = row->params_size;
	return next->size;
}

/* RM_CONTROL: the params of a control the core has a handler for (its
 * pre reads them); a plain control's params the core does not read. */
static vcore_u32 sealed_ctrl_params(const struct vcore_file *file,
				    const void *bytes,
				    struct vcore_seal_piece *next)
{
	const NVOS54_PARAMETERS *p = (const NVOS54_PARAMETERS *)bytes;
	const struct vcore_ctrl_row *row = vcore_slot_ctrl(file->slot, p->cmd);

	if (!row || !row->pre || !p->params || !p->paramsSize ||
	    !vcore_ctrl_size_ok(row, p->paramsSize))
		return 0;
	next->ptr_off = VCORE_OFF(NVOS54_PARAMETERS, params);
	next->size = p->paramsSize;
	return next->size;
}

vcore_u32 vcore_sealed_next(const struct vcore_file *file,
			    const struct vcore_seal_piece *cur,
			    const void *bytes, struct vcore_seal_piece *next)
{
	next->nr = VCORE_SEAL_LEAF;
	next->ptr_off = 0;
	next->size = 0;
	switch (cur->nr) {
	case NV_ESC_IOCTL_XFER_CMD:
		return sealed_xfer(file, bytes, next);
	case NV_ESC_RM_ALLOC:
		return sealed_alloc_params(file, bytes, next);
	case NV_ESC_RM_CONTROL:
		return cur->size == sizeof(NVOS54_PARAMETERS)
			       ? sealed_ctrl_params(file, bytes, next)
			       : 0;
	default:
		return 0;
	}
}

void vcore_call_params_replaced(struct vcore_call *call)
{
	/* The holds first: the kill below must find the charge in place. */
	if (call->file->kind == VCORE_FILE_UVM &&
	    call->req == UVM_MAP_EXTERNAL_ALLOCATION)
		vcore_uvm_external_replaced(call);
	vcore_tampered(call, 0, 0, "the sealed parameters were replaced");
	/* Nothing the driver answered can be believed (the reply is the
	 * tamperer's page): no record changes on its word, and the holds stay
	 * until the file closes. */
	call->post = VCORE_POST_NONE;
}
