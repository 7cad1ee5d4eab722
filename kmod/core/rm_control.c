// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * rm_control.c - the NV_ESC_RM_CONTROL (NVOS54) handlers: the controls that
 * carry fds or feed the TSG registry. The dispatch on cmd (the size-checked
 * pass most rows use) is in dispatch.c, inlined into vcore_pre; views
 * (memory, pids) are in views.c.
 */
#include "vcore_internal.h"
#include "abi/ctrl.h"
#include "abi/classes.h"
#include "abi/nvstatus.h"
#include "abi/nv_escape.h"
#include "rm_alloc_internal.h"

/* Take a private copy of the control's params (buffer index or -errno). */
static int copy_params(struct vcore_call *call)
{
	int err;

	if (call->params_buf < 0)
		return -VCORE_EFAULT; /* NULL params or size 0 */
	err = vcore_copy_buf(call, (unsigned int)call->params_buf);
	return err ? err : call->params_buf;
}

static enum vcore_verdict params_fault(struct vcore_call *call, int err)
{
	/* RM reports an unreadable params pointer as a status, but the
	 * core cannot decide on what it cannot read: refuse the call. */
	return vcore_refuse_errno(
		call, err == -VCORE_ENOMEM ? -VCORE_ENOMEM : -VCORE_EFAULT,
		"control params unreadable");
}

/* ---- fd-carrying controls (abi.md §9.3, §9.5) ---- */

static enum vcore_verdict fd_at(struct vcore_call *call, vcore_u32 off,
				enum vcore_fd_kind kind)
{
	int i = copy_params(call);
	const vcore_u8 *prm;

	if (i < 0)
		return params_fault(call, i);
	if (call->bufs[i].len < off + 4)
		return VCORE_FORWARD;
	prm = call->bufs[i].priv;
	vcore_add_fd(call, call->bufs[i].uaddr + off,
		     (vcore_s32)vcore_rd32(prm, off), kind);
	return VCORE_FORWARD;
}

/* IMPORT_OBJECT(S)_FROM_FD, GET_EXPORT_OBJECT_INFO, EXPORT_OBJECTS_TO_FD:
 * the fd is the first field. */
enum vcore_verdict vcore_ctrl_unix_fd_at0(struct vcore_call *call)
{
	return fd_at(call, 0, VCORE_FD_EXPORT);
}

enum vcore_verdict vcore_ctrl_unix_export_object_to_fd(struct vcore_call *call)
{
	return fd_at(call, NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_FD_OFF,
		     VCORE_FD_EXPORT);
}

enum vcore_verdict vcore_ctrl_unix_create_export_fd(struct vcore_call *call)
{
	return fd_at(call, NV0000_CTRL_OS_UNIX_CREATE_EXPORT_OBJECT_FD_FD_OFF,
		     VCORE_FD_EXPORT);
}

/* NV00FD ATTACH_GPU.devDescriptor must be a real /dev/nvidiaN
 * (escape.c:75-131). */
enum vcore_verdict vcore_ctrl_attach_gpu(struct vcore_call *call)
{
	return fd_at(call, NV00FD_CTRL_ATTACH_GPU_DEV_DESCRIPTOR_OFF,
		     VCORE_FD_NV_DEV);
}

enum vcore_verdict vcore_ctrl_export_mem(struct vcore_call *call)
{
	return fd_at(call, NV00E0_CTRL_EXPORT_MEM_DEV_DESCRIPTOR_OFF,
		     VCORE_FD_NV_DEV);
}

/* ---- TSG controls ---- */

static int tsg_timeslice_post(struct vcore_call *call)
{
	struct vcore_obj *tsg;

	if (!vcore_reply_ok(call))
		return 0;
	vcore_lock(call->slot);
	tsg = vcore_obj_find_locked(call->slot, vcore_rd32(call->argbuf, 0),
				    vcore_rd32(call->argbuf, 4));
	if (tsg)
		tsg->app_timeslice_us =
			vcore_rd64(call->bufs[call->params_buf].priv, 0);
	call->slot->tsg_gen++;
	vcore_unlock(call->slot);
	return 0;
}

/* The slot's TSG that (argbuf client, object) names, or NULL; locked. */
static struct vcore_obj *ctrl_tsg_locked(struct vcore_call *call)
{
	struct vcore_obj *o =
		vcore_obj_find_locked(call->slot, vcore_rd32(call->argbuf, 0),
				      vcore_rd32(call->argbuf, 4));

	return o && o->kind == VCORE_CLS_TSG ? o : VCORE_NULL;
}

/*
 * NVA06C SET_TIMESLICE: libcuda sets 2048 us itself (abi.md §6.1); the
 * scheduler needs to know what the app asked for. When the host's controller
 * owns the timeslices (weight mode), the app's value is only recorded: a
 * tenant re-issuing its own value between the controller's ticks moved a
 * 30/70 split to 49.5/50.5 (F7).
 */
enum vcore_verdict vcore_ctrl_tsg_set_timeslice(struct vcore_call *call)
{
	int i = copy_params(call);
	struct vcore_obj *tsg;
	vcore_bool owned;

	if (i < 0)
		return params_fault(call, i);
	vcore_lock(call->slot);
	owned = call->slot->host_owns_timeslice;
	tsg = owned ? ctrl_tsg_locked(call) : VCORE_NULL;
	if (tsg) {
		tsg->app_timeslice_us = vcore_rd64(call->bufs[i].priv, 0);
		call->slot->tsg_gen++;
	}
	vcore_unlock(call->slot);
	if (tsg)
		return vcore_refuse_status(
			call, NV_OK,
			"timeslice set by the compute "
			"controller (recorded, not forwarded)");
	call->post = VCORE_POST_CTRL;
	call->ctrl_post = tsg_timeslice_post;
	return VCORE_FORWARD;
}

/*
 * NVA06C PREEMPT: libcuda preempts its own scheduled TSGs (the recorded
 * cuda-driver-api trace has two, bWait=1). A PREEMPT(bWait=1) of a TSG that is
 * not on the runlist waited RM's whole timeout on the H200 (4020 ms,
 * docs/results/compute-h200.md) with the GPU's RM lock held, stalling every
 * tenant's calls and the compute controller's (F7). An unscheduled TSG has
 * nothing to preempt: answered NV_OK here, never forwarded.
 */
enum vcore_verdict vcore_ctrl_tsg_preempt(struct vcore_call *call)
{
	struct vcore_obj *tsg;
	vcore_bool idle;

	vcore_lock(call->slot);
	tsg = ctrl_tsg_locked(call);
	idle = tsg && !tsg->scheduled;
	vcore_unlock(call->slot);
	if (idle)
		return vcore_refuse_status(call, NV_OK,
					   "PREEMPT of a TSG that is not "
					   "scheduled (nothing to preempt)");
	return VCORE_FORWARD;
}

/*
 * The compute controller's own levers and the runlist's (abi.md §6.2):
 * FIFO_DISABLE_CHANNELS, per-channel GPFIFO_SCHEDULE, interleave level,
 * realtime, runlist stop/start/restart and scheduling policy. libcuda uses
 * none of them (the recorded corpus has none); from a tenant they undo the
 * controller's gate right after each off edge, raise a TSG above its peers,
 * or unschedule a TSG behind the registry's back (F7). Refused for every
 * slot, as RM refuses a caller without the privilege.
 */
enum vcore_verdict vcore_ctrl_sched_reserved(struct vcore_call *call)
{
	return vcore_refuse_status(call, NV_ERR_INSUFFICIENT_PERMISSIONS,
				   "scheduling control reserved to the compute "
				   "controller");
}

/*
 * GPU accounting (NV0000 GPUACCT_*, ctrl0000gpuacct.h): the pids of every
 * process that used a GPU, each one's utilisation and memory, and the
 * node-wide switch and reset of that record. A tenant would read the other
 * tenants' processes and usage, or clear their record (issue 17, F11.4).
 * Refused for every slot; GET_ACCOUNTING_STATE (on or off) still passes.
 */
enum vcore_verdict vcore_ctrl_node_private(struct vcore_call *call)
{
	return vcore_refuse_status(call, NV_ERR_INSUFFICIENT_PERMISSIONS,
				   "other processes' GPU accounting, or "
				   "node-wide accounting state");
}

/*
 * Records that the driver (un)scheduled @tsg (NULL: nothing to record), drops
 * the slot lock the caller took to find it, and tells the host of a TSG that
 * went on the runlist (vcore.h, tsg_scheduled).
 */
static void tsg_record_schedule_unlock(struct vcore_slot *slot,
				       struct vcore_obj *tsg, vcore_bool on)
{
	vcore_bool started = 0;

	if (tsg && tsg->scheduled != on) {
		tsg->scheduled = on;
		slot->tsg_gen++;
		started = on;
	}
	vcore_unlock(slot);
	if (started && slot->ops->tsg_scheduled)
		slot->ops->tsg_scheduled(slot->priv);
}

/*
 * NVA06C GPFIFO_SCHEDULE {NvBool bEnable, bSkipSubmit, bSkipEnable} (3 B,
 * abi.md §6.2): libcuda issues it with bEnable=1 per TSG as the last step
 * before the TSG runs, after every channel is allocated and bound by UVM
 * (§6.1; RM refuses to schedule unbound channels, "Bug 1737765"). The
 * registry marks the TSG scheduled only when RM said NV_OK, so that the
 * controllers never touch a TSG that is not on the runlist yet (vcore.h).
 * bEnable comes from the core's private copy taken in pre, never from a
 * second read of user memory. With the host's control_copy the driver runs
 * that same copy (tsg_schedule_copy); without it (the shim) a thread that
 * rewrites bEnable during the call can make the driver and the registry
 * disagree.
 */
static int tsg_schedule_post(struct vcore_call *call)
{
	struct vcore_obj *tsg;
	vcore_bool on;

	if (!vcore_reply_ok(call))
		return 0;
	on = ((const vcore_u8 *)call->bufs[call->params_buf].priv)[0] != 0;
	vcore_lock(call->slot);
	tsg = vcore_obj_find_locked(call->slot, vcore_rd32(call->argbuf, 0),
				    vcore_rd32(call->argbuf, 4));
	if (tsg && tsg->kind != VCORE_CLS_TSG)
		tsg = VCORE_NULL;
	tsg_record_schedule_unlock(call->slot, tsg, on);
	return 0;
}

/*
 * A TSG the registry thinks is scheduled while the driver has it off the
 * runlist made every off edge of the compute gate PREEMPT(bWait=1) it, which
 * waits RM's whole timeout with the GPU's lock held, stalling every slot's
 * control on that GPU (F7). So the driver must schedule exactly what the
 * registry records: the core's copy goes to the driver through the host's
 * in-kernel entry, for a TSG recorded under the caller's own client (the
 * kernel entry skips RM's ownership check). The reply is the driver's status.
 * false: not issued (no host op, not a recorded TSG of the caller's, or the
 * driver could not be asked): forward as usual.
 */
static vcore_bool tsg_schedule_copy(struct vcore_call *call, int i,
				    enum vcore_verdict *v)
{
	struct vcore_slot *slot = call->slot;
	vcore_u32 h_client = vcore_rd32(call->argbuf, 0);
	vcore_u32 h_tsg = vcore_rd32(call->argbuf, 4), status = 0;
	vcore_u8 prm[sizeof(NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS)];
	struct vcore_obj *tsg;
	vcore_bool on;

	if (!slot->ops->control_copy || call->bufs[i].len != sizeof(prm) ||
	    !vcore_own_client(call, h_client))
		return 0;
	vcore_lock(slot);
	tsg = ctrl_tsg_locked(call);
	vcore_unlock(slot);
	if (!tsg)
		return 0;
	vcore_memcpy(prm, call->bufs[i].priv, sizeof(prm));
	if (slot->ops->control_copy(slot->priv, h_client, h_tsg, call->cmd, prm,
				    sizeof(prm), &status))
		return 0;
	on = prm[0] != 0;
	vcore_lock(slot);
	tsg = ctrl_tsg_locked(call);
	tsg_record_schedule_unlock(slot, status == NV_OK ? tsg : VCORE_NULL,
				   on);
	*v = vcore_answer_status(call, status);
	return 1;
}

enum vcore_verdict vcore_ctrl_tsg_schedule(struct vcore_call *call)
{
	int i = copy_params(call);
	enum vcore_verdict v;

	if (i < 0)
		return params_fault(call, i);
	if (tsg_schedule_copy(call, i, &v))
		return v;
	call->post = VCORE_POST_CTRL;
	call->ctrl_post = tsg_schedule_post;
	return VCORE_FORWARD;
}

/* ---- escapes whose object outlives its handle ---- */

/*
 * NV_ESC_EXPORT_TO_DMABUF_FD (F5): RM dups (hClient, handles[]) into an
 * internal client with kernel privilege and holds it for the dma-buf's life
 * (kernel-open/nvidia/nv-dmabuf.c nv_dma_buf_dup_mem_handles ->
 * rm_dma_buf_dup_mem_handle, src/nvidia/arch/nvalloc/unix/src/osapi.c:
 * RmDmabufVerifyMemHandle looks hClient up with no check against the
 * caller's file, and a kernel client may dup anything, resserv rs_client.c).
 * So a tenant could pin another tenant's memory, and its own past RM_FREE
 * (the refund follows the handle, the memory the dup). Under a memory quota
 * that memory cannot be charged: refused. Without one: only the caller's own
 * client and objects the slot recorded under it.
 */
enum vcore_verdict vcore_esc_export_dmabuf(struct vcore_call *call)
{
	vcore_u32 h_client, n, i;
	vcore_bool ok = 1;

	if (vcore_slot_has_quota(call->slot))
		return vcore_refuse_quota(call, NV_ERR_INSUFFICIENT_PERMISSIONS,
					  "dma-buf export under a memory quota "
					  "(its memory outlives the charge)");
	h_client = vcore_rd32(call->argbuf,
			      NV_IOCTL_EXPORT_TO_DMABUF_FD_CLIENT_OFF);
	n = vcore_rd32(call->argbuf, NV_IOCTL_EXPORT_TO_DMABUF_FD_NUM_OFF);
	if (n > NV_DMABUF_EXPORT_MAX_HANDLES ||
	    !vcore_own_client(call, h_client))
		return vcore_refuse_status(
			call, NV_ERR_INSUFFICIENT_PERMISSIONS,
			"dma-buf export of memory that is not "
			"the caller's");
	vcore_lock(call->slot);
	for (i = 0; i < n && ok; i++)
		ok = vcore_obj_find_locked(
			     call->slot, h_client,
			     vcore_rd32(
				     call->argbuf,
				     NV_IOCTL_EXPORT_TO_DMABUF_FD_HANDLES_OFF +
					     4 * i)) != VCORE_NULL;
	vcore_unlock(call->slot);
	if (!ok)
		return vcore_refuse_status(
			call, NV_ERR_INSUFFICIENT_PERMISSIONS,
			"dma-buf export of an object the slot "
			"did not record");
	return VCORE_FORWARD;
}
