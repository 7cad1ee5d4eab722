// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * uvm.c - calls on a nvidia-uvm file: the ioctl number is the command
 * (no escape table, no size in it), looked up in the branch's UVM table.
 */
#include "vcore_internal.h"
#include "abi/uvm.h"
#include "rm_alloc_internal.h"

/*
 * Commands that place memory in video memory with no RM allocation the core
 * could charge: migration of managed or (with HMM) plain pageable memory to
 * a GPU, and populating pageable memory (uvm_ioctl.h; abi.md §7). Under the
 * managed policy "refuse" (the default under a quota) they are refused like
 * a managed mapping (issue 17, F6).
 */
static vcore_bool uvm_moves_memory(vcore_u32 cmd)
{
	return cmd == UVM_MIGRATE || cmd == UVM_MIGRATE_RANGE_GROUP ||
	       cmd == UVM_POPULATE_PAGEABLE;
}

enum vcore_verdict vcore_uvm_pre(struct vcore_call *call)
{
	const struct vcore_uvm_row *row;

	call->nr = call->req;
	call->size = 0;
	row = vcore_slot_uvm(call->slot, call->req);
	if (!row)
		return vcore_policy_unknown(
			call, &call->slot->stats.unknown_escapes, call->req,
			-VCORE_EINVAL, 0, "unknown nvidia-uvm ioctl");
	if (uvm_moves_memory(call->req) && vcore_managed_refused(call->slot))
		return vcore_refuse_errno(call, -VCORE_EPERM,
					  "UVM migration into video memory "
					  "cannot be charged (managed memory "
					  "refused)");
	call->size = row->size;
	vcore_add_buf(call, -1, 0, call->arg, row->size, 0);
	if (call->req == UVM_CREATE_EXTERNAL_RANGE ||
	    call->req == UVM_MAP_EXTERNAL_ALLOCATION ||
	    call->req == UVM_MAP_EXTERNAL_SPARSE || call->req == UVM_FREE ||
	    call->req == UVM_UNMAP_EXTERNAL)
		return vcore_uvm_external_pre(call);
	if (call->req == UVM_MM_INITIALIZE) {
		UVM_MM_INITIALIZE_PARAMS p;

		/* Unreadable: the driver faults too, nothing to translate. */
		if (!vcore_user_read(call, &p, call->arg, sizeof(p)))
			vcore_add_fd(call, call->arg, p.uvmFd, VCORE_FD_UVM);
	}
	return VCORE_FORWARD;
}
