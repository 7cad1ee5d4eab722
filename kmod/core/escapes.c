// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * escapes.c - refusals (how a call is refused: errno, or an RM status in
 * the struct) and the generic escape handlers of tables_580.c.
 */
#include "vcore_internal.h"
#include "abi/nv_escape.h"
#include "abi/nvstatus.h"

/* ---- refusals ---- */

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

	if (!row || (row->flags & VCORE_ESC_NO_STATUS))
		return vcore_refuse_errno(call, -VCORE_EFAULT, reason);
	return vcore_refuse_status_at(call, call->status_off, status, reason);
}

/* The same with the status at @status_off of the argument (a UVM call's
 * rmStatus: no escape row). */
enum vcore_verdict vcore_refuse_status_at(struct vcore_call *call,
					  vcore_u32 status_off,
					  vcore_u32 status, const char *reason)
{
	if (vcore_user_write(call, call->arg + status_off, &status,
			     sizeof(status)))
		return vcore_refuse_errno(call, -VCORE_EFAULT, reason);
	call->verdict = VCORE_REFUSE_STATUS;
	call->rm_status = status;
	call->reason = reason;
	return call->verdict;
}

enum vcore_verdict vcore_refuse_quota(struct vcore_call *call, vcore_u32 status,
				      const char *reason)
{
	call->quota_refused = 1;
	return vcore_refuse_status(call, status, reason);
}

enum vcore_verdict vcore_answer_status(struct vcore_call *call,
				       vcore_u32 status)
{
	const struct vcore_esc_row *row = call->esc;

	if (!row || (row->flags & VCORE_ESC_NO_STATUS) ||
	    vcore_user_write(call, call->arg + call->status_off, &status,
			     sizeof(status)))
		return vcore_refuse_errno(call, -VCORE_EFAULT,
					  "status unwritable");
	call->verdict = VCORE_ANSWERED;
	call->rm_status = status;
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

/*
 * NV_ESC_RM_MAP_MEMORY_DMA / UNMAP_MEMORY_DMA: a mapping into an RM-owned VA
 * space makes page tables no RM_ALLOC reports (issue 17 F11.1; measured on
 * the H200: 4 KiB per map 1 GiB apart, 8 KiB 512 GiB apart, 513 MiB at 65536
 * maps of one 2 MiB piece, docs/results/rm-internal-memory-h200.md). libcuda
 * maps through UVM, never here (no recording in tests/data/traces has
 * either), so under a quota both are refused: no map, nothing to unmap.
 */
enum vcore_verdict vcore_esc_map_memory_dma(struct vcore_call *call)
{
	if (!vcore_slot_has_quota(call->slot))
		return VCORE_FORWARD;
	return vcore_refuse_quota(call, NV_ERR_NOT_SUPPORTED,
				  call->nr == NV_ESC_RM_MAP_MEMORY_DMA
					  ? "RM_MAP_MEMORY_DMA under a quota: "
					    "its page tables are not countable"
					  : "RM_UNMAP_MEMORY_DMA under a quota "
					    "(no DMA map is made)");
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
